// MLX mxfp4 (planar): a group of 32 E2M1 codes is four words of w, element i in
// bits 4 i of the stream; y = e8m0(scale) * e2m1(q), here half the scale times
// the table of twice the E2M1 values (include/fp8.glsl, include/lut.glsl). A
// hook call is the whole group, one 16-byte load.
#if defined(MMA_dot8) && !defined(BINDING_xq)
// the int8-dot kernels round their activations in the nibbles' order (see
// qk_codes8); rows of quantize_q8 (an xq binding) are in K order
#define QK_DOT8_EVEN_ODD 1
#endif
#include "include/nibbles.glsl"
#include "include/linear.glsl"
#include "include/lut.glsl"
#include "include/fp8.glsl"

void qk_format_init() {
    qk_lut_init(QK_E2M1X2_TABLE); // and, in the int8-dot kernels, qk_lut8
}

void qk_dequant_sub(uint m, uint g, uint sub, out float y[QK_SUB_N]) {
    const float s = 0.5 * qk_e8m0(qkp_scales(m, g, 0u));
    const uvec4 w = qkp_w4(m, g, 0u);
    for (uint k = 0u; k < 4u; k++)
        for (uint i = 0u; i < 8u; i++) y[8u * k + i] = s * qk_lut[(w[k] >> (4u * i)) & 15u];
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the codes are
// twice the E2M1 values (-12 .. 12, through qk_lut8) and a = e8m0(scale) / 2,
// b = 0. Word k of the group's 16-byte load gives code words 2k and 2k + 1.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uvec4 w = qkp_w4(m, blk, g);
    for (uint k = 0u; k < 4u; k++) {
        const uvec2 c = qk_lut8_nibbles(w[k]);
        q[2u * k] = c.x;
        q[2u * k + 1u] = c.y;
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float a = 0.5 * qk_e8m0(qkp_scales(m, blk, 0u));
    return vec3(a, a, 0.0);
}
#endif
