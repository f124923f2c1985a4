// moe_combine: the end of an MoE block, y[t][i] = sum_s route_w[t][s] * slots[t][s][i],
// one workgroup per token; the residual and rmsnorm stages come in as fusions.
//
// slots is the down projection's output [T, top_k, N] in its natural place, so
// no reshuffle precedes this pass. The sum over slots runs in slot order, the
// same for every element, so results do not depend on the workgroup size.
#include "include/wg_reduce.glsl"

void main() {
    const uint N = pc.N, TK = pc.top_k, t = gl_WorkGroupID.x;
    float sumsq = 0.0;
    for (uint i = gl_LocalInvocationID.x; i < N; i += WG) {
        float v = 0.0;
        for (uint s = 0; s < TK; s++) v = fma(route_w[t * TK + s], slots[(t * TK + s) * N + i], v);
#ifdef QK_STAGE_RESIDUAL
        v = qk_fuse_residual(t * N + i, v);
#endif
        y[t * N + i] = v;
        sumsq = fma(v, v, sumsq);
    }
#ifdef QK_STAGE_RMSNORM
    // Each invocation reads back only the elements it wrote itself.
    const float scale = qk_rmsnorm_scale(qk_wg_sum(sumsq), N);
    for (uint i = gl_LocalInvocationID.x; i < N; i += WG) qk_fuse_rmsnorm(t * N + i, i, y[t * N + i], scale);
#endif
}
