// moe_combine's lanes form (slots: lanes, specs/kernels/moe_combine.yaml):
// the down projection on the int8-dot lanes of matvec_xq.comp, its store
// being the combine. Grid x is the row tile, grid y the pair p = t * top_k +
// s, so a workgroup holds the tile's rows of one slot. Two meetings follow,
// each the last arrival of a counter in the scratch (zero before the
// dispatch, set back to zero by the last to arrive: include/last_arrival.glsl):
//   1. the last of a tile's top_k workgroups adds the tile's rows over the
//      slots in slot order (so the sum does not depend on the order of
//      arrival), adds the residual and writes y;
//   2. the last of a token's tiles takes the row's RMSNorm.
// Scratch words: [0, T) a counter per token, then T * RT counters per token
// and tile (RT = grid x), then each pair's weighted rows [T * top_k, N],
// then each token's finished rows [T, N].
#include "include/wg_reduce.glsl"
#include "include/last_arrival.glsl"

uint qk_combine_slots() { return pc.T + pc.T * gl_NumWorkGroups.x; }

// Row r of pair p, weighted by the pair's route_w.
void qk_combine_put(uint p, uint r, float sum) {
    scratch[qk_combine_slots() + p * pc.N + r] = floatBitsToUint(route_w[p] * sum);
}

// After every row of the workgroup is put: the two meetings.
void qk_combine_finish(uint lid, uint pair) {
    const uint N = pc.N, T = pc.T, TK = pc.top_k, t = pair / TK, tile = gl_WorkGroupID.x;
    const uint slots = qk_combine_slots(), rows = slots + T * TK * N;
    const uint tile_counter = T + t * gl_NumWorkGroups.x + tile;
    if (!qk_last_arrival(tile_counter, TK)) return;
    for (uint o = lid; o < RG * NR0; o += WG) {
        const uint r = tile * RG * NR0 + o;
        if (r >= N) break;
        float v = 0.0;
        for (uint s = 0; s < TK; s++) v += uintBitsToFloat(scratch[slots + (t * TK + s) * N + r]);
        v = qk_fuse_residual(t * N + r, v);
        y[t * N + r] = v;
        scratch[rows + t * N + r] = floatBitsToUint(v);
    }
    qk_arrival_reset(tile_counter);
    if (!qk_last_arrival(t, gl_NumWorkGroups.x)) return;
    float sumsq = 0.0;
    for (uint i = lid; i < N; i += WG) {
        const float v = uintBitsToFloat(scratch[rows + t * N + i]);
        sumsq = fma(v, v, sumsq);
    }
    const float scale = qk_rmsnorm_scale(qk_wg_sum(sumsq), N);
    for (uint i = lid; i < N; i += WG)
        qk_fuse_rmsnorm(t * N + i, i, uintBitsToFloat(scratch[rows + t * N + i]), scale);
    qk_arrival_reset(t);
}
