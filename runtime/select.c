/* Tuned selection: evaluates the manifest's "select" table (written by
 * `qkgen build --tuned`) for a device, an operation, a format and a shape. */
#include "internal.h"
#include "qk_json.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

qkrt_result qkrt_device_identify(const qkrt_context *ctx, qkrt_device_identity *out) {
    if (!ctx || !out) return QKRT_ERROR_ARGUMENT;
    VkPhysicalDeviceProperties p;
    vkGetPhysicalDeviceProperties(ctx->caps.physical, &p);
    memset(out, 0, sizeof *out);
    out->vendor_id = p.vendorID;
    out->device_id = p.deviceID;
    out->driver_version = p.driverVersion;
    memcpy(out->pipeline_cache_uuid, p.pipelineCacheUUID, 16);
    snprintf(out->name, sizeof out->name, "%s", p.deviceName);
    return QKRT_OK;
}

static const qkrt_json *select_table(const qkrt_bundle *b) {
    const qkrt_json *t = b && b->doc ? qkrt_json_get(b->doc, "select") : NULL;
    return t && t->type == QKRT_JSON_OBJECT ? t : NULL;
}

bool qkrt_bundle_has_select(const qkrt_bundle *bundle) {
    return select_table(bundle) != NULL;
}

static bool num_eq(const qkrt_json *o, const char *key, uint32_t v) {
    const qkrt_json *n = qkrt_json_get(o, key);
    return n && n->type == QKRT_JSON_NUMBER && n->integral && n->integer == (int64_t)v;
}

static const char *str_of(const qkrt_json *o, const char *key) {
    const qkrt_json *n = qkrt_json_get(o, key);
    return n && n->type == QKRT_JSON_STRING ? n->string : NULL;
}

/* The member key of o where it is an integer 0 .. 2^32-1: true with it in *v. */
static bool u32_of(const qkrt_json *o, const char *key, uint32_t *v) {
    const qkrt_json *n = qkrt_json_get(o, key);
    if (!n || n->type != QKRT_JSON_NUMBER || !n->integral || n->integer < 0 ||
        n->integer > UINT32_MAX)
        return false;
    *v = (uint32_t)n->integer;
    return true;
}

void qkrt_select_entries(const qkrt_json *table, uint32_t vendor_id, uint32_t device_id,
                         uint32_t driver_version, const qkrt_json *entries[3]) {
    const qkrt_json *devices = qkrt_json_get(table, "devices");
    entries[0] = entries[1] = entries[2] = NULL;
    bool exact = false; /* entries[0] has the driver version too */
    for (uint32_t i = 0; devices && devices->type == QKRT_JSON_ARRAY && i < devices->count; i++) {
        const qkrt_json *d = &devices->items[i];
        if (!num_eq(d, "vendor_id", vendor_id)) continue;
        uint32_t id, mask;
        if (num_eq(d, "device_id", device_id)) {
            /* the device's own: another driver's entry is its second choice,
             * never a sibling's */
            if (!exact && num_eq(d, "driver_version", driver_version))
                entries[0] = d, exact = true;
            else if (!entries[0])
                entries[0] = d;
            continue;
        }
        /* an entry without family_mask (a table written before the levels)
         * serves its own device only */
        if (!u32_of(d, "device_id", &id) || !u32_of(d, "family_mask", &mask)) continue;
        int level = (id & mask) == (device_id & mask) ? 1 : 2;
        if (!entries[level]) entries[level] = d;
    }
}

/* Whether v lies in the range [lo, hi] of rule's key (hi null: no bound);
 * -1 for a malformed range. */
static int in_range(const qkrt_json *rule, const char *key, int64_t v) {
    const qkrt_json *r = qkrt_json_get(rule, key);
    if (!r || r->type != QKRT_JSON_ARRAY || r->count != 2 || r->items[0].type != QKRT_JSON_NUMBER ||
        !r->items[0].integral ||
        (r->items[1].type != QKRT_JSON_NULL &&
         (r->items[1].type != QKRT_JSON_NUMBER || !r->items[1].integral)))
        return -1;
    return v >= r->items[0].integer &&
           (r->items[1].type == QKRT_JSON_NULL || v <= r->items[1].integer);
}

