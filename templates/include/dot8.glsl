// Signed 8-bit dot products of four packed bytes (SPV_KHR_integer_dot_product,
// core in Vulkan 1.3; dp4a on NVIDIA). glslang 12 has no GLSL extension for
// them, so they are declared as SPIR-V intrinsics (GL_EXT_spirv_intrinsics,
// which the feature integer_dot_product enables): OpSDotKHR (4450) with the
// capabilities DotProductKHR (6019) and DotProductInput4x8BitPackedKHR (6018),
// its last operand PackedVectorFormat4x8Bit (0).
spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6019, 6018],
                  id = 4450) int qk_sdot4_packed(uint a, uint b, spirv_literal int format);

// acc + the dot product of the four signed bytes of a with those of b. Plain
// OpSDot and an add, not OpSDotAccSat: saturation would cost instructions, and
// the sums here stay far below 2^31.
int qk_sdot4(uint a, uint b, int acc) {
    return acc + qk_sdot4_packed(a, b, 0);
}
