// Shared by the mat-vec templates (matvec_staged.comp, matvec_shared.comp,
// matvec_mma.comp, and matvec_xq.comp through include/matvec_lanes.glsl):
// which activation rows a workgroup's NR1 columns read, where their results
// go, and the activations of one hook call. The routed MoE form below is
// used by the templates on include/matvec_lanes.glsl (matvec_staged.comp,
// matvec_xs.comp, matvec_xq.comp), whose stores go through qk_mv_out.

#include "include/act.glsl"

// The product's rows and the activation rows per token: M and ne11, but in a
// template that names them otherwise (moe_combine's lanes form: N rows, each
// pair its own activations).
#ifndef QK_MV_M
#define QK_MV_M pc.M
#define QK_MV_NE11 pc.ne11
#endif

#if defined(BINDING_logits)
// The ranked MoE form (routing ranked: the router's top-k inside): the
// expert of pair p = token * top_k + slot is the one of rank `slot` among
// the token's E logits (include/rank.glsl: router_topk's order), so no
// top-k dispatch runs between the router's mat-vec and this one. Every
// workgroup ranks its token's logits; the first row tile's (grid x 0) also
// writes the pair's id and routing weight for the products and the combine
// after it: the softmax probability renormalised over the top k,
// exp(lg[slot] - lg[0]) / sum_r<k exp(lg[r] - lg[0]) (router_topk's renorm).
#include "include/rank.glsl"

shared uint qk_ranked_pick;     // the pair's expert
shared float qk_ranked_sel[16]; // the top k logits by rank

uint qk_ranked_expert(uint pair) {
    const uint E = pc.E, TK = pc.top_k, tok = pair / TK, slot = pair % TK;
    const uint lid = gl_LocalInvocationIndex, E4 = (E + 3u) & ~3u;
    for (uint e = lid; e < E4; e += WG) qk_rank_lg[e] = e < E ? logits[tok * E + e] : -1.0 / 0.0;
    if (lid == 0u) qk_ranked_pick = 0u; // NaN logits can leave a rank unpicked
    barrier();
    for (uint e = lid; e < E; e += WG) {
        const uint rank = qk_rank_of(e, E4);
        if (rank == slot) qk_ranked_pick = e;
        if (rank < TK) qk_ranked_sel[rank] = qk_rank_lg[e];
    }
    barrier();
    const uint pick = min(qk_ranked_pick, E - 1u); // in bounds, whatever the logits
    if (gl_WorkGroupID.x == 0u && lid == 0u) {
        const float top = qk_ranked_sel[0];
        float sum = 0.0; // in rank order
        for (uint r = 0; r < TK; r++) sum += exp(qk_ranked_sel[r] - top);
        ids[pair] = int(pick);
        route_w[pair] = exp(qk_ranked_sel[slot] - top) / sum;
    }
    return pick;
}
#endif

// Column setup for the workgroup whose first column is tok0: toks[t] is the
// element offset of column t's activation row, ncols the number of columns
// that exist; returns the first block of the weights to read. Rows of tokens
// past the end are clamped, computed and never stored.
//
// MoE form (an ids binding, NR1 = 1): column p is the pair p = token * top_k +
// slot against expert ids[p] of E stacked experts (clamped, so a bad id
// cannot read out of bounds), reading the token's activations (ne11 = 1) or
// the pair's own (ne11 = top_k); in the ranked form (a logits binding too)
// the expert is ranked here and ids written.
//
// Routed MoE form (ids and tpe bindings: family matmul_id, as matmul.comp):
// grid z is the expert e, and column c is the pair ids[e][c] for c < tpe[e],
// so the workgroup reads its expert's rows once for up to NR1 of its pairs.
// ncols is tpe[e]: a workgroup whose first column is past it has nothing to
// do (the templates return at once).
uint qk_mv_columns(uint tok0, out uint toks[NR1], out uint ncols) {
    const uint K = pc.K;
#if defined(BINDING_tpe)
    const uint e = gl_WorkGroupID.z, npairs = pc.T * pc.top_k;
    ncols = min(tpe[e], pc.max_per_expert);
    [[unroll]] for (uint t = 0; t < NR1; t++) {
        const uint c = min(tok0 + t, max(ncols, 1u) - 1u);
        const uint p = min(ids[e * pc.max_per_expert + c], npairs - 1u);
        toks[t] = (p / pc.top_k * QK_MV_NE11 + p % pc.top_k % QK_MV_NE11) * K;
    }
    return e * QK_MV_M * (K / QK);
#elif defined(BINDING_ids)
    const uint tok = tok0 / pc.top_k, slot = tok0 % pc.top_k;
    ncols = pc.T * pc.top_k;
    toks[0] = (tok * QK_MV_NE11 + slot % QK_MV_NE11) * K;
#if defined(BINDING_logits)
    return qk_ranked_expert(tok0) * QK_MV_M * (K / QK);
#else
    return uint(clamp(ids[tok0], 0, int(pc.E) - 1)) * QK_MV_M * (K / QK);
#endif
#else
    ncols = pc.T;
    [[unroll]] for (uint t = 0; t < NR1; t++) toks[t] = min(tok0 + t, pc.T - 1u) * K;
    return 0u;
#endif
}

// The output row of column c: the pair ids[e][c] in the routed MoE form, else c.
uint qk_mv_out(uint c) {
#if defined(BINDING_tpe)
    return min(ids[gl_WorkGroupID.z * pc.max_per_expert + c], pc.T * pc.top_k - 1u);
#else
    return c;
#endif
}

#if defined(BINDING_x)
// Activations of one hook call for token offset xb (elements), block e0.
void load_x(uint xb, uint e0, uint sub, out float xv[QK_SUB_N]) {
#if QK_SUB_N % 4 == 0
    [[unroll]] for (uint j = 0; j < QK_SUB_N / 4; j++) {
        vec4 v = load_x4(xb, e0, sub, 4u * j);
        xv[4 * j] = v.x, xv[4 * j + 1] = v.y, xv[4 * j + 2] = v.z, xv[4 * j + 3] = v.w;
    }
#else
    [[unroll]] for (uint i = 0; i < QK_SUB_N; i++) xv[i] = x[xb + e0 + qk_sub_elem(sub, i)];
#endif
}
#endif
