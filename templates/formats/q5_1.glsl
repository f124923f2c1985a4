// q5_1: 5-bit values as q5_0 (nibbles in qs, bit 4 of element e in bit e of qh),
// y = d * q + m; d and m come from one word.
#include "include/nibbles.glsl"
#include "include/split32.glsl"
#include "include/f16.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    vec2 dm = qk_f16x2(m, blk * QK_BYTES + QKF_d_OFFSET);
    uint qh = qkf_qh_u32(m, blk, 0u);
    uint c[QK_SUB_N];
    qk_split32_codes(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, c);
    for (uint i = 0u; i < QK_SUB_N; i++) {
        uint q = c[i] | (bitfieldExtract(qh, int(qk_sub_elem(sub, i)), 1) << 4);
        y[i] = fma(dm.x, float(q), dm.y);
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the 5-bit codes
// unsigned (0..31) as q5_0's, the minimum in b.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    qk_split32_codes8_5(m, blk, qkf_qh_u32(m, blk, 0u), q);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const vec2 dm = qk_f16x2(m, blk * QK_BYTES + QKF_d_OFFSET);
    return vec3(dm.x, dm.x, dm.y);
}
