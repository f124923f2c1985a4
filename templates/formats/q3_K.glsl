// q3_K: sixteen sub-blocks of 16 elements as in q2_K (2 low bits: crumb (s % 8) / 2
// of qs[32 * (s / 8) + 16 * (s % 2) ..]); the third bit is bit (s / 2) of
// hmask[16 * (s % 2) ..], and a clear bit subtracts 4. y = d * sc[s] * q with
// sc the 6-bit signed scales (include/kquant.glsl).
#include "include/nibbles.glsl"
#include "include/kquant.glsl"
#include "include/linear.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint base = blk * QK_BYTES;
    float dl = qkf_d(m, blk) * float(qk_scale_q3_K(m, base + QKF_scales_OFFSET, sub));
    uint qs = base + QKF_qs_OFFSET + 32u * (sub >> 3) + 16u * (sub & 1u);
    uint hm = base + QKF_hmask_OFFSET + 16u * (sub & 1u);
    uint shift = 2u * ((sub & 7u) >> 1), hbit = sub >> 1;
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        uvec4 q = qk_byte_bits(qk_u32(m, qs + 4u * k), shift, 2);
        uvec4 h = qk_byte_bits(qk_u32(m, hm + 4u * k), hbit, 1);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = dl * (float(q[i]) - (h[i] != 0u ? 0.0 : 4.0));
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g holds hook
// calls 2g and 2g + 1, half h = g / 4 and crumb j = g % 4 of qs[32h ..], the
// third bits bit g of hmask[0 .. 31], each 16 elements with its own scale
// (QK_DOT8_HALVES). The codes are signed, q - 4 per byte, borrow-free as
// ((q | 0x80) - 4) ^ 0x80.
#define QK_DOT8_HALVES 1
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint base = blk * QK_BYTES, qs = base + QKF_qs_OFFSET + 32u * (g >> 2), hm = base + QKF_hmask_OFFSET;
    const uint shift = 2u * (g & 3u);
    for (uint i = 0u; i < 8u; i++) {
        const uint lo = (qk_u32(m, qs + 4u * i) >> shift) & 0x03030303u;
        const uint hi = ((qk_u32(m, hm + 4u * i) >> g) & 0x01010101u) << 2;
        q[i] = (((lo | hi) | 0x80808080u) - 0x04040404u) ^ 0x80808080u;
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const uint base = blk * QK_BYTES, sc = base + QKF_scales_OFFSET;
    const float d = qkf_d(m, blk);
    return vec3(d * float(qk_scale_q3_K(m, sc, 2u * g)), d * float(qk_scale_q3_K(m, sc, 2u * g + 1u)), 0.0);
}
