/* glslang and the SPIR-V validator through their C interfaces. The optimizer
 * has no C interface in SPIRV-Tools 2023.1, see optimize.cpp. */
#include "compile.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <spirv-tools/libspirv.h>
#include <stdlib.h>
#include <string.h>

void qk_compile_init(void) {
    glslang_initialize_process();
}

void qk_compile_finish(void) {
    glslang_finalize_process();
}

bool qk_compile_glsl(const char *name, const char *source, qk_spirv *out, qk_error *e) {
    glslang_input_t input = {
        .language = GLSLANG_SOURCE_GLSL,
        .stage = GLSLANG_STAGE_COMPUTE,
        .client = GLSLANG_CLIENT_VULKAN,
        .client_version = GLSLANG_TARGET_VULKAN_1_2,
        .target_language = GLSLANG_TARGET_SPV,
        .target_language_version = GLSLANG_TARGET_SPV_1_5,
        .code = source,
        .default_version = 450,
        .default_profile = GLSLANG_NO_PROFILE,
        .force_default_version_and_profile = false,
        .forward_compatible = false,
        .messages = GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT,
        .resource = glslang_default_resource(),
    };
    glslang_shader_t *sh = glslang_shader_create(&input);
    glslang_program_t *prog = NULL;
    bool ok = false;
    if (!glslang_shader_preprocess(sh, &input) || !glslang_shader_parse(sh, &input)) {
        qk_error_set(e, "%s: glslang: %s", name, glslang_shader_get_info_log(sh));
        goto done;
    }
    prog = glslang_program_create();
    glslang_program_add_shader(prog, sh);
    if (!glslang_program_link(prog, GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT)) {
        qk_error_set(e, "%s: glslang link: %s", name, glslang_program_get_info_log(prog));
        goto done;
    }
    glslang_spv_options_t opts = {.validate = false, .disable_optimizer = true};
    glslang_program_SPIRV_generate_with_options(prog, GLSLANG_STAGE_COMPUTE, &opts);
    const char *msgs = glslang_program_SPIRV_get_messages(prog);
    if (msgs && msgs[0] && strstr(msgs, "error")) {
        qk_error_set(e, "%s: glslang SPIR-V: %s", name, msgs);
        goto done;
    }
    out->count = glslang_program_SPIRV_get_size(prog);
    out->words = qk_xmalloc(out->count * 4);
    glslang_program_SPIRV_get(prog, out->words);
    ok = true;
done:
    if (prog) glslang_program_delete(prog);
    glslang_shader_delete(sh);
    return ok;
}

bool qk_validate(const char *name, const qk_spirv *m, qk_error *e) {
    spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_2);
    spv_const_binary_t bin = {m->words, m->count};
    spv_diagnostic diag = NULL;
    spv_result_t r = spvValidate(ctx, &bin, &diag);
    if (r != SPV_SUCCESS)
        qk_error_set(e, "%s: spirv-val: %s", name, diag && diag->error ? diag->error : "invalid module");
    spvDiagnosticDestroy(diag);
    spvContextDestroy(ctx);
    return r == SPV_SUCCESS;
}

void qk_spirv_free(qk_spirv *m) {
    free(m->words);
    m->words = NULL;
    m->count = 0;
}

bool qk_compile_all(const char *name, const char *source, qk_spirv *out, qk_error *e) {
    if (!qk_compile_glsl(name, source, out, e)) return false;
    if (qk_optimize(name, out, e) && qk_validate(name, out, e)) return true;
    qk_spirv_free(out);
    return false;
}
