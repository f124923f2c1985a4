/* Bundles: reads manifest.json (schema qkgen-bundle/3) into qkrt_kernel_info,
 * loads and hash-checks every .spv, and checks a kernel's needs against the device. */
#include "internal.h"
#include "qk_util.h"
#include "qk_json.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Bounds of the manifest's sizes: far above any format or tile qkgen makes,
 * far below what overflows the arithmetic engines do with them. */
enum { BLOCK_MAX = 1 << 16, TILE_MAX = 1 << 16 };

/* 4: 3 with select rules for f16 activations (docs/manifest.md) */
static const char *SCHEMA = "qkgen-bundle/3", *SCHEMA_ACT = "qkgen-bundle/4";

typedef struct loader {
    qkrt_context *ctx;
    const char *path; /* of manifest.json, for messages */
    char where[160];  /* "kernels[3] (name)" */
    qk_strset names;  /* the kernels' names so far */
    qk_strset spvs;   /* module files so far, with their module index */
    qk_strset pipes;  /* pipeline_key of kernels so far, with the kernel index */
    qk_strset mods;   /* the names of "modules", with their index */
    char **keys;      /* the strings of pipes, owned */
    uint32_t key_count;
} loader;

static qkrt_result bad(loader *ld, const qkrt_json *node, const char *fmt, ...) QKRT_PRINTF(3, 4);

