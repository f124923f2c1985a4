// dequant: pass 1 of the two-pass matmul. W (E stacked M x K matrices of the
// format) to halves: element k of row r of matrix e at half (e * M + r) * K + k.
//
// Blocks (planar: groups) lie row-major, so that is half b * QK + e of block b:
// every hook call writes its own runs of halves, 4 or 8 at a time (8 or 16-byte
// stores). An invocation makes NK hook calls WG apart, so a subgroup's reads and
// stores are contiguous; grid z is the matrix. Under BINDING_tpe, a matrix
// (expert) that no pair routes to is skipped whole.

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint e = gl_WorkGroupID.z;
#ifdef BINDING_tpe
    if (tpe[e] == 0u) return; // uniform in the workgroup, after the table's barrier
#endif
    const uint calls = pc.M * (pc.K / QK_SUB_N); // hook calls of one matrix
    const uint blk0 = e * (pc.M * (pc.K / QK));
    const uint base = gl_WorkGroupID.x * NK * WG + gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < NK; j++) {
        const uint g = base + j * WG;
        if (g >= calls) break;
        const uint blk = blk0 + g / QK_SUBS, sub = g % QK_SUBS;
        float v[QK_SUB_N];
        qk_dequant_sub(0u, blk, sub, v);
        const uint h0 = blk * QK; // the block's first half
#if QK_SUB_RUN % 8 == 0
        for (uint i = 0; i < QK_SUB_N; i += 8u)
            y4[(h0 + qk_sub_elem(sub, i)) / 8u] =
                uvec4(packHalf2x16(vec2(v[i], v[i + 1u])), packHalf2x16(vec2(v[i + 2u], v[i + 3u])),
                      packHalf2x16(vec2(v[i + 4u], v[i + 5u])), packHalf2x16(vec2(v[i + 6u], v[i + 7u])));
#else
        for (uint i = 0; i < QK_SUB_N; i += 4u) {
            const uint w = (h0 + qk_sub_elem(sub, i)) / 2u;
            y[w] = packHalf2x16(vec2(v[i], v[i + 1u]));
            y[w + 1u] = packHalf2x16(vec2(v[i + 2u], v[i + 3u]));
        }
#endif
    }
}
