// copy: dst = src, N floats (N a multiple of 4), as vec4; the benchmark's
// measure of the device's copy bandwidth. Each invocation moves NK vec4,
// WG apart, so every access of a subgroup is contiguous.

void main() {
    const uint n4 = pc.N / 4u;
    const uint base = gl_WorkGroupID.x * NK * WG + gl_LocalInvocationID.x;
    [[unroll]] for (uint j = 0; j < NK; j++) {
        const uint i = base + j * WG;
        if (i < n4) dst4[i] = src4[i];
    }
}