static bool shape_value(const qkrt_shape *s, const char *name, int64_t *v) {
    for (uint32_t i = 0; i < s->count; i++)
        if (s->names[i] && !strcmp(s->names[i], name)) {
            *v = s->values[i];
            return true;
        }
    return false;
}

/* The activation type kernel ki reads: its manifest's, f32 where it names
 * none (the kernels without activations). */
static const char *kernel_activations(const qkrt_bundle *b, uint32_t ki) {
    const char *a = qkrt_bundle_kernel(b, ki)->activation;
    return a && a[0] ? a : "f32";
}

/* Whether the shape meets kernel ki's constraints. */
static bool fits(const qkrt_bundle *b, uint32_t ki, const qkrt_shape *shape) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    for (uint32_t i = 0; i < k->constraint_count; i++) {
        bool ok = false;
        char err[256];
        if (qkrt_eval_bool(k->constraints[i], shape, &ok, err, sizeof err) != QKRT_OK || !ok)
            return false;
    }
    return true;
}

/* ---- the table's check (json.h) ---- */

static bool check_fail(char *err, size_t size, const qkrt_json *at, const char *fmt, ...)
    QKRT_PRINTF(4, 5);

static bool check_fail(char *err, size_t size, const qkrt_json *at, const char *fmt, ...) {
    int n = snprintf(err, size, "%u:%u: select: ", at->line, at->column);
    if (n >= 0 && (size_t)n < size) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err + n, size - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return false;
}

/* A string member: true with it in *out (NULL where absent and optional). */
static bool check_str(const qkrt_json *o, const char *key, bool required, const char **out,
                      char *err, size_t size) {
    const qkrt_json *v = qkrt_json_get(o, key);
    *out = v && v->type == QKRT_JSON_STRING ? v->string : NULL;
    if (*out || (!v && !required)) return true;
    return check_fail(err, size, v ? v : o, "\"%s\" %s", key, v ? "is not a string" : "is missing");
}

static bool check_u32(const qkrt_json *o, const char *key, char *err, size_t size) {
    const qkrt_json *v = qkrt_json_get(o, key);
    if (v && v->type == QKRT_JSON_NUMBER && v->integral && v->integer >= 0 &&
        v->integer <= UINT32_MAX)
        return true;
    return check_fail(err, size, v ? v : o, "\"%s\" is not an integer 0 .. 2^32-1", key);
}

/* [lo, hi]: integers with 0 <= lo <= hi, or hi null. */
static bool check_range(const qkrt_json *rule, const char *key, char *err, size_t size) {
    const qkrt_json *r = qkrt_json_get(rule, key);
    if (!r || r->type != QKRT_JSON_ARRAY || r->count != 2)
        return check_fail(err, size, r ? r : rule, "\"%s\" is not a range [lo, hi]", key);
    const qkrt_json *lo = &r->items[0], *hi = &r->items[1];
    if (lo->type != QKRT_JSON_NUMBER || !lo->integral || lo->integer < 0)
        return check_fail(err, size, lo, "\"%s\": the lower bound is not an integer >= 0", key);
    if (hi->type == QKRT_JSON_NULL) return true;
    if (hi->type != QKRT_JSON_NUMBER || !hi->integral)
        return check_fail(err, size, hi, "\"%s\": the upper bound is not an integer or null", key);
    if (hi->integer < lo->integer)
        return check_fail(err, size, hi, "\"%s\": the upper bound %lld is below the lower %lld",
                          key, (long long)hi->integer, (long long)lo->integer);
    return true;
}

static bool same_or_empty(const char *a, const char *b, const char *empty) {
    return !strcmp(a && a[0] ? a : empty, b && b[0] ? b : empty);
}

