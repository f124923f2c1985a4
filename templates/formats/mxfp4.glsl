// mxfp4: split nibbles as q4_0, each an E2M1 code; y = 2^(e - 128) * T[q] with T
// twice the E2M1 values, so the product is the standard MXFP4 value.
#include "include/nibbles.glsl"
#include "include/split32.glsl"
#include "include/lut.glsl"

// T = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12}
const uvec4 QK_MXFP4_TABLE = uvec4(0x03020100u, 0x0c080604u, 0xfdfeff00u, 0xf4f8fafcu);

void qk_format_init() {
    qk_lut_init(QK_MXFP4_TABLE); // and, in the int8-dot kernels, qk_lut8
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float s = ldexp(1.0, int(qkf_e(m, blk)) - 128);
    uint c[QK_SUB_N];
    qk_split32_codes(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, c);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = s * qk_lut[c[i]];
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the table's
// values (twice E2M1) are the codes, y = 2^(e - 128) * code.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    qk_lut8_codes8(m, blk, q);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float s = ldexp(1.0, int(qkf_e(m, blk)) - 128);
    return vec3(s, s, 0.0);
}
#endif
