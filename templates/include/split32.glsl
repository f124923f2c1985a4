// 32-element blocks whose byte j of qs holds element j in its low nibble and
// element j + 16 in its high one (q4_0, q4_1, q5_0, q5_1, iq4_nl, mxfp4).
// A hook call of QK_SUB_N elements reads QK_SUB_N / 2 bytes as whole words:
// their low nibbles are y[0 .. QK_SUB_N/2), their high nibbles the rest.

// The element order hook of these formats (as include/linear.glsl is for
// consecutive ones): the element of the block that y[i] of hook call sub holds.
uint qk_sub_elem(uint sub, uint i) {
    const uint half_n = QK_SUB_N / 2u;
    return (i < half_n ? 0u : 16u) + sub * half_n + i % half_n;
}

// The inverse: the hook call and the position in y that hold element e.
uvec2 qk_elem_sub(uint e) {
    const uint half_n = QK_SUB_N / 2u, l = e & 15u;
    return uvec2(l / half_n, (e >> 4) * half_n + l % half_n);
}

// The 4-bit codes of hook call sub, in y order; qs is the byte address of the
// block's qs field.
void qk_split32_codes(uint m, uint qs, uint sub, out uint c[QK_SUB_N]) {
    const uint half_n = QK_SUB_N / 2u;
    for (uint k = 0u; k < half_n / 4u; k++) {
        uint w = qk_u32(m, qs + sub * half_n + 4u * k);
        uvec4 lo = qk_nibbles(w, false), hi = qk_nibbles(w, true);
        for (uint i = 0u; i < 4u; i++) {
            c[4u * k + i] = lo[i];
            c[half_n + 4u * k + i] = hi[i];
        }
    }
}

// The codes of hook call sub as floats minus bias (include/nibbles.glsl's
// qk_byte_bits_f: no int-to-float conversion), in y order.
void qk_split32_f(uint m, uint qs, uint sub, float bias, out float c[QK_SUB_N]) {
    const uint half_n = QK_SUB_N / 2u;
    for (uint k = 0u; k < half_n / 4u; k++) {
        uint w = qk_u32(m, qs + sub * half_n + 4u * k);
        vec4 lo = qk_byte_bits_f(w, 0u, 4u, bias), hi = qk_byte_bits_f(w, 4u, 4u, bias);
        for (uint i = 0u; i < 4u; i++) {
            c[4u * k + i] = lo[i];
            c[half_n + 4u * k + i] = hi[i];
        }
    }
}

// The int8-dot codes of split-nibble block blk (its one 32-element group; the
// format's nibbles are its field qs), as the formats' qk_codes8 gives them:
// words 0-3 the low nibbles (elements 0-15), words 4-7 the high ones (16-31),
// each nibble unsigned in its byte.
void qk_split32_codes8(uint m, uint blk, out uint q[8]) {
    for (uint i = 0u; i < 4u; i++) {
        const uint w = qkf_qs_u32(m, blk, 4u * i);
        q[i] = w & 0x0f0f0f0fu;
        q[4u + i] = (w >> 4) & 0x0f0f0f0fu;
    }
}

// Bits b .. b + 3 of h, one to bit 4 of each byte: the fifth bits of q5_0 and
// q5_1 (qh) for four consecutive elements. The multiply places bit k at bit
// 8k + k (no two partial products overlap, so nothing carries).
uint qk_spread_bit4(uint h, uint b) {
    return (((h >> b) & 15u) * 0x00204081u & 0x01010101u) << 4;
}

// The 5-bit codes of q5_0 / q5_1: the nibbles of qs with the fifth bits of the
// little-endian word qh.
void qk_split32_codes8_5(uint m, uint blk, uint qh, out uint q[8]) {
    qk_split32_codes8(m, blk, q);
    for (uint i = 0u; i < 4u; i++) {
        q[i] |= qk_spread_bit4(qh, 4u * i);
        q[4u + i] |= qk_spread_bit4(qh, 16u + 4u * i);
    }
}
