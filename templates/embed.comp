// embed: quantized embedding gather, y[t][:] = dequant(W[ids[t]][:]), for any
// format: each invocation makes one call of the format's dequant hook.
//
// Grid: x covers the K / QK_SUB_N hook calls of a row, y the tokens. Ids out
// of range are clamped to the table, so a bad id cannot read past it.

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint K = pc.K, t = gl_WorkGroupID.y;
    const uint j = gl_GlobalInvocationID.x; // hook call along the row
    if (j >= K / QK_SUB_N) return;
    const uint row = uint(clamp(ids[t], 0, int(pc.M) - 1));
    const uint kb = j / QK_SUBS, sub = j % QK_SUBS;
    float v[QK_SUB_N];
    qk_dequant_sub(0u, row * (K / QK) + kb, sub, v);
    for (uint i = 0; i < QK_SUB_N; i++) y[t * K + kb * QK + qk_sub_elem(sub, i)] = v[i];
}
