// q8_0: y[j] = d * qs[j]. A hook call dequantizes QK_SUB_N consecutive elements,
// four signed bytes per word read, converted without I2F (include/nibbles.glsl).
#include "include/nibbles.glsl"
#include "include/linear.glsl"

// One element (include/dequant_elem.glsl): d times the signed byte qs[e].
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    return qkf_d(m, blk) * float(bitfieldExtract(int(qkf_qs(m, blk, e)), 0, 8));
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        // the sign bits flipped, each byte is q + 128
        uint w = qkf_qs_u32(m, blk, sub * QK_SUB_N + 4u * k) ^ 0x80808080u;
        vec4 q = qk_byte_bits_f(w, 0u, 8u, 128.0);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = d * q[i];
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the codes as stored.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    for (uint i = 0u; i < 8u; i++) q[i] = qkf_qs_u32(m, blk, 4u * i);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    float d = qkf_d(m, blk);
    return vec3(d, d, 0.0);
}
