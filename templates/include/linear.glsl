// The element order of formats whose hook calls cover consecutive elements:
// y[i] of call sub is element sub * QK_SUB_N + i (q8_0, the K-quants, MLX).

uint qk_sub_elem(uint sub, uint i) {
    return sub * QK_SUB_N + i;
}