static qkrt_result bad(loader *ld, const qkrt_json *node, const char *fmt, ...) {
    char *e = ld->ctx->error;
    size_t size = sizeof ld->ctx->error;
    int n = node
                ? snprintf(e, size, "%s:%u:%u: %s: ", ld->path, node->line, node->column, ld->where)
                : snprintf(e, size, "%s: %s: ", ld->path, ld->where);
    if (n >= 0 && (size_t)n < size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(e + n, size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return QKRT_ERROR_MANIFEST;
}

/* An expression's syntax, at its place in the manifest: a broken one would
 * otherwise fail only when a dispatch evaluates it. Names are checked then. */
static qkrt_result check_expr(loader *ld, const qkrt_json *at, const char *what,
                              qk_expr_kind kind) {
    qk_error e = {0};
    return qk_expr_check(at->string, what, kind, &e) ? QKRT_OK : bad(ld, at, "%s", e.msg);
}

/* A manifest or a module is never near this; a larger file is not a bundle's. */
#define BUNDLE_FILE_MAX ((size_t)256 << 20)

static qkrt_result read_file(qkrt_context *ctx, const char *path, char **data, size_t *size) {
    qk_error e = {0};
    *data = qk_read_file_max(path, BUNDLE_FILE_MAX, size, &e);
    return *data ? QKRT_OK : qkrt_fail(ctx, QKRT_ERROR_IO, "%s", e.msg);
}

/* ---- typed field readers: each names the field and what was found ---- */

static qkrt_result get_string(loader *ld, const qkrt_json *obj, const char *key, bool required,
                              const char **out) {
    const qkrt_json *v = qkrt_json_get(obj, key);
    if (!v) {
        if (required) return bad(ld, obj, "missing \"%s\"", key);
        return QKRT_OK;
    }
    if (v->type != QKRT_JSON_STRING)
        return bad(ld, v, "\"%s\": expected a string, found %s", key, qkrt_json_type_name(v->type));
    *out = v->string;
    return QKRT_OK;
}

static qkrt_result as_u32(loader *ld, const qkrt_json *v, const char *what, uint32_t *out) {
    if (v->type != QKRT_JSON_NUMBER || !v->integral || v->integer < 0 || v->integer > UINT32_MAX)
        return bad(ld, v, "%s: expected an integer in 0..4294967295", what);
    *out = (uint32_t)v->integer;
    return QKRT_OK;
}

static qkrt_result get_u32(loader *ld, const qkrt_json *obj, const char *key, bool required,
                           uint32_t *out) {
    const qkrt_json *v = qkrt_json_get(obj, key);
    if (!v) return required ? bad(ld, obj, "missing \"%s\"", key) : QKRT_OK;
    char what[64];
    snprintf(what, sizeof what, "\"%s\"", key);
    return as_u32(ld, v, what, out);
}

/* get_u32 within lo..hi: counts and sizes that index arrays, divide or
 * multiply, so that no manifest can make them overflow or trap */
static qkrt_result get_u32_in(loader *ld, const qkrt_json *obj, const char *key, bool required,
                              uint32_t lo, uint32_t hi, uint32_t *out) {
    uint32_t v = *out;
    qkrt_result r = get_u32(ld, obj, key, required, &v);
    if (r != QKRT_OK || !qkrt_json_get(obj, key)) return r;
    if (v < lo || v > hi)
        return bad(ld, qkrt_json_get(obj, key), "\"%s\": %u is not in %u..%u", key, v, lo, hi);
    *out = v;
    return QKRT_OK;
}

static qkrt_result get_array(loader *ld, const qkrt_json *obj, const char *key, bool required,
                             const qkrt_json **out) {
    const qkrt_json *v = qkrt_json_get(obj, key);
    *out = NULL;
    if (!v) return required ? bad(ld, obj, "missing \"%s\"", key) : QKRT_OK;
    if (v->type != QKRT_JSON_ARRAY)
        return bad(ld, v, "\"%s\": expected an array, found %s", key, qkrt_json_type_name(v->type));
    *out = v;
    return QKRT_OK;
}

/* ---- one kernel ---- */

/* The feature names a manifest may list (docs/manifest.md), by bit. */
static const struct {
    const char *name;
    uint32_t bit;
} FEATURES[] = {
    {"subgroup_arithmetic", QKRT_FEATURE_SUBGROUP_ARITHMETIC},
    {"storage_8bit", QKRT_FEATURE_STORAGE_8BIT},
    {"storage_16bit", QKRT_FEATURE_STORAGE_16BIT},
    {"float16", QKRT_FEATURE_FLOAT16},
    {"int8", QKRT_FEATURE_INT8},
    {"int16", QKRT_FEATURE_INT16},
    {"int64", QKRT_FEATURE_INT64},
    {"cooperative_matrix_nv", QKRT_FEATURE_COOPERATIVE_MATRIX_NV},
    {"dynamic_indexing", QKRT_FEATURE_DYNAMIC_INDEXING},
    {"integer_dot_product", QKRT_FEATURE_INTEGER_DOT_PRODUCT},
    {"vulkan_memory_model", QKRT_FEATURE_VULKAN_MEMORY_MODEL},
    {"cooperative_matrix_khr", QKRT_FEATURE_COOPERATIVE_MATRIX_KHR},
    {"cooperative_matrix2_nv", QKRT_FEATURE_COOPERATIVE_MATRIX2_NV},
};

uint32_t qkrt_feature_bit(const char *name) {
    for (size_t i = 0; i < sizeof FEATURES / sizeof FEATURES[0]; i++)
        if (strcmp(FEATURES[i].name, name) == 0) return FEATURES[i].bit;
    return 0;
}

static const char *feature_name(uint32_t bit) {
    for (size_t i = 0; i < sizeof FEATURES / sizeof FEATURES[0]; i++)
        if (FEATURES[i].bit == bit) return FEATURES[i].name;
    return "?";
}

static qkrt_result read_lists(loader *ld, const qkrt_json *k, qkrt_kernel *kernel) {
    const qkrt_json *list;
    qkrt_result r = get_array(ld, k, "features", false, &list);
    if (r == QKRT_OK && list && list->count &&
        !(kernel->feature_names = calloc(list->count, sizeof *kernel->feature_names)))
        return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    for (uint32_t i = 0; r == QKRT_OK && list && i < list->count; i++) {
        const qkrt_json *f = &list->items[i];
        if (f->type != QKRT_JSON_STRING) return bad(ld, f, "features[%u]: expected a string", i);
        uint32_t bit = qkrt_feature_bit(f->string);
        if (!bit && !kernel->unknown_feature) kernel->unknown_feature = f->string;
        kernel->features |= bit;
        kernel->feature_names[kernel->info.feature_count++] = f->string;
    }
    kernel->info.features = kernel->feature_names;
    if (r == QKRT_OK) r = get_array(ld, k, "constraints", false, &list);
    if (r == QKRT_OK && list && list->count) {
        const char **constraints = calloc(list->count, sizeof *constraints);
        if (!constraints) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
        kernel->info.constraints = constraints;
        for (uint32_t i = 0; i < list->count; i++) {
            const qkrt_json *c = &list->items[i];
            if (c->type != QKRT_JSON_STRING)
                return bad(ld, c, "constraints[%u]: expected a string", i);
            r = check_expr(ld, c, "constraint", QK_EXPR_CONDITION);
            if (r != QKRT_OK) return r;
            constraints[kernel->info.constraint_count++] = c->string;
        }
    }
    if (r == QKRT_OK) r = get_array(ld, k, "extensions", false, &list);
    if (r == QKRT_OK && list && list->count) {
        kernel->extensions = calloc(list->count, sizeof *kernel->extensions);
        if (!kernel->extensions) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
        for (uint32_t i = 0; i < list->count; i++) {
            const qkrt_json *e = &list->items[i];
            if (e->type != QKRT_JSON_STRING)
                return bad(ld, e, "extensions[%u]: expected a string", i);
            kernel->extensions[kernel->extension_count++] = e->string;
        }
    }
    return r;
}

/* The names of the public enums, at their values (index 0: OTHER). */
static const char *const ROLES[] = {
    "",      "weights", "activations", "activations_q8",  "output",      "ids",
    "tpe",   "scratch", "indirect",    "routing_weights", "topk",        "logits",
    "slots", "gate",    "up",          "residual",        "norm_weight", "normed"};
static const char *const SCALARS[] = {"",    "u8",   "i8",  "u16", "i16",
                                      "f16", "bf16", "u32", "i32", "f32"};
static const char *const FAMILIES[] = {"",
                                       "matvec",
                                       "matvec_id",
                                       "matvec_id_sep",
                                       "matmul",
                                       "matmul_id",
                                       "quantize",
                                       "copy",
                                       "embed",
                                       "swiglu",
                                       "moe_route",
                                       "moe_combine",
                                       "router_topk",
                                       "matvec_id_ranked",
                                       "dequant",
                                       "dequant_id"};
enum {
    N_ROLES = sizeof ROLES / sizeof ROLES[0],
    N_SCALARS = sizeof SCALARS / sizeof SCALARS[0],
    N_FAMILIES = sizeof FAMILIES / sizeof FAMILIES[0],
};

/* Index of name in names[1 .. n), else 0 (the enums' OTHER). */
static int name_index(const char *const *names, int n, const char *name) {
    for (int i = 1; i < n; i++)
        if (strcmp(names[i], name) == 0) return i;
    return 0;
}

static qkrt_result read_bindings(loader *ld, const qkrt_json *k, qkrt_kernel *kernel) {
    qkrt_kernel_info *info = &kernel->info;
    const qkrt_json *list;
    qkrt_result r = get_array(ld, k, "bindings", true, &list);
    if (r != QKRT_OK) return r;
    if (list->count > QKRT_MAX_BINDINGS)
        return bad(ld, list, "\"bindings\": %u bindings, qkrt handles at most %d", list->count,
                   QKRT_MAX_BINDINGS);
    qkrt_binding_info *all = calloc(list->count ? list->count : 1, sizeof *all);
    if (!all) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    info->bindings = all;
    for (uint32_t i = 0; i < list->count; i++) {
        const qkrt_json *b = &list->items[i];
        qkrt_binding_info *bi = &all[i];
        const char *access = "read";
        if (b->type != QKRT_JSON_OBJECT) return bad(ld, b, "bindings[%u]: expected an object", i);
        bi->count = 1;
        bi->name = bi->role = bi->type = bi->size = "";
        r = get_u32(ld, b, "set", false, &bi->set);
        if (r == QKRT_OK) r = get_u32(ld, b, "binding", true, &bi->binding);
        if (r == QKRT_OK) r = get_u32_in(ld, b, "count", false, 1, QKRT_MAX_BINDINGS, &bi->count);
        if (r == QKRT_OK) r = get_string(ld, b, "name", true, &bi->name);
        if (r == QKRT_OK) r = get_string(ld, b, "role", false, &bi->role);
        if (r == QKRT_OK) r = get_string(ld, b, "type", false, &bi->type);
        if (r == QKRT_OK) r = get_string(ld, b, "access", false, &access);
        if (r == QKRT_OK) r = get_string(ld, b, "size", false, &bi->size);
        if (r != QKRT_OK) return r;
        bi->role_id = (qkrt_role)name_index(ROLES, N_ROLES, bi->role);
        bi->type_id = (qkrt_scalar)name_index(SCALARS, N_SCALARS, bi->type);
        if (bi->set != 0)
            return bad(ld, b, "binding '%s': set %u, only set 0 is used", bi->name, bi->set);
        if (strcmp(access, "read") && strcmp(access, "write") && strcmp(access, "read_write"))
            return bad(ld, b, "binding '%s': access '%s', expected read, write or read_write",
                       bi->name, access);
        bi->writable = strcmp(access, "read") != 0;
        for (uint32_t j = 0; j < i; j++)
            if (info->bindings[j].binding == bi->binding)
                return bad(ld, b, "binding '%s': binding %u is also '%s'", bi->name, bi->binding,
                           info->bindings[j].name);
        kernel->descriptor_count += bi->count;
        if (kernel->descriptor_count > QKRT_MAX_BINDINGS)
            return bad(ld, b, "more than %d buffers in all", QKRT_MAX_BINDINGS);
        info->binding_count++;
    }
    return QKRT_OK;
}

static qkrt_result read_push(loader *ld, const qkrt_json *k, qkrt_kernel_info *info) {
    const qkrt_json *list;
    qkrt_result r = get_array(ld, k, "push_constants", false, &list);
    if (r == QKRT_OK) r = get_u32(ld, k, "push_constant_size", list != NULL, &info->push_size);
    if (r != QKRT_OK || !list) return r;
    /* 256 bytes is the largest maxPushConstantsSize of current drivers */
    if (info->push_size > 256 || info->push_size % 4)
        return bad(ld, k, "\"push_constant_size\": %u is not a multiple of 4 up to 256",
                   info->push_size);
    qkrt_push_info *all = calloc(list->count ? list->count : 1, sizeof *all);
    if (!all) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    info->push = all;
    for (uint32_t i = 0; i < list->count; i++) {
        const qkrt_json *p = &list->items[i];
        qkrt_push_info *pi = &all[i];
        if (p->type != QKRT_JSON_OBJECT)
            return bad(ld, p, "push_constants[%u]: expected an object", i);
        r = get_string(ld, p, "name", true, &pi->name);
        if (r == QKRT_OK) r = get_u32(ld, p, "offset", true, &pi->offset);
        if (r == QKRT_OK) r = get_string(ld, p, "type", true, &pi->type);
        if (r != QKRT_OK) return r;
        pi->type_id = (qkrt_scalar)name_index(SCALARS, N_SCALARS, pi->type);
        if (strcmp(pi->type, "u32") && strcmp(pi->type, "i32") && strcmp(pi->type, "f32"))
            return bad(ld, p, "push constant '%s': type '%s', expected u32, i32 or f32", pi->name,
                       pi->type);
        if (pi->offset % 4 || pi->offset > info->push_size || info->push_size - pi->offset < 4)
            return bad(ld, p, "push constant '%s': offset %u does not fit 4 aligned bytes in %u",
                       pi->name, pi->offset, info->push_size);
        info->push_count++;
    }
    return QKRT_OK;
}

static qkrt_result read_shape(loader *ld, const qkrt_json *k, qkrt_kernel *kernel) {
    qkrt_kernel_info *info = &kernel->info;
    const qkrt_json *wg, *tile = qkrt_json_get(k, "tile"), *dispatch = qkrt_json_get(k, "dispatch");
    qkrt_result r = get_array(ld, k, "workgroup_size", true, &wg);
    if (r != QKRT_OK) return r;
    if (wg->count != 3) return bad(ld, wg, "\"workgroup_size\": expected 3 integers");
    for (uint32_t i = 0; i < 3 && r == QKRT_OK; i++) {
        r = as_u32(ld, &wg->items[i], "\"workgroup_size\"", &info->workgroup_size[i]);
        if (r == QKRT_OK && info->workgroup_size[i] == 0)
            return bad(ld, &wg->items[i], "\"workgroup_size\": 0");
    }
    if (r == QKRT_OK && tile) {
        if (tile->type != QKRT_JSON_OBJECT) return bad(ld, tile, "\"tile\": expected an object");
        r = get_u32_in(ld, tile, "NR0", false, 0, TILE_MAX, &info->nr0);
        if (r == QKRT_OK) r = get_u32_in(ld, tile, "NR1", false, 0, TILE_MAX, &info->nr1);
        if (r == QKRT_OK) r = get_u32_in(ld, tile, "NK", false, 0, TILE_MAX, &info->nk);
    }
    if (r != QKRT_OK) return r;
    if (!dispatch || dispatch->type != QKRT_JSON_OBJECT)
        return bad(ld, dispatch ? dispatch : k, "\"dispatch\": expected an object with \"grid\"");
    const qkrt_json *grid;
    r = get_array(ld, dispatch, "grid", true, &grid);
    if (r != QKRT_OK) return r;
    if (grid->count != 3) return bad(ld, grid, "\"dispatch.grid\": expected 3 expressions");
    for (uint32_t i = 0; i < 3; i++) {
        if (grid->items[i].type != QKRT_JSON_STRING)
            return bad(ld, &grid->items[i], "\"dispatch.grid\"[%u]: expected a string", i);
        r = check_expr(ld, &grid->items[i], "grid expression", QK_EXPR_VALUE);
        if (r != QKRT_OK) return r;
        info->grid[i] = grid->items[i].string;
    }
    return QKRT_OK;
}

/* The manifest's "weights": what callers need to size and check weight arrays. */
static qkrt_result read_weights(loader *ld, const qkrt_json *k, qkrt_kernel_info *info) {
    const qkrt_json *w = qkrt_json_get(k, "weights");
    if (!w || w->type != QKRT_JSON_OBJECT) return QKRT_OK; /* null: no weights */
    qkrt_result r = get_string(ld, w, "layout", true, &info->weights_layout);
    if (r != QKRT_OK) return r;
    if (!strcmp(info->weights_layout, "block")) {
        r = get_u32_in(ld, w, "block_elements", true, 1, BLOCK_MAX, &info->block_elements);
        if (r == QKRT_OK)
            r = get_u32_in(ld, w, "block_bytes", true, 1, BLOCK_MAX, &info->block_bytes);
        return r;
    }
    r = get_u32_in(ld, w, "group", true, 1, BLOCK_MAX, &info->block_elements);
    const qkrt_json *planes;
    if (r == QKRT_OK) r = get_array(ld, w, "planes", true, &planes);
    if (r != QKRT_OK) return r;
    qkrt_plane_info *all = calloc(planes->count ? planes->count : 1, sizeof *all);
    if (!all) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    info->planes = all;
    for (uint32_t i = 0; i < planes->count && r == QKRT_OK; i++) {
        const qkrt_json *p = &planes->items[i];
        r = get_string(ld, p, "name", true, &all[i].name);
        if (r == QKRT_OK) r = get_string(ld, p, "type", true, &all[i].type);
        if (r == QKRT_OK) r = get_u32_in(ld, p, "per_group", true, 1, BLOCK_MAX, &all[i].per_group);
        info->plane_count = i + 1;
    }
    return r;
}

/* "specialization_constants": [{"id", "name", "type", "value"}], into the
 * VkSpecializationInfo the pipeline is created with (4 bytes a constant). */
static qkrt_result read_specialization(loader *ld, const qkrt_json *k, qkrt_kernel *kernel) {
    const qkrt_json *list;
    qkrt_result r = get_array(ld, k, "specialization_constants", false, &list);
    if (r != QKRT_OK || !list || !list->count) return r;
    uint32_t n = list->count;
    kernel->specialization = calloc(n, sizeof *kernel->specialization);
    kernel->spec_map = calloc(n, sizeof *kernel->spec_map);
    kernel->spec_data = calloc(n, sizeof *kernel->spec_data);
    if (!kernel->specialization || !kernel->spec_map || !kernel->spec_data)
        return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    kernel->info.specialization = kernel->specialization;
    for (uint32_t i = 0; i < n; i++) {
        const qkrt_json *c = &list->items[i], *v;
        qkrt_specialization_info *si = &kernel->specialization[i];
        if (c->type != QKRT_JSON_OBJECT)
            return bad(ld, c, "specialization_constants[%u]: expected an object", i);
        r = get_u32(ld, c, "id", true, &si->id);
        if (r == QKRT_OK) r = get_string(ld, c, "name", true, &si->name);
        if (r == QKRT_OK) r = get_string(ld, c, "type", true, &si->type);
        if (r != QKRT_OK) return r;
        if (!(v = qkrt_json_get(c, "value")) || v->type != QKRT_JSON_NUMBER)
            return bad(ld, v ? v : c, "specialization constant '%s': \"value\": expected a number",
                       si->name);
        bool integral = v->integral, ok = true;
        if (!strcmp(si->type, "u32")) {
            ok = integral && v->integer >= 0 && v->integer <= UINT32_MAX;
            si->data = (uint32_t)v->integer;
        } else if (!strcmp(si->type, "i32")) {
            ok = integral && v->integer >= INT32_MIN && v->integer <= INT32_MAX;
            si->data = (uint32_t)(int32_t)v->integer;
        } else if (!strcmp(si->type, "bool")) {
            ok = integral && (v->integer == 0 || v->integer == 1);
            si->data = (uint32_t)v->integer;
        } else if (!strcmp(si->type, "f32")) {
            float f = (float)v->number;
            memcpy(&si->data, &f, 4);
        } else {
            return bad(ld, c,
                       "specialization constant '%s': type '%s', expected u32, i32, f32 or bool",
                       si->name, si->type);
        }
        if (!ok)
            return bad(ld, v, "specialization constant '%s': value out of range for %s", si->name,
                       si->type);
        for (uint32_t j = 0; j < i; j++)
            if (kernel->specialization[j].id == si->id)
                return bad(ld, c, "specialization constant '%s': id %u is also '%s'", si->name,
                           si->id, kernel->specialization[j].name);
        kernel->spec_data[i] = si->data;
        kernel->spec_map[i] = (VkSpecializationMapEntry){si->id, 4 * i, 4};
        kernel->info.specialization_count = i + 1;
    }
    return QKRT_OK;
}

/* Each specialization constant within what the kernel's entry says of it
 * (its id the one of its name, docs/manifest.md): NR0, NR1 and NK the tile's
 * values, TPR at most the workgroup, SK at most the tile bound, INSTANCE
 * below 8 (WG is the module's workgroup width, which qkrt_kernel_check holds
 * to the entry's). A value past them is a kernel nobody
 * checked, which may run for minutes (NR1 100000 where the tile says 1). */
static qkrt_result check_specialization(loader *ld, const qkrt_json *k, const qkrt_kernel *kernel) {
    static const char *const names[] = {"WG", "NR0", "NR1", "NK", "TPR", "SK", "INSTANCE"};
    enum { WG, NR0, NR1, NK, TPR, SK, INSTANCE, N_NAMES };
    const qkrt_kernel_info *info = &kernel->info;
    const qkrt_json *list = qkrt_json_get(k, "specialization_constants");
    const qkrt_json *tile = qkrt_json_get(k, "tile");
    const uint32_t *wg = info->workgroup_size;
    const uint64_t invocations = (uint64_t)wg[0] * wg[1] * wg[2];
    for (uint32_t i = 0; i < info->specialization_count; i++) {
        const qkrt_specialization_info *si = &info->specialization[i];
        const qkrt_json *at = &list->items[i];
        uint32_t p = 0, v = si->data;
        while (p < N_NAMES && strcmp(names[p], si->name))
            p++;
        if (p == N_NAMES)
            return bad(ld, at,
                       "specialization constant '%s': not a tile parameter (WG, NR0, NR1, NK, "
                       "TPR, SK, INSTANCE)",
                       si->name);
        if (si->id != p || strcmp(si->type, "u32"))
            return bad(ld, at, "specialization constant '%s': expected id %u and type u32",
                       si->name, p);
        if (p == NR0 || p == NR1 || p == NK) {
            const uint32_t want = p == NR0 ? info->nr0 : p == NR1 ? info->nr1 : info->nk;
            if (!tile || !qkrt_json_get(tile, si->name))
                return bad(ld, at, "specialization constant '%s': the kernel's tile has no %s",
                           si->name, si->name);
            if (v != want)
                return bad(ld, at,
                           "specialization constant '%s' is %u, but the kernel's tile has %s = %u",
                           si->name, v, si->name, want);
        } else if ((p == TPR && (v < 1 || v > invocations)) ||
                   (p == SK && (v < 1 || v > TILE_MAX)) || (p == INSTANCE && v >= 8)) {
            return bad(ld, at, "specialization constant '%s' is %u, out of range %u..%llu",
                       si->name, v, p == INSTANCE ? 0 : 1,
                       p == TPR  ? (unsigned long long)invocations
                       : p == SK ? TILE_MAX
                                 : 7ull);
        }
    }
    return QKRT_OK;
}

static qkrt_result read_kernel(loader *ld, const qkrt_json *k, qkrt_kernel *kernel) {
    qkrt_kernel_info *info = &kernel->info;
    info->family = info->format = info->activation = info->format_variant = "";
    info->mma = "scalar";
    info->fusion = "none";
    info->weights_layout = "";
    info->precision = "f32";
    kernel->entry = "main";
    kernel->vulkan_version = "1.2";
    qkrt_result r = get_string(ld, k, "name", true, &info->name);
    if (r == QKRT_OK) snprintf(ld->where + strlen(ld->where), 80, " (%s)", info->name);
    if (r == QKRT_OK) r = get_string(ld, k, "family", false, &info->family);
    if (r == QKRT_OK) r = get_string(ld, k, "format", false, &info->format);
    if (r == QKRT_OK) r = get_string(ld, k, "activation", false, &info->activation);
    if (r == QKRT_OK) r = get_string(ld, k, "format_variant", false, &info->format_variant);
    if (r == QKRT_OK) r = get_string(ld, k, "mma", false, &info->mma);
    if (r == QKRT_OK) r = get_string(ld, k, "fusion", false, &info->fusion);
    if (r == QKRT_OK) r = get_string(ld, k, "precision", false, &info->precision);
    /* null (no pre-pass) or the family of the kernel that runs first */
    const qkrt_json *pre = qkrt_json_get(k, "prepass");
    info->prepass = "";
    if (r == QKRT_OK && pre && pre->type != QKRT_JSON_NULL)
        r = get_string(ld, k, "prepass", false, &info->prepass);
    if (r == QKRT_OK) r = read_weights(ld, k, info);
    if (r == QKRT_OK) r = get_string(ld, k, "spv", true, &kernel->spv);
    if (r == QKRT_OK) r = get_string(ld, k, "spv_sha256", true, &kernel->sha256);
    if (r == QKRT_OK) r = get_string(ld, k, "entry_point", false, &kernel->entry);
    if (r == QKRT_OK) r = get_string(ld, k, "vulkan_version", false, &kernel->vulkan_version);
    if (r == QKRT_OK)
        r = get_u32(ld, k, "required_subgroup_size", false, &info->required_subgroup_size);
    if (r == QKRT_OK) r = get_u32(ld, k, "min_subgroup_size", false, &info->min_subgroup_size);
    if (r == QKRT_OK) r = get_u32(ld, k, "shared_memory_bytes", false, &info->shared_memory_bytes);
    if (r == QKRT_OK) r = read_shape(ld, k, kernel);
    if (r == QKRT_OK) r = read_lists(ld, k, kernel);
    if (r == QKRT_OK) r = read_bindings(ld, k, kernel);
    if (r == QKRT_OK) r = read_push(ld, k, info);
    if (r == QKRT_OK) r = read_specialization(ld, k, kernel);
    if (r == QKRT_OK) r = check_specialization(ld, k, kernel);
    if (r != QKRT_OK) return r;
    info->spv = kernel->spv;
    info->family_id = (qkrt_family)name_index(FAMILIES, N_FAMILIES, info->family);
    info->vulkan_version = kernel->vulkan_version;
    info->extension_count = kernel->extension_count;
    info->extensions = kernel->extensions;
    if (kernel->spv[0] == '/' || strstr(kernel->spv, ".."))
        return bad(ld, qkrt_json_get(k, "spv"), "\"spv\": '%s' is not a path inside the bundle",
                   kernel->spv);
    return QKRT_OK;
}

/* The module of kernel's .spv: one read before (its hash must agree), else
 * dir/spv read now and checked to be SPIR-V with the manifest's hash. */
static qkrt_result load_module(loader *ld, const char *dir, qkrt_bundle *bundle,
                               qkrt_kernel *kernel) {
    /* a set, not a search of the modules so far: a manifest of 100,000 kernels
     * loads in linear time */
    uint32_t m = 0;
    int added = qk_strset_add(&ld->spvs, kernel->spv, bundle->module_count, &m);
    if (added < 0) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    if (added == 0) {
        const qkrt_module *mod = &bundle->modules[m];
        if (strcmp(mod->sha256, kernel->sha256))
            return qkrt_fail(ld->ctx, QKRT_ERROR_MANIFEST,
                             "%s: kernel '%s': spv_sha256 %s differs from %s of another kernel "
                             "of the same file '%s'",
                             ld->path, kernel->info.name, kernel->sha256, mod->sha256, mod->spv);
        kernel->module = m;
        return QKRT_OK;
    }
    char *path = malloc(strlen(dir) + strlen(kernel->spv) + 2);
    if (!path) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    sprintf(path, "%s/%s", dir, kernel->spv);
    char *data = NULL;
    size_t size = 0;
    qkrt_result r = read_file(ld->ctx, path, &data, &size);
    if (r == QKRT_OK) {
        char hex[65];
        qk_sha256_hex(data, size, hex);
        uint32_t magic = 0;
        if (size >= 4) memcpy(&magic, data, 4);
        if (size < 20 || size % 4 || magic != 0x07230203)
            r = qkrt_fail(ld->ctx, QKRT_ERROR_MANIFEST, "%s: kernel '%s': not a SPIR-V module",
                          path, kernel->info.name);
        else if (strcmp(hex, kernel->sha256) != 0)
            r = qkrt_fail(ld->ctx, QKRT_ERROR_MANIFEST,
                          "%s: kernel '%s': sha256 is %s but the manifest says %s (stale bundle? "
                          "rebuild it)",
                          path, kernel->info.name, hex, kernel->sha256);
    }
    free(path);
    if (r != QKRT_OK) {
        free(data);
        return r;
    }
    /* at most one module a kernel: bundle->modules has room for all */
    qkrt_module *mod = &bundle->modules[bundle->module_count];
    *mod = (qkrt_module){.spv = kernel->spv, .sha256 = kernel->sha256};
    mod->code = (uint32_t *)(void *)data; /* malloc'ed: aligned for words */
    mod->code_size = size;
    kernel->module = bundle->module_count++;
    return QKRT_OK;
}

/* The kernel's entry point is in its module: a pipeline of a name the
 * module lacks fails only at creation, as VK_ERROR_UNKNOWN or a crash in a
 * driver or layer. (Checked once per module and entry: most kernels of a
 * module share one.) */
static qkrt_result check_entry(loader *ld, const qkrt_json *k, qkrt_bundle *bundle,
                               const qkrt_kernel *kernel) {
    qkrt_module *mod = &bundle->modules[kernel->module];
    if (mod->entry_checked && !strcmp(mod->entry_checked, kernel->entry)) return QKRT_OK;
    if (!qkrt_spirv_has_entry(mod->code, mod->code_size / 4, kernel->entry))
        return bad(ld, k, "entry_point '%s': %s has no GLCompute entry point of that name",
                   kernel->entry, mod->spv);
    mod->entry_checked = kernel->entry;
    return QKRT_OK;
}

/* What makes a kernel's pipeline: one module, entry point, specialization,
 * subgroup size and descriptor and push-constant layout. Kernels with equal
 * keys share a pipeline; found through a set, so in linear time. */
static char *pipeline_key(const qkrt_kernel *k) {
    const qkrt_kernel_info *x = &k->info;
    qk_str s = {0};
    qk_str_addf(&s, "%u %s %u %u %u %u %u %u|", k->module, k->entry, x->required_subgroup_size,
                x->workgroup_size[0], x->workgroup_size[1], x->workgroup_size[2], x->push_size,
                x->specialization_count);
    for (uint32_t i = 0; i < x->specialization_count; i++)
        qk_str_addf(&s, "%u=%u ", x->specialization[i].id, x->specialization[i].data);
    for (uint32_t i = 0; i < x->binding_count; i++)
        qk_str_addf(&s, "%u:%u ", x->bindings[i].binding, x->bindings[i].count);
    return qk_str_take(&s);
}

static qkrt_result find_pipeline(loader *ld, qkrt_kernel *kernel, uint32_t i) {
    if (ld->key_count % 1024 == 0) {
        char **keys = realloc(ld->keys, sizeof *keys * (ld->key_count + 1024));
        if (!keys) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
        ld->keys = keys;
    }
    char *key = ld->keys[ld->key_count++] = pipeline_key(kernel);
    kernel->pipe = i;
    if (qk_strset_add(&ld->pipes, key, i, &kernel->pipe) < 0)
        return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    return QKRT_OK;
}

/* The "modules" array: objects with distinct names, indexed in ld->mods. */
static qkrt_result read_modules(loader *ld, const qkrt_json *root, const qkrt_json **out) {
    snprintf(ld->where, sizeof ld->where, "manifest");
    qkrt_result r = get_array(ld, root, "modules", true, out);
    for (uint32_t i = 0; r == QKRT_OK && i < (*out)->count; i++) {
        const qkrt_json *m = &(*out)->items[i];
        snprintf(ld->where, sizeof ld->where, "modules[%u]", i);
        const char *name = NULL;
        if (m->type != QKRT_JSON_OBJECT) return bad(ld, m, "expected an object");
        r = get_string(ld, m, "name", true, &name);
        uint32_t earlier = 0;
        int added = r == QKRT_OK ? qk_strset_add(&ld->mods, name, i, &earlier) : 1;
        if (added < 0) r = qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
        if (added == 0) r = bad(ld, m, "name '%s' also used by modules[%u]", name, earlier);
    }
    return r;
}

/* Kernel k as one object with the fields of its module's entry
 * (qkrt_json_kernel_view). */
static qkrt_result kernel_view(loader *ld, const qkrt_json *modules, const qkrt_json *k,
                               qkrt_json *view) {
    const char *name = NULL;
    qkrt_result r = get_string(ld, k, "module", true, &name);
    if (r != QKRT_OK) return r;
    /* the set's lookup is its add: a name not there is added, and the load fails */
    uint32_t m = 0;
    int added = qk_strset_add(&ld->mods, name, UINT32_MAX, &m);
    if (added < 0) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    if (added > 0)
        return bad(ld, qkrt_json_get(k, "module"), "\"module\": '%s' is not in \"modules\"", name);
    const char *twice = NULL;
    if (qkrt_json_kernel_view(k, &modules->items[m], view, &twice)) return QKRT_OK;
    if (!twice) return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    return bad(ld, qkrt_json_get(k, twice),
               "\"%s\" is also a field of its module '%s' (modules[%u]): a field is the "
               "kernel's or the module's, not both",
               twice, name, m);
}

static qkrt_result read_manifest(loader *ld, const char *dir, const qkrt_json *root,
                                 qkrt_bundle *bundle) {
    snprintf(ld->where, sizeof ld->where, "manifest");
    if (root->type != QKRT_JSON_OBJECT) return bad(ld, root, "expected an object");
    const char *schema = NULL;
    qkrt_result r = get_string(ld, root, "schema", true, &schema);
    if (r != QKRT_OK) return r;
    if (strcmp(schema, SCHEMA) && strcmp(schema, SCHEMA_ACT))
        return bad(ld, qkrt_json_get(root, "schema"),
                   "schema '%s' is not supported (this runtime reads '%s' and '%s')", schema,
                   SCHEMA, SCHEMA_ACT);
    const qkrt_json *kernels, *modules;
    r = get_array(ld, root, "kernels", true, &kernels);
    if (r == QKRT_OK) r = read_modules(ld, root, &modules);
    if (r != QKRT_OK) return r;
    bundle->kernels = calloc(kernels->count ? kernels->count : 1, sizeof *bundle->kernels);
    bundle->modules = calloc(kernels->count ? kernels->count : 1, sizeof *bundle->modules);
    if (!bundle->kernels || !bundle->modules)
        return qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
    for (uint32_t i = 0; i < kernels->count; i++) {
        const qkrt_json *k = &kernels->items[i];
        qkrt_kernel *kernel = &bundle->kernels[i];
        bundle->count = i + 1;
        snprintf(ld->where, sizeof ld->where, "kernels[%u]", i);
        if (k->type != QKRT_JSON_OBJECT) return bad(ld, k, "expected an object");
        qkrt_json view = {0};
        r = kernel_view(ld, modules, k, &view);
        if (r == QKRT_OK) r = read_kernel(ld, &view, kernel);
        qkrt_json_view_free(&view);
        uint32_t earlier = 0;
        int added = r == QKRT_OK ? qk_strset_add(&ld->names, kernel->info.name, i, &earlier) : 1;
        if (added < 0) r = qkrt_fail(ld->ctx, QKRT_ERROR_MEMORY, "out of memory");
        if (added == 0) r = bad(ld, k, "name also used by kernels[%u]", earlier);
        if (r == QKRT_OK) r = load_module(ld, dir, bundle, kernel);
        if (r == QKRT_OK) r = check_entry(ld, k, bundle, kernel);
        if (r == QKRT_OK) r = find_pipeline(ld, kernel, i);
        if (r != QKRT_OK) return r;
    }
    return QKRT_OK;
}

qkrt_result qkrt_bundle_load(qkrt_context *ctx, const char *dir, qkrt_bundle **out) {
    if (!dir || !out)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_bundle_load: dir and out needed");
    *out = NULL;
    char *path = malloc(strlen(dir) + sizeof "/manifest.json");
    qkrt_bundle *bundle = calloc(1, sizeof *bundle);
    if (!path || !bundle) {
        free(path);
        free(bundle);
        return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "qkrt_bundle_load: out of memory");
    }
    sprintf(path, "%s/manifest.json", dir);
    bundle->ctx = ctx;
    char *text = NULL;
    size_t size = 0;
    qkrt_result r = read_file(ctx, path, &text, &size);
    if (r == QKRT_OK) {
        char error[256];
        bundle->doc = qkrt_json_parse(text, size, error, sizeof error);
        if (!bundle->doc) r = qkrt_fail(ctx, QKRT_ERROR_MANIFEST, "%s:%s", path, error);
        free(text);
    }
    if (r == QKRT_OK) {
        loader ld = {ctx, path, "", {0}, {0}, {0}, {0}, NULL, 0};
        r = read_manifest(&ld, dir, bundle->doc, bundle);
        /* the select table once here, so that no query meets a rule whose
         * kernel computes another format or a range that means nothing */
        if (r == QKRT_OK) r = qkrt_select_load_check(ctx, bundle, path);
        qk_strset_free(&ld.names);
        qk_strset_free(&ld.spvs);
        qk_strset_free(&ld.pipes);
        qk_strset_free(&ld.mods);
        for (uint32_t i = 0; i < ld.key_count; i++)
            free(ld.keys[i]);
        free(ld.keys);
    }
    free(path);
    if (r != QKRT_OK) {
        qkrt_bundle_destroy(ctx, bundle);
        return r;
    }
    *out = bundle;
    return QKRT_OK;
}

void qkrt_bundle_destroy(qkrt_context *ctx, qkrt_bundle *bundle) {
    if (!bundle) return;
    for (uint32_t i = 0; i < bundle->count; i++) {
        qkrt_kernel_release(ctx, &bundle->kernels[i]);
        free(bundle->kernels[i].specialization);
        free(bundle->kernels[i].spec_map);
        free(bundle->kernels[i].spec_data);
        free(bundle->kernels[i].extensions);
        free(bundle->kernels[i].feature_names);
        free((void *)bundle->kernels[i].info.bindings);
        free((void *)bundle->kernels[i].info.push);
        free((void *)bundle->kernels[i].info.planes);
        free((void *)bundle->kernels[i].info.constraints);
    }
    for (uint32_t m = 0; m < bundle->module_count; m++) {
        if (bundle->modules[m].handle)
            vkDestroyShaderModule(ctx->device, bundle->modules[m].handle, ctx->alloc);
        free(bundle->modules[m].code);
    }
    free(bundle->modules);
    free(bundle->kernels);
    qkrt_json_free(bundle->doc);
    free(bundle);
}

uint32_t qkrt_bundle_kernel_count(const qkrt_bundle *bundle) {
    return bundle ? bundle->count : 0;
}

const qkrt_kernel_info *qkrt_bundle_kernel(const qkrt_bundle *bundle, uint32_t index) {
    return bundle && index < bundle->count ? &bundle->kernels[index].info : NULL;
}

int qkrt_bundle_find(const qkrt_bundle *bundle, const char *name) {
    for (uint32_t i = 0; bundle && name && i < bundle->count; i++)
        if (strcmp(bundle->kernels[i].info.name, name) == 0) return (int)i;
    return -1;
}

/* ---- expressions of the manifest over a shape: the generator's evaluator ---- */

bool qkrt_shape_lookup(void *user, const char *name, size_t len, int64_t *value) {
    const qkrt_shape *s = user;
    uint32_t count = s && s->names && s->values ? s->count : 0;
    for (uint32_t i = 0; i < count; i++) {
        if (s->names[i] && strlen(s->names[i]) == len && memcmp(s->names[i], name, len) == 0) {
            *value = s->values[i];
            return true;
        }
    }
    return false;
}

static qkrt_result eval(const char *expr, const char *what, qk_expr_kind kind,
                        const qkrt_shape *shape, int64_t *value, char *error, size_t error_size) {
    if (error && error_size) error[0] = '\0';
    qk_error e = {0};
    if (!value) qk_error_set(&e, "qkrt_eval: no place for the value");
    if (value && qk_expr_eval_as(expr, what, kind, qkrt_shape_lookup, (void *)shape, value, &e))
        return QKRT_OK;
    if (error && error_size) snprintf(error, error_size, "%s", e.msg);
    qkrt_set_thread_error("%s", e.msg);
    return QKRT_ERROR_ARGUMENT;
}

qkrt_result qkrt_eval_named(const char *expr, const char *what, const qkrt_shape *shape,
                            int64_t *value, char *error, size_t error_size) {
    return eval(expr, what, QK_EXPR_VALUE, shape, value, error, error_size);
}

qkrt_result qkrt_eval(const char *expr, const qkrt_shape *shape, int64_t *value, char *error,
                      size_t error_size) {
    return eval(expr, "expression", QK_EXPR_VALUE, shape, value, error, error_size);
}

qkrt_result qkrt_eval_bool(const char *expr, const qkrt_shape *shape, bool *value, char *error,
                           size_t error_size) {
    int64_t v = 0;
    qkrt_result r =
        eval(expr, "constraint", QK_EXPR_CONDITION, shape, value ? &v : NULL, error, error_size);
    if (r == QKRT_OK) *value = v != 0;
    return r;
}

/* ---- can this device run it? ---- */

static bool has_feature(const qkrt_device_caps *c, uint32_t bit) {
    const qkrt_device_info *d = &c->info;
    switch (bit) {
    case QKRT_FEATURE_SUBGROUP_ARITHMETIC:
        return d->subgroup_arithmetic;
    case QKRT_FEATURE_STORAGE_8BIT:
        return d->storage_8bit;
    case QKRT_FEATURE_STORAGE_16BIT:
        return d->storage_16bit;
    case QKRT_FEATURE_FLOAT16:
        return d->float16;
    case QKRT_FEATURE_INT8:
        return d->int8;
    case QKRT_FEATURE_INT64:
        return d->int64;
    case QKRT_FEATURE_COOPERATIVE_MATRIX_NV:
        return d->cooperative_matrix_nv;
    case QKRT_FEATURE_DYNAMIC_INDEXING:
        return c->dynamic_indexing;
    case QKRT_FEATURE_INTEGER_DOT_PRODUCT:
        return d->integer_dot_product;
    case QKRT_FEATURE_INT16:
        return c->int16;
    case QKRT_FEATURE_VULKAN_MEMORY_MODEL:
        return c->memory_model;
    case QKRT_FEATURE_COOPERATIVE_MATRIX_KHR:
        return d->cooperative_matrix_khr;
    case QKRT_FEATURE_COOPERATIVE_MATRIX2_NV:
        return d->cooperative_matrix2_nv;
    }
    return false;
}

static qkrt_result lacks(qkrt_context *ctx, const qkrt_kernel *k, const char *fmt, ...)
    QKRT_PRINTF(3, 4);

static qkrt_result lacks(qkrt_context *ctx, const qkrt_kernel *k, const char *fmt, ...) {
    char need[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(need, sizeof need, fmt, ap);
    va_end(ap);
    return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED, "kernel %s needs %s, which device '%s' lacks%s",
                     k->info.name, need, ctx->caps.info.name,
                     !ctx->owns_device      ? " or its creator did not enable"
                     : ctx->features_listed ? " or qkrt_desc.features leaves out"
                                            : "");
}

static qkrt_result check_limits(qkrt_context *ctx, const qkrt_kernel *k) {
    const qkrt_device_caps *c = &ctx->caps;
    const VkPhysicalDeviceLimits *lim = &c->limits;
    const qkrt_kernel_info *info = &k->info;
    const uint32_t *wg = info->workgroup_size;
    uint64_t invocations = (uint64_t)wg[0] * wg[1] * wg[2];
    for (int i = 0; i < 3; i++)
        if (wg[i] > lim->maxComputeWorkGroupSize[i])
            return lacks(ctx, k, "workgroup size %u in dimension %d (maxComputeWorkGroupSize %u)",
                         wg[i], i, lim->maxComputeWorkGroupSize[i]);
    if (invocations > lim->maxComputeWorkGroupInvocations)
        return lacks(ctx, k, "%llu invocations per workgroup (maxComputeWorkGroupInvocations %u)",
                     (unsigned long long)invocations, lim->maxComputeWorkGroupInvocations);
    if (info->shared_memory_bytes > lim->maxComputeSharedMemorySize)
        return lacks(ctx, k, "%u bytes of shared memory (maxComputeSharedMemorySize %u)",
                     info->shared_memory_bytes, lim->maxComputeSharedMemorySize);
    if (info->push_size > lim->maxPushConstantsSize)
        return lacks(ctx, k, "%u bytes of push constants (maxPushConstantsSize %u)",
                     info->push_size, lim->maxPushConstantsSize);
    if (k->descriptor_count > lim->maxPerStageDescriptorStorageBuffers)
        return lacks(ctx, k, "%u storage buffers (maxPerStageDescriptorStorageBuffers %u)",
                     k->descriptor_count, lim->maxPerStageDescriptorStorageBuffers);
    return QKRT_OK;
}

static qkrt_result check_subgroups(qkrt_context *ctx, const qkrt_kernel *k) {
    const qkrt_device_caps *c = &ctx->caps;
    const qkrt_kernel_info *info = &k->info;
    uint32_t required = info->required_subgroup_size;
    if (required) {
        if (!c->size_control || !(c->required_size_stages & VK_SHADER_STAGE_COMPUTE_BIT))
            return lacks(ctx, k, "subgroup size %u (subgroup size control)", required);
        if (required < c->info.min_subgroup_size || required > c->info.max_subgroup_size)
            return lacks(ctx, k, "subgroup size %u (supported: %u..%u)", required,
                         c->info.min_subgroup_size, c->info.max_subgroup_size);
        const uint32_t *wg = info->workgroup_size;
        uint64_t invocations = (uint64_t)wg[0] * wg[1] * wg[2];
        if (invocations > (uint64_t)c->max_workgroup_subgroups * required)
            return lacks(ctx, k,
                         "%llu invocations in subgroups of %u (maxComputeWorkgroupSubgroups %u)",
                         (unsigned long long)invocations, required, c->max_workgroup_subgroups);
    }
    /* without a required size, SPIR-V 1.5 shaders run at the default size */
    uint32_t actual = required ? required : c->info.subgroup_size;
    if (info->min_subgroup_size > actual)
        return lacks(ctx, k, "subgroups of at least %u invocations (it has %u)",
                     info->min_subgroup_size, actual);
    return QKRT_OK;
}

/* A device extension is there if enabled, or if it was promoted to a core
 * version this device has and its feature is on. */
static bool extension_ok(const qkrt_context *ctx, const char *name) {
    const qkrt_device_caps *c = &ctx->caps;
    /* GLSL and SPIR-V extension names are covered by "features" */
    if (strncmp(name, "VK_", 3) != 0) return true;
    for (uint32_t j = 0; j < ctx->extension_count; j++)
        if (strcmp(ctx->extensions[j], name) == 0) return true;
    static const char *const promoted[] = {
        "VK_EXT_subgroup_size_control",
        "VK_KHR_maintenance4",
        "VK_KHR_8bit_storage",
        "VK_KHR_16bit_storage",
        "VK_KHR_shader_float16_int8",
        "VK_KHR_vulkan_memory_model",
        "VK_KHR_shader_subgroup_extended_types",
        "VK_KHR_storage_buffer_storage_class",
        "VK_KHR_shader_integer_dot_product",
    };
    bool on[] = {
        c->size_control,
        c->maintenance4,
        c->info.storage_8bit,
        c->info.storage_16bit,
        c->info.float16 || c->info.int8,
        c->memory_model,
        c->subgroup_extended_types,
        true,
        c->api >= VK_API_VERSION_1_3 && c->info.integer_dot_product,
    };
    for (size_t i = 0; i < sizeof promoted / sizeof promoted[0]; i++)
        if (strcmp(promoted[i], name) == 0) return on[i];
    return false;
}

/* The value a kernel's specialization gives SpecId id, else dflt. */
static uint32_t specialized(const qkrt_kernel *k, int32_t id, uint32_t dflt) {
    for (uint32_t c = 0; c < k->info.specialization_count && id >= 0; c++)
        if (k->info.specialization[c].id == (uint32_t)id) return k->info.specialization[c].data;
    return dflt;
}

/* Every buffer the module's entry point uses must be in the pipeline layout
 * the manifest entry makes (storage buffers of set 0, with their counts), or
 * the pipeline reads unbound memory; a binding the module does not use is
 * harmless (the optimizer may drop one). */
static qkrt_result check_module_bindings(qkrt_context *ctx, const qkrt_kernel *k,
                                         const qkrt_module *mod) {
    const qkrt_reflection *r = &mod->reflection;
    const char *name = k->info.name, *spv = mod->spv;
    if (r->too_many)
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                         "kernel %s: %s uses more buffers or push constants than a manifest "
                         "entry may list (%d buffers, %d push constants)",
                         name, spv, QKRT_MAX_BINDINGS, QKRT_REFLECT_MAX_PUSH);
    for (uint32_t i = 0; i < r->binding_count; i++) {
        const qkrt_reflected_binding *rb = &r->bindings[i];
        if (!rb->has_set || !rb->has_binding)
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s has a buffer without a DescriptorSet and Binding", name,
                             spv);
        const qkrt_binding_info *mb = NULL;
        for (uint32_t j = 0; j < k->info.binding_count && !mb; j++)
            if (k->info.bindings[j].set == rb->set && k->info.bindings[j].binding == rb->binding)
                mb = &k->info.bindings[j];
        if (!mb)
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s uses buffer binding %u of set %u, which the manifest "
                             "entry does not list",
                             name, spv, rb->binding, rb->set);
        if (!rb->storage)
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s declares binding %u ('%s') as a uniform buffer; "
                             "manifest bindings are storage buffers",
                             name, spv, rb->binding, mb->name);
        if (rb->runtime_array)
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s declares binding %u ('%s') as an array of buffers "
                             "without a length, but the manifest says %u",
                             name, spv, rb->binding, mb->name, mb->count);
        uint32_t count = specialized(k, rb->count_spec, rb->count);
        if (count != mb->count)
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s declares binding %u ('%s') as %u buffer%s, but the "
                             "manifest says %u",
                             name, spv, rb->binding, mb->name, count, count == 1 ? "" : "s",
                             mb->count);
    }
    return QKRT_OK;
}

