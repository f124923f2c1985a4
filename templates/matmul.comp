// matmul: the prefill product y[t][r] = sum_k W[r][k] * x[t][k] over many
// tokens, and its MoE form matmul_id, selected by a `tpe` binding.
//
// A workgroup owns an NR0 x NR1 output tile (weight rows x token columns) and
// walks K in steps of NK (32 to 128: within a block or whole blocks):
// include/tile_load.glsl stages each step's weights (dequantized through the
// format hooks) and activations in shared memory as f16, 16 bytes per store;
// the math path accumulates in f32:
//  - scalar (any device): invocation i keeps weight row i % NR0 and the
//    columns i / NR0 + j * (WG / NR0), NR0 * NR1 / WG of them, so each shared
//    weight word it reads serves all its columns;
//  - MMA_coopmat (VK_NV_cooperative_matrix): the tile is 16 x 16 blocks; the
//    WG / 32 subgroups form a QK_SG_R x QK_SG_C grid, each owning QK_WR x
//    QK_WC blocks, so per 16-deep slice a subgroup loads QK_WR weight and QK_WC
//    activation matrices from shared memory for QK_WR * QK_WC products; results
//    go back through shared memory (the tiles' array, reused) so that the
//    bounds checks and the output indirection are the scalar path's.
//
// MoE form (BINDING_tpe; specs/kernels/matmul_id.yaml): grid z is the expert
// e; column c of the grid is the pair p = ids[e][c] = token * top_k + slot,
// for c < tpe[e]; a workgroup whose first column is at or past tpe[e] exits at
// once, so a grid sized for the busiest expert (or an indirect dispatch from
// moe_route.comp) costs little for the idle ones. The activation row is the
// token's (ne11 = 1: gate/up) or the pair's own (ne11 = top_k: down); the
// output row is p, so y is [tokens, top_k, M] and needs no reshuffle. Experts
// are stacked in each weight buffer, expert e from block e * M * K / QK.
//
// Under FUSION_swiglu the tiles hold two matrices (m = 0 gate, m = 1 up)
// against one activation tile, and the stored value is qk_fuse_swiglu(g, u).

#ifdef BINDING_tpe
#define QK_MOE 1
#endif

// The tiles' shared array (include/tile_load.glsl), in 16-byte units; the
// coopmat path stores its f32 results there after the last step. With
// NK = 32 the coopmat path keeps two sets of tiles, so that one barrier per
// step separates the products of one step from the staging of the next
// (which then overlap across subgroups). On the H100 (run 17, with the
// staging made branch-free in the same run) q4_0's best NK = 32 tile went
// from 51.1 to 59.4 TFLOP/s, and the NK = 64 tile, whose two sets take twice
// the shared memory, from 54.4 to 37.7: so NK = 64 keeps one set.
#ifdef MMA_coopmat
#define QK_TILE_SETS (NK == 32u ? 2u : 1u)
#define QK_OUT_UNITS (QK_NW * NR0 * NR1 / 4u)
#define QK_SMEM_UNITS (QK_TILE_SETS * QK_TILE_UNITS > QK_OUT_UNITS ? QK_TILE_SETS * QK_TILE_UNITS : QK_OUT_UNITS)
#else
#define QK_TILE_SETS 1u
#define QK_SMEM_UNITS QK_TILE_UNITS
#endif

#include "include/tile_load.glsl"

// Output element offset of each column's row of y, or ~0u: not stored.
shared uint qk_yrow[NR1];

// The value stored for one output: the product, or the fusion's combination.
float qk_result(float v[QK_NW]) {
#ifdef FUSION_swiglu
    return qk_fuse_swiglu(v[0], v[1]);
#else
    return v[0];
#endif
}

