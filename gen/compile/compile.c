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
        .messages =
            GLSLANG_MSG_DEFAULT_BIT | GLSLANG_MSG_SPV_RULES_BIT | GLSLANG_MSG_VULKAN_RULES_BIT,
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
        qk_error_set(e, "%s: spirv-val: %s", name,
                     diag && diag->error ? diag->error : "invalid module");
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

/* ---- the shared memory a module declares ---- */

/* Opcode and storage-class numbers of the SPIR-V specification (Debian 12
 * ships its header only for C++, glslang/SPIRV/spirv.hpp). */
enum {
    OP_TYPE_BOOL = 20,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_TYPE_VECTOR = 23,
    OP_TYPE_MATRIX = 24,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_CONSTANT = 43,
    OP_VARIABLE = 59,
    STORAGE_WORKGROUP = 4,
};

int64_t qk_spirv_shared_bytes(const qk_spirv *m) {
    if (m->count < 5) return 0;
    uint32_t bound = m->words[3];
    int64_t *size = calloc(bound, sizeof *size);        /* of a type id; 0: not a sized type */
    int64_t *value = calloc(bound, sizeof *value);      /* of an integer constant id; -1: other */
    uint32_t *pointee = calloc(bound, sizeof *pointee); /* of a Workgroup pointer type id */
    int64_t total = 0;
    for (uint32_t i = 0; i < bound && size && value; i++)
        value[i] = -1;
    for (size_t i = 5; size && value && pointee && i < m->count && total >= 0;) {
        const uint32_t *w = m->words + i;
        uint32_t n = w[0] >> 16, op = w[0] & 0xffffu;
        if (n == 0 || i + n > m->count) break;
        uint32_t id = n > 1 ? w[1] : 0;
        bool ok = id < bound;
        if (ok && op == OP_TYPE_BOOL) size[id] = 4;
        if (ok && (op == OP_TYPE_INT || op == OP_TYPE_FLOAT) && n >= 3) size[id] = w[2] / 8;
        if (ok && (op == OP_TYPE_VECTOR || op == OP_TYPE_MATRIX) && n >= 4 && w[2] < bound)
            size[id] = size[w[2]] * w[3];
        if (ok && op == OP_TYPE_ARRAY && n >= 4 && w[2] < bound && w[3] < bound)
            size[id] = value[w[3]] >= 0 ? size[w[2]] * value[w[3]] : -1;
        if (ok && op == OP_TYPE_STRUCT)
            for (uint32_t j = 2; j < n; j++)
                size[id] += w[j] < bound && size[w[j]] >= 0 ? size[w[j]] : 0;
        if (ok && op == OP_TYPE_POINTER && n >= 4 && w[2] == STORAGE_WORKGROUP && w[3] < bound)
            pointee[id] = w[3];
        if (op == OP_CONSTANT && n >= 4 && w[2] < bound) value[w[2]] = w[3];
        if (op == OP_VARIABLE && n >= 4 && w[1] < bound && w[3] == STORAGE_WORKGROUP &&
            pointee[w[1]] < bound) {
            int64_t s = size[pointee[w[1]]];
            total = s < 0 ? -1 : total + s;
        }
        i += n;
    }
    free(size), free(value), free(pointee);
    return total;
}