static bool check_rule(const qkrt_json *r, int64_t version, qkrt_select_kernel_fn kernel_of,
                       void *user, char *err, size_t size) {
    if (r->type != QKRT_JSON_OBJECT) return check_fail(err, size, r, "a rule is not an object");
    const char *op, *format, *variant, *act, *kernel, *first;
    if (!check_str(r, "op", true, &op, err, size) ||
        !check_str(r, "format", true, &format, err, size) ||
        !check_str(r, "format_variant", false, &variant, err, size) ||
        !check_str(r, "activations", false, &act, err, size) ||
        !check_str(r, "kernel", true, &kernel, err, size) ||
        !check_str(r, "first_pass", false, &first, err, size))
        return false;
    if (first && version < 3)
        return check_fail(err, size, qkrt_json_get(r, "first_pass"),
                          "a rule names a first pass in a version %lld table", (long long)version);
    if (act && version < 2)
        return check_fail(err, size, qkrt_json_get(r, "activations"),
                          "a rule names its activations in a version %lld table",
                          (long long)version);
    if (act && strcmp(act, "f32") && strcmp(act, "f16"))
        return check_fail(err, size, qkrt_json_get(r, "activations"),
                          "activations '%s' are not f32 or f16", act);
    qkrt_select_kernel k = {0};
    const qkrt_json *at = qkrt_json_get(r, "kernel");
    if (!kernel_of(user, kernel, &k))
        return check_fail(err, size, at, "kernel '%s' is not in the manifest", kernel);
    /* the rule answers for its op, format and activations: its kernel must
     * compute exactly that, or a query gets another format's kernel. The op
     * of a fused kernel is "family/fusion" (matvec_id/swiglu) */
    const char *slash = strchr(op, '/');
    const size_t flen = slash ? (size_t)(slash - op) : strlen(op);
    const char *kfusion = k.fusion && k.fusion[0] ? k.fusion : "none";
    if (!k.family || strlen(k.family) != flen || strncmp(k.family, op, flen) ||
        strcmp(kfusion, slash ? slash + 1 : "none"))
        return check_fail(err, size, at, "a rule for %s names kernel '%s', a %s%s%s kernel", op,
                          kernel, k.family ? k.family : "(no family)",
                          strcmp(kfusion, "none") ? "/" : "",
                          strcmp(kfusion, "none") ? kfusion : "");
    /* two passes: the first turns the rule's format into what the kernel
     * reads (the dequant kernels: f16w blocks) */
    if (first) {
        qkrt_select_kernel f = {0};
        const qkrt_json *fat = qkrt_json_get(r, "first_pass");
        if (!kernel_of(user, first, &f))
            return check_fail(err, size, fat, "first pass '%s' is not in the manifest", first);
        if (!f.family || strncmp(f.family, "dequant", 7) || !f.format || strcmp(f.format, format) ||
            !same_or_empty(f.format_variant, variant, ""))
            return check_fail(err, size, fat,
                              "a rule for %s names first pass '%s', not a dequant kernel of it",
                              format, first);
    } else if (!k.format || strcmp(k.format, format) ||
               !same_or_empty(k.format_variant, variant, ""))
        return check_fail(err, size, at, "a rule for %s%s%s names kernel '%s', which reads %s%s%s",
                          format, variant && variant[0] ? "/" : "", variant ? variant : "", kernel,
                          k.format ? k.format : "(no format)",
                          k.format_variant && k.format_variant[0] ? "/" : "",
                          k.format_variant ? k.format_variant : "");
    if (!same_or_empty(k.activation, act, "f32"))
        return check_fail(
            err, size, at, "a rule for %s activations names kernel '%s', which reads %s",
            act ? act : "f32", kernel, k.activation && k.activation[0] ? k.activation : "f32");
    return check_range(r, "M", err, size) && check_range(r, "K", err, size) &&
           check_range(r, "T", err, size);
}