#ifdef MMA_coopmat
#define CM 16u                  // the f16 16x16x16 shape (rule in the spec)
#define QK_CT_R (NR0 / CM)      // 16 x 16 blocks along the rows of the tile
#define QK_CT_C (NR1 / CM)
// The subgroup grid, sized for subgroups of 32 (the rule WG % 32 == 0; NV
// cooperative matrices are NVIDIA's, whose subgroups are 32 wide): rows of
// blocks first. All counts are powers of two (the spec's axes). Subgroups
// past the tile's blocks (QK_SG_C > QK_CT_C) only help load the tiles.
#define QK_NSG (WG / 32u)
#define QK_SG_R (QK_CT_R < QK_NSG ? QK_CT_R : QK_NSG)
#define QK_SG_C (QK_NSG / QK_SG_R)
#define QK_WR (QK_CT_R / QK_SG_R)
#define QK_WC (QK_CT_C > QK_SG_C ? QK_CT_C / QK_SG_C : 1u)
#define QK_F16MAT fcoopmatNV<16, gl_ScopeSubgroup, CM, CM>
#define QK_F32MAT fcoopmatNV<32, gl_ScopeSubgroup, CM, CM>
#else
#define QK_NC (NR0 * NR1 / WG)  // columns per invocation
#endif

