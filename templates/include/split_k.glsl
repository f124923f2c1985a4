// Split K's meeting point, shared by the split mat-vec (include/
// matvec_lanes.glsl) and the split matmul (matmul.comp): the SK workgroups of
// one output tile (grid z the split) each write their sums to the scratch
// binding, then count themselves in the tile's counter (a scratch word, zero
// before the dispatch). The last to arrive adds the SK sums in split order,
// so the result does not depend on the order of arrival, and sets the counter
// back to zero for the next dispatch. Its one shared word is counted by the
// kernels' shared_memory expressions (the "+ 4").

shared uint qk_split_seen; // the tile's arrivals before this workgroup's

// After this workgroup's sums are in the scratch: true, uniformly, for the
// last of the tile's splits, whose reads of the scratch then see every sum.
bool qk_split_last(uint counter) {
    memoryBarrierBuffer(); // the sums before the count
    barrier();
    if (gl_LocalInvocationIndex == 0u) qk_split_seen = atomicAdd(scratch[counter], 1u);
    barrier();
    if (qk_split_seen != SK - 1u) return false;
    memoryBarrierBuffer();
    return true;
}

// The last split, done: the counter back to zero.
void qk_split_reset(uint counter) {
    if (gl_LocalInvocationIndex == 0u) scratch[counter] = 0u;
}
