// gated_shared_rmsnorm: as shared_rmsnorm, the shared expert's output
// scaled by sigmoid(shared_gate[t]) (Qwen2-MoE).
#define QK_SHARED_GATED 1
#include "shared.glsl"
#include "rmsnorm.glsl"
