// iq2_xxs: sub-block b of 32 elements is bytes 8b .. 8b + 7 of qs: four indices
// into the codebook qkt_grid (8 byte values each), then a u32 aux with 7-bit
// sign indices (bits 7l..) and a 4-bit scale s (bits 28..): a hook call is one
// codebook entry, y = d * (s + 0.5) / 4 * grid[j] * (sign j ? -1 : 1).
#include "include/linear.glsl"
#include "include/iq_signs.glsl"

// The codebook in shared memory (shared_memory: in the YAML counts it).
#define QK_FORMAT_INIT 1
shared uvec2 qk_iq2_grid[256];

void qk_format_init() {
    const uint n = gl_WorkGroupSize.x * gl_WorkGroupSize.y * gl_WorkGroupSize.z;
    for (uint i = gl_LocalInvocationIndex; i < 256u; i += n) qk_iq2_grid[i] = qkt_grid[i];
    qk_iq_signs_init();
    barrier();
}

// Sub-block b's scale: d * (s + 0.5) / 4, as ggml computes it (exact in f32).
float qk_iq2_scale(uint m, uint blk, uint aux) {
    return qkf_d(m, blk) * (float(aux >> 28) + 0.5) * 0.25;
}

void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N]) {
    const uint at = blk * QK_BYTES + QKF_qs_OFFSET + 8u * (sub >> 2), l = sub & 3u;
    const uint aux = qk_u32(m, at + 4u);
    const float db = qk_iq2_scale(m, blk, aux);
    const uvec2 g = qk_iq2_grid[qk_u8(m, at + l)];
    const uint s = qk_iq_sign(aux, l);
    for (uint i = 0u; i < QK_SUB_N; i++) y[i] = db * qk_iq_value(i < 4u ? g.x : g.y, s, i);
}

// One element (include/dequant_elem.glsl): element e is value e % 8 of group
// l = e / 8 % 4 of sub-block e / 32.
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uint at = blk * QK_BYTES + QKF_qs_OFFSET + 8u * (e >> 5), l = (e >> 3) & 3u;
    const uint aux = qk_u32(m, at + 4u);
    const uvec2 g = qk_iq2_grid[qk_u8(m, at + l)];
    return qk_iq2_scale(m, blk, aux) * qk_iq_value((e & 4u) != 0u ? g.y : g.x, qk_iq_sign(aux, l), e & 7u);
}

// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp): group g is
// sub-block g, its codes the signed grid values (|code| <= 43), w = db * code.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uint at = blk * QK_BYTES + QKF_qs_OFFSET + 8u * g;
    const uint idx = qk_u32(m, at), aux = qk_u32(m, at + 4u);
    for (uint l = 0u; l < 4u; l++) {
        const uvec2 v = qk_iq2_grid[bitfieldExtract(idx, int(8u * l), 8)];
        const uint s = qk_iq_sign(aux, l);
        q[2u * l] = qk_iq_signed4(v.x, s & 15u);
        q[2u * l + 1u] = qk_iq_signed4(v.y, s >> 4);
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    const float db = qk_iq2_scale(m, blk, qk_u32(m, blk * QK_BYTES + QKF_qs_OFFSET + 8u * g + 4u));
    return vec3(db, db, 0.0);
}
