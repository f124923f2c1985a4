// The sign patterns of the GGUF codebook formats (iq2_xxs, iq3_xxs): a 7-bit
// index per 8 values selects a byte whose bit j negates value j. The table
// is the format's `signs` (tables: in its YAML, emitted as qkt_signs), copied
// to shared memory by qk_iq_signs_init: a const array indexed at run time
// would live in local memory.
shared uint qk_iq_signs[128];

// Fills the shared copy; the caller's qk_format_init ends with the barrier.
void qk_iq_signs_init() {
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 128u; i += n) qk_iq_signs[i] = uint(qkt_signs[i]);
}

// The sign byte of group l (0..3) of a sub-block, from its scale and sign word.
uint qk_iq_sign(uint aux, uint l) {
    return qk_iq_signs[bitfieldExtract(aux, int(7u * l), 7)];
}

// Value i (0..7) of a group: byte i % 4 of word w, negated where bit i of the
// sign byte s is set.
float qk_iq_value(uint w, uint s, uint i) {
    const float v = float(bitfieldExtract(w, int(8u * (i & 3u)), 8));
    return bitfieldExtract(s, int(i), 1) != 0u ? -v : v;
}

// Four byte values w (each 1..127) as signed bytes, byte j negated where bit j
// of the 4-bit n is set: m spreads n to 0xff bytes, and (w ^ m) + 1 is -w in
// each such byte with no carry out of it (w > 0).
uint qk_iq_signed4(uint w, uint n) {
    const uint m = ((n * 0x00204081u) & 0x01010101u) * 0xffu;
    return (w ^ m) + (m & 0x01010101u);
}
