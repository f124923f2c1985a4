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
