/* Hostile manifests and bundle files: sizes that overflowed or trapped, a
 * parser that was quadratic, files that are FIFOs or too large. Each must fail
 * fast with a precise message (or load, for the big but valid one). */
#include "qk_util.h"
#include "qkrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            failures++;                                                                            \
            printf("FAIL line %d: %s: ", __LINE__, #cond);                                         \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

static char dir[] = "/tmp/qkrt_limits_XXXXXX";
static char schema[64] = "qkgen-bundle/1";

static char *path_of(const char *name) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return path;
}

static void write_text(const char *name, const char *text) {
    FILE *f = fopen(path_of(name), "wb");
    CHECK(f && fwrite(text, 1, strlen(text), f) == strlen(text), "write %s", name);
    if (f) fclose(f);
}

/* The schema this runtime reads, from its message for another one, so the
 * test follows the manifest's version. */
static void find_schema(qkrt_context *ctx) {
    qkrt_bundle *b = NULL;
    write_text("manifest.json", "{\"schema\": \"?\", \"kernels\": []}");
    qkrt_bundle_load(ctx, dir, &b);
    const char *reads = strstr(qkrt_last_error(ctx), "reads '");
    if (reads) sscanf(reads + 7, "%63[^']", schema);
}

/* One kernel whose binding and weights fields are given; the .spv need not
 * exist, the manifest's checks come first. */
static qkrt_result load_kernel(qkrt_context *ctx, const char *binding, const char *weights) {
    char text[2048];
    snprintf(text, sizeof text,
             "{\"schema\": \"%s\", \"kernels\": [{\"name\": \"k\", \"module\": \"k\",\n"
             "  \"workgroup_size\": [64, 1, 1],\n"
             "  \"weights\": %s,\n"
             "  \"bindings\": [{\"binding\": 0, \"name\": \"x\"%s}],\n"
             "  \"dispatch\": {\"grid\": [\"1\", \"1\", \"1\"]}}],\n"
             " \"modules\": [{\"name\": \"k\", \"spv\": \"k.spv\", \"spv_sha256\": \"00\"}]}\n",
             schema, weights, binding);
    write_text("manifest.json", text);
    qkrt_bundle *b = NULL;
    qkrt_result r = qkrt_bundle_load(ctx, dir, &b);
    qkrt_bundle_destroy(ctx, b);
    return r;
}

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void test_sizes(qkrt_context *ctx) {
    const char *block = "{\"layout\": \"block\", \"block_elements\": 32, \"block_bytes\": 18}";
    /* a count that wrapped the sum of descriptors to 0, then overran the stack */
    CHECK(load_kernel(ctx, ", \"count\": 4294967295", block) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"count\": 4294967295 is not in 1.."),
          "%s", qkrt_last_error(ctx));
    CHECK(load_kernel(ctx, ", \"count\": 0", block) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"count\": 0 is not in 1.."),
          "%s", qkrt_last_error(ctx));
    /* block_bytes 0: engines divide a row's bytes by it */
    const char *zero = "{\"layout\": \"block\", \"block_elements\": 32, \"block_bytes\": 0}";
    CHECK(load_kernel(ctx, "", zero) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"block_bytes\": 0 is not in 1..65536"),
          "%s", qkrt_last_error(ctx));
    const char *group0 = "{\"layout\": \"planar\", \"group\": 0, \"planes\": []}";
    CHECK(load_kernel(ctx, "", group0) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"group\": 0 is not in 1..65536"),
          "%s", qkrt_last_error(ctx));
    const char *plane0 = "{\"layout\": \"planar\", \"group\": 64, \"planes\": [{\"name\": \"q\", "
                         "\"type\": \"u32\", \"per_group\": 0}]}";
    CHECK(load_kernel(ctx, "", plane0) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "\"per_group\": 0 is not in 1..65536"),
          "%s", qkrt_last_error(ctx));
    /* a good kernel gets as far as its missing .spv */
    CHECK(load_kernel(ctx, ", \"count\": 2", block) == QKRT_ERROR_IO &&
              strstr(qkrt_last_error(ctx), "k.spv: cannot open"),
          "%s", qkrt_last_error(ctx));
}

static void test_many_keys(qkrt_context *ctx) {
    enum { KEYS = 300000 };
    size_t cap = (size_t)KEYS * 24 + 256, n = 0;
    char *text = malloc(cap);
    n += (size_t)snprintf(text + n, cap - n,
                          "{\"schema\": \"%s\", \"kernels\": [], \"modules\": []", schema);
    for (int i = 0; i < KEYS; i++)
        n += (size_t)snprintf(text + n, cap - n, ",\n\"key%d\": %d", i, i);
    snprintf(text + n, cap - n, "}\n");
    write_text("manifest.json", text);
    double t0 = now();
    qkrt_bundle *b = NULL;
    qkrt_result r = qkrt_bundle_load(ctx, dir, &b);
    double s = now() - t0;
    CHECK(r == QKRT_OK && qkrt_bundle_kernel_count(b) == 0, "%s", qkrt_last_error(ctx));
    qkrt_bundle_destroy(ctx, b);
    printf("%d keys in one object: %.3f s\n", KEYS, s);
    /* every pair compared took minutes; a hash set 0.6 s (2 s under ASan) */
    CHECK(s < 10.0, "%d keys took %.1f s", KEYS, s);
    /* duplicates are still found, at the second one */
    strcpy(text + n, ",\n\"key123\": 1}\n");
    write_text("manifest.json", text);
    CHECK(qkrt_bundle_load(ctx, dir, &b) == QKRT_ERROR_MANIFEST &&
              strstr(qkrt_last_error(ctx), "manifest.json:300002:1: duplicate key 'key123'"),
          "%s", qkrt_last_error(ctx));
    free(text);
}

