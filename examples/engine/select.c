/* The engine's own reader of a tuned bundle's select table (docs/manifest.md,
 * "Selection"), over cJSON: device, family, vendor and default levels. */
#include "engine.h"

#include <cJSON.h>
#include <string.h>

static const cJSON *item(const cJSON *o, const char *key) {
    return cJSON_GetObjectItemCaseSensitive(o, key);
}

static const char *str(const cJSON *o, const char *key, const char *absent) {
    const cJSON *v = item(o, key);
    return cJSON_IsString(v) ? v->valuestring : absent;
}

/* Whether v lies in the rule's inclusive range [lo, hi] (hi null: no bound). */
static int in_range(const cJSON *rule, const char *axis, int64_t v) {
    const cJSON *r = item(rule, axis);
    if (!cJSON_IsArray(r) || cJSON_GetArraySize(r) != 2) return 0;
    const cJSON *lo = cJSON_GetArrayItem(r, 0), *hi = cJSON_GetArrayItem(r, 1);
    return cJSON_IsNumber(lo) && v >= (int64_t)lo->valuedouble &&
           (cJSON_IsNull(hi) || (cJSON_IsNumber(hi) && v <= (int64_t)hi->valuedouble));
}

static int64_t var(const eng_shape *s, const char *name) {
    for (uint32_t i = 0; i < s->count; i++)
        if (!strcmp(s->names[i], name)) return s->values[i];
    return 0;
}

static uint32_t u32(const cJSON *o, const char *key, int *present) {
    const cJSON *v = item(o, key);
    if (present) *present = cJSON_IsNumber(v);
    return cJSON_IsNumber(v) ? (uint32_t)v->valuedouble : 0;
}

int eng_select_json(const cJSON *table, const eng_bundle *b, const eng_device *d, const char *op,
                    const char *format, const eng_shape *s,
                    int (*can_run)(const eng_kernel *k, void *user), void *user, int *level) {
    /* the entry each level reads: the device's own (its driver's first), a
     * sibling's of its family (device ids equal under the entry's
     * family_mask), another of its vendor's; entries without a mask serve
     * their own device only */
    const cJSON *at[3] = {NULL, NULL, NULL}, *e;
    int exact = 0;
    cJSON_ArrayForEach(e, item(table, "devices")) {
        if (u32(e, "vendor_id", NULL) != d->vendor_id) continue;
        if (u32(e, "device_id", NULL) == d->device_id) {
            if (!exact && u32(e, "driver_version", NULL) == d->driver_version)
                at[0] = e, exact = 1;
            else if (!at[0])
                at[0] = e;
            continue;
        }
        int masked;
        uint32_t mask = u32(e, "family_mask", &masked);
        if (!masked) continue;
        int l = (u32(e, "device_id", NULL) & mask) == (d->device_id & mask) ? 1 : 2;
        if (!at[l]) at[l] = e;
    }
    const int64_t M = var(s, "M"), K = var(s, "K"), T = var(s, "T");
    for (int l = 0; l < 4; l++) {
        const cJSON *rules = l == 3  ? item(table, "default")
                             : at[l] ? item(at[l], "rules")
                                     : NULL,
                    *r;
        cJSON_ArrayForEach(r, rules) {
            if (strcmp(str(r, "op", ""), op) || strcmp(str(r, "format", ""), format) ||
                strcmp(str(r, "activations", "f32"), "f32"))
                continue;
            if (!in_range(r, "M", M) || !in_range(r, "K", K) || !in_range(r, "T", T)) continue;
            /* a two-pass rule (select version 3) runs "first_pass" first, which
             * this engine does not: its kernel would read weights it cannot */
            if (item(r, "first_pass")) continue;
            const char *name = str(r, "kernel", "");
            for (uint32_t i = 0; i < b->count; i++) {
                const eng_kernel *k = &b->kernels[i];
                if (strcmp(k->name, name)) continue;
                char err[256];
                /* its activations, constraints and the device: else the next rule */
                if (strcmp(k->activation, "f32") || k->check(k, s, err, sizeof err) >= 0 ||
                    (can_run && !can_run(k, user)))
                    break;
                *level = l;
                return (int)i;
            }
        }
    }
    return -1;
}
