// The meeting point of workgroups that share a counter in the scratch
// binding (a u32 word, zero before the dispatch, declared coherent): each
// writes its part to the scratch, then counts itself in; the last of the n to
// arrive goes on alone and reads every part, and sets the counter back to
// zero for the next dispatch: the kernels computing their inputs over many
// workgroups a token (router_topk's logits, moe_combine's slots,
// include/combine_lanes.glsl). Its one shared word is counted by the
// kernels' shared_memory expressions (the "+ 4"). Split K meets the same
// way with n the specialization constant SK (include/split_k.glsl), kept
// apart so that SK - 1 stays a constant of the module: the split variants'
// SPIR-V, and with it their tuning records, unchanged.

shared uint qk_arrived; // the arrivals before this workgroup's

// After this workgroup's writes to the scratch: true, uniformly, for the last
// of n to count themselves in word counter, whose reads of the scratch then
// see every write made before the others counted.
bool qk_last_arrival(uint counter, uint n) {
    memoryBarrierBuffer(); // the writes before the count
    barrier();
    if (gl_LocalInvocationIndex == 0u) qk_arrived = atomicAdd(scratch[counter], 1u);
    barrier();
    if (qk_arrived != n - 1u) return false;
    memoryBarrierBuffer();
    return true;
}

// The last to arrive, done with the parts: the counter back to zero.
void qk_arrival_reset(uint counter) {
    if (gl_LocalInvocationIndex == 0u) scratch[counter] = 0u;
}
