// iq3_xxs: sub-block b of 32 elements takes the codebook indices qs[8b .. 8b + 7]
// (qkt_grid: 4 byte values each) and the u32 aux at qs[64 + 4b] with 7-bit
// sign indices (bits 7l.., one per 8 elements) and a 4-bit scale s (bits
// 28..): a hook call is two codebook entries, 8 elements with one sign index,
// y = d * (s + 0.5) / 2 * grid[j] * (sign j ? -1 : 1).
#include "include/linear.glsl"
#include "include/iq_signs.glsl"

// The codebook in shared memory (shared_memory: in the YAML counts it).
#define QK_FORMAT_INIT 1
shared uint qk_iq3_grid[256];

void qk_format_init() {
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 256u; i += n) qk_iq3_grid[i] = qkt_grid[i];
    qk_iq_signs_init();
    barrier();
}

// Sub-block b's scale and sign word, and its scale d * (s + 0.5) / 2 as ggml
// computes it (exact in f32).
uint qk_iq3_aux(uint m, uint blk, uint b) {
    return qk_u32(m, blk * QK_BYTES + QKF_qs_OFFSET + 64u + 4u * b);
}

float qk_iq3_scale(uint m, uint blk, uint aux) {
    return qkf_d(m, blk) * (float(aux >> 28) + 0.5) * 0.5;
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint aux = qk_iq3_aux(m, blk, sub >> 2);
    const float db = qk_iq3_scale(m, blk, aux);
    const uint idx = qk_u16(m, blk * QK_BYTES + QKF_qs_OFFSET + 2u * sub);
    const uint g0 = qk_iq3_grid[idx & 0xffu], g1 = qk_iq3_grid[idx >> 8];
    const uint s = qk_iq_sign(aux, sub & 3u);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = db * qk_iq_value(i < 4u ? g0 : g1, s, i);
}

// One element (include/dequant_elem.glsl): element e is value e % 4 of entry
// qs[e / 4], its sign index group e / 8 % 4 of sub-block e / 32.
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uint aux = qk_iq3_aux(m, blk, e >> 5);
    const uint g = qk_iq3_grid[qkf_qs(m, blk, e >> 2)];
    return qk_iq3_scale(m, blk, aux) * qk_iq_value(g, qk_iq_sign(aux, (e >> 3) & 3u), e & 7u);
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g is
// sub-block g, its codes the signed grid values (|code| <= 62), w = db * code.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint at = blk * QK_BYTES + QKF_qs_OFFSET + 8u * g;
    const uint i0 = qk_u32(m, at), i1 = qk_u32(m, at + 4u), aux = qk_iq3_aux(m, blk, g);
    for (uint l = 0u; l < 4u; l++) {
        const uint idx = l < 2u ? i0 : i1, sh = 16u * (l & 1u);
        const uint s = qk_iq_sign(aux, l);
        q[2u * l] = qk_iq_signed4(qk_iq3_grid[bitfieldExtract(idx, int(sh), 8)], s & 15u);
        q[2u * l + 1u] = qk_iq_signed4(qk_iq3_grid[bitfieldExtract(idx, int(sh + 8u), 8)], s >> 4);
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float db = qk_iq3_scale(m, blk, qk_iq3_aux(m, blk, g));
    return vec3(db, db, 0.0);
}
