/* The exporter: a bundle folder as one C header (SPIR-V as uint32_t arrays, the
 * manifest as typed static data, grids and constraints as C functions of the shape). */
#include "export.h"
#include "qk_export.h"
#include "bundle/bundle.h"
#include "qkrt.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool qk_export_bad(exporter *x, const qkrt_json *node, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (node)
        qk_error_set(x->e, "%s:%u:%u: %s", x->manifest_path, node->line, node->column, msg);
    else
        qk_error_set(x->e, "%s: %s", x->manifest_path, msg);
    return false;
}

/* ---- manifest fields ---- */

const qkrt_json *qk_export_field(exporter *x, const qkrt_json *obj, const char *key,
                                 qkrt_json_type type, bool required) {
    const qkrt_json *v = qkrt_json_get(obj, key);
    if (!v && required) {
        qk_export_bad(x, obj, "missing \"%s\"", key);
        return NULL;
    }
    if (v && v->type != type && !(type == QKRT_JSON_STRING && v->type == QKRT_JSON_NULL)) {
        qk_export_bad(x, v, "\"%s\": expected %s, found %s", key, qkrt_json_type_name(type),
                      qkrt_json_type_name(v->type));
        return NULL;
    }
    return v;
}

const char *qk_export_str(exporter *x, const qkrt_json *obj, const char *key, bool required) {
    const qkrt_json *v = qk_export_field(x, obj, key, QKRT_JSON_STRING, required);
    return v && v->type == QKRT_JSON_STRING ? v->string : NULL;
}

bool qk_export_u32(exporter *x, const qkrt_json *obj, const char *key, bool required,
                   uint32_t *out) {
    *out = 0;
    const qkrt_json *v = qk_export_field(x, obj, key, QKRT_JSON_NUMBER, required);
    if (!v) return !required && !x->e->set;
    if (!v->integral || v->integer < 0 || v->integer > UINT32_MAX)
        return qk_export_bad(x, v, "\"%s\": expected an integer 0 .. 2^32-1", key);
    *out = (uint32_t)v->integer;
    return true;
}

const qkrt_json *qk_export_list(exporter *x, const qkrt_json *obj, const char *key, bool required) {
    return qk_export_field(x, obj, key, QKRT_JSON_ARRAY, required);
}

/* "name": "x" pairs for a C initializer */
void qk_export_c_field(qk_str *o, const char *s) {
    qk_c_string(o, s);
    qk_str_add(o, ", ");
}

/* A list of strings as a static array; its name, or "NULL" when empty. */
static bool string_array(exporter *x, const qkrt_json *l, const char *what, uint32_t k,
                         char name[64]) {
    snprintf(name, 64, "NULL");
    if (!l || !l->count) return true;
    snprintf(name, 64, "%s__%s_%u", x->p, what, k);
    qk_str_addf(&x->defs, "static const char *const %s[] = {", name);
    for (uint32_t i = 0; i < l->count; i++) {
        if (l->items[i].type != QKRT_JSON_STRING)
            return qk_export_bad(x, &l->items[i], "expected a string");
        qk_str_add(&x->defs, i ? ", " : "");
        qk_c_string(&x->defs, l->items[i].string);
    }
    qk_str_add(&x->defs, "};\n");
    return true;
}

/* ---- one kernel entry: its arrays and functions into defs, its table row into row ---- */

typedef struct module {
    const char *spv;
    uint32_t index;
    uint32_t *code; /* its words, for the entry points' check */
    size_t words;
} module;

