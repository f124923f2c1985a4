// One element of a block: float qk_dequant_elem(uint m, uint blk, uint e),
// for kernels that decode element by element (matmul_tensor.comp's decode
// callback of GL_NV_cooperative_matrix2, called once per element it loads).
// A format may define its own (and QK_DEQUANT_ELEM) where one element costs
// less than a hook call; otherwise this one runs the call that holds the
// element (the element order hook's inverse, qk_elem_sub) and keeps one value.
//
// A format whose element needs per-block scales that cost more to unpack
// than the element itself (q4_K, q5_K) may also define QK_ELEM_SCALES (the
// pairs a block holds) with
//   vec2 qk_elem_scale(uint blk, uint j)      pair j of block blk of matrix 0,
//                                             read from the binding;
//   float qk_dequant_elem_s(uint e, vec2 s)   element e of the block at hand
//                                             (the decode callback's), given
//                                             its pair;
// matmul_tensor.comp then decodes a tile's pairs once a block into shared
// memory and the callback reads them from there.
#ifndef QK_DEQUANT_ELEM
float qk_dequant_elem(uint m, uint blk, uint e) {
    const uvec2 s = qk_elem_sub(e);
    float y[QK_SUB_N];
    qk_dequant_sub(m, blk, s.x, y);
    return y[s.y];
}
#endif
