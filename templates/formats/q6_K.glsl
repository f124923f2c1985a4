// q6_K: sixteen sub-blocks of 16 elements, one per hook call, each with a
// signed 8-bit scale. Call s is in half h = s / 8 and quarter t = (s % 8) / 2 of
// that half: the low 4 bits are nibble t / 2 of ql[64h + 32 * (t % 2) + 16 * (s % 2) ..],
// the high 2 bits crumb t of qh[32h + 16 * (s % 2) ..]; y = d * scales[s] * (q - 32).
#include "include/nibbles.glsl"
#include "include/linear.glsl"

// One element (include/dequant_elem.glsl): element e is in half h = e / 128,
// quarter t = e % 128 / 32, at l = e % 32 of it: the low bits are nibble t / 2
// of ql[64h + 32 * (t % 2) + l], the high ones crumb t of qh[32h + l], the
// scale scales[e / 16].
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uint h = e >> 7, t = (e >> 5) & 3u, l = e & 31u;
    const uint lo = (qkf_ql(m, blk, 64u * h + 32u * (t & 1u) + l) >> (4u * (t >> 1))) & 15u;
    const uint hi = (qkf_qh(m, blk, 32u * h + l) >> (2u * t)) & 3u;
    return qkf_d(m, blk) * float(qkf_scales(m, blk, e >> 4)) * (float(lo | (hi << 4)) - 32.0);
}

// The four 6-bit values of quarter t whose low bits are at byte ql and high
// bits at byte qh, one in the low bits of each byte of the word.
uint qk_q6_K_word(uint m, uint ql, uint qh, uint t) {
    uint lo = (qk_u32(m, ql) >> (4u * (t >> 1))) & 0x0f0f0f0fu;
    uint hi = ((qk_u32(m, qh) >> (2u * t)) & 0x03030303u) << 4;
    return lo | hi;
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint base = blk * QK_BYTES, h = sub >> 3, t = (sub & 7u) >> 1, l0 = 16u * (sub & 1u);
    float dl = qkf_d(m, blk) * float(qkf_scales(m, blk, sub));
    uint ql = base + QKF_ql_OFFSET + 64u * h + 32u * (t & 1u) + l0;
    uint qh = base + QKF_qh_OFFSET + 32u * h + l0;
    for (uint k = 0u; k < QK_SUB_N / 4u; k++) {
        vec4 q = qk_byte_bits_f(qk_q6_K_word(m, ql + 4u * k, qh + 4u * k, t), 0u, 6u, 32.0);
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = dl * q[i];
    }
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g holds hook
// calls 2g and 2g + 1, half h = g / 4 and quarter t = g % 4, each 16 elements
// with its own scale (QK_DOT8_HALVES). The codes are signed: q - 32 per byte,
// borrow-free as ((q | 0x80) - 32) ^ 0x80.
#define QK_DOT8_HALVES 1
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint base = blk * QK_BYTES, h = g >> 2, t = g & 3u;
    const uint ql = base + QKF_ql_OFFSET + 64u * h + 32u * (t & 1u), qh = base + QKF_qh_OFFSET + 32u * h;
    for (uint i = 0u; i < 8u; i++)
        q[i] = ((qk_q6_K_word(m, ql + 4u * i, qh + 4u * i, t) | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float d = qkf_d(m, blk);
    return vec3(d * float(qkf_scales(m, blk, 2u * g)), d * float(qkf_scales(m, blk, 2u * g + 1u)), 0.0);
}

#ifdef QK_PART_N
// Parts of a block (parts: 2 in the YAML; templates/matvec_xq.comp): half p
// (elements 128 p on) is ql[64 p ..], qh[32 p ..] and scales[8 p ..], with d.
// It stages them as words 0-15, 16-23, 24-25 and 26 (d in its low half), and
// its groups g are quarters t = g of that half. The blocks are 210 bytes, so
// every other one starts in the middle of a word: each staged word joins two
// loaded ones (shift s of 0 or 16 bits).

// n words from word w on, shifted down by s bits, into qk_stage[slot][at ..]
// (the next word's bits go up by 32 - s in two shifts: s = 0 would be one of 32)
#define QK6_STAGE_RUN(slot, m, w, s, at, n)                                                  \
    {                                                                                        \
        uint a_ = qk_w[m].data[w];                                                           \
        [[unroll]] for (uint i_ = 0u; i_ < (n); i_++) {                                      \
            const uint b_ = qk_w[m].data[(w) + i_ + 1u];                                     \
            qk_stage[slot][(at) + i_] = (a_ >> (s)) | ((b_ << 1) << (31u - (s)));            \
            a_ = b_;                                                                         \
        }                                                                                    \
    }

void qk_stage_part(uint slot, uint m, uint blk, uint p) {
    const uint b0 = blk * QK_BYTES, w0 = b0 >> 2, s = (b0 & 3u) * 8u;
    QK6_STAGE_RUN(slot, m, w0 + 16u * p, s, 0u, 16u);                         // ql
    QK6_STAGE_RUN(slot, m, w0 + QKF_qh_OFFSET / 4u + 8u * p, s, 16u, 8u);     // qh
    QK6_STAGE_RUN(slot, m, w0 + QKF_scales_OFFSET / 4u + 2u * p, s, 24u, 2u); // scales
    qk_stage[slot][26] = qk_w[m].data[w0 + QKF_d_OFFSET / 4u] >> s;            // d
}

void qk_part_codes8(uint slot, uint p, uint g, out uint q[8]) {
    const uint ql = 32u * (g & 1u), qh = 64u;
    for (uint i = 0u; i < 8u; i++)
        q[i] = ((qk_q6_K_word(slot, ql + 4u * i, qh + 4u * i, g) | 0x80808080u) - 0x20202020u) ^ 0x80808080u;
}

vec3 qk_part_affine8(uint slot, uint p, uint g) {
    const float d = unpackHalf2x16(qk_word(slot, 26u)).x;
    const int sc = int(qk_u16(slot, 96u + 2u * g));
    return vec3(d * float(bitfieldExtract(sc, 0, 8)), d * float(bitfieldExtract(sc, 8, 8)), 0.0);
}
#endif
