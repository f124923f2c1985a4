// q5_K: q4_K's sub-blocks, scales and nibbles, plus a fifth bit: element l of
// a 64-element chunk pair takes bit j (its sub-block) of qh[l % 32], so hook
// call s reads bit s / 2 of qh[16 * (s % 2) ..].
#include "include/nibbles.glsl"
#include "include/f16.glsl"
#include "include/kquant.glsl"
#include "include/linear.glsl"

// The four 5-bit values of sub-block j whose nibbles are at byte qs and high
// bits at byte qh, one in the low bits of each byte of the word.
uint qk_q5_K_word(uint m, uint qs, uint qh, uint j) {
    uint lo = (qk_u32(m, qs) >> (4u * (j & 1u))) & 0x0f0f0f0fu;
    uint hi = ((qk_u32(m, qh) >> j) & 0x01010101u) << 4;
    return lo | hi;
}

#ifdef QK_K4_HEAD_WORDS
// The decode path's scale hoist (matmul_tensor.comp; the pairs from
// kquant.glsl's qk_elem_scale), as q4_K's: element e of sub-block j = e / 32
// is q4_K's nibble plus bit j of qh[e % 32].
#define QK_ELEM_SCALES 8u
float qk_dequant_elem_s(uint e, vec2 s) {
    const uint j = e >> 5, l = e & 31u;
    const uint lo = (qk_u8(0u, QKF_qs_OFFSET + 32u * (j >> 1) + l) >> (4u * (j & 1u))) & 15u;
    const uint hi = (qk_u8(0u, QKF_qh_OFFSET + l) >> j) & 1u;
    return s.x * float(lo | (hi << 4)) - s.y;
}
#endif

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint base = blk * QK_BYTES, j = sub >> 1;
    const vec2 s = qk_k4_scale_min(m, base, j);
    const float dl = s.x, ml = s.y;
    uint qs = base + QKF_qs_OFFSET + 32u * (j >> 1) + 16u * (sub & 1u);
    uint qh = base + QKF_qh_OFFSET + 16u * (sub & 1u);
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        vec4 q = qk_byte_bits_f(qk_q5_K_word(m, qs + 4u * k, qh + 4u * k, j), 0u, 5u, 0.0);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = fma(dl, q[i], -ml);
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g is
// sub-block j = g, q4_K's nibbles plus bit g of qh[0 .. 32) as the fifth.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint base = blk * QK_BYTES;
    const uint qs = base + QKF_qs_OFFSET + 32u * (g >> 1), qh = base + QKF_qh_OFFSET;
    for (uint i = 0u; i < 8u; i++) q[i] = qk_q5_K_word(m, qs + 4u * i, qh + 4u * i, g);
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    return qk_k4_affine8(m, blk, g);
}

#ifdef QK_PART_N
// Parts of a block: staged by include/kquant.glsl, whose layout makes a
// part's groups the block's first ones; the fifth bit is the block's
// sub-block's (j & 1 = g & 1: a part starts at an even sub-block).
void qk_part_codes8(uint slot, uint p, uint g, out uint q[8]) {
    const uint qs = QKF_qs_OFFSET + 32u * (g >> 1), j = qk_k4_part_sub(p, g);
    for (uint i = 0u; i < 8u; i++) q[i] = qk_q5_K_word(slot, qs + 4u * i, QKF_qh_OFFSET + 4u * i, j);
}
#endif
