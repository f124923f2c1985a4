// router_topk: the MoE router after its mat-vec: softmax over E expert logits
// and the top k experts with their probabilities, one workgroup per token.
//
// Selection runs on the logits (softmax keeps their order), k rounds of a
// workgroup argmax; ties go to the lower expert index, so the result is
// deterministic and matches a sequential reference. Every invocation ends the
// rounds with the same ids and weights; invocation 0 stores them.
#include "include/wg_reduce.glsl"

#define RT_MAX_E 512u
#define RT_MAX_K 16u
#define RT_PER ((RT_MAX_E + WG - 1u) / WG) // logits each invocation holds
#define RT_NONE 1.0e9                       // larger than any expert index

void main() {
    const uint E = pc.E, TK = pc.top_k, t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    float lg[RT_PER];
    float lmax = -1.0 / 0.0;
    for (uint j = 0; j < RT_PER; j++) {
        const uint e = j * WG + lid;
        lg[j] = e < E ? logits[t * E + e] : -1.0 / 0.0;
        lmax = max(lmax, lg[j]);
    }
    const float gmax = qk_wg_max(lmax);
    float lsum = 0.0;
    for (uint j = 0; j < RT_PER; j++)
        if (j * WG + lid < E) lsum += exp(lg[j] - gmax);
    const float total = qk_wg_sum(lsum);

    uint taken = 0u; // bit j: this invocation's logit j is selected
    uint sel_id[RT_MAX_K];
    float sel_w[RT_MAX_K];
    float sel_sum = 0.0;
    for (uint r = 0; r < RT_MAX_K; r++) {
        if (r >= TK) break; // uniform: every invocation leaves together
        float bv = -1.0 / 0.0, bi = RT_NONE;
        for (uint j = 0; j < RT_PER; j++) {
            const uint e = j * WG + lid;
            if (e < E && (taken & (1u << j)) == 0u && (bi == RT_NONE || lg[j] > bv))
                bv = lg[j], bi = float(e);
        }
        const float mx = qk_wg_max(bi == RT_NONE ? -1.0 / 0.0 : bv);
        // lowest index among the maxima: a max of negated indices
        const float best = -qk_wg_max(bi != RT_NONE && bv == mx ? -bi : -RT_NONE);
        const uint id = uint(best);
        if (id % WG == lid) taken |= 1u << (id / WG);
        sel_id[r] = id;
        sel_w[r] = exp(mx - gmax) / total;
        sel_sum += sel_w[r];
    }
    if (lid == 0u)
        for (uint r = 0; r < TK; r++) {
            ids[t * TK + r] = int(sel_id[r]);
#ifdef FUSION_renorm
            route_w[t * TK + r] = qk_fuse_renorm(sel_w[r], sel_sum);
#else
            route_w[t * TK + r] = sel_w[r];
#endif
        }
}
