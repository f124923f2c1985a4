// swiglu: y[i] = silu(g[i]) * u[i] elementwise, for gate and up projections
// computed apart (the matmul path); the combine function is the swiglu stage's.
#include "stages/swiglu.glsl"

void main() {
    const uint i = gl_GlobalInvocationID.x;
    if (i < pc.N) y[i] = qk_fuse_swiglu(g[i], u[i]);
}
