// matmul_tensor: the prefill product y[t][r] = sum_k W[r][k] * x[t][k] on
// GL_NV_cooperative_matrix2, and its MoE form matmul_id (a `tpe` binding).
//
// A workgroup owns an NR0 x NR1 output tile as one workgroup-scope
// accumulator and walks K in steps of NK: the driver lays the matrices out
// over the workgroup's subgroups and schedules the products, which the
// other matmul paths (matmul.comp) spell out by hand. Per step an NR0 x NK
// weight matrix (A) and an NK x NR1 activation matrix (B) come in one of three
// ways (the spec's `weights` axis):
//  - decode: A through coopMatLoadTensorNV with a decode callback, each
//    element from the format's one-element decoder (include/dequant_elem.glsl;
//    the layout's blocks are the format's, 1 x QK, and the decoder reads the
//    block through the reference the driver passes: staged: reference,
//    include/bytes.glsl), and B the same way from x (f32 or f16; dense: the layout
//    over x finds each element, MoE: gathered through the row offsets of the
//    tile's columns): the driver schedules every load, and the loop has no
//    barrier but the two around a format's hoisted scales (QK_ELEM_SCALES:
//    a tile's pairs decoded into shared memory once a block). Whole tiles
//    load through unclamped layouts, the edge tiles through clamped ones;
//  - inplace: both tiles staged as f16 in shared memory by
//    include/tile_load.glsl as matmul.comp stages them (the format's hooks
//    read the weights where they lie), then loaded from there;
//  - shared (QK_STAGE_SHARED): the same, the raw blocks loaded a step ahead
//    into registers and dequantized from shared memory.
// The staged tiles hold a step in the hooks' element order, the same for
// weights and activations (include/tile_load.glsl); the decode path's are in
// K order. Split K (a scratch binding) runs a split's share of the steps on
// any path and meets as matmul.comp's does (include/split_k.glsl).
//
// Rows past M (dense) or past the expert's M rows (MoE: the layout ends at
// the expert's last row) and steps past K load zeros (the layouts' constant
// clamp mode); the staged tiles clamp rows and zero steps as in matmul.comp.
//
// MoE form: grid z is the expert e; column c of the grid is the pair
// p = ids[e][c] = token * top_k + slot, for c < tpe[e]; a workgroup whose first
// column is at or past tpe[e] exits at once. The activation row is the
// token's (ne11 = 1: gate/up) or the pair's own (ne11 = top_k: down); the
// output row is p, so y is [tokens, top_k, M]. Experts are stacked in the
// weight buffer, expert e from row e * M.

#ifdef BINDING_tpe
#define QK_MOE 1
#endif
#ifdef BINDING_scratch
#define QK_SPLIT 1 // split K, as matmul.comp splits it (include/split_k.glsl)
#endif

// Output element offset of each column's row of y, or ~0u: not stored.
shared uint qk_yrow[NR1];

// (the generator expands each include once, where it first appears: so
// before any #if)
#include "include/dequant_elem.glsl"
#ifdef AXIS_weights_decode
// the element offset of each column's activation row
shared uint qk_xrow[NR1];
#else
// the tiles' sets (matmul.comp's rule: two at NK = 32, so that one barrier a
// step separates its products from the next step's staging; the raw blocks
// of staged: shared are a step ahead instead)
#if defined(QK_STAGE_SHARED)
#define QK_TILE_SETS 1u
#else
#define QK_TILE_SETS (NK == 32u ? 2u : 1u)
#endif
#define QK_SMEM_UNITS (QK_TILE_SETS * QK_TILE_UNITS)
#include "include/tile_load.glsl"
#endif

// What the callbacks need of main's state.
uint qk_nb;   // blocks per weight row
uint qk_row0; // the tile's first row (of the expert's M)

