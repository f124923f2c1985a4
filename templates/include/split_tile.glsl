// The split matmuls' meeting (matmul.comp, matmul_tensor.comp), over
// include/split_k.glsl: after every split of the tile has stored its sums in
// the scratch (split z's at z * T * M + each output's offset), the last to
// arrive adds them in split order and writes y. Outputs go through the
// template's qk_yrow (a column's row offset in y, or ~0u: not stored).
#include "include/split_k.glsl"

void qk_split_finish(uint row0) {
    const uint M = pc.M, tid = gl_LocalInvocationID.x;
    const uint counter = SK * pc.T * M + gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x;
    if (!qk_split_last(counter)) return;
    for (uint o = tid; o < NR0 * NR1; o += WG) { // consecutive invocations, consecutive rows
        const uint yr = qk_yrow[o / NR0], r = row0 + o % NR0;
        if (yr == ~0u || r >= M) continue;
        float sum = 0.0;
        for (uint z = 0; z < SK; z++) sum += uintBitsToFloat(scratch[z * pc.T * M + yr + r]);
        y[yr + r] = sum;
    }
    qk_split_reset(counter);
}
