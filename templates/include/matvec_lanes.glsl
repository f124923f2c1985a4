// The lane layout shared by the register-staged mat-vec templates
// (matvec_staged.comp, matvec_xq.comp): a workgroup owns RG = WG / TPR row
// groups of NR0 rows; the TPR lanes of a row group each take their own chunks
// of NK elements (NK / QK blocks), and their partial sums meet in shared
// memory at the end, so no subgroup operation (and no subgroup size) is
// assumed.

#define CHUNK_BLOCKS (NK / QK)
#define RG (WG / TPR)
// Under the swiglu fusion (stages/swiglu.glsl) an invocation keeps its rows'
// sums for both matrices: rows s = m * NR0 + r of acc, gate (m = 0) and up
// (m = 1).
#ifdef FUSION_swiglu
#define QK_LANES_NMAT QK_FUSE_NW
#else
#define QK_LANES_NMAT 1u
#endif
#define QK_LANES_ROWS (QK_LANES_NMAT * NR0)
#if defined(FUSION_swiglu) && defined(BINDING_scratch)
#error "split K with the swiglu fusion: the splits' scratch holds one matrix's sums"
#endif

// the lanes' partial sums; a template may use it before qk_lanes_store too
shared float qk_red[QK_LANES_ROWS * NR1][WG];

#include "include/matvec_cols.glsl"

// The workgroup's columns (qk_mv_columns: toks, ncols) and the first block of
// each of this invocation's NR0 rows (rows past M clamped, computed and
// never stored). False when the workgroup has no column: a routed expert's
// idle column tile, which the template leaves at once (uniformly).
bool qk_lanes_setup(uint lid, out uint rowblk[NR0], out uint toks[NR1], out uint ncols) {
    const uint row0 = (gl_WorkGroupID.x * RG + lid / TPR) * NR0, tok0 = gl_WorkGroupID.y * NR1;
    const uint expert_blk = qk_mv_columns(tok0, toks, ncols);
    [[unroll]] for (uint r = 0; r < NR0; r++)
        rowblk[r] = expert_blk + min(row0 + r, QK_MV_M - 1u) * (pc.K / QK);
    return tok0 < ncols;
}

#if defined(AXIS_slots_lanes)
#include "include/combine_lanes.glsl"
#elif defined(BINDING_scratch)
#include "include/split_k.glsl"
#endif

// Writes y from every lane's partial sums: one invocation per (row group,
// row, token) adds its row's TPR lanes.
//
// Split K (a scratch binding; grid z is the split, of SK): each split writes
// its sums to scratch[(z * ncols + t) * M + r] and counts itself in its
// tile's counter after them (scratch word SK * ncols * M + tile, zero before
// the dispatch); the last to arrive adds the SK sums in split order, so the
// result does not depend on the order of arrival, writes y and sets the
// counter back to zero for the next dispatch.
void qk_lanes_store(uint lid, float acc[QK_LANES_ROWS][NR1], uint ncols) {
    const uint M = QK_MV_M, tok0 = gl_WorkGroupID.y * NR1;
    [[unroll]] for (uint s = 0; s < QK_LANES_ROWS; s++)
        [[unroll]] for (uint t = 0; t < NR1; t++) qk_red[s * NR1 + t][lid] = acc[s][t];
    barrier();
    for (uint o = lid; o < RG * NR0 * NR1; o += WG) {
        const uint g = o / (NR0 * NR1), rt = o % (NR0 * NR1);
        float sum = 0.0;
        for (uint l = 0; l < TPR; l++) sum += qk_red[rt][g * TPR + l];
#ifdef FUSION_swiglu
        float up = 0.0; // the up projection's row, NR0 * NR1 sums on
        for (uint l = 0; l < TPR; l++) up += qk_red[NR0 * NR1 + rt][g * TPR + l];
        sum = qk_fuse_swiglu(sum, up);
#endif
        const uint r = (gl_WorkGroupID.x * RG + g) * NR0 + rt / NR1, t = tok0 + rt % NR1;
#if defined(AXIS_slots_lanes)
        if (r < M) qk_combine_put(t, r, sum);
#elif defined(BINDING_scratch)
        if (r < M && t < ncols) scratch[(gl_WorkGroupID.z * ncols + t) * M + r] = floatBitsToUint(sum);
#else
        if (r < M && t < ncols) y[qk_mv_out(t) * M + r] = sum;
#endif
    }
#if defined(AXIS_slots_lanes)
    qk_combine_finish(lid, tok0);
#elif defined(BINDING_scratch)
    const uint counter = SK * ncols * M + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (!qk_split_last(counter)) return;
    for (uint o = lid; o < RG * NR0 * NR1; o += WG) {
        const uint g = o / (NR0 * NR1), rt = o % (NR0 * NR1);
        const uint r = (gl_WorkGroupID.x * RG + g) * NR0 + rt / NR1, t = tok0 + rt % NR1;
        if (r >= M || t >= ncols) continue;
        float sum = 0.0;
        for (uint z = 0; z < SK; z++) sum += uintBitsToFloat(scratch[(z * ncols + t) * M + r]);
        y[qk_mv_out(t) * M + r] = sum;
    }
    qk_split_reset(counter);
#endif
}
