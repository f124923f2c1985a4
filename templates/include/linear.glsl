// The element order of formats whose hook calls cover consecutive elements:
// y[i] of call sub is element sub * QK_SUB_N + i (q8_0, the K-quants, MLX).

uint qk_sub_elem(uint sub, uint i) {
    return sub * QK_SUB_N + i;
}

// The inverse: the hook call and the position in y that hold element e of the
// block (include/dequant_elem.glsl's one-element decoder).
uvec2 qk_elem_sub(uint e) {
    return uvec2(e / QK_SUB_N, e % QK_SUB_N);
}
