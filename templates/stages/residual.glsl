// residual stage: adds the layer's input back, y = residual + v. A fused
// kernel lists it to save a pass over the hidden state.
//
// Binding `residual` [rows, N] is read only; an engine that updates the
// residual stream in place binds the same buffer as `residual` and `y` (each
// element is read and then written by the same invocation).
#define QK_STAGE_RESIDUAL 1

float qk_fuse_residual(uint idx, float v) { return residual[idx] + v; }
