// Nibble, bit-field and byte extraction shared by the format dequant code.
// Everything works on whole u32 words, four bytes at a time.

// The four low (hi = false) or high nibbles of the bytes of w, as values 0..15.
uvec4 qk_nibbles(uint w, bool hi) {
    uint v = hi ? (w >> 4) & 0x0f0f0f0fu : w & 0x0f0f0f0fu;
    return uvec4(v & 0xffu, (v >> 8) & 0xffu, (v >> 16) & 0xffu, v >> 24);
}

// Bits [shift, shift + bits) of each of the four bytes of w: 2-bit crumbs, high
// bits and nibbles of the K-quants (shift + bits <= 8).
uvec4 qk_byte_bits(uint w, uint shift, int bits) {
    int s = int(shift);
    return uvec4(bitfieldExtract(w, s, bits), bitfieldExtract(w, s + 8, bits),
                 bitfieldExtract(w, s + 16, bits), bitfieldExtract(w, s + 24, bits));
}

// Small unsigned integers as floats without an int-to-float conversion (I2F,
// a quarter-rate instruction on NVIDIA that bounds the 4-bit formats' mat-vec
// at one conversion per weight): a field of value v kept in place at bit pos
// (v * 2^pos, below bit 23) or'ed into the mantissa of 2^23 reads as the float
// 2^23 + v * 2^pos, and one fma scales it back and subtracts 2^23 and bias.
// Exact: every step is a power-of-two scaling or an integer below 2^24.
float qk_field_f(uint field_at_pos, uint pos, float bias) {
    const float scale = uintBitsToFloat((127u - pos) << 23);       // 2^-pos
    const float off = uintBitsToFloat((150u - pos) << 23) + bias;  // 2^(23-pos) + bias
    return fma(uintBitsToFloat(0x4b000000u | field_at_pos), scale, -off);
}

// qk_byte_bits as floats minus bias, four fields for one shift and four ANDs:
// the fields of bytes 0 and 1 stay where they are, those of bytes 2 and 3 come
// down 16 bits (shift + bits <= 8).
vec4 qk_byte_bits_f(uint w, uint shift, uint bits, float bias) {
    const uint mask = ((1u << bits) - 1u) << shift, u = w >> 16;
    return vec4(qk_field_f(w & mask, shift, bias), qk_field_f(w & (mask << 8), shift + 8u, bias),
                qk_field_f(u & mask, shift, bias), qk_field_f(u & (mask << 8), shift + 8u, bias));
}

// Entry q (0..15) of a table of 16 signed bytes packed little-endian in four
// words. A table in registers, where a const array would go to local memory;
// the word is chosen by selects, not by a dynamic vector index (which drivers
// may lower to a local array as well).
int qk_lut16(uvec4 table, uint q) {
    const uint w = q < 8u ? (q < 4u ? table.x : table.y) : (q < 12u ? table.z : table.w);
    return bitfieldExtract(int(w), int(q & 3u) * 8, 8);
}
