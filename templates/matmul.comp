// matmul: the prefill product y[t][r] = sum_k W[r][k] * x[t][k] over many
// tokens, and its MoE form matmul_id, selected by a `tpe` binding.
//
// A workgroup owns an NR0 x NR1 output tile (weight rows x token columns) and
// walks K in steps of NK (32 or 64: within a block or whole blocks):
// include/tile_load.glsl stages each step's weights (dequantized through the
// format hooks) and activations in shared memory as f16, 16 bytes per store;
// the math path accumulates in f32:
//  - scalar (any device): invocation i keeps weight row i % NR0 and the
//    columns i / NR0 + j * (WG / NR0), NR0 * NR1 / WG of them, so each shared
//    weight word it reads serves all its columns;
//  - MMA_coopmat (VK_NV_cooperative_matrix) and MMA_coopmat_khr
//    (VK_KHR_cooperative_matrix, the portable form AMD and Intel GPUs run;
//    the same path with KHR's types and calls): the tile is 16 x 16 blocks; the
//    WG / 32 subgroups form a QK_SG_R x QK_SG_C grid, each owning QK_WR x
//    QK_WC blocks, so per 16-deep slice a subgroup loads QK_WR weight and QK_WC
//    activation matrices from shared memory for QK_WR * QK_WC products; results
//    go out through a scratch in shared memory (the tiles' array, reused) so
//    that the bounds checks and the output indirection are the scalar path's.
//
// staged: shared (matmul_shared, matmul_id_shared): the raw blocks of each
// step are loaded a step ahead into registers and dequantized from shared
// memory (include/tile_load.glsl), so no step waits on a global load.
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
//
// Split K (a scratch binding; specs/kernels/matmul_split.yaml): grid z is one
// of SK runs of the K steps, for grids of few tiles (a prefill of 32-128
// tokens at m = 4096: 32-128 tiles for the H100's 132 SMs). Each split writes
// its f32 sums to scratch[z * T * M + t * M + r]; the last of the tile's
// splits to arrive adds them in split order and writes y (include/split_k.glsl).

#ifdef BINDING_tpe
#define QK_MOE 1
#endif
#ifdef BINDING_scratch
#define QK_SPLIT 1
#if defined(QK_MOE) || defined(FUSION_swiglu)
#error "split K is for the dense product without fusion"
#endif
#endif

// The tiles' shared array (include/tile_load.glsl), in 16-byte units; the
// coopmat path passes its f32 results through it after the last step (a
// 16 x 16 scratch per subgroup and weight matrix, QK_OUT_UNITS). With
// NK = 32 the coopmat path keeps two sets of tiles, so that one barrier per
// step separates the products of one step from the staging of the next
// (which then overlap across subgroups). On the H100 (run 17, with the
// staging made branch-free in the same run) q4_0's best NK = 32 tile went
// from 51.1 to 59.4 TFLOP/s, and the NK = 64 tile, whose two sets take twice
// the shared memory, from 54.4 to 37.7: so NK = 64 keeps one set, and so
// does the staged form (staged: shared), whose raw blocks are a step ahead.
#if defined(MMA_coopmat) || defined(MMA_coopmat_khr)
#define QK_COOPMAT 1
#endif
#ifdef QK_COOPMAT
#ifdef QK_STAGE_SHARED
#define QK_TILE_SETS 1u
#else
#define QK_TILE_SETS (NK == 32u ? 2u : 1u)
#endif
#define QK_OUT_UNITS (WG / 32u * QK_NW * 64u)
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

#ifdef QK_SPLIT
#include "include/split_tile.glsl"

// One output of this split: its sum into the split's part of the scratch.
void qk_store(uint yr, uint r, float v[QK_NW]) {
    scratch[gl_WorkGroupID.z * pc.T * pc.M + yr + r] = floatBitsToUint(v[0]);
}
#else
void qk_store(uint yr, uint r, float v[QK_NW]) {
    y[yr + r] = qk_result(v);
}
#endif