void main() {
    const uint M = pc.M, K = pc.K, nb = K / QK, tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * NR0, col0 = gl_WorkGroupID.y * NR1;
#ifdef QK_MOE
    const uint e = gl_WorkGroupID.z, mpe = pc.max_per_expert;
    const uint ncols = min(tpe[e], mpe), npairs = pc.T * pc.top_k;
    if (col0 >= ncols) return; // the same for the whole workgroup, before any barrier
    const uint wbase = e * M * nb;
    // Columns past tpe[e] repeat its last pair: computed, never stored. Pair
    // indices are clamped so that a bad id cannot read out of bounds.
    for (uint c = tid; c < NR1; c += WG) {
        const uint p = min(ids[e * mpe + min(col0 + c, ncols - 1u)], npairs - 1u);
        const uint tok = p / pc.top_k, slot = p % pc.top_k;
        qk_xrow[c] = (tok * pc.ne11 + slot % pc.ne11) * K;
        qk_yrow[c] = col0 + c < ncols ? p * M : ~0u;
    }
#else
    const uint T = pc.T, wbase = 0u;
    for (uint c = tid; c < NR1; c += WG) {
        qk_xrow[c] = min(col0 + c, T - 1u) * K;
        qk_yrow[c] = col0 + c < T ? (col0 + c) * M : ~0u;
    }
#endif

    const uint nsteps = (K + NK - 1u) / NK;
#ifdef MMA_coopmat
    const uint sg = tid / 32u, sgr = sg % QK_SG_R, sgc = sg / QK_SG_R;
    // uniform in the subgroup; known true at compile time where the subgroup
    // grid fits the blocks (then nothing branches around the products)
    const bool busy = QK_SG_C * QK_WC <= QK_CT_C || sgc * QK_WC < QK_CT_C;
    QK_F32MAT acc[QK_NW][QK_WR][QK_WC];
    for (uint m = 0; m < QK_NW; m++)
        for (uint i = 0; i < QK_WR; i++)
            for (uint j = 0; j < QK_WC; j++) acc[m][i][j] = QK_F32MAT(0.0);
    // the products of the step whose tiles start at unit t0
#define QK_STEP(t0)                                                                            \
    if (busy)                                                                                  \
        [[unroll]] for (uint kk = 0; kk < NK / 8u; kk += CM / 8u) { /* in 16-byte units */    \
            QK_F16MAT b[QK_WC];                                                                \
            [[unroll]] for (uint j = 0; j < QK_WC; j++) /* K x N, column-major */              \
                coopMatLoadNV(b[j], qk_sm, (t0) + QK_XT0 + (sgc * QK_WC + j) * CM * TSV + kk,  \
                              TSV, true);                                                      \
            [[unroll]] for (uint m = 0; m < QK_NW; m++)                                        \
                [[unroll]] for (uint i = 0; i < QK_WR; i++) {                                  \
                    QK_F16MAT a;                                                               \
                    coopMatLoadNV(a, qk_sm, (t0) + (m * NR0 + (sgr * QK_WR + i) * CM) * TSV + kk, \
                                  TSV, false);                                                 \
                    [[unroll]] for (uint j = 0; j < QK_WC; j++)                                \
                        acc[m][i][j] = coopMatMulAddNV(a, b[j], acc[m][i][j]);                \
                }                                                                              \
        }
#else
    const uint r = tid % NR0, c0 = tid / NR0;
    float acc[QK_NW][QK_NC];
    for (uint m = 0; m < QK_NW; m++)
        for (uint j = 0; j < QK_NC; j++) acc[m][j] = 0.0;
    // the products of the step whose tiles start at unit t0, two K elements
    // per shared word
#define QK_STEP(t0)                                                                            \
    for (uint kk = 0; kk < NK / 2u; kk++) {                                                    \
        vec2 xv[QK_NC];                                                                        \
        for (uint j = 0; j < QK_NC; j++)                                                       \
            xv[j] = unpackHalf2x16(qk_tile_word(((t0) + QK_XT0 + (c0 + j * (WG / NR0)) * TSV) * 4u + kk)); \
        for (uint m = 0; m < QK_NW; m++) {                                                     \
            const vec2 wv = unpackHalf2x16(qk_tile_word(((t0) + (m * NR0 + r) * TSV) * 4u + kk)); \
            for (uint j = 0; j < QK_NC; j++)                                                   \
                acc[m][j] = fma(wv.y, xv[j].y, fma(wv.x, xv[j].x, acc[m][j]));                 \
        }                                                                                      \
    }
#endif
    if (QK_TILE_SETS == 2u) { // a constant: the other loop is not compiled
        // Step s's tiles are in set s % 2. The barrier at the top of iteration s
        // means: set s % 2 is complete, and every subgroup is done with step
        // s - 1's products, so set (s + 1) % 2 may be overwritten.
        barrier(); // qk_xrow is set
        qk_tile_load(wbase, row0, M, nb, 0u, K, 0u);
        for (uint s = 0; s + 1u < nsteps; s++) {
            barrier();
            qk_tile_load(wbase, row0, M, nb, (s + 1u) * NK, K, ((s + 1u) & 1u) * QK_TILE_UNITS);
            QK_STEP((s & 1u) * QK_TILE_UNITS)
        }
        barrier();
        QK_STEP(((nsteps - 1u) & 1u) * QK_TILE_UNITS)
    } else {
        for (uint s = 0; s < nsteps; s++) {
            barrier(); // the previous step's tiles are read (and qk_xrow is set)
            qk_tile_load(wbase, row0, M, nb, s * NK, K, 0u);
            barrier();
            QK_STEP(0u)
        }
    }

#ifdef MMA_coopmat
    // the results, column-major with stride NR0, over the tiles: float
    // m * NR0 * NR1 + column * NR0 + row is word f of unit f / 4
    barrier(); // every subgroup is done with the last tiles
    if (busy)
        for (uint m = 0; m < QK_NW; m++)
            for (uint i = 0; i < QK_WR; i++)
                for (uint j = 0; j < QK_WC; j++) {
                    const uint tr = sgr * QK_WR + i, tc = sgc * QK_WC + j;
                    coopMatStoreNV(acc[m][i][j], qk_sm, (m * NR0 * NR1 + tc * CM * NR0 + tr * CM) / 4u,
                                   NR0 / 4u, true);
                }
    barrier();
    // consecutive invocations store consecutive rows of one column
    for (uint i = tid; i < NR0 * NR1; i += WG) {
        const uint r = i % NR0, c = i / NR0;
        float v[QK_NW];
        for (uint m = 0; m < QK_NW; m++) {
            const uint f = m * NR0 * NR1 + i;
            v[m] = uintBitsToFloat(qk_sm[f / 4u][f % 4u]);
        }
        if (qk_yrow[c] != ~0u && row0 + r < M) y[qk_yrow[c] + row0 + r] = qk_result(v);
    }
#else
    for (uint j = 0; j < QK_NC; j++) {
        const uint c = c0 + j * (WG / NR0);
        float v[QK_NW];
        for (uint m = 0; m < QK_NW; m++) v[m] = acc[m][j];
        if (qk_yrow[c] != ~0u && row0 + r < M) y[qk_yrow[c] + row0 + r] = qk_result(v);
    }
#endif
}
