// iq4_nl: split nibbles as q4_0, each an index into a fixed non-linear table T;
// y = d * T[q]. T is packed in four words of signed bytes and read from a
// shared copy in floats (include/lut.glsl).
#include "include/nibbles.glsl"
#include "include/split32.glsl"
#include "include/lut.glsl"

// T = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}
const uvec4 QK_IQ4_NL_TABLE = uvec4(0xbfad9881u, 0xf6eaddcfu, 0x26190d01u, 0x71594535u);

#ifdef MMA_dot8
// The int8-dot kernels' table (shared_memory_dot8 in the YAML): a byte of qs
// holds the codes of elements j (low nibble) and j + 16 (high nibble), and
// qk_lut8[byte] = T[low] | T[high] << 16 as signed bytes, so four shared
// loads and six bit-field inserts give the two words of eight codes.
shared uint qk_lut8[256];
#endif

void qk_format_init() {
#ifdef MMA_dot8
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 256u; i += n)
        qk_lut8[i] = (uint(qk_lut16(QK_IQ4_NL_TABLE, i & 15u)) & 0xffu) |
                     (uint(qk_lut16(QK_IQ4_NL_TABLE, i >> 4)) & 0xffu) << 16;
#endif
    qk_lut_init(QK_IQ4_NL_TABLE); // its barrier makes both tables visible
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    float d = qkf_d(m, blk);
    uint c[QK_SUB_N];
    qk_split32_codes(m, blk * QK_BYTES + QKF_qs_OFFSET, sub, c);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = d * qk_lut[c[i]];
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): the table's
// values are the codes, y = d * code.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    for (uint i = 0u; i < 4u; i++) {
        const uint w = qkf_qs_u32(m, blk, 4u * i);
        const uint v0 = qk_lut8[w & 0xffu], v1 = qk_lut8[(w >> 8) & 0xffu];
        const uint v2 = qk_lut8[(w >> 16) & 0xffu], v3 = qk_lut8[w >> 24];
        q[i] = bitfieldInsert(bitfieldInsert(bitfieldInsert(v0, v1, 8, 8), v2, 16, 8), v3, 24, 8);
        q[4u + i] = bitfieldInsert(
            bitfieldInsert(bitfieldInsert(v0 >> 16, v1 >> 16, 8, 8), v2 >> 16, 16, 8), v3 >> 16, 24, 8);
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float d = qkf_d(m, blk);
    return vec3(d, d, 0.0);
}
#endif
