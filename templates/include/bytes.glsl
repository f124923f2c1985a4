// Byte-addressed reads from the weight buffers qk_w[m] (u32 words), so that
// block layouts of any size and alignment (18, 34, 17 bytes...) need neither
// 8- nor 16-bit storage. Little-endian, as GGUF files are.

uint qk_u8(uint m, uint b) {
    return bitfieldExtract(qk_w[m].data[b >> 2], int(b & 3u) * 8, 8);
}

// b must be even: 16-bit fields of the formats sit at even offsets.
uint qk_u16(uint m, uint b) {
    return bitfieldExtract(qk_w[m].data[b >> 2], int(b & 2u) * 8, 16);
}

// Four bytes at any alignment. The second word is read only when the bytes
// straddle it, so the last word of a buffer is never overrun.
uint qk_u32(uint m, uint b) {
    uint s = (b & 3u) * 8u;
    uint lo = qk_w[m].data[b >> 2];
    if (s == 0u) return lo;
    return (lo >> s) | (qk_w[m].data[(b >> 2) + 1u] << (32u - s));
}
