// q4_1: y[j] = d * (qs[j] & 15) + m, y[j+16] = d * (qs[j] >> 4) + m.
// Split nibbles as q4_0; d and m come from one word (include/f16.glsl).
#include "include/nibbles.glsl"
#include "include/split32.glsl"
#include "include/f16.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    vec2 dm = qk_f16x2(m, blk * QK_BYTES + QKF_d_OFFSET);
    float c[QK_SUB_N];
    qk_split32_f(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, 0.0, c);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = fma(dm.x, c[i], dm.y);
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the 4-bit codes
// unsigned as q4_0's, the minimum in b.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    qk_split32_codes8(m, blk, q);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const vec2 dm = qk_f16x2(m, blk * QK_BYTES + QKF_d_OFFSET);
    return vec3(dm.x, dm.x, dm.y);
}
