// nvfp4 (GGUF): four sub-blocks s of 16 elements, one hook call each; byte j of
// qs[8 s ..] holds element 16 s + j in its low nibble and 16 s + j + 8 in its
// high one, E2M1 codes; y = ue4m3(d[s]) * e2m1(q), here half the scale times
// the table of twice the E2M1 values (include/fp8.glsl, include/lut.glsl).
#include "include/nibbles.glsl"
#include "include/linear.glsl"
#include "include/lut.glsl"
#include "include/fp8.glsl"

#ifdef MMA_dot8
shared uint qk_nvfp4_lut8[16]; // the codes as bytes for the int8 hooks (shared_memory_dot8: 64)
#endif

void qk_format_init() {
#ifdef MMA_dot8
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 16u; i += n)
        qk_nvfp4_lut8[i] = uint(qk_lut16(QK_E2M1X2_TABLE, i)) & 0xffu;
#endif
    qk_lut_init(QK_E2M1X2_TABLE); // its barrier makes both tables visible
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const float s = 0.5 * qk_ue4m3(qkf_d(m, blk, sub));
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 8u * sub;
    for (uint k = 0u; k < 2u; k++) {
        const uint w = qk_u32(m, qs + 4u * k);
        for (uint i = 0u; i < 4u; i++) {
            y[4u * k + i] = s * qk_lut[(w >> (8u * i)) & 15u];
            y[8u + 4u * k + i] = s * qk_lut[(w >> (8u * i + 4u)) & 15u];
        }
    }
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g is
// sub-blocks 2g and 2g + 1, each with its scale (QK_DOT8_HALVES); the codes
// are twice the E2M1 values (-12 .. 12) and a = ue4m3(d[s]) / 2.
#define QK_DOT8_HALVES 1

// The codes of the four nibbles at bit `shift` of the bytes of w, as bytes.
uint qk_nvfp4_codes(uint w, uint shift) {
    uint r = 0u;
    for (uint k = 0u; k < 4u; k++) r |= qk_nvfp4_lut8[(w >> (8u * k + shift)) & 15u] << (8u * k);
    return r;
}

void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 16u * g;
    for (uint h = 0u; h < 2u; h++) { // sub-block 2g + h: elements 16h .. 16h + 15 of the group
        const uint w0 = qk_u32(m, qs + 8u * h), w1 = qk_u32(m, qs + 8u * h + 4u);
        q[4u * h] = qk_nvfp4_codes(w0, 0u);
        q[4u * h + 1u] = qk_nvfp4_codes(w1, 0u);
        q[4u * h + 2u] = qk_nvfp4_codes(w0, 4u);
        q[4u * h + 3u] = qk_nvfp4_codes(w1, 4u);
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    return vec3(0.5 * qk_ue4m3(qkf_d(m, blk, 2u * g)), 0.5 * qk_ue4m3(qkf_d(m, blk, 2u * g + 1u)), 0.0);
}
#endif
