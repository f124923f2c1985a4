// Probe of GL_NV_cooperative_matrix2 for gen/compile/features.c and CMake: a shader that
// uses it, so both the compiler and the validator must know the extension.
// glslang 15 accepts it only for SPIR-V 1.6 (Vulkan 1.3), past qkgen's target.
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(binding = 0) buffer A { float16_t a[]; };
layout(binding = 1) buffer C { float c[]; };
void main() {
    tensorLayoutNV<2> t = createTensorLayoutNV(2);
    t = setTensorLayoutDimensionNV(t, 64, 64);
    coopmat<float, gl_ScopeSubgroup, 16, 16, gl_MatrixUseAccumulator> mc;
    coopMatLoadTensorNV(mc, c, 0, sliceTensorLayoutNV(t, 0, 16, 0, 16));
    coopMatStoreTensorNV(mc, c, 0, sliceTensorLayoutNV(t, 16, 16, 0, 16));
}
