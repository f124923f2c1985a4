// router_topk: the MoE router after its mat-vec: softmax over E expert logits
// and the top k experts with their probabilities, one workgroup per token.
//
// One pass, no rounds: the logits go to shared memory, and each invocation
// ranks the ones it owns against all E, rank(e) = #{j : lg[j] > lg[e], or
// lg[j] == lg[e] and j < e}. That is the order in which k rounds of argmax,
// ties to the lower index, would pick them (softmax keeps the order), so the
// result is deterministic and matches a sequential reference; the logit of
// rank r < k is the r-th selected. k rounds of workgroup argmax would cost
// two reductions each, a chain of barriers; the ranking reads the shared
// logits four at a time, in a loop the compiler can pipeline.
#include "include/wg_reduce.glsl"

#define RT_MAX_E 512u
#define RT_MAX_K 16u

shared vec4 rt_lg[RT_MAX_E / 4u]; // logit j at rt_lg[j / 4][j % 4]; -inf past E
shared float rt_w[RT_MAX_K];
shared int rt_id[RT_MAX_K];

void main() {
    const uint E = pc.E, TK = pc.top_k, t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    const uint E4 = (E + 3u) / 4u;
    float lmax = -1.0 / 0.0;
    for (uint q = lid; q < E4; q += WG) {
        vec4 l;
        [[unroll]] for (uint c = 0; c < 4u; c++) {
            const uint e = 4u * q + c;
            l[c] = e < E ? logits[t * E + e] : -1.0 / 0.0;
            lmax = max(lmax, l[c]);
        }
        rt_lg[q] = l;
    }
    const float gmax = qk_wg_max(lmax); // its barriers also publish rt_lg
    float lsum = 0.0;
    for (uint e = lid; e < E; e += WG) lsum += exp(rt_lg[e / 4u][e % 4u] - gmax);
    const float total = qk_wg_sum(lsum);
    for (uint e = lid; e < E; e += WG) {
        const float v = rt_lg[e / 4u][e % 4u];
        uint rank = 0u;
        for (uint q = 0; q < E4; q++) {
            const vec4 u = rt_lg[q];
            [[unroll]] for (uint c = 0; c < 4u; c++)
                rank += u[c] > v || (u[c] == v && 4u * q + c < e) ? 1u : 0u;
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
