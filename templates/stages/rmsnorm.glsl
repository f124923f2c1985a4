// rmsnorm stage: the next layer's RMSNorm of a finished row, normed[i] =
// v[i] / sqrt(mean(v^2) + eps) * norm_w[i], written beside the row itself.
//
// The template sums v^2 over the row (qk_wg_sum) and calls qk_fuse_rmsnorm
// for each element. eps comes as its f32 bit pattern in push constant eps_bits.
#define QK_STAGE_RMSNORM 1

float qk_rmsnorm_scale(float sumsq, uint n) {
    return inversesqrt(sumsq / float(n) + uintBitsToFloat(pc.eps_bits));
}

void qk_fuse_rmsnorm(uint idx, uint i, float v, float scale) {
    normed[idx] = v * scale * norm_w[i];
}
