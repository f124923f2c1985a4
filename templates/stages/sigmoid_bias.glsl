// sigmoid_bias stage of the router (DeepSeek-V3): the score of a logit, the
// biased score that chooses (bias: the correction of each expert, which never
// weights), and the weight of a chosen score among the chosen ones' sum.

float qk_fuse_sigmoid(float l) { return 1.0 / (1.0 + exp(-l)); }

float qk_fuse_choice(float l, uint e) { return qk_fuse_sigmoid(l) + bias[e]; }

float qk_fuse_sigmoid_weight(float s, float chosen_sum) {
    return s / chosen_sum * uintBitsToFloat(pc.scale_bits);
}
