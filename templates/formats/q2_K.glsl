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
