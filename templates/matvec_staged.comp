// matvec_staged: y[t][r] = sum_k W[r][k] * x[t][k] for up to NR1 tokens, built
// for memory bandwidth: TPR invocations share a row; each reads whole chunks
// of NK elements (NK / QK blocks) with aligned vector loads into registers
// (QK_STAGED) for its NR0 rows, so the dequant hooks run on registers with
// constant offsets, and reads activations as vec4 where the format's runs allow.
// Lanes, rows and the final sums: include/matvec_lanes.glsl.
//
// Without QK_STAGED (staged: false, matvec_xs_global) the hooks read the
// weights in place: the form for the planar formats, whose three planes a
// chunk of bytes cannot hold.
//
// MoE form (an ids binding, NR1 = 1): column p of the grid is the pair
// p = token * top_k + slot (include/matvec_cols.glsl), writing row p of
// y [tokens, top_k, M]; as in matvec.comp. Routed MoE form (ids and tpe
// bindings, family matmul_id): grid z is the expert and the NR1 columns are
// its pairs ids[e][c], as in matmul.comp.
//
// Split K (a scratch binding, matvec_xs_split): grid z is one of SK runs of
// K, whose sums meet in qk_lanes_store (include/matvec_lanes.glsl).
//
// With QK_X_SHARED (matvec_xs.comp) the activations come from shared memory:
// the workgroup copies a slab of XS_CHUNKS chunks per token with contiguous
// vec4 loads, and the lanes, each on its own chunk, read it there. Read from
// global memory, a warp's activation load touches one cache line per lane
// (lanes sit NK elements apart); from the slab, whose chunks are NK + 4
// floats apart, the eight lanes of each quarter-warp hit distinct banks.

#include "include/matvec_lanes.glsl"

#ifdef QK_X_SHARED
#define XS_CHUNKS (QK_XS_ELEMS / NR1 / NK)
#define XS_STRIDE ((NK + 4) / 4) // vec4s per chunk in the slab
shared vec4 qk_xs[NR1][XS_CHUNKS * XS_STRIDE];

// Activations i0 .. i0 + 3 of hook call sub of block b of slab chunk cl.
vec4 xs_load4(uint t, uint cl, uint b, uint sub, uint i0) {
#if QK_SUB_RUN >= 4
    return qk_xs[t][cl * XS_STRIDE + (b * QK + qk_sub_elem(sub, i0)) / 4u];
#else
    vec4 v;
    [[unroll]] for (uint l = 0; l < 4u; l++) {
        const uint e = b * QK + qk_sub_elem(sub, i0 + l);
        v[l] = qk_xs[t][cl * XS_STRIDE + e / 4u][e % 4u];
    }
    return v;
#endif
}

void xs_load(uint t, uint cl, uint b, uint sub, out float xv[QK_SUB_N]) {
    [[unroll]] for (uint j = 0; j < QK_SUB_N / 4; j++) {
        vec4 v = xs_load4(t, cl, b, sub, 4u * j);
        xv[4 * j] = v.x, xv[4 * j + 1] = v.y, xv[4 * j + 2] = v.z, xv[4 * j + 3] = v.w;
    }
}
#endif

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint lid = gl_LocalInvocationID.x, lane = lid % TPR, nchunks = pc.K / NK;
    uint rowblk[NR0], toks[NR1], ncols;
    if (!qk_lanes_setup(lid, rowblk, toks, ncols)) return;

    float acc[NR0][NR1];
    [[unroll]] for (uint r = 0; r < NR0; r++)
        [[unroll]] for (uint t = 0; t < NR1; t++) acc[r][t] = 0.0;

    // slabs of chunks; without QK_X_SHARED one slab of the whole row
#ifdef QK_X_SHARED
    const uint slab = XS_CHUNKS;
#else
    const uint slab = nchunks;
#endif
#if defined(BINDING_scratch)
    // split K (as matvec_xq.comp): split z of SK takes an equal run of the chunks
    const uint per = (nchunks + SK - 1u) / SK, kbeg = min(gl_WorkGroupID.z * per, nchunks);
    const uint kend = min(kbeg + per, nchunks);
#else
    const uint kbeg = 0u, kend = nchunks;
#endif
    for (uint c0 = kbeg; c0 < kend; c0 += slab) {
        const uint cend = min(c0 + slab, kend);
#ifdef QK_X_SHARED
        barrier(); // every lane is done with the previous slab
        [[unroll]] for (uint t = 0; t < NR1; t++)
            for (uint i = lid; i < (cend - c0) * (NK / 4); i += WG)
                qk_xs[t][i / (NK / 4) * XS_STRIDE + i % (NK / 4)] = x4[(toks[t] + c0 * NK) / 4 + i];
        barrier();
#endif
        for (uint c = c0 + lane; c < cend; c += TPR) {
#ifdef QK_STAGED
            // every row's chunk in flight before the first use
            [[unroll]] for (uint r = 0; r < NR0; r++)
                qk_stage_load(r, 0u, (rowblk[r] + c * CHUNK_BLOCKS) * QK_BYTES);
#endif
            [[unroll]] for (uint b = 0; b < CHUNK_BLOCKS; b++) {
                [[unroll]] for (uint sub = 0; sub < QK_SUBS; sub++) {
                    float xv[NR1][QK_SUB_N];
#ifdef QK_X_SHARED
                    [[unroll]] for (uint t = 0; t < NR1; t++) xs_load(t, c - c0, b, sub, xv[t]);
#else
                    const uint e0 = (c * CHUNK_BLOCKS + b) * QK;
                    [[unroll]] for (uint t = 0; t < NR1; t++) load_x(toks[t], e0, sub, xv[t]);
#endif
                    [[unroll]] for (uint r = 0; r < NR0; r++) {
                        float w[QK_SUB_N];
#ifdef QK_STAGED
                        qk_dequant_sub(r, b, sub, w); // slot r, block b of the chunk
#else
                        // read in place (matvec_xs_global): matrix 0, the global block
                        qk_dequant_sub(0u, rowblk[r] + c * CHUNK_BLOCKS + b, sub, w);
#endif
                        [[unroll]] for (uint t = 0; t < NR1; t++)
                            [[unroll]] for (uint i = 0; i < QK_SUB_N; i++)
                                acc[r][t] = fma(w[i], xv[t][i], acc[r][t]);
                    }
                }
            }
        }
    }

    qk_lanes_store(lid, acc, ncols);
}
