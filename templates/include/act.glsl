// Activation loads in the hooks' element order (the activations x, and x4,
// the same f32 buffer as vec4, or xh4, the same f16 buffer as four halves),
// shared by the mat-vec and matmul templates.

#if defined(BINDING_x) && defined(ACT_f16)
// f16 activations (activations: f16): x holds halves, seen here four at a
// time (8 bytes) as well. Row offsets are multiples of 4 elements (K is whole
// blocks), and so are a run's first elements where runs are 4 or longer.
layout(std430, set = 0, binding = BINDING_x) readonly buffer Qk_xh4 { uvec2 xh4[]; };

// Activations i0 .. i0 + 3 of hook call sub as four halves in two words.
uvec2 load_x4h(uint xb, uint e0, uint sub, uint i0) {
#if QK_SUB_RUN >= 4
    return xh4[(xb + e0 + qk_sub_elem(sub, i0)) >> 2];
#else
    vec4 v; // through f32: 16-bit storage alone has no f16 arithmetic types
    [[unroll]] for (uint l = 0; l < 4u; l++) v[l] = float(x[xb + e0 + qk_sub_elem(sub, i0 + l)]);
    return uvec2(packHalf2x16(v.xy), packHalf2x16(v.zw));
#endif
}

vec4 load_x4(uint xb, uint e0, uint sub, uint i0) {
    const uvec2 h = load_x4h(xb, e0, sub, i0);
    return vec4(unpackHalf2x16(h.x), unpackHalf2x16(h.y));
}
#elif defined(BINDING_x) // not the kernels on pre-quantized activations (xq)
// Activations i0 .. i0 + 3 of hook call sub (i0 a multiple of 4) for token
// offset xb (elements), block e0: one vec4 load where the format's runs allow.
vec4 load_x4(uint xb, uint e0, uint sub, uint i0) {
#if QK_SUB_RUN >= 4
    return x4[(xb + e0 + qk_sub_elem(sub, i0)) >> 2];
#else
    vec4 v;
    [[unroll]] for (uint l = 0; l < 4u; l++) v[l] = x[xb + e0 + qk_sub_elem(sub, i0 + l)];
    return v;
#endif
}
#endif
