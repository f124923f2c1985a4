// quantize_q8: activations x[T][K] (f32) to q8 rows (include/q8.glsl), once
// per token, for the int8-dot kernels with an xq binding: every workgroup of
// those reads the rounded codes (1.25 bytes per activation) instead of
// reading and rounding the floats (4 bytes) itself, and gate and up of a
// layer can share them.
//
// One invocation per 32-element group: eight vec4 loads, the group's maximum,
// eight packed words and their code sum, two uvec4 stores of codes and the
// pair (dx, sx).

#include "include/dot8.glsl"
#include "include/q8.glsl"

void main() {
    const uint G = pc.K / 32u, grp = gl_GlobalInvocationID.x;
    if (grp >= pc.T * G) return;
    const uint row = grp / G, g = grp % G;
    vec4 v[8];
    float amax = 0.0;
    [[unroll]] for (uint i = 0; i < 8u; i++) {
        v[i] = x4[8u * grp + i];
        const vec4 a = abs(v[i]);
        amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
    }
    const float scale = qk_q8_scale(amax), dx = amax / 127.0;
    uint q[8];
    int sum = 0;
    [[unroll]] for (uint i = 0; i < 8u; i++) {
        q[i] = qk_pack_i8x4(v[i], scale);
        sum = qk_sdot4(q[i], 0x01010101u, sum);
    }
    const uint rb = qk_q8_row(row * pc.K); // the row's first byte
    xq4[(rb + 32u * g) / 16u] = uvec4(q[0], q[1], q[2], q[3]);
    xq4[(rb + 32u * g) / 16u + 1u] = uvec4(q[4], q[5], q[6], q[7]);
    xq[(rb + pc.K + 8u * g) / 4u] = floatBitsToUint(dx);
    xq[(rb + pc.K + 8u * g) / 4u + 1u] = floatBitsToUint(dx * float(sum));
}
