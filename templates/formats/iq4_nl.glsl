// iq4_nl: split nibbles as q4_0, each an index into a fixed non-linear table T;
// y = d * T[q]. T is packed in four words of signed bytes and read from a
// shared copy in floats (include/lut.glsl).
#include "include/nibbles.glsl"
#include "include/split32.glsl"
#include "include/lut.glsl"

// T = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
const uvec4 QK_IQ4_NL_TABLE = uvec4(0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u);

void qk_format_init() {
    qk_lut_init(QK_IQ4_NL_TABLE); // and, in the int8-dot kernels, qk_lut8
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    uint c[QK_SUB_N];
    qk_split32_codes(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, c);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = d * qk_lut[c[i]];
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the table's
// values are the codes, y = d * code.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    qk_lut8_codes8(m, blk, q);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float d = qkf_d(m, blk);
    return vec3(d, d, 0.0);
}
#endif