static bool bindings(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = qk_export_list(x, k, "bindings", true);
    if (!l) return false;
    qk_str rows = {0};
    for (uint32_t j = 0; j < l->count; j++) {
        const qkrt_json *b = &l->items[j];
        uint32_t set, binding, count;
        const char *name = qk_export_str(x, b, "name", true),
                   *role = qk_export_str(x, b, "role", true);
        const char *type = qk_export_str(x, b, "type", true),
                   *access = qk_export_str(x, b, "access", true);
        const qkrt_json *size = qk_export_field(x, b, "size", QKRT_JSON_STRING, false);
        if (!qk_export_u32(x, b, "set", true, &set) ||
            !qk_export_u32(x, b, "binding", true, &binding) ||
            !qk_export_u32(x, b, "count", true, &count) || !name || !role || !type || !access ||
            x->e->set)
            break;
        char fn[64] = "NULL";
        if (size) {
            snprintf(fn, sizeof fn, "%s__size_%u_%u", x->p, i, j);
            qk_str_addf(&x->defs,
                        "static int %s(const %s_shape *s, uint64_t *bytes) {\n"
                        "    int ok_ = 1, *ok = &ok_;\n    int64_t v = ",
                        fn, x->p);
            if (!qk_export_expr(x, size, false, &x->defs)) break;
            qk_str_add(&x->defs,
                       ";\n    (void)s;\n    (void)ok;\n    if (!ok_ || v < 0) return -1;\n"
                       "    *bytes = (uint64_t)v;\n    return 0;\n}\n");
        }
        qk_str_addf(&rows, "    {%u, %u, %u, ", set, binding, count);
        qk_export_c_field(&rows, name);
        qk_export_c_field(&rows, role);
        qk_export_c_field(&rows, type);
        qk_str_addf(&rows, "%d, ", !strcmp(access, "write"));
        qk_export_c_field(&rows, size ? size->string : NULL);
        qk_str_addf(&rows, "%s},\n", fn);
    }
    if (!x->e->set && l->count)
        qk_str_addf(&x->defs, "static const %s_binding %s__bindings_%u[] = {\n%s};\n", x->p, x->p,
                    i, rows.s);
    qk_str_free(&rows);
    if (l->count)
        qk_str_addf(row, "%u, %s__bindings_%u, ", l->count, x->p, i);
    else
        qk_str_add(row, "0, NULL, ");
    return !x->e->set;
}

static bool push_constants(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = qk_export_list(x, k, "push_constants", true);
    uint32_t size = 0;
    if (!l || !qk_export_u32(x, k, "push_constant_size", true, &size)) return false;
    if (l->count)
        qk_str_addf(&x->defs, "static const %s_push_constant %s__push_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < l->count; j++) {
        const qkrt_json *c = &l->items[j];
        const char *name = qk_export_str(x, c, "name", true),
                   *type = qk_export_str(x, c, "type", true);
        uint32_t offset;
        if (!name || !type || !qk_export_u32(x, c, "offset", true, &offset)) return false;
        if (strcmp(type, "u32") && strcmp(type, "i32"))
            return qk_export_bad(x, c, "push constant '%s': type '%s', expected u32 or i32", name,
                                 type);
        if (offset + 4 > size)
            return qk_export_bad(x, c, "push constant '%s' ends past push_constant_size %u", name,
                                 size);
        bool ident = isalpha((unsigned char)name[0]) || name[0] == '_';
        for (const char *s = name; *s; s++)
            ident &= isalnum((unsigned char)*s) || *s == '_';
        if (!ident || !qk_export_add_var(x, name, strlen(name)))
            return qk_export_bad(x, c, "push constant '%s' is not a shape variable name", name);
        qk_str_add(&x->defs, "    {");
        qk_export_c_field(&x->defs, name);
        qk_str_addf(&x->defs, "%u, ", offset);
        qk_export_c_field(&x->defs, type);
        qk_str_addf(&x->defs, "offsetof(%s_shape, %s)},\n", x->p, name);
    }
    if (l->count) {
        qk_str_add(&x->defs, "};\n");
        qk_str_addf(row, "%u, %s__push_%u, %u, ", l->count, x->p, i, size);
    } else {
        qk_str_addf(row, "0, NULL, %u, ", size);
    }
    return true;
}

static bool specialization(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = qk_export_list(x, k, "specialization_constants", false);
    if (!l || !l->count) {
        qk_str_add(row, "0, NULL, ");
        return !x->e->set;
    }
    qk_str_addf(&x->defs, "static const %s_specialization %s__spec_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < l->count; j++) {
        const qkrt_json *c = &l->items[j];
        const char *name = qk_export_str(x, c, "name", true),
                   *type = qk_export_str(x, c, "type", true);
        const qkrt_json *value = qk_export_field(x, c, "value", QKRT_JSON_NUMBER, true);
        uint32_t id, data = 0;
        if (!name || !type || !value || !qk_export_u32(x, c, "id", true, &id)) return false;
        bool integral = value->integral;
        if (!strcmp(type, "f32")) {
            float f = (float)value->number;
            memcpy(&data, &f, 4);
        } else if (!strcmp(type, "u32") && integral && value->integer >= 0 &&
                   value->integer <= UINT32_MAX) {
            data = (uint32_t)value->integer;
        } else if (!strcmp(type, "i32") && integral && value->integer >= INT32_MIN &&
                   value->integer <= INT32_MAX) {
            data = (uint32_t)(int32_t)value->integer;
        } else if (!strcmp(type, "bool") && integral && (value->integer | 1) == 1) {
            data = (uint32_t)value->integer;
        } else {
            return qk_export_bad(x, value, "specialization constant '%s': %g is not a %s", name,
                                 value->number, type);
        }
        qk_str_addf(&x->defs, "    {%u, ", id);
        qk_export_c_field(&x->defs, name);
        qk_export_c_field(&x->defs, type);
        qk_str_addf(&x->defs, "0x%08xu},\n", data);
    }
    qk_str_add(&x->defs, "};\n");
    qk_str_addf(row, "%u, %s__spec_%u, ", l->count, x->p, i);
    return true;
}

