// K-quant scale unpacking: the 6-bit scales and mins of q4_K/q5_K and the
// 6-bit signed scales of q3_K, both packed into 12 bytes (see FORMATS.md).

// Scale and min (6 bits each) of sub-block j (0..7) of q4_K/q5_K; sc is the
// byte address of the block's scales[12]. Branch-free: the three words are
// read whatever j is, and j >= 4 takes its high bits from the first eight bytes.
uvec2 qk_scale_min_k4(uint m, uint sc, uint j) {
    int b = int(j & 3u) * 8;
    uint s0 = bitfieldExtract(qk_u32(m, sc), b, 8);
    uint s1 = bitfieldExtract(qk_u32(m, sc + 4u), b, 8);
    uint s2 = bitfieldExtract(qk_u32(m, sc + 8u), b, 8);
    uvec2 lo = uvec2(s0 & 63u, s1 & 63u);
    uvec2 hi = uvec2((s2 & 15u) | ((s0 >> 6) << 4), (s2 >> 4) | ((s1 >> 6) << 4));
    return j < 4u ? lo : hi;
}

#ifdef QKF_dmin_OFFSET
// The scale and offset of sub-block j of the q4_K / q5_K block at byte base:
// (d * sc(j), dmin * mn(j)); the formats that read them share this prologue.
vec2 qk_k4_scale_min(uint m, uint base, uint j) {
    vec2 dm = qk_f16x2(m, base + QKF_d_OFFSET); // d, dmin
    uvec2 sm = qk_scale_min_k4(m, base + QKF_scales_OFFSET, j);
    return vec2(dm.x * float(sm.x), dm.y * float(sm.y));
}

// The int8-dot hooks' affine of group g = sub-block g of block blk (q4_K,
// q5_K: their codes are unsigned): w = d * sc(g) * code - dmin * mn(g).
vec3 qk_k4_affine8(uint m, uint blk, uint g) {
    const vec2 s = qk_k4_scale_min(m, blk * QK_BYTES, g);
    return vec3(s.x, s.x, -s.y);
}
#endif

// Signed scale is (0..15) of q3_K: its low 4 bits are nibble is / 8 of byte
// is % 8, its high 2 bits crumb is / 4 of byte 8 + is % 4; sc is the byte
// address of the block's scales[12].
int qk_scale_q3_K(uint m, uint sc, uint is) {
    uint lo = bitfieldExtract(qk_u8(m, sc + (is & 7u)), int(is >> 3) * 4, 4);
    uint hi = bitfieldExtract(qk_u8(m, sc + 8u + (is & 3u)), int(is >> 2) * 2, 2);
    return int(lo | (hi << 4)) - 32;
}
