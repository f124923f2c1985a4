// matvec: y[t][r] = sum_k W[r][k] * x[t][k] for one to NR1 tokens per workgroup,
// and its MoE form, selected by an `ids` binding (specs/kernels/matvec_id*.yaml).
//
// A workgroup owns NR0 weight rows and NR1 token columns; its WG invocations
// stride along K in chunks of NK elements (NK / QK_SUB_N calls of the format's
// dequant hook), so each weight is read once for all NR1 tokens. Partial sums
// meet in a subgroup sum, then in shared memory, which makes the kernel correct
// for any subgroup size of at least MIN_SG.
//
// MoE form: column p of the grid is the (token, slot) pair p = token * top_k +
// slot, computed against expert ids[p] (clamped to the experts there are, so a
// bad id cannot read out of bounds); the activation row is the token's
// (ne11 = 1, gate/up) or the pair's own (ne11 = top_k, down); the output row
// is p, so y is [tokens, top_k, M]. Experts are stacked in one buffer (expert
// e at block e * M * K / QK), or, with QK_EXPERT_BUFFERS, bound as QK_NW
// separate buffers with ids indexing the binding array.
//
// Under FUSION_swiglu two matrices (m = 0 gate, m = 1 up) share each read of
// the activations and the stored value is qk_fuse_swiglu(gate, up).

#define NSUB (NK / QK_SUB_N)
#ifdef FUSION_swiglu
#define NMAT QK_FUSE_NW
#else
#define NMAT 1u
#endif
#ifdef BINDING_ids
#define QK_MOE 1
#endif

shared float qk_red[NMAT * NR0 * NR1][WG / MIN_SG];

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint M = pc.M, K = pc.K, T = pc.T;
    const uint row0 = gl_WorkGroupID.x * NR0;
    const uint col0 = gl_WorkGroupID.y * NR1;
    const uint nb = K / QK;
    const uint nchunks = K / NK;

#ifdef QK_MOE
    // One pair per column (the spec keeps NR1 = 1): pairs have their own experts.
    const uint ncols = T * pc.top_k;
    const uint tok = col0 / pc.top_k, slot = col0 % pc.top_k;
#ifdef QK_EXPERT_BUFFERS
    const uint mat0 = uint(clamp(ids[col0], 0, int(QK_NW) - 1)), expert_blk = 0u;
#else
    const uint mat0 = 0u;
    const uint expert_blk = uint(clamp(ids[col0], 0, int(pc.E) - 1)) * M * nb;
#endif
    uint xrow[NR1];
    xrow[0] = (tok * pc.ne11 + slot % pc.ne11) * K;
#else
    const uint ncols = T, mat0 = 0u, expert_blk = 0u;
    // Rows and tokens past the end are clamped, computed and never stored:
    // that keeps every invocation on the same path.
    uint xrow[NR1];
    for (uint t = 0; t < NR1; t++) xrow[t] = min(col0 + t, T - 1u) * K;
#endif
    uint rows[NR0];
    for (uint r = 0; r < NR0; r++) rows[r] = expert_blk + min(row0 + r, M - 1u) * nb;

    float acc[NMAT][NR0][NR1];
    for (uint m = 0; m < NMAT; m++)
        for (uint r = 0; r < NR0; r++)
            for (uint t = 0; t < NR1; t++) acc[m][r][t] = 0.0;

    for (uint c = gl_LocalInvocationID.x; c < nchunks; c += WG) {
        for (uint s = 0; s < NSUB; s++) {
            const uint gsub = c * NSUB + s; // sub-chunk index along the row
            const uint kb = gsub / QK_SUBS, sub = gsub % QK_SUBS;
            float xv[NR1][QK_SUB_N];
            for (uint t = 0; t < NR1; t++)
                for (uint i = 0; i < QK_SUB_N; i++)
                    xv[t][i] = float(x[xrow[t] + kb * QK + qk_sub_elem(sub, i)]);
            for (uint m = 0; m < NMAT; m++)
                for (uint r = 0; r < NR0; r++) {
                    float w[QK_SUB_N];
                    qk_dequant_sub(mat0 + m, rows[r] + kb, sub, w);
                    for (uint t = 0; t < NR1; t++)
                        for (uint i = 0; i < QK_SUB_N; i++)
                            acc[m][r][t] = fma(w[i], xv[t][i], acc[m][r][t]);
                }
        }
    }

    for (uint m = 0; m < NMAT; m++)
        for (uint r = 0; r < NR0; r++)
            for (uint t = 0; t < NR1; t++) {
                float v = subgroupAdd(acc[m][r][t]);
                if (subgroupElect()) qk_red[(m * NR0 + r) * NR1 + t][gl_SubgroupID] = v;
            }
    barrier();
    for (uint i = gl_LocalInvocationID.x; i < NR0 * NR1; i += WG) {
        float sum[NMAT];
        for (uint m = 0; m < NMAT; m++) {
            sum[m] = 0.0;
            for (uint j = 0; j < gl_NumSubgroups; j++) sum[m] += qk_red[m * NR0 * NR1 + i][j];
        }
        const uint r = row0 + i / NR1, t = col0 + i % NR1;
#ifdef FUSION_swiglu
        const float v = qk_fuse_swiglu(sum[0], sum[1]);
#else
        const float v = sum[0];
#endif
        if (r < M && t < ncols) y[t * M + r] = v;
    }
}
