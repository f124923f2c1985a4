// swiglu stage: the combine step of the gate+up fusion, written once for every
// template (mat-vec, matmul, their ids forms) that lists the swiglu fusion.
//
// Contract with the template: under FUSION_swiglu it binds QK_FUSE_NW = 2
// weight matrices, m = 0 the gate and m = 1 the up projection (same shape and
// format), accumulates both dot products from one read of the activations in
// f32, and stores qk_fuse_swiglu(gate, up) in place of a single product.

#define QK_FUSE_NW 2u

// silu(g) * u = g / (1 + e^-g) * u. For very negative g, e^-g overflows to
// +inf and the quotient is -0, the right limit, so no clamp is needed.
float qk_fuse_swiglu(float g, float u) { return g / (1.0 + exp(-g)) * u; }
