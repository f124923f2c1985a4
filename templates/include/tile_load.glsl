// tile_load: stages one K step of a matmul tile in shared memory as f16, the
// QK_NW weight tiles (NR0 rows, dequantized through the format hooks) and the
// activation tile (NR1 columns), for either math path of templates/matmul.comp.
//
// Both tiles hold a step's NK elements in the hooks' order (column
// s * QK_SUB_N + i is element qk_sub_elem(sub0 + s, i) of the block), not in
// K order: a dot product does not care about the order as long as weights and
// activations agree, and so a step needs only whole hook calls inside one
// block (the rules NK % QK_SUB_N == 0 and QK % NK == 0), whatever order the
// format keeps its elements in.
//
// f16 holds magnitudes up to 65504: beyond, a staged value is inf and so is
// the result (no silent saturation), as in other f16-staged matmuls.
//
// The including template fills qk_xrow[c] (the element offset of column c's
// activation row) before the first step.

// f16 per tile row: NK plus 8 (16 bytes), so that consecutive rows start on
// different shared-memory banks; 16 bytes keeps coopMatLoadNV's rows aligned.
#define TS (NK + 8u)
#define QK_TSUB (NK / QK_SUB_N) // hook calls per tile row and step

shared uint qk_xrow[NR1];

#ifdef MMA_coopmat
// coopMatLoadNV reads f16 arrays.
shared float16_t qk_wt[QK_NW * NR0 * TS];
shared float16_t qk_xt[NR1 * TS];

void qk_put_w(uint e, float a, float b) {
    qk_wt[e] = float16_t(a);
    qk_wt[e + 1u] = float16_t(b);
}
void qk_put_x(uint e, float a, float b) {
    qk_xt[e] = float16_t(a);
    qk_xt[e + 1u] = float16_t(b);
}
#else
// Two f16 per u32 word: the scalar path needs no shaderFloat16, which keeps
// it portable, and reads two K elements per shared load.
shared uint qk_wt[QK_NW * NR0 * TS / 2u];
shared uint qk_xt[NR1 * TS / 2u];

void qk_put_w(uint e, float a, float b) { qk_wt[e >> 1] = packHalf2x16(vec2(a, b)); }
void qk_put_x(uint e, float a, float b) { qk_xt[e >> 1] = packHalf2x16(vec2(a, b)); }
#endif

// Stages the step at depth k0 (a multiple of NK). Weight rows start at block
// wbase + row * nb (wbase: the expert's first block); rows past M are clamped
// to M - 1, computed and never stored, so that every invocation stays on the
// same path.
void qk_tile_load(uint wbase, uint row0, uint M, uint nb, uint k0) {
    const uint kb = k0 / QK, sub0 = (k0 % QK) / QK_SUB_N;
    for (uint m = 0; m < QK_NW; m++)
        for (uint c = gl_LocalInvocationID.x; c < NR0 * QK_TSUB; c += WG) {
            const uint r = c / QK_TSUB, s = c % QK_TSUB;
            float y[QK_SUB_N];
            qk_dequant_sub(m, wbase + min(row0 + r, M - 1u) * nb + kb, sub0 + s, y);
            const uint e = (m * NR0 + r) * TS + s * QK_SUB_N;
            for (uint i = 0; i < QK_SUB_N; i += 2u) qk_put_w(e + i, y[i], y[i + 1u]);
        }
    // two elements per invocation and iteration (QK_SUB_N is even)
    for (uint c = gl_LocalInvocationID.x; c < NR1 * NK / 2u; c += WG) {
        const uint col = c / (NK / 2u), j = (c % (NK / 2u)) * 2u;
        const uint sub = sub0 + j / QK_SUB_N, i = j % QK_SUB_N;
        const uint base = qk_xrow[col] + kb * QK;
        qk_put_x(col * TS + j, float(x[base + qk_sub_elem(sub, i)]),
                 float(x[base + qk_sub_elem(sub, i + 1u)]));
    }
}