/* The grid as a function; kernels with the same rule share one. */
static bool dispatch(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *d = qk_export_field(x, k, "dispatch", QKRT_JSON_OBJECT, true);
    const qkrt_json *g = d ? qk_export_list(x, d, "grid", true) : NULL;
    if (!g) return false;
    if (g->count != 3)
        return qk_export_bad(x, g, "\"grid\": expected 3 expressions, found %u", g->count);
    qk_str fn = {0};
    qk_str_addf(&fn,
                "static int %s__grid_%u(const %s_shape *s, uint32_t groups[3]) {\n"
                "    int ok_ = 1, *ok = &ok_, i;\n    int64_t v[3];\n",
                x->p, i, x->p);
    for (uint32_t j = 0; j < 3; j++) {
        if (g->items[j].type != QKRT_JSON_STRING)
            return qk_export_bad(x, &g->items[j], "expected a string");
        qk_str_addf(&fn, "    v[%u] = ", j);
        if (!qk_export_expr(x, &g->items[j], false, &fn)) {
            qk_str_free(&fn);
            return false;
        }
        qk_str_add(&fn, ";\n");
    }
    qk_str_add(&fn, "    (void)s;\n    (void)ok;\n    for (i = 0; i < 3; i++) {\n"
                    "        if (!ok_ || v[i] < 0 || v[i] > INT64_C(4294967295)) return -1;\n"
                    "        groups[i] = (uint32_t)v[i];\n    }\n    return 0;\n}\n");
    qk_str_add(&x->defs, fn.s);
    qk_str_free(&fn);
    qk_str_add(row, "{");
    for (uint32_t j = 0; j < 3; j++)
        qk_export_c_field(row, g->items[j].string);
    qk_str_addf(row, "}, %s__grid_%u, ", x->p, i);
    return true;
}

static bool constraints(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = qk_export_list(x, k, "constraints", true);
    char names[64];
    if (!l || !string_array(x, l, "constraints", i, names)) return false;
    qk_str_addf(&x->defs,
                "static int %s__check_%u(const %s_shape *s) {\n"
                "    int ok_ = 1, *ok = &ok_;\n    (void)s;\n    (void)ok;\n",
                x->p, i, x->p);
    for (uint32_t j = 0; j < l->count; j++) {
        qk_str_add(&x->defs, "    if (!");
        if (!qk_export_expr(x, &l->items[j], true, &x->defs)) return false;
        qk_str_addf(&x->defs, " || !ok_) return %u;\n", j);
    }
    qk_str_add(&x->defs, "    return -1;\n}\n");
    qk_str_addf(row, "%u, %s, %s__check_%u", l->count, names, x->p, i);
    return true;
}