#ifdef QK_COOPMAT
#define CM 16u                  // the f16 16x16x16 shape (rule in the spec)
#define QK_CT_R (NR0 / CM)      // 16 x 16 blocks along the rows of the tile
#define QK_CT_C (NR1 / CM)
// The subgroup grid, sized for subgroups of 32 (the rule WG % 32 == 0; NV
// cooperative matrices are NVIDIA's, whose subgroups are 32 wide): QK_SG_R x
// QK_SG_C subgroups, each owning QK_WR x QK_WC blocks. QK_WR, QK_WC and
// QK_BUSY (every subgroup owns blocks) are the spec's literals (how the grid
// is chosen is written there): literal in each copy of the instance region
// below, whatever the module specializes. Subgroups past the tile's blocks
// (QK_BUSY 0) only help load the tiles.
#define QK_NSG (WG / 32u)
#define QK_SG_R (QK_CT_R / QK_WR)
#define QK_SG_C (QK_NSG / QK_SG_R)
#include "include/coopmat.glsl"
#else
#define QK_NC (NR0 * NR1 / WG)  // columns per invocation
#endif

// The instance region: one copy per set of the spec's literals among the
// module's tiles, QK_INSTANCE_MAIN its function (the generator repeats it;
// the specialization constant INSTANCE picks the copy in main).
#pragma qkgen instance begin
void QK_INSTANCE_MAIN() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
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

    // this workgroup's steps: all of K, or its split's run of them
    const uint nsteps = (K + NK - 1u) / NK;
#ifdef QK_SPLIT
    const uint s0 = nsteps * gl_WorkGroupID.z / SK, s1 = nsteps * (gl_WorkGroupID.z + 1u) / SK;
#else
    const uint s0 = 0u, s1 = nsteps;
#endif
#ifdef QK_COOPMAT
    const uint sg = tid / 32u, sgr = sg % QK_SG_R, sgc = sg / QK_SG_R;
    // uniform in the subgroup; a literal true where every subgroup owns
    // blocks (then nothing branches around the products)
    const bool busy = QK_BUSY != 0u || sgc * QK_WC < QK_CT_C;
    QK_F32MAT acc[QK_NW][QK_WR][QK_WC];
    for (uint m = 0; m < QK_NW; m++)
        for (uint i = 0; i < QK_WR; i++)
            for (uint j = 0; j < QK_WC; j++) acc[m][i][j] = QK_F32MAT(0.0);
    // the products of the step whose tiles start at unit t0
