// router_topk: the MoE router after its mat-vec: softmax over E expert logits
// and the top k experts with their probabilities, one workgroup per token.
//
// One pass, no rounds: the logits go to shared memory, and each invocation
// ranks the ones it owns against all E, rank(e) = #{j : lg[j] > lg[e], or
// lg[j] == lg[e] and j < e}. That is the order in which k rounds of argmax,
// ties to the lower index, would pick them (softmax keeps the order), so the
// result is deterministic and matches a sequential reference; the logit of
// rank r < k is the r-th selected. k rounds of workgroup argmax would cost
// two reductions each, a chain of barriers. The ranking reads four logits a
// step (independent loads, padded with -inf past E) and counts without a
// branch: short-circuit && and || compile to branches in SPIR-V.
#include "include/wg_reduce.glsl"

#define RT_MAX_E 512u
#define RT_MAX_K 16u

shared float rt_lg[RT_MAX_E];
shared float rt_w[RT_MAX_K];
shared int rt_id[RT_MAX_K];

void main() {
    const uint E = pc.E, TK = pc.top_k, t = gl_WorkGroupID.x, lid = gl_LocalInvocationID.x;
    const uint E4 = (E + 3u) & ~3u;
    float lmax = -1.0 / 0.0;
    for (uint e = lid; e < E4; e += WG) {
        const float l = e < E ? logits[t * E + e] : -1.0 / 0.0;
        rt_lg[e] = l;
        lmax = max(lmax, l);
    }
    const float gmax = qk_wg_max(lmax); // its barriers also publish rt_lg
    float lsum = 0.0;
    for (uint e = lid; e < E; e += WG) lsum += exp(rt_lg[e] - gmax);
    const float total = qk_wg_sum(lsum);
    for (uint e = lid; e < E; e += WG) {
        const float v = rt_lg[e];
        uint rank = 0u;
        for (uint j = 0; j < E4; j += 4u) {
            const vec4 u = vec4(rt_lg[j], rt_lg[j + 1u], rt_lg[j + 2u], rt_lg[j + 3u]);
            const uvec4 before = uvec4(lessThan(uvec4(j, j + 1u, j + 2u, j + 3u), uvec4(e)));
            const uvec4 greater = uvec4(greaterThan(u, vec4(v)));
            const uvec4 tie = uvec4(equal(u, vec4(v))) & before;
            const uvec4 c = greater | tie;
            rank += c.x + c.y + c.z + c.w;
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
