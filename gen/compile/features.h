/* features: what the linked shader toolchain can do, for the plan's
 * legality rules and the CLI's reports. */
#ifndef QK_COMPILE_FEATURES_H
#define QK_COMPILE_FEATURES_H

#include <stdbool.h>

/* Whether a compute shader that uses GLSL extension ext (for example
 * "GL_KHR_cooperative_matrix") goes through qk_compile_all with the glslang
 * and SPIRV-Tools this qkgen links: Debian 12's glslang 12 knows neither
 * GL_KHR_cooperative_matrix nor GL_NV_cooperative_matrix2, the toolchain of
 * scripts/toolchain.sh both. Probed once per name by compiling a small shader
 * (for the cooperative-matrix extensions one that uses them, so SPIRV-Tools'
 * validator must know them too). Thread-safe; needs no qk_compile_init. */
bool qk_compile_has_extension(const char *ext);

/* The extensions with a probe (gen/compile/probes), into names; how many. */
unsigned qk_compile_probed_extensions(const char **names, unsigned cap);

/* The linked toolchain in words: "glslang 15.1.0, SPIRV-Tools v2025.1 ...". */
const char *qk_compile_toolchain(void);

/* The reason a variant that needs ext is dropped, for the plan's dropped list:
 * "needs GL_X, which this qkgen's glslang 12.0.0 cannot compile ...". */
const char *qk_compile_missing_reason(const char *ext, char *buf, unsigned size);

#endif