/* Each member of the module's push-constant block must be the manifest's
 * push constant at that offset, of its type (and name, where the module
 * keeps names), inside push_constant_size: a wrong offset or a swap feeds
 * the kernel another shape variable. */
static qkrt_result check_module_push(qkrt_context *ctx, const qkrt_kernel *k,
                                     const qkrt_module *mod) {
    const qkrt_reflection *r = &mod->reflection;
    const char *name = k->info.name, *spv = mod->spv;
    for (uint32_t i = 0; i < r->push_count; i++) {
        const qkrt_reflected_push *rp = &r->push[i];
        const char *label = rp->name[0] ? rp->name : "?";
        if (!rp->has_offset || !strcmp(rp->type, "other"))
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s: push constant %u ('%s') is %s; qkrt passes 32-bit "
                             "scalars at explicit offsets",
                             name, spv, i, label,
                             rp->has_offset ? "not a 32-bit scalar" : "without an Offset");
        const qkrt_push_info *mp = NULL;
        for (uint32_t j = 0; j < k->info.push_count && !mp; j++)
            if (k->info.push[j].offset == rp->offset) mp = &k->info.push[j];
        if (!mp) /* (the loader holds the manifest's to push_constant_size) */
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s reads push constant '%s' (%s) at offset %u, where the "
                             "manifest entry has none",
                             name, spv, label, rp->type, rp->offset);
        if (strcmp(mp->type, rp->type) || (rp->name[0] && strcmp(mp->name, rp->name)))
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s has push constant '%s' (%s) at offset %u, but the "
                             "manifest has '%s' (%s) there",
                             name, spv, label, rp->type, rp->offset, mp->name, mp->type);
    }
    return QKRT_OK;
}

