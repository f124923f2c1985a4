// Small floats of the microscaling formats: E4M3 (fp8, bias 7, subnormals,
// S.1111.111 NaN), NVFP4's unsigned UE4M3 scales, E8M0 scales (2^(b - 127)),
// and E2M1 (fp4) codes through a 16-entry table of twice their values
// (include/lut.glsl: one shared load a code), exact in f32.

// twice E2M1: {0, 1, 2, 3, 4, 6, 8, 12, -0, -1, -2, -3, -4, -6, -8, -12} as bytes
const uvec4 QK_E2M1X2_TABLE = uvec4(0x03020100u, 0x0c080604u, 0xfdfeff00u, 0xf4f8fafcu);

float qk_e4m3(uint b) {
    const uint e = (b >> 3) & 15u, mt = b & 7u;
    const float v = e == 0u ? float(mt) * (1.0 / 512.0) : ldexp(float(8u + mt), int(e) - 10);
    return (b & 0x80u) != 0u ? -v : v;
}

// NVFP4's scales, as GGUF decodes them: the byte 0x7f is 0, and otherwise bit 7
// is ignored (0xff is 480, not NaN).
float qk_ue4m3(uint b) {
    const uint e = (b >> 3) & 15u, mt = b & 7u;
    return b == 0x7fu ? 0.0 : e == 0u ? float(mt) * (1.0 / 512.0) : ldexp(float(8u + mt), int(e) - 10);
}

float qk_e8m0(uint b) {
    return ldexp(1.0, int(b) - 127);
}
