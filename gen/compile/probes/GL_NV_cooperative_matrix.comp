// Probe of GL_NV_cooperative_matrix for gen/compile/features.c and CMake: a shader that
// uses it, so both the compiler and the validator must know the extension.
#version 450
#extension GL_NV_cooperative_matrix : require
#extension GL_KHR_memory_scope_semantics : require
#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require
layout(local_size_x = 32) in;
layout(binding = 0) buffer A { float16_t a[]; };
layout(binding = 1) buffer C { float c[]; };
void main() {
    fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> ma, mb;
    fcoopmatNV<32, gl_ScopeSubgroup, 16, 16> mc = fcoopmatNV<32, gl_ScopeSubgroup, 16, 16>(0.0);
    coopMatLoadNV(ma, a, 0, 16, false);
    coopMatLoadNV(mb, a, 256, 16, true);
    mc = coopMatMulAddNV(ma, mb, mc);
    coopMatStoreNV(mc, c, 0, 16, false);
}
