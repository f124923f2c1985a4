// iq4_xs: eight sub-blocks ib of 32 elements; element 32 ib + 16 h + i (i < 16) is
// nibble h of qs[16 ib + i], an index into the table kvalues (the YAML's `tables:`,
// qkt_kvalues), and y = d * (ls(ib) - 32) * kvalues[q] with ls the 6-bit scale of
// scales_l (4 low bits) and scales_h (2 high). A hook call is half a sub-block:
// 16 consecutive elements, the low or the high nibbles of four words.
#include "include/linear.glsl"

// The table in shared memory (shared_memory: 64 in the YAML), one load a code:
// indexing the const array qkt_kvalues per element would put it in local memory.
#define QK_FORMAT_INIT 1
shared float qk_iq4xs_lut[16];
#ifdef MMA_dot8
shared uint qk_iq4xs_lut8[16]; // the values as bytes (shared_memory_dot8: 64)
#endif

void qk_format_init() {
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 16u; i += n) {
        qk_iq4xs_lut[i] = float(qkt_kvalues[i]);
#ifdef MMA_dot8
        qk_iq4xs_lut8[i] = uint(qkt_kvalues[i]) & 0xffu;
#endif
    }
    barrier();
}

// d * (ls - 32) of sub-block ib.
float qk_iq4xs_scale(uint m, uint blk, uint ib) {
    const uint lo = (qkf_scales_l(m, blk, ib >> 1) >> (4u * (ib & 1u))) & 15u;
    const uint hi = (qkf_scales_h(m, blk) >> (2u * ib)) & 3u;
    return qkf_d(m, blk) * float(int(lo | (hi << 4)) - 32);
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint ib = sub >> 1, shift = 4u * (sub & 1u);
    const float dl = qk_iq4xs_scale(m, blk, ib);
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 16u * ib;
    for (uint k = 0u; k < 4u; k++) {
        const uint w = qk_u32(m, qs + 4u * k) >> shift;
        for (uint i = 0u; i < 4u; i++) y[4u * k + i] = dl * qk_iq4xs_lut[(w >> (8u * i)) & 15u];
    }
}

#ifdef MMA_dot8
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g is
// sub-block g, its codes the table's values (elements 0-15 the low nibbles of
// its 16 bytes, 16-31 the high ones), w = d * (ls - 32) * code.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint qs = blk * QK_BYTES + QKF_qs_OFFSET + 16u * g;
    for (uint i = 0u; i < 4u; i++) {
        const uint w = qk_u32(m, qs + 4u * i);
        uint lo = 0u, hi = 0u;
        for (uint k = 0u; k < 4u; k++) {
            lo |= qk_iq4xs_lut8[(w >> (8u * k)) & 15u] << (8u * k);
            hi |= qk_iq4xs_lut8[(w >> (8u * k + 4u)) & 15u] << (8u * k);
        }
        q[i] = lo;
        q[4u + i] = hi;
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float a = qk_iq4xs_scale(m, blk, g);
    return vec3(a, a, 0.0);
}
#endif
