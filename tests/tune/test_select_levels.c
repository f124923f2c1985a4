/* The fallback levels of a select table without a device: which entry each
 * level of a device reads (qkrt_select_entries), the scan through them to the
 * default rules (qkrt_select_scan), the check of family_mask, and the table
 * build --tuned writes (qk_tune_select_json) serving a sibling. */
#include "qk_json.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fails, checks;
#define CHECK(c, ...)                                                                              \
    do {                                                                                           \
        checks++;                                                                                  \
        if (!(c)) {                                                                                \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static qkrt_json *parse(const char *text) {
    char err[256];
    qkrt_json *t = qkrt_json_parse(text, strlen(text), err, sizeof err);
    if (!t) printf("FAIL: a test table does not parse: %s\n", err), exit(1);
    return t;
}

static const char *name_of(const qkrt_json *entry) {
    const qkrt_json *n = entry ? qkrt_json_get(entry, "name") : NULL;
    return n && n->type == QKRT_JSON_STRING ? n->string : "-";
}

/* Entries of one vendor (10): two drivers of device 0x2330 (the second
 * without family_mask), a sibling 0x2335, an entry without family_mask
 * 0x2336, another chip 0x2684; and another vendor's 0x2330. */
static const char *const ENTRIES =
    "{ \"version\": 1, \"devices\": ["
    " { \"vendor_id\": 10, \"device_id\": 9008, \"driver_version\": 5, \"family_mask\": 4294967040,"
    "   \"name\": \"a\", \"rules\": [] },"
    " { \"vendor_id\": 10, \"device_id\": 9008, \"driver_version\": 6, \"name\": \"b\" },"
    " { \"vendor_id\": 10, \"device_id\": 9013, \"driver_version\": 1, \"family_mask\": 4294967040,"
    "   \"name\": \"c\" },"
    " { \"vendor_id\": 10, \"device_id\": 9014, \"driver_version\": 1, \"name\": \"e\" },"
    " { \"vendor_id\": 10, \"device_id\": 9860, \"driver_version\": 1, \"family_mask\": 4294967040,"
    "   \"name\": \"d\" },"
    " { \"vendor_id\": 11, \"device_id\": 9008, \"driver_version\": 5, \"family_mask\": 0,"
    "   \"name\": \"f\" } ],"
    " \"default\": [] }";

static void entries_case(const qkrt_json *t, uint32_t vendor, uint32_t device, uint32_t driver,
                         const char *want) {
    const qkrt_json *e[3];
    qkrt_select_entries(t, vendor, device, driver, e);
    char got[16];
    snprintf(got, sizeof got, "%s%s%s", name_of(e[0]), name_of(e[1]), name_of(e[2]));
    CHECK(!strcmp(got, want), "device %u:%#x driver %u: entries %s, wanted %s", vendor, device,
          driver, got, want);
}

static void test_entries(void) {
    qkrt_json *t = parse(ENTRIES);
    /* the driver's own entry first, else the device's first; a sibling
     * under the entry's mask; the vendor's first other chip */
    entries_case(t, 10, 0x2330, 6, "bcd");
    entries_case(t, 10, 0x2330, 7, "acd");
    /* a sibling: 0x2330 first (b has no family_mask: its device only) */
    entries_case(t, 10, 0x2331, 1, "-ad");
    /* an entry without family_mask is the device's own all the same */
    entries_case(t, 10, 0x2336, 1, "ead");
    entries_case(t, 10, 0x2335, 1, "cad");
    /* another chip of the vendor: its family (0x26xx) has d */
    entries_case(t, 10, 0x2680, 1, "-da");
    /* a chip the table has no sibling of: the vendor's first */
    entries_case(t, 10, 0x2700, 1, "--a");
    /* mask 0: every device of vendor 11 is f's family */
    entries_case(t, 11, 0x1234, 1, "-f-");
    entries_case(t, 11, 0x2330, 5, "f--");
    entries_case(t, 12, 0x2330, 5, "---");
    qkrt_json_free(t);
}

/* ---- the scan: each level's rules, then the default ones ---- */

static const char *const SCAN =
    "{ \"version\": 2, \"devices\": ["
    " { \"vendor_id\": 10, \"device_id\": 9008, \"driver_version\": 1, \"family_mask\": 4294967040,"
    "   \"name\": \"own\", \"rules\": ["
    "  { \"op\": \"matvec\", \"format\": \"q4_0\", \"kernel\": \"dev\","
    "    \"M\": [1, null], \"K\": [1, null], \"T\": [1, 1] } ] },"
    " { \"vendor_id\": 10, \"device_id\": 9009, \"driver_version\": 1, \"family_mask\": 4294967040,"
    "   \"name\": \"sibling\", \"rules\": ["
    "  { \"op\": \"matvec\", \"format\": \"q4_0\", \"kernel\": \"fam\","
    "    \"M\": [1, null], \"K\": [1, null], \"T\": [1, 4] },"
    "  { \"op\": \"matvec\", \"format\": \"mlx4_g64\", \"format_variant\": \"bf16\","
    "    \"kernel\": \"fam_bf16\", \"M\": [1, null], \"K\": [1, null], \"T\": [1, null] } ] },"
    " { \"vendor_id\": 10, \"device_id\": 9860, \"driver_version\": 1, \"family_mask\": 4294967040,"
    "   \"name\": \"cousin\", \"rules\": ["
    "  { \"op\": \"matvec\", \"format\": \"q4_0\", \"kernel\": \"ven\","
    "    \"M\": [1, 100], \"K\": [1, null], \"T\": [1, null] },"
    "  { \"op\": \"matmul\", \"format\": \"q4_0\", \"activations\": \"f16\", \"kernel\": \"ven16\","
    "    \"M\": [1, null], \"K\": [1, null], \"T\": [1, null] } ] } ],"
    " \"default\": ["
    "  { \"op\": \"matvec\", \"format\": \"q4_0\", \"kernel\": \"def\","
    "    \"M\": [1, null], \"K\": [1, null], \"T\": [1, null] },"
    "  { \"op\": \"matvec\", \"format\": \"mlx4_g64\", \"format_variant\": \"f16\","
    "    \"kernel\": \"def_f16\", \"M\": [1, null], \"K\": [1, null], \"T\": [1, null] } ] }";

/* The kernels of the scan's table, by index; unusable ones are named in
 * the user string (a device that cannot run them, say). */
static const char *const KERNELS[] = {"dev", "fam", "fam_bf16", "ven", "ven16", "def", "def_f16"};

static bool usable(void *user, const char *kernel, uint32_t *index) {
    const char *refused = user;
    for (uint32_t i = 0; i < sizeof KERNELS / sizeof *KERNELS; i++)
        if (!strcmp(KERNELS[i], kernel)) {
            char word[32];
            snprintf(word, sizeof word, " %s ", kernel);
            if (refused && strstr(refused, word)) return false;
            *index = i;
            return true;
        }
    return false;
}

static void scan_case(const qkrt_json *t, uint32_t device, const char *op, const char *format,
                      const char *option, const char *act, int64_t M, int64_t T,
                      const char *refused, const char *want, int want_level) {
    const qkrt_json *e[3];
    qkrt_select_entries(t, 10, device, 1, e);
    qkrt_select_query q = {op, format, option, act, M, 4096, T};
    uint32_t k = 99;
    int level = -1;
    char err[256] = "";
    int64_t first;
    int found = qkrt_select_scan(t, e, &q, usable, usable, (void *)refused, &k, &first, &level, err,
                                 sizeof err);
    const char *got = found == 1 && k < 7 ? KERNELS[k] : found ? "?" : "-";
    CHECK(found >= 0, "%s", err);
    CHECK(!strcmp(got, want) && (!found || level == want_level),
          "device %#x %s %s/%s %s M=%lld T=%lld: %s at level %d, wanted %s at %d", device, op,
          format, option ? option : "*", act, (long long)M, (long long)T, got, level, want,
          want_level);
}

static void test_scan(void) {
    qkrt_json *t = parse(SCAN);
    /* the device's own rule; past its range T the sibling's, past that the
     * vendor's, past its M the default */
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 64, 1, NULL, "dev", 0);
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 64, 3, NULL, "fam", 1);
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 64, 9, NULL, "ven", 2);
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 512, 9, NULL, "def", 3);
    /* a kernel the device cannot run passes to the next level */
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 64, 1, " dev ", "fam", 1);
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 64, 1, " dev fam ven ", "def", 3);
    scan_case(t, 0x2330, "matvec", "q4_0", NULL, "f32", 64, 1, " dev fam ven def ", "-", 0);
    /* 0x2331 has an entry of its own: the sibling's; 0x2330's is its family's */
    scan_case(t, 0x2331, "matvec", "q4_0", NULL, "f32", 64, 1, NULL, "fam", 0);
    scan_case(t, 0x2331, "matvec", "q4_0", NULL, "f32", 64, 9, " fam ", "ven", 2);
    /* a sibling without an entry (0x2333): the family's first entry in the
     * table's order (0x2330's) answers, and only that one: past its T the
     * vendor's, not 0x2331's */
    scan_case(t, 0x2333, "matvec", "q4_0", NULL, "f32", 64, 1, NULL, "dev", 1);
    scan_case(t, 0x2333, "matvec", "q4_0", NULL, "f32", 64, 3, NULL, "ven", 2);
    /* another chip of the vendor (0x2700): the first other entry, 0x2330's */
    scan_case(t, 0x2700, "matvec", "q4_0", NULL, "f32", 64, 1, NULL, "dev", 2);
    scan_case(t, 0x2700, "matvec", "q4_0", NULL, "f32", 64, 3, NULL, "def", 3);
    /* the format option: asked, it must match; not asked, any */
    scan_case(t, 0x2330, "matvec", "mlx4_g64", "f16", "f32", 64, 1, NULL, "def_f16", 3);
    scan_case(t, 0x2330, "matvec", "mlx4_g64", NULL, "f32", 64, 1, NULL, "fam_bf16", 1);
    /* the activations: f16 rules answer f16 queries only */
    scan_case(t, 0x2680, "matmul", "q4_0", NULL, "f16", 64, 64, NULL, "ven16", 1);
    scan_case(t, 0x2680, "matmul", "q4_0", NULL, "f32", 64, 64, NULL, "-", 0);
    scan_case(t, 0x2330, "matmul", "q4_0", NULL, "f16", 64, 64, NULL, "ven16", 2);
    qkrt_json_free(t);
    /* a rule the scan cannot read: -1 with where it is */
    t = parse("{ \"version\": 1, \"devices\": [], \"default\": [\n"
              "  { \"op\": \"matvec\", \"format\": \"q4_0\", \"kernel\": \"def\",\n"
              "    \"M\": [1], \"K\": [1, null], \"T\": [1, null] } ] }");
    const qkrt_json *e[3] = {NULL, NULL, NULL};
    qkrt_select_query q = {"matvec", "q4_0", NULL, "f32", 1, 1, 1};
    uint32_t k;
    int level;
    char err[256] = "";
    int64_t first;
    int r = qkrt_select_scan(t, e, &q, usable, usable, NULL, &k, &first, &level, err, sizeof err);
    CHECK(r == -1 && strstr(err, "select: rule at 2:3: \"M\" is not [lo, hi or null]"),
          "a malformed range: %d '%s'", r, err);
    qkrt_json_free(t);
}

