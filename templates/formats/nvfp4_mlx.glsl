// MLX nvfp4 (planar): a group of 16 E2M1 codes is two words of w, element i in
// bits 4 i of the stream; y = e4m3(scale) * e2m1(q), here half the scale times
// the table of twice the E2M1 values (include/fp8.glsl, include/lut.glsl). A
// hook call is the whole group.
#include "include/nibbles.glsl"
#include "include/linear.glsl"
#include "include/lut.glsl"
#include "include/fp8.glsl"

void qk_format_init() {
    qk_lut_init(QK_E2M1X2_TABLE);
}

void qk_dequant_sub(uint m, uint g, uint sub, out float y[QK_SUB_N]) {
    const float s = 0.5 * qk_e4m3(qkp_scales(m, g, 0u));
    for (uint k = 0u; k < 2u; k++) {
        const uint w = qkp_w(m, g, k);
        for (uint i = 0u; i < 8u; i++) y[8u * k + i] = s * qk_lut[(w >> (4u * i)) & 15u];
    }
}