/* 150,000 kernels of one module, each its own specialization: modules and
 * shared pipelines were found by comparing every earlier kernel: quadratic,
 * minutes; 3.5 s now (15 s under ASan) */
static void test_many_kernels(qkrt_context *ctx) {
    enum { KERNELS = 150000 };
    /* a header and the entry point the kernels name, nothing else */
    static const uint32_t spv[10] = {
        0x07230203, 0x00010500, 0, 2, 0, 0x0005000f, 5, 1, 0x6e69616d /* "main" */, 0};
    char hex[65];
    qk_sha256_hex(spv, sizeof spv, hex);
    FILE *f = fopen(path_of("k.spv"), "wb");
    CHECK(f && fwrite(spv, 1, sizeof spv, f) == sizeof spv, "write k.spv");
    if (f) fclose(f);
    qk_str t = {0};
    qk_str_addf(&t, "{\"schema\": \"%s\", \"kernels\": [", schema);
    for (int i = 0; i < KERNELS; i++)
        qk_str_addf(&t,
                    "%s\n{\"name\": \"k%d\", \"module\": \"k\", \"tile\": {\"NR0\": %d}, "
                    "\"specialization_constants\": "
                    "[{\"id\": 1, \"name\": \"NR0\", \"type\": \"u32\", \"value\": %d}]}",
                    i ? "," : "", i, i % 60000, i % 60000);
    /* the fields they have alike in their module's entry */
    qk_str_addf(&t,
                "],\n\"modules\": [{\"name\": \"k\", \"spv\": \"k.spv\", \"spv_sha256\": \"%s\", "
                "\"workgroup_size\": [64, 1, 1], \"bindings\": [], \"dispatch\": {\"grid\": "
                "[\"1\", \"1\", \"1\"]}}]}\n",
                hex);
    write_text("manifest.json", t.s);
    qk_str_free(&t);
    double t0 = now();
    qkrt_bundle *b = NULL;
    qkrt_result r = qkrt_bundle_load(ctx, dir, &b);
    double s = now() - t0;
    CHECK(r == QKRT_OK && qkrt_bundle_kernel_count(b) == KERNELS, "%s", qkrt_last_error(ctx));
    qkrt_bundle_destroy(ctx, b);
    printf("%d kernels of one module: %.3f s\n", KERNELS, s);
    CHECK(s < 40.0, "%d kernels took %.1f s", KERNELS, s);
    unlink(path_of("k.spv"));
}

static void test_files(qkrt_context *ctx) {
    qkrt_bundle *b = NULL;
    /* a FIFO blocked the open for good */
    unlink(path_of("manifest.json"));
    CHECK(mkfifo(path_of("manifest.json"), 0600) == 0, "mkfifo");
    CHECK(
        qkrt_bundle_load(ctx, dir, &b) == QKRT_ERROR_IO &&
            strstr(qkrt_last_error(ctx), "manifest.json: cannot read: a FIFO (only regular files"),
        "%s", qkrt_last_error(ctx));
    unlink(path_of("manifest.json"));
    CHECK(mkfifo(path_of("k.spv"), 0600) == 0, "mkfifo");
    CHECK(load_kernel(ctx, "", "null") == QKRT_ERROR_IO &&
              strstr(qkrt_last_error(ctx), "k.spv: cannot read: a FIFO"),
          "%s", qkrt_last_error(ctx));
    unlink(path_of("k.spv"));
    /* a folder, and a file past the limit (sparse: no disk used) */
    CHECK(mkdir(path_of("k.spv"), 0700) == 0, "mkdir");
    CHECK(load_kernel(ctx, "", "null") == QKRT_ERROR_IO &&
              strstr(qkrt_last_error(ctx), "k.spv: cannot read: a folder"),
          "%s", qkrt_last_error(ctx));
    rmdir(path_of("k.spv"));
    FILE *f = fopen(path_of("k.spv"), "wb");
    if (f) fclose(f);
    CHECK(truncate(path_of("k.spv"), (off_t)300 << 20) == 0, "truncate");
    CHECK(load_kernel(ctx, "", "null") == QKRT_ERROR_IO &&
              strstr(qkrt_last_error(ctx), "k.spv: 314572800 bytes, more than the limit of"),
          "%s", qkrt_last_error(ctx));
    unlink(path_of("k.spv"));
}

int main(void) {
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    qkrt_context *ctx = NULL;
    qkrt_desc desc = {.pipeline_cache_dir = ""};
    if (qkrt_create(&desc, &ctx) != QKRT_OK) {
        printf("FAIL: qkrt_create: %s\n", qkrt_create_error());
        return 1;
    }
    find_schema(ctx);
    test_sizes(ctx);
    test_many_keys(ctx);
    test_many_kernels(ctx);
    test_files(ctx);
    qkrt_destroy(ctx);
    unlink(path_of("manifest.json"));
    rmdir(dir);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
