// q2_K: sixteen sub-blocks of 16 elements; sub-block s is one hook call. Its
// values are crumb (s % 8) / 2 of the 16 bytes qs[32 * (s / 8) + 16 * (s % 2) ..],
// its scale byte scales[s] holds a 4-bit scale and a 4-bit min:
// y = d * (sc & 15) * q - dmin * (sc >> 4).
#include "include/nibbles.glsl"
#include "include/f16.glsl"
#include "include/linear.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint base = blk * QK_BYTES;
    vec2 dm = qk_f16x2(m, base + QKF_d_OFFSET); // d, dmin
    uint sc = qkf_scales(m, blk, sub);
    float dl = dm.x * float(sc & 15u), ml = dm.y * float(sc >> 4);
    uint qs = base + QKF_qs_OFFSET + 32u * (sub >> 3) + 16u * (sub & 1u);
    uint shift = 2u * ((sub & 7u) >> 1);
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        uvec4 q = qk_byte_bits(qk_u32(m, qs + 4u * k), shift, 2);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = dl * float(q[i]) - ml;
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g holds hook
// calls 2g and 2g + 1, crumb j = g % 4 of qs[32 * (g / 4) ..], each 16
// elements with its own scale (QK_DOT8_HALVES) and its own minimum
// (QK_DOT8_MINS: the affine is (a, a', b, b'), b' for elements 16-31). The
// codes are unsigned (0..3).
#define QK_DOT8_HALVES 1
#define QK_DOT8_MINS 1
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 32u * (g >> 2), shift = 2u * (g & 3u);
    for (uint i = 0u; i < 8u; i++) q[i] = (qk_u32(m, qs + 4u * i) >> shift) & 0x03030303u;
}

vec4 qk_affine8(uint m, uint blk, uint g) {
    const uint base = blk * QK_BYTES;
    const vec2 dm = qk_f16x2(m, base + QKF_d_OFFSET); // d, dmin
    const uint sc = qk_u16(m, base + QKF_scales_OFFSET + 2u * g); // scales[2g], scales[2g + 1]
    return vec4(dm.x * float(sc & 15u), dm.x * float((sc >> 8) & 15u), -dm.y * float((sc >> 4) & 15u),
                -dm.y * float(sc >> 12));
}
