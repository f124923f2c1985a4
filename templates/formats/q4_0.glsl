// q4_0: y[j] = d * ((qs[j] & 15) - 8), y[j+16] = d * ((qs[j] >> 4) - 8).
// Split nibbles (include/split32.glsl): a hook call reads QK_SUB_N / 2 bytes of qs.
#include "include/nibbles.glsl"
#include "include/split32.glsl"

// One element (include/dequant_elem.glsl): element e is the low (e < 16) or
// high nibble of qs[e % 16].
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uint q = (qkf_qs(m, blk, e & 15u) >> (4u * (e >> 4))) & 15u;
    return qkf_d(m, blk) * (float(q) - 8.0);
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    float c[QK_SUB_N];
    qk_split32_f(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, 8.0, c);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = d * c[i];
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the 4-bit codes
// unsigned, their offset of 8 in b.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    qk_split32_codes8(m, blk, q);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    float d = qkf_d(m, blk);
    return vec3(d, d, -8.0 * d);
}