#ifdef AXIS_weights_decode
// The weights: the format's decoder reads the block through the reference
// the driver computes (include/bytes.glsl, QK_BLOCK_REF_READ). Where it
// cannot (a planar format's groups span several bindings; blocks of an odd
// size), the callback computes the block's index and the hooks read the
// bindings as elsewhere, leaving the reference unused; the loads then name
// the weights' buffer (a planar format's code plane), whose blocks or groups
// are at least 4 bytes, so that the block addresses the driver computes in
// its units (words) stay inside it.
#ifndef QK_BLOCK_REF_READ
layout(buffer_reference, std430, buffer_reference_align = 4) buffer QkBlockRef {
    uint word;
};
#endif
#ifdef QK_PLANAR
#define QK_W_BUF qkp_w_buf[0].data
#else
#define QK_W_BUF qk_w[0].data
#endif
// an activation (dense form: the layout's blocks are x's elements), f32 or
// f16 (activations: f16)
#ifdef ACT_f16
layout(buffer_reference, std430, buffer_reference_align = 2) buffer QkF16Ref {
    float16_t v;
};
#define QK_X_REF QkF16Ref
#else
layout(buffer_reference, std430, buffer_reference_align = 4) buffer QkF32Ref {
    float v;
};
#define QK_X_REF QkF32Ref
#endif
#endif

#ifdef AXIS_weights_decode
#ifdef QK_ELEM_SCALES
// The format's scale hoist: the (scale, min) pairs of the tile's rows in the
// current block column, QK_ELEM_SCALES a row, filled at each block boundary
// (qk_fill_scales); qk_tile_row is the tile's first row in the layout.
shared vec2 qk_esc[NR0 * QK_ELEM_SCALES];
uint qk_tile_row;

void qk_fill_scales(uint wrow0, uint row0, uint M, uint nb, uint blkcol) {
    barrier(); // the previous block column's loads are done
    for (uint i = gl_LocalInvocationID.x; i < NR0 * QK_ELEM_SCALES; i += WG) {
        const uint r = min(row0 + i / QK_ELEM_SCALES, M - 1u);
        qk_esc[i] = qk_elem_scale((wrow0 + r) * nb + blkcol, i % QK_ELEM_SCALES);
    }
    barrier();
}
#endif

float16_t qk_decode_w(const in QkBlockRef bl, const in uint blockCoords[2], const in uint coordInBlock[2]) {
#if defined(QK_BLOCK_REF_READ) && defined(QK_ELEM_SCALES)
    qk_blk = bl;
    const vec2 s = qk_esc[(blockCoords[0] - qk_tile_row) * QK_ELEM_SCALES + coordInBlock[1] / (QK / QK_ELEM_SCALES)];
    return float16_t(qk_dequant_elem_s(coordInBlock[1], s));
#elif defined(QK_BLOCK_REF_READ)
    qk_blk = bl;
    return float16_t(qk_dequant_elem(0u, 0u, coordInBlock[1]));
#else
    return float16_t(qk_dequant_elem(0u, blockCoords[0] * qk_nb + blockCoords[1], coordInBlock[1]));
#endif
}

#ifdef QK_MOE
// activations: the layout's rows are the tile's columns, gathered through
// their rows' offsets
float16_t qk_decode_x(const in QK_X_REF bl, const in uint blockCoords[2], const in uint coordInBlock[2]) {
    return float16_t(x[qk_xrow[blockCoords[0]] + blockCoords[1]]);
}
#else
// activations: the element itself, which the layout over x found
float16_t qk_decode_x(const in QK_X_REF bl, const in uint blockCoords[2], const in uint coordInBlock[2]) {
    return float16_t(bl.v);
}
#endif
#endif

#ifdef QK_MOE
// One result of the tile (r its row, c its column), stored through the
// column's output row.
float qk_put(const in uint r, const in uint c, const in float v) {
    const uint yr = qk_yrow[c];
    if (yr != ~0u && qk_row0 + r < pc.M) y[yr + qk_row0 + r] = v;
    return v;
}
#endif

#ifdef QK_SPLIT
#include "include/split_tile.glsl"

// One result of this split: into the split's part of the scratch.
float qk_put_split(const in uint r, const in uint c, const in float v) {
    const uint yr = qk_yrow[c];
    if (yr != ~0u && qk_row0 + r < pc.M)
        scratch[gl_WorkGroupID.z * pc.T * pc.M + yr + qk_row0 + r] = floatBitsToUint(v);
    return v;
}
#endif

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint M = pc.M, K = pc.K, tid = gl_LocalInvocationID.x;
    const uint row0 = gl_WorkGroupID.x * NR0, col0 = gl_WorkGroupID.y * NR1;
    qk_nb = K / QK;
    qk_row0 = row0;
