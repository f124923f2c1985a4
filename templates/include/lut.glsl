// A 16-entry table of floats in shared memory, for the formats whose 4-bit
// codes index a non-linear table (iq4_nl, mxfp4): one shared load per code,
// against the selects, variable bit-field extract and int-to-float conversion
// of qk_lut16 in registers (with those, iq4_nl's one-token mat-vec took 2.7x
// q4_0's time for the same bytes: bench/RESULTS.md, run 35). The format
// defines QK_FORMAT_INIT and fills the table from its packed bytes with
// qk_lut_init; every template with a format calls qk_format_init() first
// thing in main, in uniform control flow, and its barrier makes the table
// visible. The format's YAML declares the 64 bytes (shared_memory: 64), which
// the plan adds to each kernel's own.
#define QK_FORMAT_INIT 1

shared float qk_lut[16];

#ifdef MMA_dot8
// The int8-dot kernels' table (shared_memory_dot8: 1024 in the format's
// YAML): a byte of a split-nibble qs (include/split32.glsl) holds the codes
// of elements j (low nibble) and j + 16 (high nibble), and qk_lut8[byte] =
// T[low] | T[high] << 16 as signed bytes, so four shared loads and six
// bit-field inserts give the two words of eight codes.
shared uint qk_lut8[256];
#endif

void qk_lut_init(uvec4 table) {
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
#ifdef MMA_dot8
    for (uint i = gl_LocalInvocationIndex; i < 256u; i += n)
        qk_lut8[i] = (uint(qk_lut16(table, i & 15u)) & 0xffu) | (uint(qk_lut16(table, i >> 4)) & 0xffu) << 16;
#endif
    for (uint i = gl_LocalInvocationIndex; i < 16u; i += n) qk_lut[i] = float(qk_lut16(table, i));
    barrier(); // makes both tables visible
}

#ifdef MMA_dot8
#ifdef QKF_qs_OFFSET
// The table's values of split-nibble block blk's 32 codes (the formats'
// qk_codes8 for a table of signed bytes; the nibbles are the field qs).
void qk_lut8_codes8(uint m, uint blk, out uint q[8]) {
    for (uint i = 0u; i < 4u; i++) {
        const uint w = qkf_qs_u32(m, blk, 4u * i);
        const uint v0 = qk_lut8[w & 0xffu], v1 = qk_lut8[(w >> 8) & 0xffu];
        const uint v2 = qk_lut8[(w >> 16) & 0xffu], v3 = qk_lut8[w >> 24];
        q[i] = bitfieldInsert(bitfieldInsert(bitfieldInsert(v0, v1, 8, 8), v2, 16, 8), v3, 24, 8);
        q[4u + i] = bitfieldInsert(
            bitfieldInsert(bitfieldInsert(v0 >> 16, v1 >> 16, 8, 8), v2 >> 16, 16, 8), v3 >> 16, 24, 8);
    }
}
#endif

// The table's values of the eight 4-bit codes of a word w, element i in bits
// 4i (MLX's fp4 planes: formats/mxfp4_mlx.glsl, nvfp4_mlx.glsl), so that the
// low nibble of byte j is element 2j and the high one 2j + 1. Returns the
// codes of elements 0-3 and 4-7 (K order), or, where the format defines
// QK_DOT8_EVEN_ODD before including this file, of the even elements and the
// odd ones (three bit-field inserts a word instead of four ORs and shifts).
uvec2 qk_lut8_nibbles(uint w) {
    const uint v0 = qk_lut8[w & 0xffu], v1 = qk_lut8[(w >> 8) & 0xffu];
    const uint v2 = qk_lut8[(w >> 16) & 0xffu], v3 = qk_lut8[w >> 24];
#ifdef QK_DOT8_EVEN_ODD
    return uvec2(bitfieldInsert(bitfieldInsert(bitfieldInsert(v0, v1, 8, 8), v2, 16, 8), v3, 24, 8),
                 bitfieldInsert(bitfieldInsert(bitfieldInsert(v0 >> 16, v1 >> 16, 8, 8), v2 >> 16, 16, 8),
                                v3 >> 16, 24, 8));
#else
    // v = T[low] | T[high] << 16, so (v | v >> 8) & 0xffff = T[low] | T[high] << 8
    return uvec2(((v0 | (v0 >> 8)) & 0xffffu) | ((v1 | (v1 >> 8)) << 16),
                 ((v2 | (v2 >> 8)) & 0xffffu) | ((v3 | (v3 >> 8)) << 16));
#endif
}
#endif
