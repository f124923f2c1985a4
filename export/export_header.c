/* qkgen export: the C text around the kernels: types, API, checked arithmetic,
 * and the tuned selection table with its rule. */
#include "export.h"

#include <stdio.h>
#include <string.h>

/* ---- the header around the kernels ---- */

void qk_export_types(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_add(o, "/* Every shape variable the bundle's expressions and push constants name. */\n"
                  "typedef struct ");
    qk_str_addf(o, "%s_shape {\n", p);
    for (uint32_t i = 0; i < x->var_count; i++)
        qk_str_addf(o, "    int64_t %s;\n", x->vars[i]);
    if (!x->var_count) qk_str_add(o, "    int64_t unused_;\n");
    qk_str_addf(
        o,
        "} %s_shape;\n\n"
        "typedef struct %s_binding {\n"
        "    uint32_t set, binding, count; /* count > 1: an array of buffers */\n"
        "    const char *name, *role, *type;\n"
        "    int writable;\n"
        "    const char *size; /* bytes to allocate as an expression, or NULL */\n"
        "    int (*size_bytes)(const %s_shape *s, uint64_t *bytes); /* 0, or -1: overflow */\n"
        "} %s_binding;\n\n"
        "typedef struct %s_push_constant {\n"
        "    const char *name; /* the shape variable of the same name */\n"
        "    uint32_t offset;\n"
        "    const char *type; /* \"u32\" or \"i32\" */\n"
        "    size_t shape_offset; /* offsetof(%s_shape, name) */\n"
        "} %s_push_constant;\n\n"
        "typedef struct %s_specialization {\n"
        "    uint32_t id; /* SpecId: VkSpecializationMapEntry.constantID */\n"
        "    const char *name, *type; /* type: \"u32\", \"i32\", \"f32\" or \"bool\" */\n"
        "    uint32_t data; /* the 4 bytes VkSpecializationInfo takes */\n"
        "} %s_specialization;\n\n"
        "typedef struct %s_field { const char *name, *type; uint32_t offset, count; } %s_field;\n"
        "typedef struct %s_plane { const char *name, *type; uint32_t per_group; } %s_plane;\n"
        "typedef struct %s_param { const char *name, *value; } %s_param;\n"
        "typedef struct %s_weights {\n"
        "    const char *layout; /* \"block\" or \"planar\" */\n"
        "    uint32_t block_elements, block_bytes, field_count;\n"
        "    const %s_field *fields;\n"
        "    uint32_t group, param_count;\n"
        "    const %s_param *params;\n"
        "    uint32_t plane_count;\n"
        "    const %s_plane *planes;\n"
        "} %s_weights;\n\n",
        p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    qk_str_addf(
        o,
        "typedef struct %s_kernel {\n"
        "    const char *name, *family, *kernel, *format, *format_variant, *activation, *mma,\n"
        "        *fusion, *precision, /* NULL where the manifest does not say */\n"
        "        *prepass; /* NULL, or the family of the kernel that runs first (quantize) */\n"
        "    uint32_t tile[3];         /* NR0, NR1, NK */\n"
        "    const char *spv, *spv_sha256, *entry_point;\n"
        "    const uint32_t *code; /* the SPIR-V module, shared by the kernels of one spv */\n"
        "    size_t code_words;\n"
        "    uint32_t workgroup_size[3], required_subgroup_size, min_subgroup_size,\n"
        "        shared_memory_bytes;\n"
        "    const char *vulkan_version;\n"
        "    uint32_t api_version; /* VK_MAKE_API_VERSION(0, major, minor, 0) */\n"
        "    uint32_t extension_count;\n"
        "    const char *const *extensions;\n"
        "    uint32_t feature_count;\n"
        "    const char *const *features;\n"
        "    const %s_weights *weights; /* NULL: the kernel takes no quantized weights */\n"
        "    uint32_t binding_count;\n"
        "    const %s_binding *bindings;\n"
        "    uint32_t push_constant_count;\n"
        "    const %s_push_constant *push_constants;\n"
        "    uint32_t push_constant_size;\n"
        "    uint32_t specialization_count;\n"
        "    const %s_specialization *specialization;\n"
        "    const char *grid[3];\n"
        "    /* workgroups to dispatch: 0, or -1 when a value overflows or leaves 0 .. 2^32-1 */\n"
        "    int (*dispatch)(const %s_shape *s, uint32_t groups[3]);\n"
        "    uint32_t constraint_count;\n"
        "    const char *const *constraints;\n"
        "    /* -1 when every constraint holds, else the index of the first that fails */\n"
        "    int (*check)(const %s_shape *s);\n"
        "} %s_kernel;\n\n",
        p, p, p, p, p, p, p, p);
}

void qk_export_api(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_addf(
        o,
        "extern const %s_kernel %s_kernels[%s_KERNEL_COUNT];\n"
        "/* The names of %s_shape's fields, in order. */\n"
        "extern const char *const %s_shape_names[%s_SHAPE_COUNT];\n"
        "/* The index of the kernel called name, or -1. */\n"
        "int %s_find(const char *name);\n"
        "/* Sets the shape variable called name: 0, or -1 if the bundle names none such. */\n"
        "int %s_shape_set(%s_shape *s, const char *name, int64_t value);\n"
        "/* Writes k's push_constant_size bytes of push constants for shape s: 0, or -1\n"
        " * if a value does not fit its type. */\n"
        "int %s_push_data(const %s_kernel *k, const %s_shape *s, void *out);\n\n",
        p, p, x->up, p, p, x->up, p, p, p, p, p, p);
}

/* Checked int64 arithmetic with the manifest's semantics. */
void qk_export_helpers(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_addf(o,
                "static inline int64_t %s__fail(int *ok) { *ok = 0; return 0; }\n"
                "static inline int64_t %s__add(int *ok, int64_t a, int64_t b) {\n"
                "    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return "
                "%s__fail(ok);\n"
                "    return a + b;\n}\n"
                "static inline int64_t %s__sub(int *ok, int64_t a, int64_t b) {\n"
                "    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return "
                "%s__fail(ok);\n"
                "    return a - b;\n}\n"
                "static inline int64_t %s__mul(int *ok, int64_t a, int64_t b) {\n"
                "    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)\n"
                "              : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))\n"
                "        return %s__fail(ok);\n"
                "    return a * b;\n}\n"
                "/* / rounds down and %% takes the sign of the divisor */\n"
                "static inline int64_t %s__div(int *ok, int64_t a, int64_t b) {\n"
                "    int64_t q;\n"
                "    if (b == 0 || (a == INT64_MIN && b == -1)) return %s__fail(ok);\n"
                "    q = a / b;\n"
                "    return (a %% b != 0 && ((a %% b < 0) != (b < 0))) ? q - 1 : q;\n}\n"
                "static inline int64_t %s__mod(int *ok, int64_t a, int64_t b) {\n"
                "    int64_t r;\n"
                "    if (b == 0) return %s__fail(ok);\n"
                "    if (b == -1) return 0;\n"
                "    r = a %% b;\n"
                "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n"
                "static inline int64_t %s__neg(int *ok, int64_t a) {\n"
                "    return a == INT64_MIN ? %s__fail(ok) : -a;\n}\n"
                "static inline int64_t %s__pos(int *ok, int64_t a) { (void)ok; return a; }\n"
                "static inline int64_t %s__not(int *ok, int64_t a) { (void)ok; return !a; }\n",
                p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    static const char *const cmp[][2] = {{"eq", "=="}, {"ne", "!="}, {"le", "<="},  {"ge", ">="},
                                         {"lt", "<"},  {"gt", ">"},  {"and", "&&"}, {"or", "||"}};
    for (int i = 0; i < 8; i++)
        qk_str_addf(o,
                    "static inline int64_t %s__%s(int *ok, int64_t a, int64_t b) {\n"
                    "    (void)ok;\n    return a %s b;\n}\n",
                    p, cmp[i][0], cmp[i][1]);
}

void qk_export_api_defs(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_addf(o, "const char *const %s_shape_names[%s_SHAPE_COUNT] = {", p, x->up);
    for (uint32_t i = 0; i < x->var_count; i++) {
        qk_str_add(o, i ? ", " : "");
        qk_c_string(o, x->vars[i]);
    }
    qk_str_add(o, x->var_count ? "};\n\n" : "\"unused_\"};\n\n");
    qk_str_addf(o,
                "int %s_find(const char *name) {\n"
                "    int i;\n"
                "    for (i = 0; i < %s_KERNEL_COUNT; i++)\n"
                "        if (strcmp(%s_kernels[i].name, name) == 0) return i;\n"
                "    return -1;\n}\n\n"
                "int %s_shape_set(%s_shape *s, const char *name, int64_t value) {\n",
                p, x->up, p, p, p);
    for (uint32_t i = 0; i < x->var_count; i++) { /* vars are C identifiers */
        qk_str_add(o, "    if (strcmp(name, ");
        qk_c_string(o, x->vars[i]);
        qk_str_addf(o, ") == 0) return s->%s = value, 0;\n", x->vars[i]);
    }
    qk_str_addf(
        o,
        "    (void)s;\n    (void)value;\n    return -1;\n}\n\n"
        "int %s_push_data(const %s_kernel *k, const %s_shape *s, void *out) {\n"
        "    uint32_t i;\n"
        "    for (i = 0; i < k->push_constant_count; i++) {\n"
        "        const %s_push_constant *c = &k->push_constants[i];\n"
        "        int64_t v;\n"
        "        uint32_t word;\n"
        "        memcpy(&v, (const char *)s + c->shape_offset, sizeof v);\n"
        "        if (c->type[0] == 'u' ? v < 0 || v > INT64_C(4294967295)\n"
        "                              : v < INT64_C(-2147483648) || v > INT64_C(2147483647))\n"
        "            return -1;\n"
        "        word = (uint32_t)v;\n"
        "        memcpy((char *)out + c->offset, &word, 4);\n"
        "    }\n"
        "    return 0;\n}\n",
        p, p, p, p);
}

/* ---- the tuned selection table (manifest.md, "Selection"), when the bundle has one ---- */

static int kernel_index(const qkrt_json *kernels, const char *name) {
    for (uint32_t i = 0; i < kernels->count; i++) {
        const qkrt_json *n = qkrt_json_get(&kernels->items[i], "name");
        if (n && n->type == QKRT_JSON_STRING && !strcmp(n->string, name)) return (int)i;
    }
    return -1;
}

/* A kernel's fields for qkrt_select_check: its entry's, else its module's. */
typedef struct kernel_lookup {
    const qkrt_json *root, *kernels;
} kernel_lookup;

static const char *kernel_str(const qkrt_json *k, const qkrt_json *mod, const char *key) {
    const qkrt_json *v = qkrt_json_get(k, key);
    if (!v && mod) v = qkrt_json_get(mod, key);
    return v && v->type == QKRT_JSON_STRING ? v->string : NULL;
}

static bool lookup_kernel(void *user, const char *name, qkrt_select_kernel *out) {
    const kernel_lookup *l = user;
    int i = kernel_index(l->kernels, name);
    if (i < 0) return false;
    const qkrt_json *k = &l->kernels->items[i];
    const char *mname = kernel_str(k, NULL, "module");
    const qkrt_json *mod = mname ? qkrt_json_named(qkrt_json_get(l->root, "modules"), mname) : NULL;
    *out = (qkrt_select_kernel){kernel_str(k, mod, "family"), kernel_str(k, mod, "format"),
                                kernel_str(k, mod, "format_variant"),
                                kernel_str(k, mod, "activation"), kernel_str(k, mod, "fusion")};
    return true;
}

/* A range [lo, hi] (hi null: unbounded, -1 in C) as "{lo, hi}". */
static bool range(exporter *x, const qkrt_json *r, const char *key, qk_str *o) {
    const qkrt_json *v = qk_export_field(x, r, key, QKRT_JSON_ARRAY, true);
    if (!v) return false;
    const qkrt_json *lo = v->count == 2 ? &v->items[0] : NULL, *hi = lo ? &v->items[1] : NULL;
    if (!lo || lo->type != QKRT_JSON_NUMBER || !lo->integral || lo->integer < 0 ||
        !(hi->type == QKRT_JSON_NULL || (hi->type == QKRT_JSON_NUMBER && hi->integral)))
        return qk_export_bad(x, v, "\"%s\": expected [lo, hi] with hi an integer or null", key);
    qk_str_addf(o, "{INT64_C(%lld), INT64_C(%lld)}, ", (long long)lo->integer,
                hi->type == QKRT_JSON_NULL ? -1LL : (long long)hi->integer);
    return true;
}

/* A list of rules as a static array (its name in name, "NULL" when empty). */
static bool rules(exporter *x, const qkrt_json *kernels, const qkrt_json *l, const char *what,
                  char name[64]) {
    snprintf(name, 64, "NULL");
    if (!l || !l->count) return !x->e->set;
    snprintf(name, 64, "%s__%s", x->p, what);
    qk_str_addf(&x->defs, "static const %s_rule %s[] = {\n", x->p, name);
    for (uint32_t i = 0; i < l->count; i++) {
        const qkrt_json *r = &l->items[i];
        const char *op = qk_export_str(x, r, "op", true),
                   *format = qk_export_str(x, r, "format", true);
        const char *variant = qk_export_str(x, r, "format_variant", false);
        const char *activations = qk_export_str(x, r, "activations", false);
        const char *kernel = qk_export_str(x, r, "kernel", true),
                   *precision = qk_export_str(x, r, "precision", false);
        if (!op || !format || !kernel) return false;
        /* qkrt_select_check (qk_export_select) has matched the rule to its
         * kernel's operation, format, option and activations */
        int k = kernel_index(kernels, kernel);
        if (k < 0) return qk_export_bad(x, r, "select: kernel '%s' is not in the manifest", kernel);
        /* a two-pass rule's first pass (select version 3) */
        const char *first = qk_export_str(x, r, "first_pass", false);
        int f = first ? kernel_index(kernels, first) : -1;
        if (first && f < 0)
            return qk_export_bad(x, r, "select: first pass '%s' is not in the manifest", first);
        qk_str_add(&x->defs, "    {");
        qk_export_c_field(&x->defs, op);
        qk_export_c_field(&x->defs, format);
        qk_export_c_field(&x->defs, variant ? variant : "");
        qk_export_c_field(&x->defs, activations ? activations : "f32");
        qk_str_addf(&x->defs, "%d, %d, ", k, f);
        qk_export_c_field(&x->defs, precision);
        if (!range(x, r, "M", &x->defs) || !range(x, r, "K", &x->defs) ||
            !range(x, r, "T", &x->defs))
            return false;
        qk_str_add(&x->defs, "},\n");
    }
    qk_str_add(&x->defs, "};\n");
    return true;
}

/* The table as P_selection and its rule as P_select(); true with nothing
 * written when the manifest has no "select". */
bool qk_export_select(exporter *x, const qkrt_json *root, const qkrt_json *kernels, qk_str *decl) {
    const qkrt_json *t = qk_export_field(x, root, "select", QKRT_JSON_OBJECT, false);
    if (!t) return !x->e->set;
    /* libqkrt's check of the table (it refuses the bundle otherwise): the
     * header must not answer where libqkrt would not load */
    kernel_lookup kl = {root, kernels};
    char err[512];
    if (!qkrt_select_check(t, lookup_kernel, &kl, err, sizeof err)) {
        qk_error_set(x->e, "%s:%s", x->manifest_path, err);
        return false;
    }
    uint32_t version;
    if (!qk_export_u32(x, t, "version", true, &version)) return false;
    /* 2: rules may name their activations; 3: a first pass */
    if (version < 1 || version > 3)
        return qk_export_bad(x, t, "select: version %u, this exporter knows 1 to 3", version);
    const qkrt_json *devices = qk_export_list(x, t, "devices", true),
                    *defaults = qk_export_list(x, t, "default", true);
    char dname[64], names[64];
    if (!devices || !defaults || !rules(x, kernels, defaults, "select_default", dname))
        return false;
    qk_str devs = {0};
    for (uint32_t i = 0; i < devices->count; i++) {
        const qkrt_json *d = &devices->items[i];
        uint32_t vendor, device, driver, mask;
        char what[32];
        snprintf(what, sizeof what, "select_device_%u", i);
        if (!qk_export_u32(x, d, "vendor_id", true, &vendor) ||
            !qk_export_u32(x, d, "device_id", true, &device) ||
            !qk_export_u32(x, d, "driver_version", true, &driver) ||
            !qk_export_u32(x, d, "family_mask", false, &mask) ||
            !rules(x, kernels, qk_export_list(x, d, "rules", false), what, names)) {
            qk_str_free(&devs);
            return false;
        }
        /* without family_mask (a table written before the levels) the
         * entry serves its own device only */
        qk_str_addf(&devs, "    {%uu, %uu, %uu, %d, %uu, ", vendor, device, driver,
                    qkrt_json_get(d, "family_mask") != NULL, mask);
        qk_export_c_field(&devs, qk_export_str(x, d, "cache_uuid", false));
        qk_export_c_field(&devs, qk_export_str(x, d, "name", false));
        const qkrt_json *rl = qkrt_json_get(d, "rules");
        qk_str_addf(&devs, "%u, %s},\n", rl && rl->type == QKRT_JSON_ARRAY ? rl->count : 0, names);
    }
    if (devices->count)
        qk_str_addf(&x->defs, "static const %s_device_rules %s__select_devices[] = {\n%s};\n", x->p,
                    x->p, devs.s);
    qk_str_free(&devs);
    const char *p = x->p;
    qk_str_addf(&x->defs, "const %s_selection %s_selection_table = {%u, %s%s, %u, %s};\n\n", p, p,
                devices->count, devices->count ? p : "NULL",
                devices->count ? "__select_devices" : "", defaults->count, dname);
    qk_str_addf(
        decl,
        "/* The tuned selection table (docs/manifest.md, \"Selection\"). */\n"
        "#define %s_HAS_SELECT 1\n"
        "typedef struct %s_rule {\n"
        "    const char *op, *format, *format_variant;\n"
        "    const char *activations; /* \"f32\" or \"f16\" */\n"
        "    int kernel; /* index into %s_kernels */\n"
        "    int first_pass; /* -1; else the kernel that runs first (a dequant kernel: the\n"
        "                       weights into f16 blocks in a scratch that `kernel` reads as\n"
        "                       its weights; see %s_select_passes) */\n"
        "    const char *precision;\n"
        "    int64_t M[2], K[2], T[2]; /* inclusive; an upper bound of -1 has no bound */\n"
        "} %s_rule;\n"
        "typedef struct %s_device_rules {\n"
        "    uint32_t vendor_id, device_id, driver_version;\n"
        "    int levels; /* 1: the entry also serves its family (the device ids equal under\n"
        "                   family_mask), then its vendor's other devices; 0: its own only */\n"
        "    uint32_t family_mask;\n"
        "    const char *cache_uuid, *name;\n"
        "    uint32_t rule_count;\n"
        "    const %s_rule *rules;\n"
        "} %s_device_rules;\n"
        "typedef struct %s_selection {\n"
        "    uint32_t device_count;\n"
        "    const %s_device_rules *devices;\n"
        "    uint32_t default_count;\n"
        "    const %s_rule *defaults;\n"
        "} %s_selection;\n"
        "extern const %s_selection %s_selection_table;\n"
        "/* The kernel the table picks for a device (VkPhysicalDeviceProperties' IDs and\n"
        " * driverVersion), an op and format (format_variant NULL: any) on f32\n"
        " * activations and shape s: its index, or -1. can_run (NULL: every kernel)\n"
        " * says whether the device runs a kernel (its features and limits). */\n"
        "int %s_select(uint32_t vendor_id, uint32_t device_id, uint32_t driver_version,\n"
        "    const char *op, const char *format, const char *format_variant,\n"
        "    const %s_shape *s, int (*can_run)(const %s_kernel *k, void *user), void *user);\n"
        "/* The same on activations of a type, \"f32\" (also NULL) or \"f16\" (the rules\n"
        " * of that type only). */\n"
        "int %s_select_activations(uint32_t vendor_id, uint32_t device_id,\n"
        "    uint32_t driver_version, const char *op, const char *format,\n"
        "    const char *format_variant, const char *activations, const %s_shape *s,\n"
        "    int (*can_run)(const %s_kernel *k, void *user), void *user);\n"
        "/* The levels a rule comes from, nearest first: the rules tuned on this device,\n"
        " * on a sibling of its family, on another device of its vendor, the default. */\n"
        "#define %s_SELECT_DEVICE 0\n#define %s_SELECT_FAMILY 1\n"
        "#define %s_SELECT_VENDOR 2\n#define %s_SELECT_DEFAULT 3\n"
        "/* %s_select_activations that also stores the level of the rule that answered\n"
        " * in *level (NULL: not), as libqkrt's qkrt_select_ex. */\n"
        "int %s_select_level(uint32_t vendor_id, uint32_t device_id,\n"
        "    uint32_t driver_version, const char *op, const char *format,\n"
        "    const char *format_variant, const char *activations, const %s_shape *s,\n"
        "    int (*can_run)(const %s_kernel *k, void *user), void *user, int *level);\n"
        "/* %s_select_level that also answers with the rules that run in two passes\n"
        " * (their first pass's index in *first_pass, -1 for the others; both kernels\n"
        " * must pass can_run). The functions above pass over those rules: their\n"
        " * callers would run the second pass on weights it does not read. */\n"
        "int %s_select_passes(uint32_t vendor_id, uint32_t device_id,\n"
        "    uint32_t driver_version, const char *op, const char *format,\n"
        "    const char *format_variant, const char *activations, const %s_shape *s,\n"
        "    int (*can_run)(const %s_kernel *k, void *user), void *user, int *level,\n"
        "    int *first_pass);\n\n",
        x->up, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, x->up, x->up, x->up, x->up,
        p, p, p, p, p, p, p, p);
    bool has[3] = {false, false, false};
    for (uint32_t i = 0; i < x->var_count; i++)
        for (int j = 0; j < 3; j++)
            has[j] |= !strcmp(x->vars[i], j == 0 ? "M" : j == 1 ? "K" : "T");
    qk_str_addf(
        &x->defs,
        "int %s_select_passes(uint32_t vendor_id, uint32_t device_id,\n"
        "    uint32_t driver_version, const char *op, const char *format,\n"
        "    const char *format_variant, const char *activations, const %s_shape *s,\n"
        "    int (*can_run)(const %s_kernel *k, void *user), void *user, int *level,\n"
        "    int *first_pass) {\n"
        "    const %s_selection *t = &%s_selection_table;\n"
        "    const %s_device_rules *at[3];\n"
        "    const char *act = activations ? activations : \"f32\";\n"
        "    uint32_t i, l;\n"
        "    int exact = 0;\n"
        "    int64_t v[3];\n"
        "    v[0] = %s;\n    v[1] = %s;\n    v[2] = %s;\n"
        "    at[0] = at[1] = at[2] = NULL;\n"
        "    /* the entry each level reads: the device's own (its driver's first),\n"
        "     * its family's, its vendor's */\n"
        "    for (i = 0; i < t->device_count; i++) {\n"
        "        const %s_device_rules *d = &t->devices[i];\n"
        "        if (d->vendor_id != vendor_id) continue;\n"
        "        if (d->device_id == device_id) {\n"
        "            if (!exact && d->driver_version == driver_version) {\n"
        "                at[0] = d;\n                exact = 1;\n"
        "            } else if (!at[0]) {\n                at[0] = d;\n            }\n"
        "            continue;\n        }\n"
        "        if (!d->levels) continue;\n"
        "        l = (d->device_id & d->family_mask) == (device_id & d->family_mask) ? 1 : 2;\n"
        "        if (!at[l]) at[l] = d;\n    }\n"
        "    for (l = 0; l < 4; l++) {\n"
        "        const %s_rule *r = l == 3 ? t->defaults : at[l] ? at[l]->rules : NULL;\n"
        "        uint32_t n = l == 3 ? t->default_count : at[l] ? at[l]->rule_count : 0;\n"
        "        for (i = 0; i < n; i++, r++) {\n"
        "            const int64_t *range[3];\n"
        "            int j, in = 1;\n"
        "            range[0] = r->M;\n            range[1] = r->K;\n"
        "            range[2] = r->T;\n"
        "            if (strcmp(r->op, op) || strcmp(r->format, format) ||\n"
        "                (format_variant && strcmp(r->format_variant, format_variant)) ||\n"
        "                strcmp(r->activations, act))\n"
        "                continue;\n"
        "            for (j = 0; j < 3; j++)\n"
        "                in &= v[j] >= range[j][0] && (range[j][1] < 0 || v[j] <= range[j][1]);\n"
        "            if (!in || %s_kernels[r->kernel].check(s) >= 0) continue;\n"
        "            if (can_run && !can_run(&%s_kernels[r->kernel], user)) continue;\n"
        "            /* a two-pass rule answers a caller that runs its first pass */\n"
        "            if (r->first_pass >= 0 && (!first_pass ||\n"
        "                    (can_run && !can_run(&%s_kernels[r->first_pass], user))))\n"
        "                continue;\n"
        "            if (first_pass) *first_pass = r->first_pass;\n"
        "            if (level) *level = (int)l;\n"
        "            return r->kernel;\n"
        "        }\n    }\n    return -1;\n}\n\n"
        "int %s_select_level(uint32_t vendor_id, uint32_t device_id,\n"
        "    uint32_t driver_version, const char *op, const char *format,\n"
        "    const char *format_variant, const char *activations, const %s_shape *s,\n"
        "    int (*can_run)(const %s_kernel *k, void *user), void *user, int *level) {\n"
        "    return %s_select_passes(vendor_id, device_id, driver_version, op, format,\n"
        "        format_variant, activations, s, can_run, user, level, NULL);\n}\n\n"
        "int %s_select_activations(uint32_t vendor_id, uint32_t device_id,\n"
        "    uint32_t driver_version, const char *op, const char *format,\n"
        "    const char *format_variant, const char *activations, const %s_shape *s,\n"
        "    int (*can_run)(const %s_kernel *k, void *user), void *user) {\n"
        "    return %s_select_level(vendor_id, device_id, driver_version, op, format,\n"
        "        format_variant, activations, s, can_run, user, NULL);\n}\n\n"
        "int %s_select(uint32_t vendor_id, uint32_t device_id, uint32_t driver_version,\n"
        "    const char *op, const char *format, const char *format_variant,\n"
        "    const %s_shape *s, int (*can_run)(const %s_kernel *k, void *user), void *user) {\n"
        "    return %s_select_level(vendor_id, device_id, driver_version, op, format,\n"
        "        format_variant, \"f32\", s, can_run, user, NULL);\n}\n",
        p, p, p, p, p, p, has[0] ? "s->M" : "0", has[1] ? "s->K" : "0", has[2] ? "s->T" : "0", p, p,
        p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    return true;
}
