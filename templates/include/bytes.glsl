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

#ifdef QK_STAGED
// A chunk's aligned vector: QK_STAGE_VEC words (the widest load the chunk's
// size allows), loaded as vector i of weight matrix m, stored as words
// w .. w + QK_STAGE_VEC of the array a.
#if QK_STAGE_VEC == 4
#define QK_VEC uvec4
#define QK_VLOAD(m, i) qk_w4[m].data[i]
#elif QK_STAGE_VEC == 2
#define QK_VEC uvec2
#define QK_VLOAD(m, i) qk_w2[m].data[i]
#else
#define QK_VEC uint
#define QK_VLOAD(m, i) qk_w[m].data[i]
#endif
#if QK_STAGE_VEC == 1
#define QK_VSTORE(a, w, q) a[w] = (q)
#else
#define QK_VSTORE(a, w, q) [[unroll]] for (uint l_ = 0; l_ < QK_STAGE_VEC; l_++) a[(w) + l_] = (q)[l_]
#endif
#endif

#if defined(QK_BLOCK_REF) && QK_BYTES % 2 == 0
// staged: reference (matmul_tensor.comp's decode callback). The driver hands
// the callback a reference to the block that holds the element, of the
// format's size, and the template puts it in qk_blk before it calls the
// format's decoder with block 0: the readers below take their offsets in
// that block, 16 bits at a time (blocks of an even size; 16-bit fields sit
// at even offsets). Odd-sized blocks read the bindings as below.
#define QK_BLOCK_REF_READ 1
layout(buffer_reference, std430, buffer_reference_align = 2) buffer QkBlockRef {
    uint16_t h[QK_BYTES / 2];
};
QkBlockRef qk_blk;

uint qk_u8(uint m, uint b) {
    return bitfieldExtract(uint(qk_blk.h[b >> 1]), int(b & 1u) * 8, 8);
}

uint qk_u16(uint m, uint b) {
    return uint(qk_blk.h[b >> 1]);
}

uint qk_u32(uint m, uint b) {
    const uint h = b >> 1;
    if ((b & 1u) == 0u) return uint(qk_blk.h[h]) | (uint(qk_blk.h[h + 1u]) << 16);
    return (uint(qk_blk.h[h]) >> 8) | (uint(qk_blk.h[h + 1u]) << 8) | (uint(qk_blk.h[h + 2u]) << 24);
}
#else
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
    [[unroll]] for (uint i = 0; i < QK_STAGE_WORDS / QK_STAGE_VEC; i++) {
        const QK_VEC q = QK_VLOAD(m, byte0 / (4u * QK_STAGE_VEC) + i);
        QK_VSTORE(qk_stage[slot], QK_STAGE_VEC * i, q);
    }
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
#endif