static bool check_rules(const qkrt_json *owner, const char *key, bool required, int64_t version,
                        qkrt_select_kernel_fn kernel_of, void *user, char *err, size_t size) {
    const qkrt_json *l = qkrt_json_get(owner, key);
    if (!l && !required) return true;
    if (!l || l->type != QKRT_JSON_ARRAY)
        return check_fail(err, size, l ? l : owner, "\"%s\" is not an array of rules", key);
    for (uint32_t i = 0; i < l->count; i++)
        if (!check_rule(&l->items[i], version, kernel_of, user, err, size)) return false;
    return true;
}

bool qkrt_select_check(const qkrt_json *t, qkrt_select_kernel_fn kernel_of, void *user, char *err,
                       size_t size) {
    if (!t || t->type != QKRT_JSON_OBJECT)
        return check_fail(err, size, t ? t : &(qkrt_json){0}, "the table is not an object");
    const qkrt_json *ver = qkrt_json_get(t, "version");
    if (!ver || ver->type != QKRT_JSON_NUMBER || !ver->integral || ver->integer < 1 ||
        ver->integer > 3)
        return check_fail(err, size, ver ? ver : t,
                          "\"version\" is not 1, 2 or 3 (the versions this reader knows)");
    const qkrt_json *devices = qkrt_json_get(t, "devices");
    if (!devices || devices->type != QKRT_JSON_ARRAY)
        return check_fail(err, size, devices ? devices : t, "\"devices\" is not an array");
    for (uint32_t i = 0; i < devices->count; i++) {
        const qkrt_json *d = &devices->items[i];
        const char *s;
        if (d->type != QKRT_JSON_OBJECT)
            return check_fail(err, size, d, "a device is not an object");
        if (!check_u32(d, "vendor_id", err, size) || !check_u32(d, "device_id", err, size) ||
            !check_u32(d, "driver_version", err, size) ||
            (qkrt_json_get(d, "family_mask") && !check_u32(d, "family_mask", err, size)) ||
            !check_str(d, "cache_uuid", false, &s, err, size) ||
            !check_str(d, "name", false, &s, err, size) ||
            !check_rules(d, "rules", false, ver->integer, kernel_of, user, err, size))
            return false;
    }
    return check_rules(t, "default", true, ver->integer, kernel_of, user, err, size);
}

static bool bundle_kernel(void *user, const char *name, qkrt_select_kernel *out) {
    const qkrt_bundle *b = user;
    int i = qkrt_bundle_find(b, name);
    if (i < 0) return false;
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)i);
    *out = (qkrt_select_kernel){k->family, k->format, k->format_variant, k->activation, k->fusion};
    return true;
}

qkrt_result qkrt_select_load_check(qkrt_context *ctx, const qkrt_bundle *b, const char *path) {
    const qkrt_json *t = b && b->doc ? qkrt_json_get(b->doc, "select") : NULL;
    char err[512];
    if (!t || qkrt_select_check(t, bundle_kernel, (void *)b, err, sizeof err)) return QKRT_OK;
    return qkrt_fail(ctx, QKRT_ERROR_MANIFEST, "%s:%s", path, err);
}

