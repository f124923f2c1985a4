// Byte-addressed reads from the weight buffers qk_w[m] (u32 words), so that
// block layouts of any size and alignment (18, 34, 17 bytes...) need neither
// 8- nor 16-bit storage. Little-endian, as GGUF files are.
//
// With QK_STAGED the template first copies a chunk of whole blocks into the
// registers qk_stage[slot] with aligned vector loads (qk_stage_load); the
// readers then take (slot, byte offset in the chunk), which unrolled loops
// make compile-time constants: no branches, no unaligned memory reads. With
// QK_STAGE_SHARED (staged: shared) the chunk lies in a shared-memory tile
// that the template fills and reads through its qk_word.

#if defined(QK_STAGED) && defined(QK_STAGE_SHARED)
// staged: shared. The chunk lies in a shared-memory tile whose layout is the
// template's (matvec_shared.comp, matmul.comp through include/tile_load.glsl),
// and so is the reader: word w of weight matrix m's chunk.
uint qk_word(uint m, uint w);
#elif defined(QK_STAGED)
uint qk_stage[QK_STAGE_SLOTS][QK_STAGE_WORDS];

uint qk_word(uint m, uint w) {
    return qk_stage[m][w];
}

// Copies the chunk starting at byte0 (aligned to 4 * QK_STAGE_VEC bytes) of
// weight matrix m into slot.
void qk_stage_load(uint slot, uint m, uint byte0) {
#if QK_STAGE_VEC == 4
    [[unroll]] for (uint i = 0; i < QK_STAGE_WORDS / 4; i++) {
        uvec4 q = qk_w4[m].data[(byte0 >> 4) + i];
        qk_stage[slot][4 * i] = q.x, qk_stage[slot][4 * i + 1] = q.y;
        qk_stage[slot][4 * i + 2] = q.z, qk_stage[slot][4 * i + 3] = q.w;
    }
#elif QK_STAGE_VEC == 2
    [[unroll]] for (uint i = 0; i < QK_STAGE_WORDS / 2; i++) {
        uvec2 q = qk_w2[m].data[(byte0 >> 3) + i];
        qk_stage[slot][2 * i] = q.x, qk_stage[slot][2 * i + 1] = q.y;
    }
#else
    [[unroll]] for (uint i = 0; i < QK_STAGE_WORDS; i++)
        qk_stage[slot][i] = qk_w[m].data[(byte0 >> 2) + i];
#endif
}
#else
uint qk_word(uint m, uint w) {
    return qk_w[m].data[w];
}
#endif

uint qk_u8(uint m, uint b) {
    return bitfieldExtract(qk_word(m, b >> 2), int(b & 3u) * 8, 8);
}

// b must be even: 16-bit fields of the formats sit at even offsets.
uint qk_u16(uint m, uint b) {
    return bitfieldExtract(qk_word(m, b >> 2), int(b & 2u) * 8, 16);
}

// Four bytes at any alignment. The second word is read only when the bytes
// straddle it, so the last word of a buffer is never overrun.
uint qk_u32(uint m, uint b) {
    uint s = (b & 3u) * 8u;
    uint lo = qk_word(m, b >> 2);
    if (s == 0u) return lo;
    return (lo >> s) | (qk_word(m, (b >> 2) + 1u) << (32u - s));
}
