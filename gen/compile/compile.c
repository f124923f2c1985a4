/* glslang and the SPIR-V validator through their C interfaces. The optimizer
 * has no C interface in SPIRV-Tools 2023.1, see optimize.cpp. */
#include "compile.h"

#include <glslang/Include/glslang_c_interface.h>
#include <glslang/Public/resource_limits_c.h>
#include <spirv-tools/libspirv.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void qk_compile_init(void) {
    glslang_initialize_process();
}

void qk_compile_finish(void) {
    glslang_finalize_process();
}

/* The format hooks the templates call (docs/ARCHITECTURE.md, "The format
 * hook contract"), for the hint after an error that names one: a format
 * that lacks a hook fails where a template calls it. */
static const struct {
    const char *name, *signature, *when;
} format_hooks[] = {
    {"qk_dequant_sub", "void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N])",
     "every format"},
    {"qk_sub_elem", "uint qk_sub_elem(uint sub, uint i)",
     "every format (include/linear.glsl or include/split32.glsl give the usual ones)"},
    {"qk_elem_sub", "uvec2 qk_elem_sub(uint e)",
     "the decode-on-load matmul without the format's own qk_dequant_elem (include/linear.glsl, "
     "include/split32.glsl)"},
    {"qk_codes8", "void qk_codes8(uint m, uint blk, uint g, out uint q[8])",
     "formats with int8_dot: true"},
    {"qk_affine8", "vec3 qk_affine8(uint m, uint blk, uint g)", "formats with int8_dot: true"},
    {"qk_stage_part", "void qk_stage_part(uint slot, uint m, uint blk, uint p)",
     "formats with parts: in their YAML"},
    {"qk_part_codes8", "void qk_part_codes8(uint slot, uint p, uint g, out uint q[8])",
     "formats with parts: in their YAML"},
    {"qk_part_affine8", "vec3 qk_part_affine8(uint slot, uint p, uint g)",
     "formats with parts: in their YAML"},
};

/* A hint for a log line that says a format hook is missing: "'NAME' : no
 * matching overloaded function found" or "'NAME' : undeclared identifier". */
static void hook_hint(const char *line, size_t len, qk_str *out) {
    char text[1024];
    snprintf(text, sizeof text, "%.*s", (int)(len < sizeof text ? len : sizeof text - 1), line);
    for (size_t i = 0; i < sizeof format_hooks / sizeof format_hooks[0]; i++) {
        char quoted[64];
        snprintf(quoted, sizeof quoted, "'%s' :", format_hooks[i].name);
        const char *at = strstr(text, quoted);
        if (!at || (!strstr(at, "no matching overloaded") && !strstr(at, "undeclared identifier")))
            continue;
        qk_str_addf(out,
                    "    hint: %s is a format hook: the format's GLSL (its YAML's dequant: file) "
                    "must define\n      %s\n    (%s; the contract: docs/ARCHITECTURE.md, \"The "
                    "format hook contract\", and docs/new-format.md)\n",
                    format_hooks[i].name, format_hooks[i].signature, format_hooks[i].when);
        return;
    }
}

/* glslang's log with each "ERROR: FILE:LINE: ..." followed by that line of
 * FILE (the emitter's #line directives name the user's format, template or
 * include), as compilers show the offending line, and a hint where the
 * error names a format hook. */
static void annotate_log(const char *log, qk_str *out) {
    for (const char *line = log ? log : ""; *line;) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) + 1 : strlen(line);
        qk_str_addn(out, line, len);
        char file[1024];
        unsigned at = 0;
        if (sscanf(line, "ERROR: %1023[^:]:%u:", file, &at) == 2 && at > 0 && qk_is_file(file)) {
            qk_error fe = {0};
            char *text = qk_read_file(file, NULL, &fe);
            const char *p = text;
            for (unsigned n = 1; p && *p && n < at; n++)
                p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL;
            if (p && *p) {
                const char *q = strchr(p, '\n');
                qk_str_addf(out, "%s    %.*s\n", end ? "" : "\n",
                            (int)(q ? q - p : (long)strlen(p)), p);
            }
            free(text);
        }
        hook_hint(line, len, out);
        line += len;
    }
}

/* Modules target Vulkan 1.2 (SPIR-V 1.5), but for those that enable an
 * extension glslang accepts only for SPIR-V 1.6: GL_NV_cooperative_matrix2
 * (whose devices are Vulkan 1.3 ones). The optimizer and the validator then
 * read the target from the module's SPIR-V version. */
static bool needs_vulkan13(const char *source) {
    return strstr(source, "#extension GL_NV_cooperative_matrix2 ") != NULL;
}

