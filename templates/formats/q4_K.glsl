// q4_K: eight sub-blocks j of 32 elements, each half a hook call of 16: call s
// is sub-block j = s / 2, elements 16 * (s % 2) on; its values are the low
// (j even) or high (j odd) nibbles of qs[32 * (j / 2) + 16 * (s % 2) ..].
// y = d * sc(j) * q - dmin * mn(j), 6-bit sc and mn from include/kquant.glsl.
#include "include/nibbles.glsl"
#include "include/f16.glsl"
#include "include/kquant.glsl"
#include "include/linear.glsl"

// One element (include/dequant_elem.glsl): element e is in sub-block j = e / 32,
// the low (j even) or high nibble of qs[32 * (j / 2) + e % 32].
// Element e of the block at byte base given its sub-block's (scale, min) s.
float qk_q4_K_elem(uint m, uint base, uint e, vec2 s) {
    const uint j = e >> 5;
    const uint q = (qk_u8(m, base + QKF_qs_OFFSET + 32u * (j >> 1) + (e & 31u)) >> (4u * (j & 1u))) & 15u;
    return s.x * float(q) - s.y;
}

#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uint base = blk * QK_BYTES;
    return qk_q4_K_elem(m, base, e, qk_k4_scale_min(m, base, e >> 5));
}

#ifdef QK_K4_HEAD_WORDS
// The decode path's scale hoist (matmul_tensor.comp; the pairs from
// kquant.glsl's qk_elem_scale): the tile's rows' eight (scale, min) pairs of
// a block are decoded once into shared memory, and an element then costs its
// nibble.
#define QK_ELEM_SCALES 8u
float qk_dequant_elem_s(uint e, vec2 s) {
    return qk_q4_K_elem(0u, 0u, e, s);
}
#endif

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint base = blk * QK_BYTES, j = sub >> 1;
    const vec2 s = qk_k4_scale_min(m, base, j);
    const float dl = s.x, ml = s.y;
    uint qs = base + QKF_qs_OFFSET + 32u * (j >> 1) + 16u * (sub & 1u);
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        uvec4 q = qk_byte_bits(qk_u32(m, qs + 4u * k), 4u * (j & 1u), 4);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = dl * float(q[i]) - ml;
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g is
// sub-block j = g, its codes the low (g even) or high nibbles of
// qs[32 * (g / 2) ..], w = d * sc(g) * q - dmin * mn(g).
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 32u * (g >> 1);
    for (uint i = 0u; i < 8u; i++) q[i] = (qk_u32(m, qs + 4u * i) >> (4u * (g & 1u))) & 0x0f0f0f0fu;
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    return qk_k4_affine8(m, blk, g);
}

#ifdef QK_PART_N
// Parts of a block: staged by include/kquant.glsl, whose layout makes a
// part's groups the block's first ones.
void qk_part_codes8(uint slot, uint p, uint g, out uint q[8]) {
    qk_codes8(slot, 0u, g, q);
}
#endif