static bool weights(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *w = qkrt_json_get(k, "weights");
    if (!w || w->type == QKRT_JSON_NULL) {
        qk_str_add(row, "NULL, ");
        return true;
    }
    if (w->type != QKRT_JSON_OBJECT)
        return qk_export_bad(x, w, "\"weights\": expected an object or null");
    const char *layout = qk_export_str(x, w, "layout", true);
    if (!layout) return false;
    uint32_t elements = 0, bytes = 0, group = 0;
    const qkrt_json *fields = qk_export_list(x, w, "fields", false),
                    *planes = qk_export_list(x, w, "planes", false);
    const qkrt_json *params = qk_export_field(x, w, "params", QKRT_JSON_OBJECT, false);
    if (!qk_export_u32(x, w, "block_elements", false, &elements) ||
        !qk_export_u32(x, w, "block_bytes", false, &bytes) ||
        !qk_export_u32(x, w, "group", false, &group) || x->e->set)
        return false;
    uint32_t nf = fields ? fields->count : 0, np = planes ? planes->count : 0;
    uint32_t nparams = params ? params->count : 0;
    if (nf) qk_str_addf(&x->defs, "static const %s_field %s__fields_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < nf; j++) {
        const qkrt_json *f = &fields->items[j];
        uint32_t offset, count;
        const char *name = qk_export_str(x, f, "name", true),
                   *type = qk_export_str(x, f, "type", true);
        if (!name || !type || !qk_export_u32(x, f, "offset", true, &offset) ||
            !qk_export_u32(x, f, "count", true, &count))
            return false;
        qk_str_add(&x->defs, "    {");
        qk_export_c_field(&x->defs, name);
        qk_export_c_field(&x->defs, type);
        qk_str_addf(&x->defs, "%u, %u},\n", offset, count);
    }
    if (nf) qk_str_add(&x->defs, "};\n");
    if (np) qk_str_addf(&x->defs, "static const %s_plane %s__planes_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < np; j++) {
        const qkrt_json *f = &planes->items[j];
        uint32_t per_group;
        const char *name = qk_export_str(x, f, "name", true),
                   *type = qk_export_str(x, f, "type", true);
        if (!name || !type || !qk_export_u32(x, f, "per_group", true, &per_group)) return false;
        qk_str_add(&x->defs, "    {");
        qk_export_c_field(&x->defs, name);
        qk_export_c_field(&x->defs, type);
        qk_str_addf(&x->defs, "%u},\n", per_group);
    }
    if (np) qk_str_add(&x->defs, "};\n");
    if (nparams)
        qk_str_addf(&x->defs, "static const %s_param %s__params_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < nparams; j++) {
        if (params->items[j].type != QKRT_JSON_STRING)
            return qk_export_bad(x, &params->items[j], "expected a string");
        qk_str_add(&x->defs, "    {");
        qk_export_c_field(&x->defs, params->keys[j]);
        qk_c_string(&x->defs, params->items[j].string);
        qk_str_add(&x->defs, "},\n");
    }
    if (nparams) qk_str_add(&x->defs, "};\n");
    qk_str_addf(&x->defs, "static const %s_weights %s__weights_%u = {", x->p, x->p, i);
    qk_export_c_field(&x->defs, layout);
    qk_str_addf(&x->defs, "%u, %u, %u, ", elements, bytes, nf);
    if (nf)
        qk_str_addf(&x->defs, "%s__fields_%u, ", x->p, i);
    else
        qk_str_add(&x->defs, "NULL, ");
    qk_str_addf(&x->defs, "%u, %u, ", group, nparams);
    if (nparams)
        qk_str_addf(&x->defs, "%s__params_%u, ", x->p, i);
    else
        qk_str_add(&x->defs, "NULL, ");
    qk_str_addf(&x->defs, "%u, ", np);
    if (np)
        qk_str_addf(&x->defs, "%s__planes_%u};\n", x->p, i);
    else
        qk_str_add(&x->defs, "NULL};\n");
    qk_str_addf(row, "&%s__weights_%u, ", x->p, i);
    return true;
}

/* Reads each distinct module once, checks it against the entry's hash, and
 * writes it as an array; returns its index in mods. */
