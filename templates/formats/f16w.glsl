// f16w: plain IEEE halves, y[j] = v[j]. A hook call unpacks QK_SUB_N consecutive
// halves from whole words (two a word), with no scale to apply.
#include "include/linear.glsl"

// One element (include/dequant_elem.glsl): the half at e.
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    return qkf_v(m, blk, e);
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    for (uint k = 0u; k < QK_SUB_N / 2u; k++) {
        vec2 h = unpackHalf2x16(qkf_v_u32(m, blk, sub * QK_SUB_N + 2u * k));
        y[2u * k] = h.x;
        y[2u * k + 1u] = h.y;
    }
}
