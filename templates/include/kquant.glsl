// K-quant scale unpacking: the 6-bit scales and mins of q4_K/q5_K and the
// 6-bit signed scales of q3_K, both packed into 12 bytes (see docs/formats.md).

// Scale and min (6 bits each) of sub-block j (0..7) of q4_K/q5_K from the
// three words w0, w1, w2 of scales[12]. Branch-free: j >= 4 takes its high
// bits from the first eight bytes.
uvec2 qk_k4_unpack(uint w0, uint w1, uint w2, uint j) {
    const int b = int(j & 3u) * 8;
    const uint s0 = bitfieldExtract(w0, b, 8), s1 = bitfieldExtract(w1, b, 8), s2 = bitfieldExtract(w2, b, 8);
    const uvec2 lo = uvec2(s0 & 63u, s1 & 63u);
    const uvec2 hi = uvec2((s2 & 15u) | ((s0 >> 6) << 4), (s2 >> 4) | ((s1 >> 6) << 4));
    return j < 4u ? lo : hi;
}

// The same for the block whose scales[12] lie at byte address sc: the three
// words are read whatever j is.
uvec2 qk_scale_min_k4(uint m, uint sc, uint j) {
    return qk_k4_unpack(qk_u32(m, sc), qk_u32(m, sc + 4u), qk_u32(m, sc + 8u), j);
}

#ifdef QKF_dmin_OFFSET
// The scale and offset of sub-block j of the q4_K / q5_K block at byte base:
// (d * sc(j), dmin * mn(j)); the formats that read them share this prologue.
vec2 qk_k4_scale_min(uint m, uint base, uint j) {
    vec2 dm = qk_f16x2(m, base + QKF_d_OFFSET); // d, dmin
    uvec2 sm = qk_scale_min_k4(m, base + QKF_scales_OFFSET, j);
    return vec2(dm.x * float(sm.x), dm.y * float(sm.y));
}

#if defined(QK_BLOCK_REF_READ) && QKF_d_OFFSET == 0 && QKF_dmin_OFFSET == 2 && QKF_scales_OFFSET == 4 && QK_BYTES % 4 == 0
// The scale hoist of the NV cooperative-matrix-2 decode path
// (matmul_tensor.comp, QK_ELEM_SCALES, include/dequant_elem.glsl): the
// pair reader for q4_K and q5_K, which define QK_ELEM_SCALES and
// qk_dequant_elem_s. Sub-block j's (d * sc, dmin * mn) of block blk of
// weight matrix 0, read from the binding outside the decode callback (where
// no block reference is at hand): the block's 16-byte head (d, dmin,
// scales[12]) is four whole words.
#define QK_K4_HEAD_WORDS 1
vec2 qk_elem_scale(uint blk, uint j) {
    const uint w0 = blk * (QK_BYTES / 4u);
    const vec2 dm = unpackHalf2x16(qk_w[0].data[w0]);
    const uvec2 sm = qk_k4_unpack(qk_w[0].data[w0 + 1u], qk_w[0].data[w0 + 2u], qk_w[0].data[w0 + 3u], j);
    return vec2(dm.x * float(sm.x), dm.y * float(sm.y));
}
#endif

// The int8-dot hooks' affine of group g = sub-block g of block blk (q4_K,
// q5_K: their codes are unsigned): w = d * sc(g) * code - dmin * mn(g).
vec3 qk_k4_affine8(uint m, uint blk, uint g) {
    const vec2 s = qk_k4_scale_min(m, blk * QK_BYTES, g);
    return vec3(s.x, s.x, -s.y);
}

#ifdef QK_PART_N
// Parts of a q4_K / q5_K block (parts: 4 in their YAML; templates/matvec_xq.comp):
// part p of QK_PART_N is sub-blocks qk_k4_part_sub(p, 0) on, whose nibbles are
// qs bytes 128 / QK_PART_N * p on. A part stages the bytes before qs (d, dmin
// and the scales; q5_K's qh too, whose bytes hold every sub-block's fifth
// bits) and its own qs bytes in place of the block's first ones, so that its
// groups read as the block's first groups: only the scales (and q5_K's fifth
// bits) take p.
#if QK_STAGE_VEC != 4
#error "q4_K's and q5_K's parts load whole uvec4s: their blocks are 16-byte aligned"
#endif
#define QK_K4_HEAD_VECS (QKF_qs_OFFSET / 16u) // uvec4s before qs
#define QK_K4_PART_VECS (8u / QK_PART_N)      // uvec4s of qs a part stages

void qk_stage_part(uint slot, uint m, uint blk, uint p) {
    const uint v0 = blk * (QK_BYTES / 16u);
    [[unroll]] for (uint i = 0u; i < QK_K4_HEAD_VECS; i++)
        QK_VSTORE(qk_stage[slot], 4u * i, QK_VLOAD(m, v0 + i));
    [[unroll]] for (uint i = 0u; i < QK_K4_PART_VECS; i++)
        QK_VSTORE(qk_stage[slot], 4u * (QK_K4_HEAD_VECS + i),
                  QK_VLOAD(m, v0 + QK_K4_HEAD_VECS + QK_K4_PART_VECS * p + i));
}

// The block's sub-block of group g of part p.
uint qk_k4_part_sub(uint p, uint g) {
    return 8u / QK_PART_N * p + g;
}

vec3 qk_part_affine8(uint slot, uint p, uint g) {
    return qk_k4_affine8(slot, 0u, qk_k4_part_sub(p, g));
}
#endif
#endif

// Signed scale is (0..15) of q3_K: its low 4 bits are nibble is / 8 of byte
// is % 8, its high 2 bits crumb is / 4 of byte 8 + is % 4; sc is the byte
// address of the block's scales[12].
int qk_scale_q3_K(uint m, uint sc, uint is) {
    uint lo = bitfieldExtract(qk_u8(m, sc + (is & 7u)), int(is >> 3) * 4, 4);
    uint hi = bitfieldExtract(qk_u8(m, sc + 8u + (is & 3u)), int(is >> 2) * 2, 2);
    return int(lo | (hi << 4)) - 32;
}
