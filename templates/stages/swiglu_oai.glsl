// swiglu_oai stage: gpt-oss's clamped SwiGLU. It keeps the swiglu stage's
// contract with the templates (stages/swiglu.glsl: two weight matrices, gate
// and up, one read of the activations, qk_fuse_swiglu(gate, up) stored), so
// it defines FUSION_swiglu and every template's gate/up path serves it as is.

#define FUSION_swiglu 1
#define QK_FUSE_NW 2u

layout(constant_id = 64) const float QK_SWIGLU_ALPHA = 1.702;
layout(constant_id = 65) const float QK_SWIGLU_LIMIT = 7.0;

// For very negative g, e^(-alpha g) overflows to +inf and the quotient is
// -0, the right limit, as in swiglu's.
float qk_fuse_swiglu(float g, float u) {
    g = min(g, QK_SWIGLU_LIMIT);
    u = clamp(u, -QK_SWIGLU_LIMIT, QK_SWIGLU_LIMIT);
    return g / (1.0 + exp(-QK_SWIGLU_ALPHA * g)) * (u + 1.0);
}