int qkrt_select_scan(const qkrt_json *table, const qkrt_json *const entries[3],
                     const qkrt_select_query *q, qkrt_select_usable_fn usable,
                     qkrt_select_usable_fn first_usable, void *user, uint32_t *kernel,
                     int64_t *first_pass, int *level, char *err, size_t err_size) {
    const int64_t dims[3] = {q->M, q->K, q->T};
    static const char *const dim_names[3] = {"M", "K", "T"};
    for (int l = 0; l < 4; l++) {
        const qkrt_json *rules = l < 3 ? (entries[l] ? qkrt_json_get(entries[l], "rules") : NULL)
                                       : qkrt_json_get(table, "default");
        for (uint32_t i = 0; rules && rules->type == QKRT_JSON_ARRAY && i < rules->count; i++) {
            const qkrt_json *r = &rules->items[i];
            const char *rop = str_of(r, "op"), *rf = str_of(r, "format");
            const char *rv = str_of(r, "format_variant"), *name = str_of(r, "kernel");
            const char *ra = str_of(r, "activations"); /* absent: f32 */
            if (!rop || !rf || !name) {
                snprintf(err, err_size, "select: rule at %u:%u lacks op, format or kernel", r->line,
                         r->column);
                return -1;
            }
            if (!ra && qkrt_json_get(r, "activations")) {
                snprintf(err, err_size, "select: rule at %u:%u: \"activations\" is not a string",
                         r->line, r->column);
                return -1;
            }
            if (strcmp(rop, q->op) || strcmp(rf, q->format) ||
                (q->option && strcmp(rv ? rv : "", q->option)) ||
                strcmp(ra ? ra : "f32", q->activations))
                continue;
            bool inside = true;
            for (int d = 0; d < 3; d++) {
                int in = in_range(r, dim_names[d], dims[d]);
                if (in < 0) {
                    snprintf(err, err_size, "select: rule at %u:%u: \"%s\" is not [lo, hi or null]",
                             r->line, r->column, dim_names[d]);
                    return -1;
                }
                inside &= in == 1;
            }
            /* a two-pass rule answers where both of its kernels can */
            const char *fp = str_of(r, "first_pass");
            uint32_t fpi = 0;
            if (fp && (!first_usable || !first_usable(user, fp, &fpi))) continue;
            if (inside && usable(user, name, kernel)) {
                *level = l;
                *first_pass = fp ? (int64_t)fpi : -1;
                return 1;
            }
        }
    }
    return 0;
}

const char *qkrt_select_level_name(qkrt_select_level level) {
    static const char *const names[] = {"device", "family", "vendor", "default"};
    return (unsigned)level < 4 ? names[level] : "unknown";
}

typedef struct usable_ctx {
    qkrt_context *ctx;
    const qkrt_bundle *bundle;
    const char *activations;
    const qkrt_shape *shape;
} usable_ctx;

/* A rule's kernel answers where the bundle has it, it reads the activations
 * asked (whatever the rule says), the device runs it and the shape meets its
 * constraints. */
static bool bundle_usable(void *user, const char *name, uint32_t *index) {
    const usable_ctx *u = user;
    int ki = qkrt_bundle_find(u->bundle, name);
    if (ki < 0 || strcmp(kernel_activations(u->bundle, (uint32_t)ki), u->activations) ||
        qkrt_kernel_check(u->ctx, u->bundle, (uint32_t)ki) != QKRT_OK ||
        !fits(u->bundle, (uint32_t)ki, u->shape))
        return false;
    *index = (uint32_t)ki;
    return true;
}

/* A two-pass rule's first pass answers where the bundle has it and the
 * device runs it (its shape is the weights', which the rule's kernel's
 * constraints on the product already bound). */
static bool first_usable(void *user, const char *name, uint32_t *index) {
    const usable_ctx *u = user;
    int ki = qkrt_bundle_find(u->bundle, name);
    if (ki < 0 || qkrt_kernel_check(u->ctx, u->bundle, (uint32_t)ki) != QKRT_OK) return false;
    *index = (uint32_t)ki;
    return true;
}

/* "its own rules, its family's (NAME), ... and the default ones": what a
 * query no rule answers was looked up in. */
static void levels_read(const qkrt_json *const entries[3], char *out, size_t size) {
    static const char *const what[3] = {"its own rules", "its family's", "its vendor's"};
    size_t n = 0;
    out[0] = 0;
    for (int l = 0; l < 3; l++) {
        if (!entries[l]) continue;
        const char *name = str_of(entries[l], "name");
        int w = snprintf(out + n, size - n, "%s%s%s%s%s", n ? ", " : "", what[l],
                         l && name ? " (" : "", l && name ? name : "", l && name ? ")" : "");
        if (w < 0 || (size_t)w >= size - n) return;
        n += (size_t)w;
    }
    snprintf(out + n, size - n, "%sthe default ones", n ? " and " : "an unknown device: ");
}

