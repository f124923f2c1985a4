/* GLSL composition. The generated header declares everything a template may
 * use: tile defines, weight accessors, bindings and push constants, each taken
 * from the spec so that the manifest and the shader cannot disagree. */
#include "emit.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const struct {
    const char *feature;
    const char *extensions;
} feature_ext[] = {
    {"subgroup_arithmetic", "GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_arithmetic"},
    {"subgroup_shuffle", "GL_KHR_shader_subgroup_basic GL_KHR_shader_subgroup_shuffle"},
    {"storage_16bit", "GL_EXT_shader_16bit_storage"},
    {"storage_8bit", "GL_EXT_shader_8bit_storage"},
    {"float16", "GL_EXT_shader_explicit_arithmetic_types_float16"},
    {"int8", "GL_EXT_shader_explicit_arithmetic_types_int8"},
    {"integer_dot_product", "GL_EXT_spirv_intrinsics"},
    {"cooperative_matrix_nv", "GL_NV_cooperative_matrix GL_KHR_memory_scope_semantics "
                              "GL_EXT_shader_explicit_arithmetic_types_float16"},
    {"cooperative_matrix_khr", "GL_KHR_cooperative_matrix GL_KHR_memory_scope_semantics "
                               "GL_EXT_shader_explicit_arithmetic_types_float16"},
    {"cooperative_matrix2_nv", "GL_KHR_cooperative_matrix GL_NV_cooperative_matrix2 "
                               "GL_KHR_memory_scope_semantics GL_EXT_buffer_reference "
                               "GL_EXT_shader_explicit_arithmetic_types_float16"},
};

void qk_emit_extensions(const char *const *features, uint32_t n, qk_str *out) {
    qk_str seen = {0};
    qk_str_add(&seen, " ");
    for (uint32_t i = 0; i < n; i++)
        for (size_t j = 0; j < sizeof feature_ext / sizeof feature_ext[0]; j++) {
            if (strcmp(features[i], feature_ext[j].feature)) continue;
            char buf[256];
            snprintf(buf, sizeof buf, "%s", feature_ext[j].extensions);
            for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
                char key[128];
                snprintf(key, sizeof key, " %s ", tok);
                if (strstr(seen.s, key)) continue;
                qk_str_addf(&seen, "%s ", tok);
                qk_str_addf(out, "#extension %s : require\n", tok);
            }
        }
    qk_str_free(&seen);
}

static const char *glsl_elem(qk_type t) {
    switch (t) {
    case QK_TYPE_F32:
        return "float";
    case QK_TYPE_F16:
        return "float16_t";
    case QK_TYPE_I32:
        return "int";
    default:
        return "uint";
    }
}

static void emit_interface(const qk_variant *v, qk_str *o) {
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t n = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < n; i++) {
        if (!strcmp(b[i].role, "weights")) continue; /* declared with the format */
        /* workgroups exchange partial results through a scratch binding */
        const char *qual = !b[i].writable                  ? "readonly "
                           : !strcmp(b[i].role, "scratch") ? "coherent "
                                                           : "";
        qk_str_addf(o, "layout(std430, set = 0, binding = %u) %sbuffer Qk_%s { %s %s%s[]; }",
                    b[i].binding, qual, b[i].name, glsl_elem(b[i].glsl_type),
                    b[i].count > 1 ? "data" : "", b[i].count > 1 ? "" : b[i].name);
        if (b[i].count > 1)
            qk_str_addf(o, " %s[%u];\n", b[i].name, b[i].count);
        else
            qk_str_add(o, ";\n");
        qk_str_addf(o, "#define BINDING_%s %u\n", b[i].name, b[i].binding);
        if ((b[i].glsl_type == QK_TYPE_F32 || b[i].glsl_type == QK_TYPE_U32) && b[i].count == 1)
            /* the same buffer seen as vec4 (uvec4), for aligned wide accesses */
            qk_str_addf(o, "layout(std430, set = 0, binding = %u) %sbuffer Qk_%s4 { %s %s4[]; };\n",
                        b[i].binding, qual, b[i].name,
                        b[i].glsl_type == QK_TYPE_F32 ? "vec4" : "uvec4", b[i].name);
    }
    const char *push[QK_MAX_LIST + 8];
    uint32_t np = qk_variant_push(v, push, QK_MAX_LIST + 8);
    qk_str_add(o, "layout(push_constant) uniform QkPush {");
    for (uint32_t i = 0; i < np; i++)
        qk_str_addf(o, " uint %s;", push[i]);
    qk_str_add(o, " } pc;\n");
}

