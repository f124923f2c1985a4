// matvec: y[t][r] = sum_k W[r][k] * x[t][k], for one to a few tokens.
// A workgroup owns NR0 weight rows and NR1 tokens; its WG invocations stride
// along K in chunks of NK elements (NK / QK_SUB_N calls of the format's dequant
// hook), so each weight is read once for all NR1 tokens. Partial sums meet in
// a subgroup sum, then in shared memory, which makes the kernel correct for any
// subgroup size of at least MIN_SG.

#define NSUB (NK / QK_SUB_N)

shared float qk_red[NR0 * NR1][WG / MIN_SG];

void main() {
    const uint M = pc.M, K = pc.K, T = pc.T;
    const uint row0 = gl_WorkGroupID.x * NR0;
    const uint tok0 = gl_WorkGroupID.y * NR1;
    const uint nb = K / QK;
    const uint nchunks = K / NK;

    // Rows and tokens past the end are clamped, computed and never stored:
    // that keeps every invocation on the same path.
    uint rows[NR0];
    for (uint r = 0; r < NR0; r++) rows[r] = min(row0 + r, M - 1u) * nb;
    uint toks[NR1];
    for (uint t = 0; t < NR1; t++) toks[t] = min(tok0 + t, T - 1u) * K;

    float acc[NR0][NR1];
    for (uint r = 0; r < NR0; r++)
        for (uint t = 0; t < NR1; t++) acc[r][t] = 0.0;

    for (uint c = gl_LocalInvocationID.x; c < nchunks; c += WG) {
        for (uint s = 0; s < NSUB; s++) {
            const uint gsub = c * NSUB + s; // sub-chunk index along the row
            const uint kb = gsub / QK_SUBS, sub = gsub % QK_SUBS;
            float xv[NR1][QK_SUB_N];
            for (uint t = 0; t < NR1; t++)
                for (uint i = 0; i < QK_SUB_N; i++)
                    xv[t][i] = float(x[toks[t] + kb * QK + qk_sub_elem(sub, i)]);
            for (uint r = 0; r < NR0; r++) {
                float w[QK_SUB_N];
                qk_dequant_sub(0u, rows[r] + kb, sub, w);
                for (uint t = 0; t < NR1; t++)
                    for (uint i = 0; i < QK_SUB_N; i++) acc[r][t] = fma(w[i], xv[t][i], acc[r][t]);
            }
        }
    }

    for (uint r = 0; r < NR0; r++)
        for (uint t = 0; t < NR1; t++) {
            float v = subgroupAdd(acc[r][t]);
            if (subgroupElect()) qk_red[r * NR1 + t][gl_SubgroupID] = v;
        }
    barrier();
    for (uint i = gl_LocalInvocationID.x; i < NR0 * NR1; i += WG) {
        float sum = 0.0;
        for (uint j = 0; j < gl_NumSubgroups; j++) sum += qk_red[i][j];
        const uint r = row0 + i / NR1, t = tok0 + i % NR1;
        if (r < M && t < T) y[t * M + r] = sum;
    }
}