static qkrt_result select_rules(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                                const char *format, const char *activations,
                                const qkrt_shape *shape, bool two_pass, qkrt_selection *out);

qkrt_result qkrt_select(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                        const char *format, const qkrt_shape *shape, uint32_t *kernel) {
    return qkrt_select_activations(ctx, bundle, op, format, "f32", shape, kernel);
}

qkrt_result qkrt_select_activations(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                                    const char *format, const char *activations,
                                    const qkrt_shape *shape, uint32_t *kernel) {
    if (!activations || !kernel)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_select: a NULL argument");
    qkrt_selection sel;
    /* a caller that cannot be told of a first pass gets no two-pass rule:
     * it would run the second pass on weights it does not read */
    qkrt_result r = select_rules(ctx, bundle, op, format, activations, shape, false, &sel);
    if (r == QKRT_OK) *kernel = sel.kernel;
    return r;
}

qkrt_result qkrt_select_ex(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                           const char *format, const char *activations, const qkrt_shape *shape,
                           qkrt_selection *out) {
    return select_rules(ctx, bundle, op, format, activations, shape, true, out);
}

static qkrt_result select_rules(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                                const char *format, const char *activations,
                                const qkrt_shape *shape, bool two_pass, qkrt_selection *out) {
    if (!activations) activations = "f32";
    if (!ctx || !bundle || !op || !format || !shape || !out)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_select: a NULL argument");
    const qkrt_json *t = select_table(bundle);
    if (!t) return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED, "the bundle has no select table");
    const qkrt_json *ver = qkrt_json_get(t, "version");
    if (!ver || ver->type != QKRT_JSON_NUMBER || !ver->integral || ver->integer < 1 ||
        ver->integer > 3)
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                         "select: \"version\" is not 1, 2 or 3 (the versions this libqkrt reads)");
    int64_t dims[3];
    static const char *const dim_names[3] = {"M", "K", "T"};
    for (int i = 0; i < 3; i++)
        if (!shape_value(shape, dim_names[i], &dims[i]))
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_select: the shape has no %s",
                             dim_names[i]);
    /* "mlx4_g64/bf16": the format and its option */
    char fmt[128], opt[32] = "";
    snprintf(fmt, sizeof fmt, "%s", format);
    char *slash = strchr(fmt, '/');
    if (slash) *slash = 0, snprintf(opt, sizeof opt, "%s", slash + 1);
    qkrt_device_identity id;
    qkrt_device_identify(ctx, &id);
    const qkrt_json *entries[3];
    qkrt_select_entries(t, id.vendor_id, id.device_id, id.driver_version, entries);
    qkrt_select_query q = {op, fmt, slash ? opt : NULL, activations, dims[0], dims[1], dims[2]};
    usable_ctx u = {ctx, bundle, activations, shape};
    char err[256];
    int level = 0;
    int64_t fp = -1;
    int found = qkrt_select_scan(t, entries, &q, bundle_usable, two_pass ? first_usable : NULL, &u,
                                 &out->kernel, &fp, &level, err, sizeof err);
    if (found < 0) return qkrt_fail(ctx, QKRT_ERROR_MANIFEST, "%s", err);
    if (found) {
        out->two_pass = fp >= 0, out->first_pass = fp >= 0 ? (uint32_t)fp : 0;
        out->level = (qkrt_select_level)level;
        const char *name = level < 3 ? str_of(entries[level], "name") : NULL;
        out->tuned_on = name ? name : "";
        return QKRT_OK;
    }
    char levels[640];
    levels_read(entries, levels, sizeof levels);
    return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                     "select: no rule for %s %s on %s activations at M=%lld K=%lld T=%lld on %s "
                     "(%s)",
                     op, format, activations, (long long)dims[0], (long long)dims[1],
                     (long long)dims[2], id.name, levels);
}
