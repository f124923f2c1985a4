// q5_0: 5-bit values, the low 4 bits split across nibbles as q4_0 and bit 4 of
// element e in bit e of qh (a little-endian u32); y = d * (q - 16).
#include "include/nibbles.glsl"
#include "include/split32.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    uint qh = qkf_qh_u32(m, blk, 0u);
    uint c[QK_SUB_N];
    qk_split32_codes(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, c);
    for (uint i = 0u; i < QK_SUB_N; i++) {
        uint q = c[i] | (bitfieldExtract(qh, int(qk_sub_elem(sub, i)), 1) << 4);
        y[i] = d * (float(q) - 16.0);
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the 5-bit codes
// unsigned (0..31), their offset of 16 in b.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    qk_split32_codes8_5(m, blk, qkf_qh_u32(m, blk, 0u), q);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float d = qkf_d(m, blk);
    return vec3(d, d, -16.0 * d);
}
