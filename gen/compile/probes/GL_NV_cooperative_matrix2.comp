// Probe of GL_NV_cooperative_matrix2 for gen/compile/features.c and CMake: a shader that
// uses what matmul_tensor.comp does (workgroup-scope matrices, a tensor-addressed load
// with a decode callback, a per-element operation), so both the compiler and the
// validator must know them. glslang accepts it only for SPIR-V 1.6 (Vulkan 1.3),
// which gen/compile/compile.c targets for modules that enable the extension.
#version 450
#extension GL_KHR_cooperative_matrix : require
#extension GL_NV_cooperative_matrix2 : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 128) in;
layout(binding = 0) buffer A { uint a[]; };
layout(binding = 1) buffer C { float c[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer Ref { uint w; };
float16_t decode(const in Ref r, const in uint b[2], const in uint i[2]) {
    return float16_t(a[b[0] + b[1] + i[1]]);
}
float put(const in uint r, const in uint k, const in float v) {
    c[r * 64u + k] = v;
    return v;
}
void main() {
    tensorLayoutNV<2, gl_CooperativeMatrixClampModeConstantNV> t =
        createTensorLayoutNV(2, gl_CooperativeMatrixClampModeConstantNV);
    t = setTensorLayoutBlockSizeNV(t, 1, 32);
    t = setTensorLayoutDimensionNV(t, 64, 64);
    coopmat<float16_t, gl_ScopeWorkgroup, 64, 32, gl_MatrixUseA> ma;
    coopMatLoadTensorNV(ma, a, 0, sliceTensorLayoutNV(t, 0, 64, 0, 32), decode);
    coopmat<float, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator> mc =
        coopmat<float, gl_ScopeWorkgroup, 64, 64, gl_MatrixUseAccumulator>(0.0);
    coopMatPerElementNV(mc, mc, put);
}
