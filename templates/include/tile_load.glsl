// tile_load: stages one K step of a matmul tile in shared memory as f16, the
// QK_NW weight tiles (NR0 rows, dequantized through the format hooks) and the
// activation tile (NR1 columns), for either math path of templates/matmul.comp.
//
// Both tiles hold a step's NK elements in the hooks' order (column
// s * QK_SUB_N + i is element qk_sub_elem(sub, i) of the block that hook
// call s of the step falls in), not in K order: a dot product does not care
// about the order as long as weights and activations agree, and so any format
// works whatever order it keeps its elements in. A step is whole hook calls
// (NK % QK_SUB_N == 0) and either lies inside one block (QK % NK == 0) or is
// whole blocks (NK % QK == 0); positions past K in a last, partial step are
// zeros in both tiles, so K needs only be a multiple of the block.
//
// f16 holds magnitudes up to 65504: beyond, a staged value is inf and so is
// the result (no silent saturation), as in other f16-staged matmuls.
//
// Every store is 16 bytes (8 f16): weights by hook call (QK_SUB_N is a
// multiple of 8), activations by two vec4 loads (f32) or two 8-byte loads
// (f16 activations) (a format's runs are at least 4 elements long).
//
// The including template fills qk_xrow[c] (the element offset of column c's
// activation row) before the first step.

#include "include/pack.glsl"

// Tile rows (weights) and columns (activations) are NK + 8 f16 long: an odd
// number of 16-byte units, so the 8 invocations of a store phase hit distinct
// banks, and 16-byte aligned for coopMatLoadNV.
#define TS (NK + 8u)
#define TSV (TS / 8u)                       // 16-byte units per tile row
#define QK_TSUB (NK / QK_SUB_N)             // hook calls per tile row and step
#define QK_WUNITS (QK_NW * NR0 * QK_TSUB)   // hook calls per step
#define QK_XUNITS (NR1 * NK / 8u)           // 8-activation stores per step
#define QK_XT0 (QK_NW * NR0 * TSV)          // the activation tile's first unit
#define QK_TILE_UNITS (QK_XT0 + NR1 * TSV)

// The tiles in one array of 16-byte units (weight rows, then activation
// columns: QK_TILE_UNITS a set); matmul.comp sizes it (QK_SMEM_UNITS) for
// the sets of tiles it keeps and its f32 results.
shared uvec4 qk_sm[QK_SMEM_UNITS];
shared uint qk_xrow[NR1];

// Word w (two f16) of the tiles, for the scalar path.
uint qk_tile_word(uint w) {
    return qk_sm[w >> 2][w & 3u];
}

#ifdef QK_STAGE_SHARED
// staged: shared (specs/kernels/matmul_shared.yaml, matmul_id_shared.yaml):
// the weights take a detour that hides their latency. Each step's chunk of
// whole blocks (QK_STAGE_WORDS words a row, NK % QK == 0) is read with
// aligned vector loads contiguous along each row into registers a step
// ahead (qk_prefetch, with the step's activations), written to one of two
// raw sets in shared memory after the products of the step before
// (qk_raw_store), and dequantized from there by the hooks (qk_word) into the
// f16 tile (qk_tile_decode): no global load is waited on between two
// barriers. Steps are whole (the kernel's constraint K % NK == 0), so
// nothing is zeroed.
#define QK_RAW_STRIDE (QK_STAGE_WORDS | 1u)            // odd: rows on distinct banks
#define QK_RAW_NV (QK_STAGE_WORDS / QK_STAGE_VEC)      // vectors of a row's chunk
#define QK_RAW_V (NR0 * QK_RAW_NV)                     // vectors of a matrix's step
#define QK_RAW_J ((QK_RAW_V + WG - 1u) / WG)
#define QK_RAW_SET (QK_NW * NR0 * QK_RAW_STRIDE)
#define QK_XJ ((QK_XUNITS + WG - 1u) / WG)

shared uint qk_raw[2u * QK_RAW_SET];
uint qk_raw_base; // the first word of the chunk the hooks read, in matrix 0
QK_VEC qk_wpre[QK_NW][QK_RAW_J];
#ifdef ACT_f16
uvec4 qk_xpre[QK_XJ]; // f16 activations: already the tile's halves
#else
vec4 qk_xpre[QK_XJ][2]; // f32: packed to halves when stored, not when loaded
#endif

uint qk_word(uint m, uint w) {
    return qk_raw[qk_raw_base + m * (NR0 * QK_RAW_STRIDE) + w];
}

// Loads step s's raw weights and activations into registers; nothing waits
// for them here. Lanes past the step's vectors re-read the last one.
void qk_prefetch(uint wbase, uint row0, uint M, uint nb, uint s) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint m = 0; m < QK_NW; m++)
        [[unroll]] for (uint j = 0; j < QK_RAW_J; j++) {
            const uint i = min(tid + j * WG, QK_RAW_V - 1u), r = i / QK_RAW_NV;
            const uint row = wbase + min(row0 + r, M - 1u) * nb; // first block
            qk_wpre[m][j] = QK_VLOAD(m, row * QK_BYTES / (4u * QK_STAGE_VEC) + s * QK_RAW_NV + i % QK_RAW_NV);
        }
    [[unroll]] for (uint j = 0; j < QK_XJ; j++) {
        const uint c = min(tid + j * WG, QK_XUNITS - 1u);
        const uint col = c / (NK / 8u), p = (c % (NK / 8u)) * 8u, e = s * NK + p;
        const uint sub = (e % QK) / QK_SUB_N, i0 = p % QK_SUB_N;
#ifdef ACT_f16
        qk_xpre[j] = qk_pack8_x(qk_xrow[col] + (e / QK) * QK, 0u, sub, i0);
#else
        qk_xpre[j][0] = load_x4(qk_xrow[col] + (e / QK) * QK, 0u, sub, i0);
        qk_xpre[j][1] = load_x4(qk_xrow[col] + (e / QK) * QK, 0u, sub, i0 + 4u);
#endif
    }
}

