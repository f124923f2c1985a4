// The top-k order of E expert logits, shared by router_topk.comp and the
// mat-vec's ranked MoE form (include/matvec_cols.glsl): the logits lie in
// shared memory, padded with -inf to E4 = E rounded up to 4, and
//     rank(e) = #{j : lg[j] > lg[e], or lg[j] == lg[e] and j < e},
// the order in which k rounds of argmax, ties to the lower index, would pick
// them (softmax keeps the order), so the result is deterministic and
// matches a sequential reference; the logit of rank r < k is the r-th
// selected. One pass, no rounds: k rounds of workgroup argmax would cost two
// reductions each, a chain of barriers. The ranking reads four logits a
// step (independent loads) and counts without a branch: short-circuit && and
// || compile to branches in SPIR-V.

#define QK_RANK_MAX_E 512u

shared float qk_rank_lg[QK_RANK_MAX_E];

uint qk_rank_of(uint e, uint E4) {
    const float v = qk_rank_lg[e];
    uint rank = 0u;
    for (uint j = 0; j < E4; j += 4u) {
        const vec4 u = vec4(qk_rank_lg[j], qk_rank_lg[j + 1u], qk_rank_lg[j + 2u], qk_rank_lg[j + 3u]);
        const uvec4 before = uvec4(lessThan(uvec4(j, j + 1u, j + 2u, j + 3u), uvec4(e)));
        const uvec4 greater = uvec4(greaterThan(u, vec4(v)));
        const uvec4 tie = uvec4(equal(u, vec4(v))) & before;
        const uvec4 c = greater | tie;
        rank += c.x + c.y + c.z + c.w;
    }
    return rank;
}
