/* Fuzz harness: the select table's check (qkrt_select_check, runtime/select.c),
 * which libqkrt, build --tuned and qkgen export run. Whatever it accepts is,
 * by an independent walk here, a table whose every rule names a kernel of its
 * own operation, format, option and activations and holds ranges with
 * 0 <= lo <= hi (or no upper bound), and whose family_mask is an integer
 * 0 .. 2^32-1 where present: what both evaluators rely on. Its levels
 * (qkrt_select_entries) are those of docs/manifest.md for a few devices, and
 * the scan through them (qkrt_select_scan) reads it without an error. */
#include "fuzz.h"
#include "qk_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const qkrt_select_kernel kernels[] = {
    {"matvec", "q4_0", "", "f32", NULL},
    {"matmul", "q8_0", "", "", NULL},
    {"matmul", "q4_0", NULL, "f16", NULL},
    {"matvec_id", "mlx4_g64", "bf16", "f32", NULL},
};
static const char *const names[] = {"mv", "mm8", "mm16", "mlx"};

static bool lookup(void *user, const char *name, qkrt_select_kernel *out) {
    (void)user;
    for (int i = 0; i < 4; i++)
        if (!strcmp(names[i], name)) return *out = kernels[i], true;
    return false;
}

static const char *str(const qkrt_json *o, const char *key) {
    const qkrt_json *v = qkrt_json_get(o, key);
    return v && v->type == QKRT_JSON_STRING ? v->string : NULL;
}

static void check_rule(const qkrt_json *r, const char *text) {
    const char *op = str(r, "op"), *fmt = str(r, "format"), *k = str(r, "kernel");
    const char *opt = str(r, "format_variant"), *act = str(r, "activations");
    if (!op || !fmt || !k) qkfuzz_fail("an accepted rule lacks op, format or kernel", text);
    int i = 0;
    while (i < 4 && strcmp(names[i], k))
        i++;
    if (i == 4) qkfuzz_fail("an accepted rule names an unknown kernel", text);
    const qkrt_select_kernel *kk = &kernels[i];
    const char *kopt = kk->format_variant ? kk->format_variant : "";
    const char *kact = kk->activation && kk->activation[0] ? kk->activation : "f32";
    if (strcmp(kk->family, op) || strcmp(kk->format, fmt) || strcmp(kopt, opt ? opt : "") ||
        strcmp(kact, act ? act : "f32"))
        qkfuzz_fail("an accepted rule names a kernel of another case", text);
    static const char *const dims[] = {"M", "K", "T"};
    for (int d = 0; d < 3; d++) {
        const qkrt_json *g = qkrt_json_get(r, dims[d]);
        if (!g || g->type != QKRT_JSON_ARRAY || g->count != 2 || !g->items[0].integral ||
            g->items[0].type != QKRT_JSON_NUMBER || g->items[0].integer < 0)
            qkfuzz_fail("an accepted rule has a bad lower bound", text);
        const qkrt_json *hi = &g->items[1];
        if (hi->type != QKRT_JSON_NULL &&
            (hi->type != QKRT_JSON_NUMBER || !hi->integral || hi->integer < g->items[0].integer))
            qkfuzz_fail("an accepted rule has a bad upper bound", text);
    }
}

static void check_rules(const qkrt_json *l, const char *text) {
    if (!l) return;
    if (l->type != QKRT_JSON_ARRAY) qkfuzz_fail("accepted rules that are not an array", text);
    for (uint32_t i = 0; i < l->count; i++)
        check_rule(&l->items[i], text);
}

static bool u32_at(const qkrt_json *o, const char *key, uint32_t *v) {
    const qkrt_json *n = qkrt_json_get(o, key);
    if (!n || n->type != QKRT_JSON_NUMBER || !n->integral || n->integer < 0 ||
        n->integer > UINT32_MAX)
        return false;
    *v = (uint32_t)n->integer;
    return true;
}

static bool any_usable(void *user, const char *kernel, uint32_t *index) {
    (void)user, (void)kernel;
    *index = 0;
    return true;
}

/* The levels of devices like the table's own and their neighbours. */
static void check_levels(const qkrt_json *t, const char *text) {
    const qkrt_json *devices = qkrt_json_get(t, "devices");
    for (uint32_t i = 0; i < devices->count && i < 4; i++) {
        uint32_t vendor, device, driver, m;
        const qkrt_json *d = &devices->items[i];
        if (!u32_at(d, "vendor_id", &vendor) || !u32_at(d, "device_id", &device) ||
            !u32_at(d, "driver_version", &driver))
            qkfuzz_fail("an accepted device entry lacks its ids", text);
        if (qkrt_json_get(d, "family_mask") && !u32_at(d, "family_mask", &m))
            qkfuzz_fail("an accepted family_mask is not an integer 0 .. 2^32-1", text);
        const uint32_t asked[3] = {device, device ^ 1, device ^ 0x100};
        for (int a = 0; a < 3; a++) {
            const qkrt_json *e[3];
            qkrt_select_entries(t, vendor, asked[a], driver, e);
            uint32_t id, mask;
            if (e[0] && (!u32_at(e[0], "device_id", &id) || id != asked[a]))
                qkfuzz_fail("a device level of another device id", text);
            for (int l = 1; l < 3; l++)
                if (e[l] && (!u32_at(e[l], "device_id", &id) || id == asked[a] ||
                             !u32_at(e[l], "family_mask", &mask) ||
                             ((id & mask) == (asked[a] & mask)) != (l == 1)))
                    qkfuzz_fail("a family or vendor level that is not one", text);
            qkrt_select_query q = {"matvec", "q4_0", a ? NULL : "", "f32", 1, 32, 1};
            uint32_t k;
            int64_t first;
            int level;
            char err[256];
            if (qkrt_select_scan(t, e, &q, any_usable, any_usable, NULL, &k, &first, &level, err,
                                 sizeof err) < 0)
                qkfuzz_fail("the scan cannot read an accepted table", text);
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    char err[512];
    qkrt_json *t = qkrt_json_parse(text, size, err, sizeof err);
    if (t) {
        err[0] = '\0';
        if (qkrt_select_check(t, lookup, NULL, err, sizeof err)) {
            const qkrt_json *devices = qkrt_json_get(t, "devices");
            const qkrt_json *def = qkrt_json_get(t, "default");
            if (!devices || devices->type != QKRT_JSON_ARRAY || !def)
                qkfuzz_fail("an accepted table lacks devices or default", text);
            for (uint32_t i = 0; i < devices->count; i++)
                check_rules(qkrt_json_get(&devices->items[i], "rules"), text);
            check_rules(def, text);
            check_levels(t, text);
        } else if (!err[0] || !strstr(err, "select: ")) {
            qkfuzz_fail("a table refused without a message", text);
        }
        qkrt_json_free(t);
    }
    free(text);
    return 0;
}