// The prefetched weights into raw set `set`.
void qk_raw_store(uint set) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint m = 0; m < QK_NW; m++)
        [[unroll]] for (uint j = 0; j < QK_RAW_J; j++) {
            const uint i = tid + j * WG;
            if (QK_RAW_V % WG == 0u || i < QK_RAW_V) {
                const uint w = set * QK_RAW_SET + (m * NR0 + i / QK_RAW_NV) * QK_RAW_STRIDE +
                               (i % QK_RAW_NV) * QK_STAGE_VEC;
                QK_VSTORE(qk_raw, w, qk_wpre[m][j]);
            }
        }
}

// The prefetched activations, as f16, into the activation tile.
void qk_x_store() {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < QK_XJ; j++) {
        const uint c = tid + j * WG;
        if (QK_XUNITS % WG == 0u || c < QK_XUNITS)
#ifdef ACT_f16
            qk_sm[QK_XT0 + (c / (NK / 8u)) * TSV + c % (NK / 8u)] = qk_xpre[j];
#else
            qk_sm[QK_XT0 + (c / (NK / 8u)) * TSV + c % (NK / 8u)] = qk_pack8(qk_xpre[j][0], qk_xpre[j][1]);
#endif
    }
}

// Raw set `set` dequantized into the weight tiles (one set of tiles), a hook
// call per 8 to 32 values as in qk_tile_load.
void qk_tile_decode(uint set) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < (QK_WUNITS + WG - 1u) / WG; j++) {
        const uint c = tid + j * WG;
        if (QK_WUNITS % WG == 0u || c < QK_WUNITS) {
            const uint m = c / (NR0 * QK_TSUB), r = (c / QK_TSUB) % NR0, s = c % QK_TSUB;
            qk_raw_base = set * QK_RAW_SET + r * QK_RAW_STRIDE;
            float y[QK_SUB_N];
            qk_dequant_sub(m, (s * QK_SUB_N) / QK, (s * QK_SUB_N) % QK / QK_SUB_N, y);
            const uint u = (m * NR0 + r) * TSV + s * (QK_SUB_N / 8u);
            [[unroll]] for (uint i = 0; i < QK_SUB_N; i += 8u) qk_sm[u + i / 8u] = qk_pack8_w(y, i);
        }
    }
}
#else
// Stages the step at depth k0 (a multiple of NK) in the tiles starting at
// unit t0. Weight rows start at block wbase + row * nb (wbase: the expert's
// first block); rows past M are clamped to M - 1, computed and never stored,
// so that every invocation stays on the same path. Hook calls past K read the
// last one and store zeros. No branch depends on data and the loops have
// constant trip counts, so that every load of the step can be in flight
// before the first is used. The values are packed before the zero select:
// glslang turns a ?: with a call in it into a branch, which cost 14% on the
// H100 (run 20: q4_0 65.0 -> 56.3 TFLOP/s).
void qk_tile_load(uint wbase, uint row0, uint M, uint nb, uint k0, uint K, uint t0) {
    const uint tid = gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < (QK_WUNITS + WG - 1u) / WG; j++) {
        const uint c = tid + j * WG;
        if (QK_WUNITS % WG == 0u || c < QK_WUNITS) {
            const uint m = c / (NR0 * QK_TSUB), r = (c / QK_TSUB) % NR0, s = c % QK_TSUB;
            const uint e = k0 + s * QK_SUB_N, ec = min(e, K - QK_SUB_N); // the hook call's first element
            float y[QK_SUB_N];
            qk_dequant_sub(m, wbase + min(row0 + r, M - 1u) * nb + ec / QK, (ec % QK) / QK_SUB_N, y);
            const uint u = t0 + (m * NR0 + r) * TSV + s * (QK_SUB_N / 8u);
            [[unroll]] for (uint i = 0; i < QK_SUB_N; i += 8u) {
                const uvec4 v = qk_pack8_w(y, i);
                qk_sm[u + i / 8u] = e < K ? v : uvec4(0u);
            }
        }
    }
    [[unroll]] for (uint j = 0; j < (QK_XUNITS + WG - 1u) / WG; j++) {
        const uint c = tid + j * WG;
        if (QK_XUNITS % WG == 0u || c < QK_XUNITS) {
            const uint col = c / (NK / 8u), p = (c % (NK / 8u)) * 8u;
            const uint e = k0 + (p / QK_SUB_N) * QK_SUB_N, ec = min(e, K - QK_SUB_N);
            const uint xb = qk_xrow[col] + (ec / QK) * QK, sub = (ec % QK) / QK_SUB_N, i0 = p % QK_SUB_N;
            const uvec4 v = qk_pack8_x(xb, 0u, sub, i0);
            qk_sm[t0 + QK_XT0 + col * TSV + p / 8u] = e < K ? v : uvec4(0u);
        }
    }
}
#endif
