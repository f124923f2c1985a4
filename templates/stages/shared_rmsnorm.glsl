// shared_rmsnorm: the shared expert's output and the residual added to the
// routed sum (stages/shared.glsl), then the next layer's RMSNorm.
#include "shared.glsl"
#include "rmsnorm.glsl"