typedef struct inliner {
    const char *templates_dir;
    qk_str seen; /* "\n"-separated resolved paths already inlined */
    void (*on_file)(void *, const char *, const char *);
    void *user;
    qk_error *e;
    const qk_variant *v; /* the module's first variant: its instances */
    bool region;         /* the instance region was seen */
} inliner;

static bool inline_text(inliner *in, const char *text, const char *file, const char *from_dir,
                        int depth, qk_str *o);

static bool inline_file(inliner *in, const char *name, const char *from_dir, int depth, qk_str *o) {
    char *path = qk_path_join(from_dir, name);
    if (!qk_is_file(path)) {
        free(path);
        path = qk_path_join(in->templates_dir, name);
    }
    if (!qk_is_file(path)) {
        qk_error_set(in->e, "%s: not found next to %s nor in %s", name, from_dir,
                     in->templates_dir);
        free(path);
        return false;
    }
    char key[1100];
    snprintf(key, sizeof key, "\n%s\n", path);
    bool ok = true;
    if (!in->seen.s || !strstr(in->seen.s, key)) { /* each file once, like #pragma once */
        qk_str_addf(&in->seen, "\n%s\n", path);
        char *text = qk_read_file(path, NULL, in->e);
        if (!text) {
            free(path);
            return false;
        }
        if (in->on_file) in->on_file(in->user, path, text);
        char *dir = qk_path_dir(path);
        qk_str_addf(o, "// ---- %s\n", name);
        ok = inline_text(in, text, path, dir, depth + 1, o);
        free(dir);
        free(text);
    }
    free(path);
    return ok;
}

bool qk_emit_check_template(const qk_kernel_spec *k, const char *templates_dir, qk_error *e) {
    char *kdir = qk_path_dir(k->path);
    char *path = qk_path_join(kdir, k->template_name);
    if (!qk_is_file(path)) {
        free(path);
        path = qk_path_join(templates_dir, k->template_name);
    }
    qk_error fe = {0};
    struct stat st;
    bool missing = stat(path, &st) != 0; /* in neither place */
    bool ok = !missing && qk_check_file(path, QK_READ_MAX, &fe);
    if (missing)
        qk_error_set(e,
                     "%s:%d:%d: template: '%s' is neither next to the spec (%s) nor in the "
                     "templates folder (%s)",
                     k->path, k->template_mark.line, k->template_mark.col, k->template_name, kdir,
                     templates_dir);
    else if (!ok)
        qk_error_set(e, "%s:%d:%d: template: %s", k->path, k->template_mark.line,
                     k->template_mark.col, fe.msg);
    free(path);
    free(kdir);
    return ok;
}

/* A #line directive naming file (a path, or a label of generated text),
 * so that glslang's messages point into the user's files. */
static void line_directive(qk_str *o, uint32_t line, const char *file) {
    qk_str_addf(o, "#line %u \"", line);
    for (const char *c = file; *c; c++)
        qk_str_addf(o, *c == '"' || *c == '\\' ? "\\%c" : "%c", *c);
    qk_str_add(o, "\"\n");
}

#define REGION_BEGIN "#pragma qkgen instance begin"
#define REGION_END   "#pragma qkgen instance end"

/* The instance region: the lines after `#pragma qkgen instance begin` (at
 * line n of file) up to `end`, once per instance of the module, each copy
 * with the kernel's literals #defined to that instance's values and
 * QK_INSTANCE_MAIN to its function's name (qk_instance_I). Returns the text
 * after the region, or NULL with in->e set. */
static const char *inline_region(inliner *in, const char *body, const char *file, uint32_t *n,
                                 qk_str *o) {
    const uint32_t begin = *n;
    const char *end = body, *stop = NULL;
    for (;;) { /* the end marker's line */
        const char *p = end;
        while (*p == ' ' || *p == '\t')
            p++;
        if (!strncmp(p, REGION_END, strlen(REGION_END))) {
            stop = end;
            break;
        }
        if (!strncmp(p, REGION_BEGIN, strlen(REGION_BEGIN)) || !strncmp(p, "#include", 8)) {
            qk_error_set(in->e, "%s:%u: %s inside the instance region of line %u", file, *n + 1,
                         strncmp(p, "#include", 8) ? "a second region begins" : "#include", begin);
            return NULL;
        }
        const char *nl = strchr(end, '\n');
        if (!nl) break;
        end = nl + 1;
        ++*n;
    }
    if (!stop) {
        qk_error_set(in->e, "%s:%u: instance region without '%s'", file, begin, REGION_END);
        return NULL;
    }
    if (in->region) {
        qk_error_set(in->e, "%s:%u: a second instance region (one per module)", file, begin);
        return NULL;
    }
    in->region = true;
    const qk_kernel_spec *k = in->v->kernel;
    const char *names[QK_MAX_LITERAL_VALUES];
    uint32_t nl = qk_kernel_literal_names(k, names);
    for (uint32_t i = 0; i < in->v->instance_count; i++) {
        qk_str_addf(o, "#define QK_INSTANCE_MAIN qk_instance_%u\n", i);
        for (uint32_t j = 0; j < nl; j++)
            qk_str_addf(o, "#define %s %uu\n", names[j], in->v->instances[i][j]);
        line_directive(o, begin + 1, file);
        qk_str_addn(o, body, (size_t)(stop - body));
        qk_str_add(o, "#undef QK_INSTANCE_MAIN\n");
        for (uint32_t j = 0; j < nl; j++)
            qk_str_addf(o, "#undef %s\n", names[j]);
    }
    ++*n; /* the end marker */
    line_directive(o, *n + 1, file);
    const char *after = strchr(stop, '\n');
    return after ? after + 1 : stop + strlen(stop);
}

