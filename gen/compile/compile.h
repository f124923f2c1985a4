/* compile: GLSL to SPIR-V in-process with glslang's C interface, then
 * SPIRV-Tools: optimize (specialization constants kept) and validate for the
 * target environment. Knows nothing of YAML. */
#ifndef QK_COMPILE_H
#define QK_COMPILE_H

#include "../../common/qk_util.h"

typedef struct qk_spirv {
    uint32_t *words;
    size_t count;
} qk_spirv;

/* Call once before and after any compilation (glslang's process state). */
void qk_compile_init(void);
void qk_compile_finish(void);

/* Compiles a compute shader for Vulkan 1.2 / SPIR-V 1.5. name labels errors:
 * "name: glslang: ERROR: 0:42: ...". */
bool qk_compile_glsl(const char *name, const char *source, qk_spirv *out, qk_error *e);
/* Performance passes of spirv-opt; keeps specialization constants. */
bool qk_optimize(const char *name, qk_spirv *m, qk_error *e);
/* m with specialization constant ids[i] set to values[i] (and frozen: the
 * others keep their defaults) and what depends on them folded, as a driver
 * sees it at pipeline creation; for validation and measurement. */
bool qk_specialize(const char *name, const qk_spirv *in, const uint32_t *ids,
                   const uint32_t *values, uint32_t n, qk_spirv *out, qk_error *e);
/* spirv-val for the Vulkan 1.2 environment. */
/* Whether m targets Vulkan 1.3: SPIR-V 1.6, which qk_compile_glsl gives the
 * modules that enable GL_NV_cooperative_matrix2 (else Vulkan 1.2, SPIR-V 1.5);
 * the optimizer and the validator take their target from it. */
bool qk_spirv_vulkan13(const qk_spirv *m);
bool qk_validate(const char *name, const qk_spirv *m, qk_error *e);
void qk_spirv_free(qk_spirv *m);
/* Bytes of the module's Workgroup (shared) variables: scalars and bools as 4
 * bytes (1 or 2 for 8- and 16-bit types), vectors, arrays and structs as the
 * sum of their parts, no padding; -1 for a size this cannot tell (a
 * specialization-constant length). What a driver allocates is at least this. */
int64_t qk_spirv_shared_bytes(const qk_spirv *m);
/* The same with specialization constant ids[i] at values[i] (the others at
 * their defaults), whose operations it evaluates as a driver would: -1 also
 * for an operation it does not know, or an array length of 0. */
int64_t qk_spirv_shared_bytes_spec(const qk_spirv *m, const uint32_t *ids, const uint32_t *values,
                                   uint32_t n);

/* The whole chain: compile, optimize, validate. */
bool qk_compile_all(const char *name, const char *source, qk_spirv *out, qk_error *e);

#endif
