// MLX mxfp8 (planar): a group of 32 E4M3 values, one byte each (w as bytes,
// four to a word, element i in byte i); y = e8m0(scale) * e4m3(w[i]). A hook
// call is the whole group: eight words.
#include "include/linear.glsl"
#include "include/fp8.glsl"

void qk_dequant_sub(uint m, uint g, uint sub, out float y[QK_SUB_N]) {
    const float s = qk_e8m0(qkp_scales(m, g, 0u));
    for (uint k = 0u; k < 8u; k++) {
        const uint w = qkp_w_u32(m, g, k);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = s * qk_e4m3((w >> (8u * i)) & 0xffu);
    }
}
