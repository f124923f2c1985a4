// One element of a block: float qk_dequant_elem(uint m, uint blk, uint e),
// for kernels that decode element by element (matmul_tensor.comp's decode
// callback of GL_NV_cooperative_matrix2, called once per element it loads).
// A format may define its own (and QK_DEQUANT_ELEM) where one element costs
// less than a hook call; otherwise this one runs the call that holds the
// element (the element order hook's inverse, qk_elem_sub) and keeps one value.
#ifndef QK_DEQUANT_ELEM
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uvec2 s = qk_elem_sub(e);
    float y[QK_SUB_N];
    qk_dequant_sub(m, blk, s.x, y);
    return y[s.y];
}
#endif
