// topk_softmax stage of the router (gpt-oss): the weight of a chosen expert
// is the softmax of its logit l over the k chosen ones, whose largest is lmax
// and whose sum of exp(l - lmax) is sum.
float qk_fuse_topk_softmax(float l, float lmax, float sum) { return exp(l - lmax) / sum; }
