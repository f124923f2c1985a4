// moe_combine: the end of an MoE block, y[t][i] = sum_s route_w[t][s] * slots[t][s][i],
// one workgroup per token; the residual and rmsnorm stages come in as fusions.
//
// slots is the down projection's output [T, top_k, N] in its natural place, so
// no reshuffle precedes this pass. The sum over slots runs in slot order, the
// same for every element, so results do not depend on the workgroup size.
//
// One workgroup does a whole row, so the kernel is bound by memory latency,
// not bandwidth: each invocation takes MC_PER elements of a step at once and
// every load of a step (slots, residual) is issued before the first sum needs
// one, in unrolled loops of constant bounds. A row of N <= MC_PER * WG is one
// step, and the RMSNorm then scales the sums it still holds in registers.
#include "include/wg_reduce.glsl"

#define MC_PER 8u    // elements an invocation holds per step
#define MC_MAX_K 16u // slots summed in one unrolled loop

void main() {
    const uint N = pc.N, TK = pc.top_k, t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    float w[MC_MAX_K];
    for (uint s = 0; s < MC_MAX_K; s++) w[s] = s < TK ? route_w[t * TK + s] : 0.0;
    float v[MC_PER];
    float sumsq = 0.0;
    for (uint base = 0; base < N; base += MC_PER * WG) {
        for (uint j = 0; j < MC_PER; j++) {
            const uint i = min(base + j * WG + lid, N - 1u); // past the end: computed, not stored
            float a = 0.0;
            for (uint s = 0; s < MC_MAX_K; s++)
                if (s < TK) a = fma(w[s], slots[(t * TK + s) * N + i], a);
#ifdef QK_STAGE_RESIDUAL
            a = qk_fuse_residual(t * N + i, a);
#endif
            v[j] = a;
        }
        for (uint j = 0; j < MC_PER; j++) {
            const uint i = base + j * WG + lid;
            if (i < N) {
                y[t * N + i] = v[j];
                sumsq = fma(v[j], v[j], sumsq);
            }
        }
    }
#ifdef QK_STAGE_RMSNORM
    const float scale = qk_rmsnorm_scale(qk_wg_sum(sumsq), N);
    if (N <= MC_PER * WG) {
        for (uint j = 0; j < MC_PER; j++) {
            const uint i = j * WG + lid;
            if (i < N) qk_fuse_rmsnorm(t * N + i, i, v[j], scale);
        }
    } else { // each invocation reads back only the elements it wrote itself
        for (uint i = lid; i < N; i += WG) qk_fuse_rmsnorm(t * N + i, i, y[t * N + i], scale);
    }
#endif
}
