// Activation loads in the hooks' element order (the f32 activations x, and
// x4, the same buffer as vec4), shared by the mat-vec and matmul templates.

#if defined(BINDING_x) // not the kernels on pre-quantized activations (xq)
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
