// shared stage: the output of the MoE layer's shared expert, computed apart,
// added to the routed sum with the residual (DeepSeek-V3's shared experts;
// under QK_SHARED_GATED scaled by sigmoid of the token's gate logit first,
// Qwen2-MoE's). It takes the residual stage's place: every moe_combine form
// calls qk_fuse_residual(t * N + i, v) once an element, so none changes.
//
// Bindings: shared_y [T, N]; shared_gate [T] (gated).
#define QK_STAGE_RESIDUAL 1

float qk_fuse_residual(uint idx, float v) {
#ifdef QK_SHARED_GATED
    const float g = 1.0 / (1.0 + exp(-shared_gate[idx / pc.N]));
    return residual[idx] + fma(g, shared_y[idx], v);
#else
    return residual[idx] + (v + shared_y[idx]);
#endif
}