bool qk_compile_glsl(const char *name, const char *source, qk_spirv *out, qk_error *e) {
    const bool v13 = needs_vulkan13(source);
    glslang_input_t input = {
        .language = GLSLANG_SOURCE_GLSL,
        .stage = GLSLANG_STAGE_COMPUTE,
        .client = GLSLANG_CLIENT_VULKAN,
        .client_version = v13 ? GLSLANG_TARGET_VULKAN_1_3 : GLSLANG_TARGET_VULKAN_1_2,
        .target_language = GLSLANG_TARGET_SPV,
        .target_language_version = v13 ? GLSLANG_TARGET_SPV_1_6 : GLSLANG_TARGET_SPV_1_5,
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
        qk_str log = {0};
        annotate_log(glslang_shader_get_info_log(sh), &log);
        qk_error_set(e, "%s: glslang: %s", name, log.s ? log.s : "");
        qk_str_free(&log);
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

bool qk_spirv_vulkan13(const qk_spirv *m) {
    return m->count > 1 && m->words[1] >= 0x00010600u;
}

bool qk_validate(const char *name, const qk_spirv *m, qk_error *e) {
    spv_context ctx =
        spvContextCreate(qk_spirv_vulkan13(m) ? SPV_ENV_VULKAN_1_3 : SPV_ENV_VULKAN_1_2);
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

/* Opcode, decoration and storage-class numbers of the SPIR-V specification
 * (Debian 12 ships its header only for C++, glslang/SPIRV/spirv.hpp). */
enum {
    OP_TYPE_BOOL = 20,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_TYPE_VECTOR = 23,
    OP_TYPE_MATRIX = 24,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_CONSTANT_TRUE = 41,
    OP_CONSTANT_FALSE = 42,
    OP_CONSTANT = 43,
    OP_SPEC_CONSTANT_TRUE = 48,
    OP_SPEC_CONSTANT_FALSE = 49,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_OP = 52,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    DECORATION_SPEC_ID = 1,
    STORAGE_WORKGROUP = 4,
};

/* The value of a specialization-constant operation on 32-bit operands (bools
 * as 0 or 1); false for an operation this does not know. */
static bool spec_op(uint32_t op, const int64_t *a, uint32_t n, int64_t *out) {
    uint32_t x = n > 0 ? (uint32_t)a[0] : 0, y = n > 1 ? (uint32_t)a[1] : 0;
    int32_t sx = (int32_t)x, sy = (int32_t)y;
    switch (op) {
    case 128:
        *out = (uint32_t)(x + y);
        break; /* IAdd */
    case 130:
        *out = (uint32_t)(x - y);
        break; /* ISub */
    case 132:
        *out = (uint32_t)(x * y);
        break; /* IMul */
    case 134:
        if (!y) return false;
        *out = x / y;
        break; /* UDiv */
    case 137:
        if (!y) return false;
        *out = x % y;
        break; /* UMod */
    case 135:
        if (!sy) return false;
        *out = (uint32_t)(sx / sy);
        break; /* SDiv */
    case 194:
        *out = y < 32 ? x >> y : 0;
        break; /* ShiftRightLogical */
    case 196:
        *out = y < 32 ? (uint32_t)(x << y) : 0;
        break; /* ShiftLeftLogical */
    case 197:
        *out = x | y;
        break; /* BitwiseOr */
    case 199:
        *out = x & y;
        break; /* BitwiseAnd */
    case 164:
        *out = (x != 0) == (y != 0);
        break; /* LogicalEqual */
    case 165:
        *out = (x != 0) != (y != 0);
        break; /* LogicalNotEqual */
    case 166:
        *out = x || y;
        break; /* LogicalOr */
    case 167:
        *out = x && y;
        break; /* LogicalAnd */
    case 168:
        *out = !x;
        break; /* LogicalNot */
    case 169:
        if (n < 3) return false;
        *out = x ? a[1] : a[2];
        break; /* Select */
    case 170:
        *out = x == y;
        break; /* IEqual */
    case 171:
        *out = x != y;
        break; /* INotEqual */
    case 172:
        *out = x > y;
        break; /* UGreaterThan */
    case 173:
        *out = sx > sy;
        break; /* SGreaterThan */
    case 174:
        *out = x >= y;
        break; /* UGreaterThanEqual */
    case 175:
        *out = sx >= sy;
        break; /* SGreaterThanEqual */
    case 176:
        *out = x < y;
        break; /* ULessThan */
    case 177:
        *out = sx < sy;
        break; /* SLessThan */
    case 178:
        *out = x <= y;
        break; /* ULessThanEqual */
    case 179:
        *out = sx <= sy;
        break; /* SLessThanEqual */
    case 113:
    case 114:
    case 124:
        *out = x;
        break; /* UConvert, SConvert, Bitcast */
    default:
        return false;
    }
    return true;
}

int64_t qk_spirv_shared_bytes_spec(const qk_spirv *m, const uint32_t *ids, const uint32_t *values,
                                   uint32_t n) {
    if (m->count < 5) return 0;
    uint32_t bound = m->words[3];
    int64_t *size = calloc(bound, sizeof *size);        /* of a type id; 0: not a sized type */
    int64_t *value = calloc(bound, sizeof *value);      /* of an integer constant id; -1: other */
    uint32_t *pointee = calloc(bound, sizeof *pointee); /* of a Workgroup pointer type id */
    int64_t *spec_id = calloc(bound, sizeof *spec_id);  /* SpecId decoration + 1; 0: none */
    int64_t total = 0;
    for (uint32_t i = 0; i < bound && size && value; i++)
        value[i] = -1;
    for (size_t i = 5; size && value && pointee && spec_id && i < m->count && total >= 0;) {
        const uint32_t *w = m->words + i;
        uint32_t len = w[0] >> 16, op = w[0] & 0xffffu;
        if (len == 0 || i + len > m->count) break;
        uint32_t id = len > 1 ? w[1] : 0;
        bool ok = id < bound;
        if (op == OP_DECORATE && len >= 4 && ok && w[2] == DECORATION_SPEC_ID)
            spec_id[id] = w[3] + 1;
        if (ok && op == OP_TYPE_BOOL) size[id] = 4;
        if (ok && (op == OP_TYPE_INT || op == OP_TYPE_FLOAT) && len >= 3) size[id] = w[2] / 8;
        if (ok && (op == OP_TYPE_VECTOR || op == OP_TYPE_MATRIX) && len >= 4 && w[2] < bound)
            size[id] = size[w[2]] * w[3];
        if (ok && op == OP_TYPE_ARRAY && len >= 4 && w[2] < bound && w[3] < bound)
            /* a length of 0 or one this cannot tell (-1) is no size */
            size[id] = value[w[3]] > 0 ? size[w[2]] * value[w[3]] : -1;
        if (ok && op == OP_TYPE_STRUCT)
            for (uint32_t j = 2; j < len; j++)
                size[id] += w[j] < bound && size[w[j]] >= 0 ? size[w[j]] : 0;
        if (ok && op == OP_TYPE_POINTER && len >= 4 && w[2] == STORAGE_WORKGROUP && w[3] < bound)
            pointee[id] = w[3];
        uint32_t rid = len >= 3 ? w[2] : bound; /* the result id of a constant */
        if (rid < bound) {
            if (op == OP_CONSTANT && len >= 4) value[rid] = w[3];
            if (op == OP_CONSTANT_TRUE || op == OP_CONSTANT_FALSE)
                value[rid] = op == OP_CONSTANT_TRUE;
            if (op == OP_SPEC_CONSTANT || op == OP_SPEC_CONSTANT_TRUE ||
                op == OP_SPEC_CONSTANT_FALSE) {
                value[rid] = op == OP_SPEC_CONSTANT ? (len >= 4 ? (int64_t)w[3] : -1)
                                                    : op == OP_SPEC_CONSTANT_TRUE;
                for (uint32_t k = 0; spec_id[rid] && k < n; k++)
                    if (ids[k] + 1 == (uint32_t)spec_id[rid])
                        value[rid] = op == OP_SPEC_CONSTANT ? values[k] : values[k] != 0;
            }
            if (op == OP_SPEC_CONSTANT_OP && len >= 4) {
                int64_t a[3] = {0, 0, 0};
                uint32_t na = len - 4 < 3 ? len - 4 : 3;
                bool known = len - 4 <= 3;
                for (uint32_t k = 0; k < na; k++) {
                    a[k] = w[4 + k] < bound ? value[w[4 + k]] : -1;
                    known &= a[k] >= 0;
                }
                int64_t r;
                value[rid] = known && spec_op(w[3], a, na, &r) ? r : -1;
            }
        }
        if (op == OP_VARIABLE && len >= 4 && w[1] < bound && w[3] == STORAGE_WORKGROUP &&
            pointee[w[1]] < bound) {
            int64_t s = size[pointee[w[1]]];
            total = s < 0 ? -1 : total + s;
        }
        i += len;
    }
    free(size), free(value), free(pointee), free(spec_id);
    return total;
}

int64_t qk_spirv_shared_bytes(const qk_spirv *m) {
    return qk_spirv_shared_bytes_spec(m, NULL, NULL, 0);
}
