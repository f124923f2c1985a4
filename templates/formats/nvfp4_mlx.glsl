// MLX nvfp4 (planar): a group of 16 E2M1 codes is two words of w, element i in
// bits 4 i of the stream; y = e4m3(scale) * e2m1(q), here half the scale times
// the table of twice the E2M1 values (include/fp8.glsl, include/lut.glsl). A
// hook call is the whole group.
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
    const float s = 0.5 * qk_e4m3(qkp_scales(m, g, 0u));
    for (uint k = 0u; k < 2u; k++) {
        const uint w = qkp_w(m, g, k);
        for (uint i = 0u; i < 8u; i++) y[8u * k + i] = s * qk_lut[(w >> (4u * i)) & 15u];
    }
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): a 32-element
// group is two blocks of 16, blk and blk + 1 (the kernel passes the first
// and g = 0), each with its scale (QK_DOT8_HALVES); the codes are twice the
// E2M1 values (-12 .. 12, through qk_lut8) and a = e4m3(scale) / 2, b = 0.
#define QK_DOT8_HALVES 1

void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    for (uint h = 0u; h < 2u; h++)
        for (uint k = 0u; k < 2u; k++) {
            const uvec2 c = qk_lut8_nibbles(qkp_w(m, blk + h, k));
            q[4u * h + 2u * k] = c.x;
            q[4u * h + 2u * k + 1u] = c.y;
        }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    return vec3(0.5 * qk_e4m3(qkp_scales(m, blk, 0u)), 0.5 * qk_e4m3(qkp_scales(m, blk + 1u, 0u)), 0.0);
}
#endif