static int module_of(exporter *x, const char *dir, const qkrt_json *k, module *mods,
                     uint32_t *count, char (*hashes)[65]) {
    const qkrt_json *spv = qk_export_field(x, k, "spv", QKRT_JSON_STRING, true);
    const char *want = qk_export_str(x, k, "spv_sha256", true);
    if (!spv || !want) return -1;
    uint32_t m = 0;
    while (m < *count && strcmp(mods[m].spv, spv->string))
        m++;
    if (m == *count) {
        if (strchr(spv->string, '/') || spv->string[0] == '.')
            return qk_export_bad(x, spv, "\"spv\": '%s' is not a file name in the bundle",
                                 spv->string),
                   -1;
        char *path = qk_path_join(dir, spv->string);
        size_t n = 0;
        char *code = qk_read_file(path, &n, x->e);
        free(path);
        if (!code) return -1;
        if (n == 0 || n % 4) {
            free(code);
            return qk_export_bad(x, spv, "%s: %zu bytes, not whole 32-bit words", spv->string, n),
                   -1;
        }
        qk_sha256_hex(code, n, hashes[m]);
        qk_str_addf(&x->defs, "static const uint32_t %s__spv_%u[%zu] = {", x->p, m, n / 4);
        for (size_t w = 0; w < n / 4; w++) {
            uint32_t word;
            memcpy(&word, code + 4 * w, 4);
            qk_str_addf(&x->defs, "%s0x%08xu,", w % 8 ? " " : "\n    ", word);
        }
        qk_str_add(&x->defs, "\n};\n");
        mods[m] = (module){spv->string, m, (uint32_t *)(void *)code, n / 4};
        (*count)++;
    }
    if (strcmp(hashes[m], want))
        return qk_export_bad(x, spv, "%s: its SHA-256 is %s, the manifest says %s", spv->string,
                             hashes[m], want),
               -1;
    return (int)m;
}

static bool kernel(exporter *x, const char *dir, const qkrt_json *k, uint32_t i, module *mods,
                   uint32_t *nmods, char (*hashes)[65], qk_str *rows) {
    if (k->type != QKRT_JSON_OBJECT)
        return qk_export_bad(x, k, "kernels[%u]: expected an object", i);
    qk_str row = {0};
    static const char *const names[] = {"name",           "family",     "kernel", "format",
                                        "format_variant", "activation", "mma",    "fusion",
                                        "precision",      "prepass"};
    qk_str_add(&row, "  {");
    for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
        const char *s = qk_export_str(x, k, names[j], j == 0 || j == 1);
        if (x->e->set) break;
        qk_export_c_field(&row, s);
    }
    const qkrt_json *tile = qk_export_field(x, k, "tile", QKRT_JSON_OBJECT, false);
    uint32_t t[3] = {0};
    if (tile && (!qk_export_u32(x, tile, "NR0", false, &t[0]) ||
                 !qk_export_u32(x, tile, "NR1", false, &t[1]) ||
                 !qk_export_u32(x, tile, "NK", false, &t[2])))
        goto fail;
    qk_str_addf(&row, "{%u, %u, %u}, ", t[0], t[1], t[2]);
    int m = x->e->set ? -1 : module_of(x, dir, k, mods, nmods, hashes);
    if (m < 0) goto fail;
    qk_export_c_field(&row, mods[m].spv);
    qk_export_c_field(&row, hashes[m]);
    const char *entry = qk_export_str(x, k, "entry_point", true);
    if (!entry) goto fail;
    /* as libqkrt's loader: a header names no entry point its module lacks */
    if (!qkrt_module_has_entry(mods[m].code, mods[m].words, entry)) {
        qk_export_bad(x, k,
                      "kernels[%u]: entry_point '%s': %s has no GLCompute entry point of that name",
                      i, entry, mods[m].spv);
        goto fail;
    }
    qk_export_c_field(&row, entry);
    qk_str_addf(&row, "%s__spv_%d, sizeof %s__spv_%d / 4, ", x->p, m, x->p, m);
    const qkrt_json *wg = qk_export_list(x, k, "workgroup_size", true);
    if (!wg) goto fail;
    if (wg->count != 3) {
        qk_export_bad(x, wg, "\"workgroup_size\": expected 3 numbers");
        goto fail;
    }
    qk_str_add(&row, "{");
    for (uint32_t j = 0; j < 3; j++) {
        const qkrt_json *v = &wg->items[j];
        if (v->type != QKRT_JSON_NUMBER || !v->integral || v->integer < 1 || v->integer > 65535) {
            qk_export_bad(x, v, "\"workgroup_size\": expected sizes 1 .. 65535");
            goto fail;
        }
        qk_str_addf(&row, "%s%lld", j ? ", " : "", (long long)v->integer);
    }
    qk_str_add(&row, "}, ");
    uint32_t rss, mss, smb;
    if (!qk_export_u32(x, k, "required_subgroup_size", true, &rss) ||
        !qk_export_u32(x, k, "min_subgroup_size", true, &mss) ||
        !qk_export_u32(x, k, "shared_memory_bytes", true, &smb))
        goto fail;
    qk_str_addf(&row, "%u, %u, %u, ", rss, mss, smb);
    const char *version = qk_export_str(x, k, "vulkan_version", true);
    unsigned major, minor;
    if (!version) goto fail;
    if (sscanf(version, "%u.%u", &major, &minor) != 2 || major > 127 || minor > 1023) {
        qk_export_bad(x, qkrt_json_get(k, "vulkan_version"),
                      "vulkan_version '%s' is not MAJOR.MINOR", version);
        goto fail;
    }
    qk_export_c_field(&row, version);
    qk_str_addf(&row, "%uu, ", major << 22 | minor << 12);
    char ext[64], feat[64];
    const qkrt_json *exts = qk_export_list(x, k, "extensions", true),
                    *feats = qk_export_list(x, k, "features", true);
    if (!exts || !feats || !string_array(x, exts, "extensions", i, ext) ||
        !string_array(x, feats, "features", i, feat))
        goto fail;
    qk_str_addf(&row, "%u, %s, %u, %s, ", exts->count, ext, feats->count, feat);
    if (!weights(x, k, i, &row) || !bindings(x, k, i, &row) || !push_constants(x, k, i, &row) ||
        !specialization(x, k, i, &row) || !dispatch(x, k, i, &row) || !constraints(x, k, i, &row))
        goto fail;
    qk_str_add(&row, "},\n");
    qk_str_add(rows, row.s);
    qk_str_free(&row);
    return true;
