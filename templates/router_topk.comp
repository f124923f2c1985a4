// router_topk: the MoE router's softmax over E expert logits and the top k
// experts with their probabilities: after the router's mat-vec, one
// workgroup a token (logits given), or with the mat-vec inside, over several
// workgroups a token of which the last to finish ranks (logits computed).
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

#ifdef AXIS_logits_computed
// The router's mat-vec first (logits computed): grid x splits the E rows into
// tiles of NR0, grid y is the token. The workgroup's subgroups take its rows
// in turn, their lanes a row's sub-blocks four at a time (the loads of four
// hook calls in flight together), a subgroup sum each logit. The logits go
// to the output and to the scratch; then the workgroup counts itself in the
// token's counter (scratch[t], zero before the dispatch), and only the last
// of the token's workgroups to arrive goes on: it reads every logit back
// from the (coherent) scratch, ranks them as below and sets the counter back
// to zero for the next dispatch.
shared uint rt_seen;

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
    memoryBarrierBuffer(); // the logits before the count
    barrier();
    if (gl_LocalInvocationIndex == 0u) rt_seen = atomicAdd(scratch[t], 1u);
    barrier();
    if (rt_seen != gl_NumWorkGroups.x - 1u) return false;
    memoryBarrierBuffer();
    for (uint e = gl_LocalInvocationID.x; e < E4; e += WG)
        rt_lg[e] = e < E ? uintBitsToFloat(scratch[pc.T + t * E + e]) : -1.0 / 0.0;
    if (gl_LocalInvocationIndex == 0u) scratch[t] = 0u;
    barrier();
    return true;
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
    float lmax = -1.0 / 0.0;
#ifdef AXIS_logits_computed
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    if (!router_logits(t, E, E4)) return;
    for (uint e = lid; e < E; e += WG) lmax = max(lmax, rt_lg[e]);
#else
    for (uint e = lid; e < E4; e += WG) {
        const float l = e < E ? logits[t * E + e] : -1.0 / 0.0;
        rt_lg[e] = l;
        lmax = max(lmax, l);
    }
#endif
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