/* The manifest entry is what an engine goes by, so it must agree with the
 * module, whatever this device has: every capability the module declares
 * comes with its feature in the entry, and the workgroup size the module
 * gets under the entry's specialization constants is the entry's. */
static qkrt_result check_module(qkrt_context *ctx, const qkrt_bundle *bundle,
                                const qkrt_kernel *k) {
    qkrt_module *mod = &bundle->modules[k->module];
    if (!mod->reflected || strcmp(mod->reflected, k->entry)) {
        qkrt_reflect(mod->code, mod->code_size / 4, k->entry, &mod->reflection);
        mod->reflected = k->entry;
    }
    const qkrt_reflection *r = &mod->reflection;
    uint32_t missing = r->features & ~k->features;
    for (int b = 0; b < 32; b++)
        if (missing & (1u << b))
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                             "kernel %s: %s declares capability %s, which needs feature '%s', but "
                             "the kernel's manifest entry does not list it",
                             k->info.name, mod->spv, qkrt_capability_name(r->capability[b]),
                             feature_name(1u << b));
    if (!r->entry_found)
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                         "kernel %s: %s has no GLCompute entry point '%s'", k->info.name, mod->spv,
                         k->entry);
    if (!r->size_known)
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                         "kernel %s: %s has no GLCompute entry point '%s' with a workgroup size",
                         k->info.name, mod->spv, k->entry);
    uint32_t size[3];
    for (int d = 0; d < 3; d++)
        size[d] = specialized(k, r->size_spec[d], r->size[d]);
    const uint32_t *want = k->info.workgroup_size;
    if (memcmp(size, want, sizeof size))
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                         "kernel %s: %s under the kernel's specialization constants has a "
                         "workgroup of %ux%ux%u, but the manifest says %ux%ux%u",
                         k->info.name, mod->spv, size[0], size[1], size[2], want[0], want[1],
                         want[2]);
    qkrt_result res = check_module_bindings(ctx, k, mod);
    return res == QKRT_OK ? check_module_push(ctx, k, mod) : res;
}