#ifdef QK_MOE
    const uint e = gl_WorkGroupID.z, mpe = pc.max_per_expert;
    const uint ncols = min(tpe[e], mpe), npairs = pc.T * pc.top_k;
    if (col0 >= ncols) return; // the same for the whole workgroup, before any barrier
    // Columns past tpe[e] repeat its last pair: computed, never stored. Pair
    // indices are clamped so that a bad id cannot read out of bounds.
    for (uint c = tid; c < NR1; c += WG) {
        const uint p = min(ids[e * mpe + min(col0 + c, ncols - 1u)], npairs - 1u);
        const uint tok = p / pc.top_k, slot = p % pc.top_k;
        qk_xrow[c] = (tok * pc.ne11 + slot % pc.ne11) * K;
        qk_yrow[c] = col0 + c < ncols ? p * M : ~0u;
    }
    const uint wrow0 = e * M; // the expert's first row in the stacked weights
#else
    const uint T = pc.T;
    for (uint c = tid; c < NR1; c += WG) {
        qk_xrow[c] = min(col0 + c, T - 1u) * K;
        qk_yrow[c] = col0 + c < T ? (col0 + c) * M : ~0u;
    }
    const uint wrow0 = 0u;
#endif
    barrier();

    coopmat<float, gl_ScopeWorkgroup, NR0, NR1, gl_MatrixUseAccumulator> acc =
        coopmat<float, gl_ScopeWorkgroup, NR0, NR1, gl_MatrixUseAccumulator>(0.0);
    coopmat<float16_t, gl_ScopeWorkgroup, NR0, NK, gl_MatrixUseA> a;
    coopmat<float16_t, gl_ScopeWorkgroup, NK, NR1, gl_MatrixUseB> b;
    const uint nb = K / QK, wbase = wrow0 * nb;
    // this workgroup's steps: all of K, or its split's run of them
    const uint nsteps = (K + NK - 1u) / NK;
#ifdef QK_SPLIT
    const uint s0 = nsteps * gl_WorkGroupID.z / SK, s1 = nsteps * (gl_WorkGroupID.z + 1u) / SK;
#else
    const uint s0 = 0u, s1 = nsteps;
#endif
#if defined(AXIS_weights_decode)
    // x's layout is tokens x K (MoE: the tile's columns x K, gathered by the
    // callback); the B matrix is K x columns
#ifdef QK_MOE
    const uint xc0 = 0u, xrows = NR1, ntok = ncols;
#else
    const uint xc0 = col0, xrows = T, ntok = T;
#endif
    tensorViewNV<2, false, 1, 0> xt = createTensorViewNV(2, false, 1, 0);
#ifdef QK_ELEM_SCALES
    qk_tile_row = wrow0 + row0;
#define QK_BLOCK_START(k0) if ((k0) % QK == 0u) qk_fill_scales(wrow0, row0, M, nb, (k0) / QK)
#else
#define QK_BLOCK_START(k0)
#endif
    // The steps through layouts of the weights (the format's blocks, 1 x QK)
    // and of x in clamp mode MODE, U steps an iteration (U divides the steps:
    // whole tiles of K a multiple of U * NK, and no split, whose share of
    // the steps need not be).
    // A format that hoists its scales (q4_K, q5_K) walks whole tiles four
    // steps an iteration: at NK 64 a block's steps, the first of which fills
    // the scales (each step still tests for a block start: the compiler sees
    // which can be one).
    // One step at depth k: its scales where a block starts, A and B, the product.
#define QK_DECODE_STEP(k)                                                                          \
    {                                                                                              \
        QK_BLOCK_START(k);                                                                         \
        coopMatLoadTensorNV(a, QK_W_BUF, 0u, sliceTensorLayoutNV(lw, wrow0 + row0, NR0, k, NK),    \
                            qk_decode_w);                                                          \
        coopMatLoadTensorNV(b, x, 0u, sliceTensorLayoutNV(lx, xc0, NR1, k, NK), xt, qk_decode_x);  \
        acc = coopMatMulAdd(a, b, acc);                                                            \
    }
