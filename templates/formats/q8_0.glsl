// q8_0: y[j] = d * qs[j]. One hook call dequantizes 8 consecutive elements.
#include "include/nibbles.glsl"

uint qk_sub_elem(uint sub, uint i) {
    return sub * 8u + i;
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    ivec4 a = qk_i8x4(qkf_qs_u32(m, blk, sub * 8u));
    ivec4 b = qk_i8x4(qkf_qs_u32(m, blk, sub * 8u + 4u));
    for (int i = 0; i < 4; i++) {
        y[i] = d * float(a[i]);
        y[i + 4] = d * float(b[i]);
    }
}
