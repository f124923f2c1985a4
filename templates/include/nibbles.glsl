// Nibble and byte extraction shared by the format dequant code.

// The four low (hi = false) or high nibbles of the bytes of w, as values 0..15.
uvec4 qk_nibbles(uint w, bool hi) {
    uint v = hi ? (w >> 4) & 0x0f0f0f0fu : w & 0x0f0f0f0fu;
    return uvec4(v & 0xffu, (v >> 8) & 0xffu, (v >> 16) & 0xffu, v >> 24);
}

// The four bytes of w as signed values.
ivec4 qk_i8x4(uint w) {
    return ivec4(bitfieldExtract(int(w), 0, 8), bitfieldExtract(int(w), 8, 8),
                 bitfieldExtract(int(w), 16, 8), bitfieldExtract(int(w), 24, 8));
}
