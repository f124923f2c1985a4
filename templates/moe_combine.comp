// moe_combine: the end of an MoE block, y[t][i] = sum_s route_w[t][s] * slots[t][s][i],
// one workgroup per token (slots given), or with the down projection inside
// (slots computed, below main); the residual and rmsnorm stages come in as
// fusions.
//
// slots is the down projection's output [T, top_k, N] in its natural place, so
// no reshuffle precedes this pass. The sum over slots runs in slot order, the
// same for every element, so results do not depend on the workgroup size.
//
// One workgroup does a whole row, so the kernel is bound by memory latency,
// not bandwidth. Each invocation takes MC_PER elements a step (2048 / WG); for each slot
// (in order) it issues the MC_PER loads of the step at once, in an unrolled
// loop, before the sums use them: a chain of top_k loads in flight together
// instead of MC_PER * top_k one after another. A row of N <= MC_PER * WG is
// one step, and the RMSNorm then scales the sums it still holds in registers.
#include "include/wg_reduce.glsl"

#ifdef AXIS_slots_computed
// The down projection inside (slots computed): grid x splits the N rows into
// tiles of NR0, grid y is the token. The workgroup's subgroups take its rows
// in turn; a subgroup's lanes take the row's sub-blocks over all top_k slots
// at once (slot-major, four hook calls' loads in flight together), each
// product weighted by its slot's route_w, so the weighted sum over slots is
// one subgroup sum a row. An expert id past E is clamped to E - 1. Each
// element goes to y and to the scratch; then the workgroup counts itself in
// the token's counter (scratch[t], zero before the dispatch) and only the
// last of the token's workgroups to arrive goes on: it reads the row back
// from the (coherent) scratch, takes its RMSNorm and sets the counter back to
// zero for the next dispatch (include/last_arrival.glsl).
#include "include/last_arrival.glsl"

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint N = pc.N, K = pc.K, TK = pc.top_k, t = gl_WorkGroupID.y;
    const uint nb = K / QK, nsub = nb * QK_SUBS, total = TK * nsub, SG = gl_SubgroupSize;
    const uint lane = gl_SubgroupInvocationID, lid = gl_LocalInvocationIndex;
    for (uint r = gl_SubgroupID; r < NR0; r += gl_NumSubgroups) {
        const uint n = gl_WorkGroupID.x * NR0 + r;
        const uint row = min(n, N - 1u); // past N: computed, not stored
        float acc = 0.0;
        for (uint c0 = lane; c0 < total; c0 += 4u * SG) {
            [[unroll]] for (uint u = 0; u < 4u; u++) {
                const uint c = min(c0 + u * SG, total - 1u), s = c / nsub, cs = c % nsub;
                const uint kb = cs / QK_SUBS, sub = cs % QK_SUBS, pair = t * TK + s;
                const uint e = min(uint(ids[pair]), pc.E - 1u); // out of range: clamped
                float w[QK_SUB_N];
                qk_dequant_sub(0u, (e * N + row) * nb + kb, sub, w);
                float part = 0.0;
                for (uint i = 0; i < QK_SUB_N; i++)
                    part = fma(w[i], x[pair * K + kb * QK + qk_sub_elem(sub, i)], part);
                acc += c0 + u * SG < total ? route_w[pair] * part : 0.0;
            }
        }
        float v = subgroupAdd(acc);
#ifdef QK_STAGE_RESIDUAL
        v = qk_fuse_residual(t * N + row, v);
#endif
        if (subgroupElect() && n < N) {
            y[t * N + n] = v;
            scratch[pc.T + t * N + n] = floatBitsToUint(v);
        }
    }
#ifdef QK_STAGE_RMSNORM
    if (!qk_last_arrival(t, gl_NumWorkGroups.x)) return;
    float sumsq = 0.0;
    for (uint i = lid; i < N; i += WG) {
        const float v = uintBitsToFloat(scratch[pc.T + t * N + i]);
        sumsq = fma(v, v, sumsq);
    }
    const float scale = qk_rmsnorm_scale(qk_wg_sum(sumsq), N);
    for (uint i = lid; i < N; i += WG)
        qk_fuse_rmsnorm(t * N + i, i, uintBitsToFloat(scratch[pc.T + t * N + i]), scale);
    qk_arrival_reset(t);
#endif
}
#else
// elements an invocation holds per step: a row of 2048 in one step
const uint MC_PER = 2048u / WG; // WG <= 1024 (the spec)

void main() {
    const uint N = pc.N, TK = pc.top_k, t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    float v[MC_PER];
    float sumsq = 0.0;
    for (uint base = 0; base < N; base += MC_PER * WG) {
        uint idx[MC_PER]; // past the end: clamped, computed, never stored
        [[unroll]] for (uint j = 0; j < MC_PER; j++) {
            idx[j] = min(base + j * WG + lid, N - 1u);
            v[j] = 0.0;
        }
        for (uint s = 0; s < TK; s++) {
            const float w = route_w[t * TK + s];
            float u[MC_PER];
            [[unroll]] for (uint j = 0; j < MC_PER; j++) u[j] = slots[(t * TK + s) * N + idx[j]];
            [[unroll]] for (uint j = 0; j < MC_PER; j++) v[j] = fma(w, u[j], v[j]);
        }
        [[unroll]] for (uint j = 0; j < MC_PER; j++) {
#ifdef QK_STAGE_RESIDUAL
            v[j] = qk_fuse_residual(t * N + idx[j], v[j]);
#endif
            if (base + j * WG + lid < N) {
                y[t * N + idx[j]] = v[j];
                sumsq = fma(v[j], v[j], sumsq);
            }
        }
    }
#ifdef QK_STAGE_RMSNORM
    const float scale = qk_rmsnorm_scale(qk_wg_sum(sumsq), N);
    if (N <= MC_PER * WG) {
        [[unroll]] for (uint j = 0; j < MC_PER; j++) {
            const uint i = j * WG + lid;
            if (i < N) qk_fuse_rmsnorm(t * N + i, i, v[j], scale);
        }
    } else { // each invocation reads back only the elements it wrote itself
        for (uint i = lid; i < N; i += WG) qk_fuse_rmsnorm(t * N + i, i, y[t * N + i], scale);
    }
#endif
}
#endif
