// moe_route: MoE prefill routing on the GPU. From the router's top-k ids
// (topk[p], the expert of pair p = token * top_k + slot) it builds tpe[e], the
// pairs routed to expert e, ids[e][0 .. tpe[e]) those pairs in increasing
// order, and disp[], the indirect dispatch arguments of two matmul_id kernels.
//
// One workgroup walks the pairs in chunks of WG. Each invocation ranks its pair
// among the chunk's earlier pairs of the same expert (a scan of the chunk in
// shared memory, four entries a read), so the order is deterministic; the
// chunk's pairs of an expert then advance its count with a shared atomic,
// whose order does not matter. The work is T * top_k / 8 shared reads per
// invocation: small next to the matmuls it routes, and one dispatch with no
// host round trip.

#define QK_MAX_E 512u // the spec's constraint E <= 512

shared uint qk_cnt[QK_MAX_E];
shared uvec4 qk_chunk[WG / 4u]; // the expert of each pair of the chunk, ~0u for none

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint npairs = pc.T * pc.top_k, E = min(pc.E, QK_MAX_E), mpe = pc.max_per_expert;
    for (uint e = tid; e < E; e += WG) qk_cnt[e] = 0u;
    for (uint base = 0; base < npairs; base += WG) {
        const uint p = base + tid;
        // ids outside 0 .. E-1 route nowhere rather than write out of bounds
        const int id = p < npairs ? topk[p] : -1;
        const uint e = id >= 0 && uint(id) < E ? uint(id) : ~0u;
        qk_chunk[tid / 4u][tid % 4u] = e;
        barrier(); // the chunk is in place, and the previous chunk's counts
        if (e != ~0u) {
            // earlier pairs of the chunk with the same expert: whole uvec4s
            // before this one's, then this one's entries before it
            uint rank = 0u;
            const uvec4 me = uvec4(e);
            for (uint j = 0; j < tid / 4u; j++) {
                const uvec4 same = uvec4(equal(qk_chunk[j], me));
                rank += same.x + same.y + same.z + same.w;
            }
            const uvec4 own = uvec4(equal(qk_chunk[tid / 4u], me));
            const uvec4 before = uvec4(lessThan(uvec4(0u, 1u, 2u, 3u), uvec4(tid % 4u)));
            const uvec4 c = own & before;
            rank += c.x + c.y + c.z + c.w;
            const uint pos = qk_cnt[e] + rank;
            if (pos < mpe) ids[e * mpe + pos] = p;
        }
        barrier(); // every count is read before one changes
        if (e != ~0u) atomicAdd(qk_cnt[e], 1u);
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
