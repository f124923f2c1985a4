// f16 tiles of the cooperative-matrix templates (matmul.comp through
// include/tile_load.glsl, matvec_mma.comp): 8 values per 16-byte store, in
// the hooks' element order.

#include "include/act.glsl"

uvec4 qk_pack8(vec4 a, vec4 b) {
    return uvec4(packHalf2x16(a.xy), packHalf2x16(a.zw), packHalf2x16(b.xy), packHalf2x16(b.zw));
}

// y[i .. i + 8) of one hook call's values (i a multiple of 8).
uvec4 qk_pack8_w(float y[QK_SUB_N], uint i) {
    return qk_pack8(vec4(y[i], y[i + 1u], y[i + 2u], y[i + 3u]),
                    vec4(y[i + 4u], y[i + 5u], y[i + 6u], y[i + 7u]));
}

// Activations i0 .. i0 + 8 of hook call sub (i0 a multiple of 8) for token
// offset xb (elements), block e0.
uvec4 qk_pack8_x(uint xb, uint e0, uint sub, uint i0) {
#ifdef ACT_f16
    return uvec4(load_x4h(xb, e0, sub, i0), load_x4h(xb, e0, sub, i0 + 4u)); // already halves
#else
    return qk_pack8(load_x4(xb, e0, sub, i0), load_x4(xb, e0, sub, i0 + 4u));
#endif
}
