// moe_combine: the end of an MoE block, y[t][i] = sum_s route_w[t][s] * slots[t][s][i],
// one workgroup per token; the residual and rmsnorm stages come in as fusions.
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
