// router_topk: the MoE router's softmax over E expert logits and the top k
// experts with their probabilities: after the router's mat-vec, one
// workgroup a token (logits given), or with the mat-vec inside, over several
// workgroups a token of which the last to finish ranks (logits computed).
//
// The ranking (include/rank.glsl): the logits go to shared memory and each
// invocation ranks the ones it owns against all E in one pass. The routing
// forms of other models are fusions (topk_softmax: gpt-oss; sigmoid_bias:
// DeepSeek-V3), so that the runtime, the select table and model files tell
// them apart by the fusion name, as they tell renorm from none.
#include "include/wg_reduce.glsl"
#include "include/rank.glsl"

#define RT_MAX_K 16u

shared float rt_w[RT_MAX_K];
shared int rt_id[RT_MAX_K];

#ifdef AXIS_logits_computed
// The router's mat-vec first (logits computed): grid x splits the E rows into
// tiles of NR0, grid y is the token. The workgroup's subgroups take its rows
// in turn, their lanes a row's sub-blocks four at a time (the loads of four
// hook calls in flight together), a subgroup sum each logit. The logits go
// to the output and to the scratch; then the workgroup counts itself in the
// token's counter (scratch[t], zero before the dispatch), and only the last
// of the token's workgroups to arrive goes on: it reads every logit back
// from the (coherent) scratch, ranks them as below and sets the counter back
// to zero for the next dispatch (include/last_arrival.glsl).
#include "include/last_arrival.glsl"

// false: this workgroup is not its token's last; the caller returns.
bool router_logits(uint t, uint E, uint E4) {
    const uint K = pc.K, nb = K / QK, nsub = nb * QK_SUBS, SG = gl_SubgroupSize;
    const uint lane = gl_SubgroupInvocationID, xrow = t * K;
    for (uint r = gl_SubgroupID; r < NR0; r += gl_NumSubgroups) {
        const uint e = gl_WorkGroupID.x * NR0 + r;
        const uint row = min(e, E - 1u) * nb; // past E: computed, not stored
        float acc = 0.0;
        for (uint c0 = lane; c0 < nsub; c0 += 4u * SG) {
            [[unroll]] for (uint u = 0; u < 4u; u++) {
                const uint c = min(c0 + u * SG, nsub - 1u), kb = c / QK_SUBS, sub = c % QK_SUBS;
                float w[QK_SUB_N];
                qk_dequant_sub(0u, row + kb, sub, w);
                float part = 0.0;
                for (uint i = 0; i < QK_SUB_N; i++)
                    part = fma(w[i], x[xrow + kb * QK + qk_sub_elem(sub, i)], part);
                acc += c0 + u * SG < nsub ? part : 0.0;
            }
        }
        const float v = subgroupAdd(acc);
        if (subgroupElect() && e < E) {
            logits[t * E + e] = v;
            scratch[pc.T + t * E + e] = floatBitsToUint(v);
        }
    }
    if (!qk_last_arrival(t, gl_NumWorkGroups.x)) return false;
    for (uint e = gl_LocalInvocationID.x; e < E4; e += WG)
        qk_rank_lg[e] = e < E ? uintBitsToFloat(scratch[pc.T + t * E + e]) : -1.0 / 0.0;
    qk_arrival_reset(t);
    barrier();
    return true;
}
#endif

#if defined(FUSION_topk_softmax) || defined(FUSION_sigmoid_bias)
// The routing forms besides softmax-then-top-k (fusions topk_softmax,
// sigmoid_bias: stages/*.glsl). They need no softmax over all E, only the
// ranking, so they take a path of their own, and the default form's text
// below stays as it was (its kernels are unchanged).

// A token's logit of expert e, read again once the shared array holds the
// biased scores (sigmoid_bias weights by the unbiased score).
float router_logit(uint t, uint e) {
#ifdef AXIS_logits_computed
    return uintBitsToFloat(scratch[pc.T + t * pc.E + e]);
#else
    return logits[t * pc.E + e];
#endif
}