#if defined(QK_ELEM_SCALES) && !defined(QK_SPLIT)
#define QK_DECODE_UNROLL 4u
#define QK_ITER_K (QK_DECODE_UNROLL * NK) // K an iteration of a whole tile
#define QK_DECODE_LOOP(U)                                                                          \
    for (uint k0 = s0 * NK; k0 < s1 * NK; k0 += (U) * NK)                                          \
        [[unroll]] for (uint u = 0u; u < (U); u++) {                                               \
            const uint k = k0 + u * NK;                                                            \
            QK_DECODE_STEP(k)                                                                      \
        }
#else
#define QK_DECODE_UNROLL 1u
#define QK_ITER_K NK
#define QK_DECODE_LOOP(U) for (uint k0 = s0 * NK; k0 < s1 * NK; k0 += NK) QK_DECODE_STEP(k0)
#endif
#define QK_DECODE_STEPS(MODE, U)                                                                   \
    {                                                                                              \
        tensorLayoutNV<2, MODE> lw = createTensorLayoutNV(2, MODE);                                \
        lw = setTensorLayoutBlockSizeNV(lw, 1, QK);                                                \
        lw = setTensorLayoutDimensionNV(lw, wrow0 + M, K);                                         \
        tensorLayoutNV<2, MODE> lx = createTensorLayoutNV(2, MODE);                                \
        lx = setTensorLayoutDimensionNV(lx, xrows, K);                                             \
        QK_DECODE_LOOP(U)                                                                          \
    }
    // A whole tile (rows, columns and steps) loads through unclamped layouts
    // of the same dimensions: the same values without the bounds checks; the
    // edge tiles load zeros past them (constant clamp mode).
    if (row0 + NR0 <= M && col0 + NR1 <= ntok && K % QK_ITER_K == 0u)
        QK_DECODE_STEPS(gl_CooperativeMatrixClampModeUndefinedNV, QK_DECODE_UNROLL)
    else
        QK_DECODE_STEPS(gl_CooperativeMatrixClampModeConstantNV, 1u)
#elif defined(QK_STAGE_SHARED)
    // matmul.comp's staged loop: step s's raw weights are in raw set s % 2
    // when iteration s starts; step s + 1's loads are issued before step s's
    // dequantization and land in the other set after its products.
    // (steps are whole: the constraint K % NK == 0)
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
        coopMatLoad(a, qk_sm, 0u, TSV, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(b, qk_sm, QK_XT0, TSV, gl_CooperativeMatrixLayoutColumnMajor);
        acc = coopMatMulAdd(a, b, acc);
        if (s + 1u < s1) qk_raw_store((s + 1u - s0) & 1u);
    }
#else
    // Step s's tiles are in set s % QK_TILE_SETS: with two, the barrier at the
    // top of step s means set s % 2 is complete and every load of step s - 1
    // is done, so step s + 1 may be staged in the other set.
    if (QK_TILE_SETS == 2u && s0 < s1) qk_tile_load(wbase, row0, M, nb, s0 * NK, K, 0u);
    for (uint s = s0; s < s1; s++) {
        const uint t0 = ((s - s0) % QK_TILE_SETS) * QK_TILE_UNITS;
        barrier();
        if (QK_TILE_SETS == 2u) {
            if (s + 1u < s1)
                qk_tile_load(wbase, row0, M, nb, (s + 1u) * NK, K, ((s + 1u - s0) & 1u) * QK_TILE_UNITS);
        } else {
            qk_tile_load(wbase, row0, M, nb, s * NK, K, 0u);
            barrier();
        }
        coopMatLoad(a, qk_sm, t0, TSV, gl_CooperativeMatrixLayoutRowMajor);
        coopMatLoad(b, qk_sm, t0 + QK_XT0, TSV, gl_CooperativeMatrixLayoutColumnMajor);
        acc = coopMatMulAdd(a, b, acc);
    }
#endif

#if defined(QK_MOE)
    coopMatPerElementNV(acc, acc, qk_put);
#elif defined(QK_SPLIT)
    coopMatPerElementNV(acc, acc, qk_put_split);
    qk_split_finish(row0);
#else
    // y is T x M: the tile's transpose, clamped at T and M
    tensorViewNV<2, false, 1, 0> transpose = createTensorViewNV(2, false, 1, 0);
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> ly =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    ly = setTensorLayoutDimensionNV(ly, T, M);
    coopMatStoreTensorNV(acc, y, 0u, sliceTensorLayoutNV(ly, col0, NR1, row0, NR0), transpose);
#endif
}
