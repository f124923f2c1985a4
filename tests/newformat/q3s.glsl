// q3s (test format, see q3s.yaml): element i is bits [3i, 3i + 3) of qs read as
// a little-endian bit stream; y = d * (q - 4). A hook call is 8 elements = 3 bytes.
#include "include/linear.glsl"

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    // three byte reads: a word read from byte 3 * sub could run past the last block
    uint bits = qkf_qs(m, blk, 3u * sub) | (qkf_qs(m, blk, 3u * sub + 1u) << 8) |
                (qkf_qs(m, blk, 3u * sub + 2u) << 16);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = d * (float(bitfieldExtract(bits, int(3u * i), 3)) - 4.0);
}