/* ---- family_mask in the check: an integer 0 .. 2^32-1 where present ---- */

static bool any_kernel(void *user, const char *name, qkrt_select_kernel *out) {
    (void)user, (void)name;
    *out = (qkrt_select_kernel){"matvec", "q4_0", "", "f32", "none"};
    return true;
}

static void test_check(void) {
    static const struct {
        const char *mask, *error; /* NULL: accepted */
    } cases[] = {
        {"4294967040", NULL},
        {"0", NULL},
        {"4294967295", NULL},
        {"-1", "3:54: select: \"family_mask\" is not an integer 0 .. 2^32-1"},
        {"4294967296", "3:54: select: \"family_mask\" is not an integer 0 .. 2^32-1"},
        {"\"0xff00\"", "3:54: select: \"family_mask\" is not an integer 0 .. 2^32-1"},
        {"1.5", "3:54: select: \"family_mask\" is not an integer 0 .. 2^32-1"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{ \"version\": 1,\n  \"devices\": [\n"
                 "    { \"vendor_id\": 1, \"device_id\": 2, \"family_mask\": %s,"
                 " \"driver_version\": 3 } ],\n  \"default\": [] }",
                 cases[i].mask);
        qkrt_json *t = parse(text);
        char err[256] = "";
        bool ok = qkrt_select_check(t, any_kernel, NULL, err, sizeof err);
        CHECK(cases[i].error ? !ok && !strcmp(err, cases[i].error) : ok,
              "family_mask %s: %s '%s', wanted %s", cases[i].mask, ok ? "accepted" : "refused", err,
              cases[i].error ? cases[i].error : "accepted");
        qkrt_json_free(t);
    }
}

/* The index of kernel in the user's two names. */
static bool any_index(void *user, const char *kernel, uint32_t *index) {
    const char *const *names = user;
    for (uint32_t i = 0; i < 2; i++)
        if (!strcmp(names[i], kernel)) return *index = i, true;
    return false;
}

/* ---- the table build --tuned writes: its entries carry family_mask, so a
 * sibling gets the tuned rules at the family level and another chip of the
 * vendor at the vendor level ---- */

static void test_writer(void) {
    qk_tune_record best = {.precision = "f32", .us = 5};
    snprintf(best.variant, sizeof best.variant, "matvec_tuned");
    qk_tune_outcome oc = {.best = &best};
    oc.dev = (qk_tune_device){.vendor_id = 4318, .device_id = 0x2330, .driver_version = 7};
    snprintf(oc.dev.cache_uuid, sizeof oc.dev.cache_uuid, "%032d", 0);
    snprintf(oc.dev.name, sizeof oc.dev.name, "H100");
    oc.c = (qk_tune_case){.op = "matvec", .format = "q4_0", .M = 4096, .K = 4096, .T = 1};
    qk_tune_default def = {.op = "matvec",
                           .format = "q4_0",
                           .activations = "f32",
                           .kernel = "matvec_portable",
                           .precision = "f32"};
    qk_str s = {0};
    int version = qk_tune_select_json(&s, &oc, 1, &def, 1);
    CHECK(version == 1, "version %d", version);
    qkrt_json *t = parse(s.s);
    char err[256] = "";
    CHECK(qkrt_select_check(t, any_kernel, NULL, err, sizeof err), "%s", err);
    const qkrt_json *d = &qkrt_json_get(t, "devices")->items[0];
    const qkrt_json *mask = qkrt_json_get(d, "family_mask");
    CHECK(mask && mask->integral && mask->integer == (int64_t)QK_TUNE_FAMILY_MASK,
          "the entry's family_mask: %s", s.s);
    static const struct {
        uint32_t device;
        const char *kernel;
        int level;
    } cases[] = {{0x2330, "matvec_tuned", 0},
                 {0x2335, "matvec_tuned", 1},
                 {0x2684, "matvec_tuned", 2},
                 {0, "matvec_portable", 3}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const qkrt_json *e[3];
        /* vendor 4318 but the last, which is another vendor's device */
        qkrt_select_entries(t, i < 3 ? 4318 : 4098, cases[i].device, 1, e);
        qkrt_select_query q = {"matvec", "q4_0", NULL, "f32", 4096, 4096, 1};
        const char *names[2] = {"matvec_tuned", "matvec_portable"};
        uint32_t k = 9;
        int level = -1;
        int64_t first;
        int r = qkrt_select_scan(t, e, &q, any_index, any_index, (void *)names, &k, &first, &level,
                                 err, sizeof err);
        CHECK(r == 1 && k < 2 && !strcmp(names[k], cases[i].kernel) && level == cases[i].level,
              "device %#x: %d %s at level %d, wanted %s at %d", cases[i].device, r,
              r == 1 && k < 2 ? names[k] : "-", level, cases[i].kernel, cases[i].level);
    }
    qkrt_json_free(t);
    qk_str_free(&s);
}

/* ---- two passes (select version 3): a rule that names a first pass
 * answers only a caller that runs it, where both kernels are usable; the
 * check takes the first pass only in a version 3 table, and only a dequant
 * kernel of the rule's format ---- */

static const char *const TWO[] = {"mm_f16w", "dq_q4_0", "fused_q4_0"};

static bool two_usable(void *user, const char *kernel, uint32_t *index) {
    const char *refused = user;
    for (uint32_t i = 0; i < 3; i++)
        if (!strcmp(TWO[i], kernel)) {
            if (refused && !strcmp(refused, kernel)) return false;
            return *index = i, true;
        }
    return false;
}

static bool two_kernel(void *user, const char *name, qkrt_select_kernel *out) {
    (void)user;
    if (!strcmp(name, "mm_f16w"))
        *out = (qkrt_select_kernel){"matmul", "f16w", "", "f32", "none"};
    else if (!strcmp(name, "dq_q4_0"))
        *out = (qkrt_select_kernel){"dequant", "q4_0", "", "f32", "none"};
    else if (!strcmp(name, "dq_q8_0"))
        *out = (qkrt_select_kernel){"dequant", "q8_0", "", "f32", "none"};
    else
        *out = (qkrt_select_kernel){"matmul", "q4_0", "", "f32", "none"};
    return true;
}

static void test_two_pass(void) {
    const char *table = "{ \"version\": 3, \"devices\": [], \"default\": ["
                        "  { \"op\": \"matmul\", \"format\": \"q4_0\", \"format_variant\": \"\","
                        "    \"kernel\": \"mm_f16w\", \"first_pass\": \"dq_q4_0\","
                        "    \"M\": [1, null], \"K\": [1, null], \"T\": [64, null] },"
                        "  { \"op\": \"matmul\", \"format\": \"q4_0\", \"format_variant\": \"\","
                        "    \"kernel\": \"fused_q4_0\", \"M\": [1, null], \"K\": [1, null],"
                        "    \"T\": [1, null] } ] }";
    qkrt_json *t = parse(table);
    char err[256] = "";
    CHECK(qkrt_select_check(t, two_kernel, NULL, err, sizeof err), "a two-pass table: %s", err);
    const qkrt_json *e[3] = {NULL, NULL, NULL};
    const struct {
        int64_t T;
        bool two;            /* the caller runs first passes */
        const char *refused; /* a kernel the device does not run */
        int kernel, first;
    } cases[] = {
        {512, true, NULL, 0, 1},       /* both passes */
        {512, false, NULL, 2, -1},     /* a caller of one kernel: the fused rule */
        {16, true, NULL, 2, -1},       /* outside the two-pass rule's tokens */
        {512, true, "dq_q4_0", 2, -1}, /* the first pass unusable: the next rule */
        {512, true, "mm_f16w", 2, -1}, /* the second unusable too */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        qkrt_select_query q = {"matmul", "q4_0", NULL, "f32", 4096, 4096, cases[i].T};
        uint32_t k = 99;
        int64_t first = 99;
        int level = -1;
        int r = qkrt_select_scan(t, e, &q, two_usable, cases[i].two ? two_usable : NULL,
                                 (void *)cases[i].refused, &k, &first, &level, err, sizeof err);
        CHECK(r == 1 && (int)k == cases[i].kernel && first == cases[i].first && level == 3,
              "two-pass case %zu: %d, kernel %u, first pass %lld (wanted %d, %d)", i, r, k,
              (long long)first, cases[i].kernel, cases[i].first);
    }
    qkrt_json_free(t);
    static const struct {
        const char *version, *first, *error;
    } bad[] = {
        {"2", "dq_q4_0", "1:116: select: a rule names a first pass in a version 2 table"},
        {"3", "dq_q8_0",
         "1:116: select: a rule for q4_0 names first pass 'dq_q8_0', not a dequant kernel of it"},
        {"3", "fused_q4_0",
         "1:116: select: a rule for q4_0 names first pass 'fused_q4_0', not a dequant kernel of "
         "it"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char text[512];
        snprintf(text, sizeof text,
                 "{ \"version\": %s, \"devices\": [], \"default\": [ { \"op\": \"matmul\", "
                 "\"format\": \"q4_0\", \"kernel\": \"mm_f16w\", \"first_pass\": \"%s\", "
                 "\"M\": [1, null], \"K\": [1, null], \"T\": [1, null] } ] }",
                 bad[i].version, bad[i].first);
        t = parse(text);
        err[0] = 0;
        bool ok = qkrt_select_check(t, two_kernel, NULL, err, sizeof err);
        CHECK(!ok && !strcmp(err, bad[i].error), "version %s first pass %s: %s '%s', wanted '%s'",
              bad[i].version, bad[i].first, ok ? "accepted" : "refused", err, bad[i].error);
        qkrt_json_free(t);
    }
}

int main(void) {
    test_entries();
    test_scan();
    test_check();
    test_writer();
    test_two_pass();
    printf("%d checks, %d failed\n", checks, fails);
    return fails != 0;
}
