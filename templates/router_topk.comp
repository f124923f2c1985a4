// router_topk: the MoE router after its mat-vec: softmax over E expert logits
// and the top k experts with their probabilities, one workgroup per token.
//
// One pass, no rounds: the logits go to shared memory, and each invocation
// ranks the ones it owns against all E, rank(e) = #{j : lg[j] > lg[e], or
// lg[j] == lg[e] and j < e}. That is the order in which k rounds of argmax,
// ties to the lower index, would pick them (softmax keeps the order), so the
// result is deterministic and matches a sequential reference; the logit of
// rank r < k is the r-th selected. Rounds of workgroup argmax would cost two
// reductions each, a chain of barriers that made this tiny kernel slow.
// Every invocation computes the softmax's max and sum itself, over the shared
// logits in index order, so all hold the same values without a reduction.

#define RT_MAX_E 512u
#define RT_MAX_K 16u

shared float rt_lg[RT_MAX_E];
shared float rt_w[RT_MAX_K];
shared int rt_id[RT_MAX_K];

void main() {
    const uint E = pc.E, TK = pc.top_k, t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    for (uint e = lid; e < E; e += WG) rt_lg[e] = logits[t * E + e];
    barrier();
    float gmax = -1.0 / 0.0;
    for (uint j = 0; j < E; j++) gmax = max(gmax, rt_lg[j]);
    float total = 0.0;
    for (uint j = 0; j < E; j++) total += exp(rt_lg[j] - gmax);
    for (uint e = lid; e < E; e += WG) {
        const float v = rt_lg[e];
        uint rank = 0u;
        for (uint j = 0; j < E; j++) {
            const float u = rt_lg[j];
            rank += u > v || (u == v && j < e) ? 1u : 0u;
        }
        if (rank < TK) {
            rt_id[rank] = int(e);
            rt_w[rank] = exp(v - gmax) / total;
        }
    }
    barrier();
    if (lid < TK) {
        float w = rt_w[lid];
#ifdef FUSION_renorm
        float sel_sum = 0.0; // in selection order, as the reference adds them
        for (uint r = 0; r < TK; r++) sel_sum += rt_w[r];
        w = qk_fuse_renorm(w, sel_sum);
#endif
        ids[t * TK + lid] = rt_id[lid];
        route_w[t * TK + lid] = w;
    }
}