#ifdef FUSION_sigmoid_bias
// Grouped top-k: the E experts in n_group groups of G; a group's score is the
// sum of its two best biased scores (one when G = 1); the experts of all but
// the topk_group best groups (ties to the lower group) drop out (-inf), so the
// ranking after it picks among the kept ones only. The group scores use
// rt_w's 16 slots (n_group <= 16: the fusion's constraints) before the
// chosen weights do.
void router_groups(uint E, uint lid) {
    const uint NG = pc.n_group, G = E / NG;
    if (pc.topk_group >= NG) return; // every group kept (uniform)
    if (lid < NG) {
        float b1 = -1.0 / 0.0, b2 = -1.0 / 0.0; // b1 >= b2: the best two
        for (uint j = lid * G; j < lid * G + G; j++) {
            const float s = qk_rank_lg[j];
            b2 = max(b2, min(b1, s));
            b1 = max(b1, s);
        }
        rt_w[lid] = G > 1u ? b1 + b2 : b1;
    }
    barrier();
    for (uint e = lid; e < E; e += WG) {
        const uint g = e / G;
        const float gs = rt_w[g];
        uint grank = 0u;
        for (uint h = 0; h < NG; h++)
            grank += uint(rt_w[h] > gs) | (uint(rt_w[h] == gs) & uint(h < g));
        if (grank >= pc.topk_group) qk_rank_lg[e] = -1.0 / 0.0;
    }
    barrier();
}
#endif

void router_form(uint t, uint E, uint E4, uint TK, uint lid) {
#ifdef AXIS_logits_computed
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    if (!router_logits(t, E, E4)) return;
#ifdef FUSION_sigmoid_bias
    for (uint e = lid; e < E; e += WG) qk_rank_lg[e] = qk_fuse_choice(qk_rank_lg[e], e);
#endif
#else
    for (uint e = lid; e < E4; e += WG) {
#ifdef FUSION_sigmoid_bias
        qk_rank_lg[e] = e < E ? qk_fuse_choice(logits[t * E + e], e) : -1.0 / 0.0;
#else
        qk_rank_lg[e] = e < E ? logits[t * E + e] : -1.0 / 0.0;
#endif
    }
#endif
    barrier(); // the scores, published
#ifdef FUSION_sigmoid_bias
    router_groups(E, lid);
#endif
    for (uint e = lid; e < E; e += WG) {
        const uint rank = qk_rank_of(e, E4);
        if (rank < TK) {
            rt_id[rank] = int(e);
#ifdef FUSION_sigmoid_bias
            rt_w[rank] = qk_fuse_sigmoid(router_logit(t, e));
#else
            rt_w[rank] = qk_rank_lg[e];
#endif
        }
    }
    barrier();
    if (lid < TK) {
        float sum = 0.0; // in selection order, as the reference adds them
#ifdef FUSION_sigmoid_bias
        for (uint r = 0; r < TK; r++) sum += rt_w[r];
        const float w = qk_fuse_sigmoid_weight(rt_w[lid], sum);
#else
        const float lmax = rt_w[0]; // rank 0: the largest logit
        for (uint r = 0; r < TK; r++) sum += exp(rt_w[r] - lmax);
        const float w = qk_fuse_topk_softmax(rt_w[lid], lmax, sum);
#endif
        ids[t * TK + lid] = rt_id[lid];
        route_w[t * TK + lid] = w;
    }
}
#endif

void main() {
#ifdef AXIS_logits_computed
    const uint t = gl_WorkGroupID.y;
#else
    const uint t = gl_WorkGroupID.x;
#endif
    const uint E = pc.E, TK = pc.top_k, lid = gl_LocalInvocationID.x;
    const uint E4 = (E + 3u) & ~3u;
#if defined(FUSION_topk_softmax) || defined(FUSION_sigmoid_bias)
    router_form(t, E, E4, TK, lid);
#else
    float lmax = -1.0 / 0.0;
#ifdef AXIS_logits_computed
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    if (!router_logits(t, E, E4)) return;
    for (uint e = lid; e < E; e += WG) lmax = max(lmax, qk_rank_lg[e]);
#else
    for (uint e = lid; e < E4; e += WG) {
        const float l = e < E ? logits[t * E + e] : -1.0 / 0.0;
        qk_rank_lg[e] = l;
        lmax = max(lmax, l);
    }
#endif
    const float gmax = qk_wg_max(lmax); // its barriers also publish the logits
    float lsum = 0.0;
    for (uint e = lid; e < E; e += WG) lsum += exp(qk_rank_lg[e] - gmax);
    const float total = qk_wg_sum(lsum);
    for (uint e = lid; e < E; e += WG) {
        const float v = qk_rank_lg[e];
        const uint rank = qk_rank_of(e, E4);
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
#endif
}
