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