fail:
    qk_str_free(&row);
    if (!x->e->set) qk_export_bad(x, k, "kernels[%u]: malformed", i);
    return false;
}

/* Kernel entry k with its module's fields (docs/manifest.md, "Kernels and
 * modules"); view is for qkrt_json_view_free in any case. */
static bool kernel_view(exporter *x, const qkrt_json *modules, const qkrt_json *k, uint32_t i,
                        qkrt_json *view) {
    *view = (qkrt_json){0};
    if (k->type != QKRT_JSON_OBJECT)
        return qk_export_bad(x, k, "kernels[%u]: expected an object", i);
    const char *name = qk_export_str(x, k, "module", true);
    if (!name) return false;
    const qkrt_json *mod = qkrt_json_named(modules, name);
    if (!mod)
        return qk_export_bad(x, qkrt_json_get(k, "module"),
                             "kernels[%u]: module '%s' is not in \"modules\"", i, name);
    const char *twice = NULL;
    if (qkrt_json_kernel_view(k, mod, view, &twice)) return true;
    if (!twice) qk_error_set(x->e, "out of memory");
    return qk_export_bad(x, qkrt_json_get(k, twice),
                         "kernels[%u]: \"%s\" is also a field of its module '%s'", i, twice, name);
}

static bool export_bundle(exporter *x, const char *dir, const char *out_path) {
    char *mpath = qk_path_join(dir, "manifest.json");
    x->manifest_path = mpath;
    size_t n = 0;
    char *text = qk_read_file(mpath, &n, x->e);
    char err[512];
    qkrt_json *root = text ? qkrt_json_parse(text, n, err, sizeof err) : NULL;
    if (text && !root) qk_error_set(x->e, "%s:%s", mpath, err);
    const char *schema = root ? qk_export_str(x, root, "schema", true) : NULL;
    const qkrt_json *kernels = schema ? qk_export_list(x, root, "kernels", true) : NULL;
    if (kernels && strcmp(schema, QK_BUNDLE_SCHEMA) && strcmp(schema, QK_BUNDLE_SCHEMA_ACT))
        qk_export_bad(x, qkrt_json_get(root, "schema"),
                      "schema '%s' is not one this qkgen exports ('%s' or '%s')", schema,
                      QK_BUNDLE_SCHEMA, QK_BUNDLE_SCHEMA_ACT);
    if (kernels && !kernels->count) qk_export_bad(x, kernels, "no kernels");
    qk_str rows = {0}, o = {0};
    uint32_t nk = kernels && !x->e->set ? kernels->count : 0, nmods = 0;
    module *mods = qk_xcalloc(nk + 1, sizeof *mods);
    char(*hashes)[65] = qk_xcalloc(nk + 1, sizeof *hashes);
    const qkrt_json *modules = nk ? qk_export_list(x, root, "modules", true) : NULL;
    for (uint32_t i = 0; i < nk && !x->e->set; i++) {
        qkrt_json view;
        if (kernel_view(x, modules, &kernels->items[i], i, &view))
            kernel(x, dir, &view, i, mods, &nmods, hashes, &rows);
        qkrt_json_view_free(&view);
    }
    qk_str select_decl = {0};
    if (!x->e->set) qk_export_select(x, root, kernels, &select_decl);
    bool ok = !x->e->set;
    if (ok) {
        const char *hash = qk_export_str(x, root, "inputs_hash", false);
        /* names without their folders, so that the text does not depend on where
         * the bundle and header were */
        size_t dl = strlen(dir);
        while (dl > 1 && dir[dl - 1] == '/')
            dl--;
        const char *bundle = dir,
                   *file = strrchr(out_path, '/') ? strrchr(out_path, '/') + 1 : out_path;
        for (size_t i = 0; i + 1 < dl; i++)
            if (dir[i] == '/') bundle = dir + i + 1;
        /* the file, the folder and the hash come from a command line and a
         * manifest: escaped for the comment and the string literals they go in */
        qk_str bundle_name = {0};
        qk_str_addn(&bundle_name, bundle, dl - (size_t)(bundle - dir));
        qk_str_add(&o, "/* ");
        qk_c_comment(&o, file);
        qk_str_add(&o, ": the qkgen bundle '");
        qk_c_comment(&o, bundle_name.s ? bundle_name.s : "");
        qk_str_add(&o,
                   "' as C data, written by 'qkgen export' from its\n * manifest.json (schema ");
        qk_c_comment(&o, schema);
        qk_str_addf(&o, "); do not edit. %u kernels, %u modules.\n * inputs_hash ", nk, nmods);
        qk_c_comment(&o, hash ? hash : "-");
        qk_str_addf(&o,
                    "\n"
                    " * Declarations everywhere; in exactly one C or C++ file, define\n"
                    " * %s_IMPLEMENTATION before including it for the definitions.\n"
                    " * docs/engines.md describes the types. */\n"
                    "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
                    "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
                    "#define %s_SCHEMA ",
                    x->up, x->up, x->up, x->up);
        qk_c_string(&o, schema);
        qk_str_addf(&o, "\n#define %s_INPUTS_HASH ", x->up);
        qk_c_string(&o, hash ? hash : "");
        qk_str_addf(&o, "\n#define %s_KERNEL_COUNT %u\n#define %s_SHAPE_COUNT %u\n\n", x->up, nk,
                    x->up, x->var_count ? x->var_count : 1);
        qk_str_free(&bundle_name);
        qk_export_types(x, &o);
        qk_export_api(x, &o);
        if (select_decl.len) qk_str_add(&o, select_decl.s);
        qk_str_addf(&o,
                    "#ifdef __cplusplus\n}\n#endif\n#endif /* %s_H */\n\n"
                    "#if defined(%s_IMPLEMENTATION) && !defined(%s_IMPLEMENTED)\n"
                    "#define %s_IMPLEMENTED\n#include <string.h>\n"
                    "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                    x->up, x->up, x->up, x->up);
        qk_export_helpers(x, &o);
        qk_str_add(&o, x->defs.s);
        qk_str_addf(&o, "\nconst %s_kernel %s_kernels[%s_KERNEL_COUNT] = {\n%s};\n\n", x->p, x->p,
                    x->up, rows.s);
        qk_export_api_defs(x, &o);
        qk_str_addf(&o, "\n#ifdef __cplusplus\n}\n#endif\n#endif /* %s_IMPLEMENTATION */\n", x->up);
        /* the header's folder (and its parents) made where missing, only
         * now that the header is whole */
        char *dir = qk_path_dir(out_path);
        ok = qk_mkdirs(dir, x->e) && qk_write_file(out_path, o.s, o.len, x->e);
        free(dir);
    }
    qk_str_free(&rows);
    qk_str_free(&o);
    qk_str_free(&select_decl);
    for (uint32_t j = 0; j < nmods; j++)
        free(mods[j].code);
    free(mods);
    free(hashes);
    qkrt_json_free(root);
    free(text);
    free(mpath);
    return ok;
}

bool qk_export_bundle(const char *dir, const char *out_path, const char *prefix, qk_error *e) {
    exporter x = {.p = prefix, .e = e};
    for (size_t i = 0; prefix[i] && i < sizeof x.up - 1; i++)
        x.up[i] = (char)toupper((unsigned char)prefix[i]);
    const bool ok = export_bundle(&x, dir, out_path);
    qk_str_free(&x.defs);
    return ok;
}
