// residual_rmsnorm: the residual stage, then the rmsnorm stage on the new
// residual; each stage is written once, in its own file.
#include "residual.glsl"
#include "rmsnorm.glsl"
