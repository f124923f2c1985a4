// nvfp4 (GGUF): four sub-blocks s of 16 elements, one hook call each; byte j of
// qs[8 s ..] holds element 16 s + j in its low nibble and 16 s + j + 8 in its
// high one, E2M1 codes; y = ue4m3(d[s]) * e2m1(q), here half the scale times
// the table of twice the E2M1 values (include/fp8.glsl, include/lut.glsl).
#include "include/nibbles.glsl"
#include "include/linear.glsl"
#include "include/lut.glsl"
#include "include/fp8.glsl"

void qk_format_init() {
    qk_lut_init(QK_E2M1X2_TABLE);
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const float s = 0.5 * qk_ue4m3(qkf_d(m, blk, sub));
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 8u * sub;
    for (uint k = 0u; k < 2u; k++) {
        const uint w = qk_u32(m, qs + 4u * k);
        for (uint i = 0u; i < 4u; i++) {
            y[4u * k + i] = s * qk_lut[(w >> (8u * i)) & 15u];
            y[8u + 4u * k + i] = s * qk_lut[(w >> (8u * i + 4u)) & 15u];
        }
    }
}
