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
