// q8_0: y[j] = d * qs[j]. A hook call dequantizes QK_SUB_N consecutive elements,
// four signed bytes per word read.
#include "include/nibbles.glsl"
#include "include/linear.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        ivec4 q = qk_i8x4(qkf_qs_u32(m, blk, sub * QK_SUB_N + 4u * k));
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = d * float(q[i]);
    }
}