static bool inline_text(inliner *in, const char *text, const char *file, const char *from_dir,
                        int depth, qk_str *o) {
    if (depth > 16) {
        qk_error_set(in->e, "#include nested more than 16 deep (a cycle?)");
        return false;
    }
    /* the first line of the generated header is #version, which no #line may precede */
    if (depth > 0) line_directive(o, 1, file);
    uint32_t n = 1;
    for (const char *line = text; *line; n++) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        const char *p = line;
        while (p < line + len && isspace((unsigned char)*p))
            p++;
        if (!strncmp(p, REGION_BEGIN, strlen(REGION_BEGIN))) {
            const char *next = end ? end + 1 : line + len;
            line = inline_region(in, next, file, &n, o);
            if (!line) return false;
            continue;
        }
        if (!strncmp(p, "#include", 8)) {
            const char *q1 = memchr(p, '"', len - (size_t)(p - line));
            const char *q2 = q1 ? memchr(q1 + 1, '"', len - (size_t)(q1 + 1 - line)) : NULL;
            if (!q2) {
                qk_error_set(in->e, "%s:%u: malformed #include: %.*s", file, n, (int)len, line);
                return false;
            }
            char name[512];
            snprintf(name, sizeof name, "%.*s", (int)(q2 - q1 - 1), q1 + 1);
            if (!inline_file(in, name, from_dir, depth, o)) {
                if (!strstr(in->e->msg, " (included from ")) {
                    char msg[sizeof in->e->msg + 600];
                    snprintf(msg, sizeof msg, "%s (included from %s:%u)", in->e->msg, file, n);
                    in->e->set = false;
                    qk_error_set(in->e, "%s", msg);
                }
                return false;
            }
            line_directive(o, n + 1, file);
        } else {
            qk_str_addn(o, line, len);
            qk_str_add(o, "\n");
        }
        line += len + (end ? 1 : 0);
    }
    return true;
}

/* The tile parameters: a define each, or a specialization constant (whose
 * id is its qk_tile_param) where the kernel specializes it; the value given
 * here is only the default, a pipeline sets its own. Templates use them
 * alike: in expressions and array sizes, never in #if. */
static void emit_tile(const qk_variant *v, qk_str *h) {
    for (int p = 0; p < QK_TILE_COUNT; p++) {
        const char *name = qk_tile_param_name((qk_tile_param)p);
        uint32_t value = qk_variant_tile(v, (qk_tile_param)p);
        if (v->kernel->specialize & (1u << p))
            qk_str_addf(h, "layout(constant_id = %d) const uint %s = %uu;\n", p, name, value);
        else
            qk_str_addf(h, "#define %s %uu\n", name, value);
    }
    if (!v->kernel->literal_count) return;
    /* the template's instance region, once per set of literals (inline_region) */
    if (v->instance_count > 1)
        qk_str_addf(h, "layout(constant_id = %d) const uint INSTANCE = %uu;\n", QK_SPEC_INSTANCE,
                    v->instance);
    qk_str_add(h, "#define QK_INSTANCE_RUN() ");
    for (uint32_t i = 0; i + 1 < v->instance_count; i++)
        qk_str_addf(h, "if (INSTANCE == %uu) qk_instance_%u(); else ", i, i);
    qk_str_addf(h, "qk_instance_%u()\n", v->instance_count - 1);
}

