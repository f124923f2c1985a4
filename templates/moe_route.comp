// moe_route: MoE prefill routing on the GPU. From the router's top-k ids
// (topk[p], the expert of pair p = token * top_k + slot) it builds tpe[e], the
// pairs routed to expert e, ids[e][0 .. tpe[e]) those pairs in increasing
// order, and disp[], the indirect dispatch arguments of two matmul_id kernels.
//
// One workgroup walks the pairs in chunks of WG. Each invocation ranks its pair
// among the chunk's earlier pairs of the same expert (a scan of the chunk in
// shared memory), so the order is deterministic and no atomics are needed; the
// chunk's last pair of an expert then advances that expert's count. The work
// is T * top_k shared reads per invocation: small next to the matmuls it
// routes, and one dispatch with no host round trip.

#define QK_MAX_E 512u // the spec's constraint E <= 512

shared uint qk_cnt[QK_MAX_E];
shared uint qk_chunk[WG]; // the expert of each pair of the chunk, ~0u for none

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint npairs = pc.T * pc.top_k, E = min(pc.E, QK_MAX_E), mpe = pc.max_per_expert;
    for (uint e = tid; e < E; e += WG) qk_cnt[e] = 0u;
    for (uint base = 0; base < npairs; base += WG) {
        const uint p = base + tid;
        // ids outside 0 .. E-1 route nowhere rather than write out of bounds
        const int id = p < npairs ? topk[p] : -1;
        const uint e = id >= 0 && uint(id) < E ? uint(id) : ~0u;
        qk_chunk[tid] = e;
        barrier(); // the chunk is in place, and the previous chunk's counts
        uint rank = 0u;
        bool last = true;
        if (e != ~0u) {
            for (uint j = 0; j < tid; j++) rank += qk_chunk[j] == e ? 1u : 0u;
            for (uint j = tid + 1u; j < WG; j++) last = last && qk_chunk[j] != e;
            const uint pos = qk_cnt[e] + rank;
            if (pos < mpe) ids[e * mpe + pos] = p;
        }
        barrier(); // every count is read before one changes
        if (e != ~0u && last) qk_cnt[e] += rank + 1u;
    }
    barrier();
    for (uint e = tid; e < E; e += WG) tpe[e] = min(qk_cnt[e], mpe);
    if (tid == 0u) {
        uint most = 0u;
        for (uint e = 0; e < E; e++) most = max(most, min(qk_cnt[e], mpe));
        disp[0] = pc.groups_x0;
        disp[1] = (most + pc.tile_n0 - 1u) / pc.tile_n0;
        disp[2] = E;
        disp[3] = pc.groups_x1;
        disp[4] = (most + pc.tile_n1 - 1u) / pc.tile_n1;
        disp[5] = E;
    }
}
