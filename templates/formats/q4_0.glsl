// q4_0: y[j] = d * ((qs[j] & 15) - 8), y[j+16] = d * ((qs[j] >> 4) - 8).
// One hook call dequantizes 8 elements: four bytes of qs, low and high nibbles.
#include "include/nibbles.glsl"

uint qk_sub_elem(uint sub, uint i) {
    return (i < 4u ? 0u : 16u) + sub * 4u + (i & 3u);
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    uint w = qkf_qs_u32(m, blk, sub * 4u);
    uvec4 lo = qk_nibbles(w, false), hi = qk_nibbles(w, true);
    for (int i = 0; i < 4; i++) {
        y[i] = d * (float(lo[i]) - 8.0);
        y[i + 4] = d * (float(hi[i]) - 8.0);
    }
}