bool qk_emit_variant(const qk_variant *v, const char *templates_dir, qk_str *out,
                     void (*on_file)(void *, const char *, const char *), void *user, qk_error *e) {
    const qk_kernel_spec *k = v->kernel;
    const qk_format *f = v->format;
    qk_str h = {0};
    qk_str_add(&h, "#version 450\n#extension GL_EXT_control_flow_attributes : enable\n");
    /* #line with file names, so messages name the format's, template's or
     * include's own file and line */
    qk_str_add(&h, "#extension GL_GOOGLE_cpp_style_line_directive : require\n");
    const char *features[16];
    uint32_t nf = qk_variant_features(v, features, 16);
    qk_emit_extensions(features, nf, &h);
    qk_str_addf(&h, "// %s: generated by qkgen from %s; do not edit\n", v->module, k->path);
    emit_tile(v, &h);
    qk_str_addf(&h, "#define MIN_SG %uu\n#define ACT_%s 1\n", k->min_subgroup_size, v->activation);
    if (k->staged == QK_STAGED_REFERENCE) {
        /* the readers take the block through a buffer reference where the
         * format's blocks allow it (include/bytes.glsl) */
        qk_str_add(&h, "#define QK_BLOCK_REF 1\n");
    } else if (k->staged) {
        /* a chunk smaller than a block is 1/QK_PART_N of one, which the format stages
         * (qk_stage_part) into the first of a block's words: the rest are never touched */
        uint32_t parts = k->staged == QK_STAGED_REGISTERS ? qk_variant_parts(v) : 0;
        qk_str_addf(&h,
                    "#define QK_STAGED 1\n#define QK_STAGE_SLOTS (NR0 * %uu)\n"
                    "#define QK_STAGE_WORDS %u\n"
                    "#define QK_STAGE_VEC %u\n",
                    v->weights ? v->weights : 1,
                    parts ? (f->block_bytes + 3) / 4 : v->nk / f->elements * f->block_bytes / 4,
                    qk_variant_stage_vec(v));
        if (parts) qk_str_addf(&h, "#define QK_PART_N %uu\n", parts);
        if (k->staged == QK_STAGED_SHARED) qk_str_add(&h, "#define QK_STAGE_SHARED 1\n");
    }
    if (v->mma[0]) qk_str_addf(&h, "#define MMA_%s 1\n", v->mma);
    /* a family point's axis values ("routing=pairs weights=shared"), for the
     * templates whose paths the values choose: AXIS_weights_shared */
    for (const char *a = k->axes; *a;) {
        size_t n = strcspn(a, " ");
        const char *eq = memchr(a, '=', n);
        if (eq)
            qk_str_addf(&h, "#define AXIS_%.*s_%.*s 1\n", (int)(eq - a), a,
                        (int)(n - (size_t)(eq - a) - 1), eq + 1);
        a += n;
        while (*a == ' ')
            a++;
    }
    if (v->fusion) qk_str_addf(&h, "#define FUSION_%s 1\n", v->fusion->name);
    if (k->specialize & (1u << QK_TILE_WG))
        /* the size as well as the id: without it the workgroup's default
         * would be 1 while WG's is the value above */
        qk_str_addf(&h,
                    "layout(local_size_x = %u, local_size_x_id = %d, local_size_y = 1, "
                    "local_size_z = 1) in;\n",
                    v->wg, QK_TILE_WG);
    else
        qk_str_add(&h, "layout(local_size_x = WG, local_size_y = 1, local_size_z = 1) in;\n");
    if (v->weights > 0) qk_format_emit_glsl(f, v->weights, 0, &h);
    emit_interface(v, &h);

    inliner in = {templates_dir, {0}, on_file, user, e, v, false};
    char *fdir = qk_path_dir(f->spec->path), *kdir = qk_path_dir(k->path);
    char label[300];
    snprintf(label, sizeof label, "generated header of %s", v->module);
    bool ok = inline_text(&in, h.s, label, templates_dir, 0, out);
    if (ok && v->weights > 0) ok = inline_file(&in, f->spec->dequant, fdir, 0, out);
    if (ok && v->fusion) {
        char *udir = qk_path_dir(v->fusion->path);
        ok = inline_file(&in, v->fusion->stage, udir, 0, out);
        free(udir);
    }
    if (ok) ok = inline_file(&in, k->template_name, kdir, 0, out);
    if (ok && in.region != (k->literal_count > 0)) {
        qk_error_set(e,
                     in.region ? "%s: the template has an instance region (#pragma qkgen instance) "
                                 "but %s declares no literals"
                               : "%s: %s declares literals but the template has no instance "
                                 "region (#pragma qkgen instance begin .. end)",
                     k->template_name, k->path);
        ok = false;
    }
    if (!ok && e->set && !strstr(e->msg, v->name)) {
        char msg[sizeof e->msg];
        snprintf(msg, sizeof msg, "%s", e->msg);
        e->set = false;
        qk_error_set(e, "%s: %s", v->name, msg);
    }
    free(fdir);
    free(kdir);
    qk_str_free(&in.seen);
    qk_str_free(&h);
    return ok;
}
