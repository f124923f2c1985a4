// renorm stage of the router: the top-k weights divided by their own sum, so
// they add to 1 (Qwen3's norm_topk_prob, Mixtral's softmax over the top k).
float qk_fuse_renorm(float w, float selected_sum) { return w / selected_sum; }