#define QK_STEP(t0)                                                                            \
    if (busy)                                                                                  \
        [[unroll]] for (uint kk = 0; kk < NK / 8u; kk += CM / 8u) { /* in 16-byte units */    \
            QK_BMAT b[QK_WC];                                                                  \
            [[unroll]] for (uint j = 0; j < QK_WC; j++)                                        \
                QK_LOAD_COLS(b[j], qk_sm, (t0) + QK_XT0 + (sgc * QK_WC + j) * CM * TSV + kk, TSV); \
            [[unroll]] for (uint m = 0; m < QK_NW; m++)                                        \
                [[unroll]] for (uint i = 0; i < QK_WR; i++) {                                  \
                    QK_AMAT a;                                                                 \
                    QK_LOAD_ROWS(a, qk_sm, (t0) + (m * NR0 + (sgr * QK_WR + i) * CM) * TSV + kk, TSV); \
                    [[unroll]] for (uint j = 0; j < QK_WC; j++)                                \
                        acc[m][i][j] = QK_MULADD(a, b[j], acc[m][i][j]);                      \
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
#ifdef QK_STAGE_SHARED
    // Step s's raw weights are in raw set s % 2 when iteration s starts, its
    // activations in registers; step s + 1's loads are issued before step
    // s's dequantization and products and land in the other raw set after
    // them. Two barriers per step, as below.
    barrier(); // qk_xrow is set
    if (s0 < s1) { // uniform: a split of no steps (K < SK * NK) stores zeros
        qk_prefetch(wbase, row0, M, nb, s0);
        qk_raw_store(0u);
    }
    for (uint s = s0; s < s1; s++) {
        barrier(); // raw set (s - s0) % 2 is complete; step s - 1's products are done
        qk_x_store();
        if (s + 1u < s1) qk_prefetch(wbase, row0, M, nb, s + 1u);
        qk_tile_decode((s - s0) & 1u);
        barrier();
        QK_STEP(0u)
        if (s + 1u < s1) qk_raw_store((s + 1u - s0) & 1u);
    }
#else
    if (QK_TILE_SETS == 2u) { // a constant: the other loop is not compiled
        // Step s's tiles are in set s % 2. The barrier at the top of iteration s
        // means: set s % 2 is complete, and every subgroup is done with step
        // s - 1's products, so set (s + 1) % 2 may be overwritten.
        barrier(); // qk_xrow is set
        if (s0 < s1) { // uniform: a split of no steps (K < SK * NK) stores zeros
            qk_tile_load(wbase, row0, M, nb, s0 * NK, K, 0u);
            for (uint s = s0; s + 1u < s1; s++) {
                barrier();
                qk_tile_load(wbase, row0, M, nb, (s + 1u) * NK, K, ((s + 1u - s0) & 1u) * QK_TILE_UNITS);
                QK_STEP(((s - s0) & 1u) * QK_TILE_UNITS)
            }
            barrier();
            QK_STEP(((s1 - 1u - s0) & 1u) * QK_TILE_UNITS)
        }
    } else {
        for (uint s = s0; s < s1; s++) {
            barrier(); // the previous step's tiles are read (and qk_xrow is set)
            qk_tile_load(wbase, row0, M, nb, s * NK, K, 0u);
            barrier();
            QK_STEP(0u)
        }
    }
#endif

#ifdef QK_COOPMAT
    // The results go out a 16 x 16 block at a time through a scratch of the
    // subgroup's own over the tiles (QK_NW blocks of 256 floats, column-major),
    // so that the bounds checks and the output indirection are the scalar
    // path's and the tile's size is not bound by a shared copy of its results.
    barrier(); // every subgroup is done with the last tiles
    const uint lane = tid % 32u, scr = sg * QK_NW * CM * CM; // scratch, in floats
    if (busy) // unrolled: a dynamic index would put the accumulators in memory
        [[unroll]] for (uint i = 0; i < QK_WR; i++)
            [[unroll]] for (uint j = 0; j < QK_WC; j++) {
                [[unroll]] for (uint m = 0; m < QK_NW; m++)
                    QK_STORE_COLS(acc[m][i][j], qk_sm, (scr + m * CM * CM) / 4u, CM / 4u);
                subgroupMemoryBarrierShared();
                subgroupBarrier();
                const uint r0 = row0 + (sgr * QK_WR + i) * CM, c0 = (sgc * QK_WC + j) * CM;
                for (uint f = lane; f < CM * CM; f += 32u) { // consecutive lanes, consecutive rows
                    float v[QK_NW];
                    for (uint m = 0; m < QK_NW; m++) {
                        const uint w = scr + m * CM * CM + f;
                        v[m] = uintBitsToFloat(qk_sm[w / 4u][w % 4u]);
                    }
                    const uint yr = qk_yrow[c0 + f / CM];
                    if (yr != ~0u && r0 + f % CM < M) qk_store(yr, r0 + f % CM, v);
                }
                subgroupBarrier(); // read before the next block overwrites the scratch
            }
#else
    for (uint j = 0; j < QK_NC; j++) {
        const uint c = c0 + j * (WG / NR0);
        float v[QK_NW];
        for (uint m = 0; m < QK_NW; m++) v[m] = acc[m][j];
        if (qk_yrow[c] != ~0u && row0 + r < M) qk_store(qk_yrow[c], row0 + r, v);
    }
#endif
#ifdef QK_SPLIT
    qk_split_finish(row0);
#endif
}
#pragma qkgen instance end

void main() {
    QK_INSTANCE_RUN();
}