qkrt_result qkrt_kernel_check(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index) {
    if (!bundle || index >= bundle->count)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_kernel_check: no kernel %u in the bundle",
                         index);
    const qkrt_kernel *k = &bundle->kernels[index];
    unsigned major = 0, minor = 0;
    if (sscanf(k->vulkan_version, "%u.%u", &major, &minor) != 2)
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST, "kernel %s: vulkan_version '%s' is not M.m",
                         k->info.name, k->vulkan_version);
    if (VK_MAKE_API_VERSION(0, major, minor, 0) > ctx->caps.api)
        return lacks(ctx, k, "Vulkan %u.%u", major, minor);
    if (k->unknown_feature)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "kernel %s needs feature '%s', which this runtime does not know",
                         k->info.name, k->unknown_feature);
    qkrt_result r = check_module(ctx, bundle, k);
    if (r != QKRT_OK) return r;
    for (uint32_t bit = 1; bit && bit <= k->features; bit <<= 1)
        if ((k->features & bit) && !has_feature(&ctx->caps, bit))
            return lacks(ctx, k, "%s", feature_name(bit));
    for (uint32_t i = 0; i < k->extension_count; i++)
        if (!extension_ok(ctx, k->extensions[i])) return lacks(ctx, k, "%s", k->extensions[i]);
    r = check_limits(ctx, k);
    if (r == QKRT_OK) r = check_subgroups(ctx, k);
    return r;
}
