/* Fuzz harness: a bundle's manifest.json through qkrt_bundle_load, with no
 * Vulkan device: every kernel's "spv" may name k.spv, a minimal SPIR-V module
 * whose sha256 the seed manifests carry (tests/fuzz/make_corpus.py). */
#include "fuzz.h"
#include "internal.h"
#include "qkrt.h"

#include <stdlib.h>
#include <string.h>

/* Magic, version 1.3, generator, bound, schema: a module header and nothing else. */
static const uint32_t module[5] = {0x07230203u, 0x00010300u, 0u, 1u, 0u};

/* The bundle's expressions over a shape of its push constants (64 each) and
 * the usual variables; whatever they give, they must not crash or go silent. */
static void evaluate(const qkrt_kernel_info *k) {
    enum { MAX_VARS = 64 };
    static const char *const usual[] = {"M", "K", "T", "E", "top_k", "ne11", "max_per_expert"};
    const char *names[MAX_VARS];
    int64_t values[MAX_VARS];
    uint32_t count = 0;
    for (uint32_t i = 0; i < sizeof usual / sizeof usual[0]; i++)
        names[count] = usual[i], values[count++] = 64;
    for (uint32_t i = 0; i < k->push_count && count < MAX_VARS; i++)
        names[count] = k->push[i].name, values[count++] = 64;
    qkrt_shape shape = {count, names, values};
    char error[512];
    int64_t v;
    bool b;
    for (int i = 0; i < 3; i++) {
        error[0] = '\0';
        if (qkrt_eval(k->grid[i], &shape, &v, error, sizeof error) != QKRT_OK && !error[0])
            qkfuzz_fail("a grid expression refused without a message", k->grid[i]);
    }
    for (uint32_t i = 0; i < k->constraint_count; i++) {
        error[0] = '\0';
        if (qkrt_eval_bool(k->constraints[i], &shape, &b, error, sizeof error) != QKRT_OK &&
            !error[0])
            qkfuzz_fail("a constraint refused without a message", k->constraints[i]);
    }
    for (uint32_t i = 0; i < k->binding_count; i++)
        if (k->bindings[i].size && k->bindings[i].size[0])
            (void)qkrt_eval(k->bindings[i].size, &shape, &v, error, sizeof error);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    qkfuzz_file("k.spv", (const uint8_t *)module, sizeof module);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool ready;
    if (!ready) { /* the replay program has no LLVMFuzzerInitialize call */
        LLVMFuzzerInitialize(NULL, NULL);
        ready = true;
    }
    qkfuzz_file("manifest.json", data, size);
    qkrt_context *ctx = calloc(1, sizeof *ctx); /* no instance, no device */
    if (!ctx) return 0;
    qkrt_bundle *bundle = NULL;
    qkrt_result r = qkrt_bundle_load(ctx, qkfuzz_dir(), &bundle);
    if (r != QKRT_OK) {
        if (bundle) qkfuzz_fail("a failed load returned a bundle", ctx->error);
        if (!ctx->error[0]) qkfuzz_fail("a manifest refused without a message", NULL);
    } else {
        for (uint32_t i = 0; i < qkrt_bundle_kernel_count(bundle); i++) {
            const qkrt_kernel_info *k = qkrt_bundle_kernel(bundle, i);
            if (!k || !k->name || !k->family || !k->format)
                qkfuzz_fail("a loaded kernel without its names", NULL);
            if (qkrt_bundle_find(bundle, k->name) != (int)i)
                qkfuzz_fail("a kernel's name does not find it", k->name);
            evaluate(k);
        }
        qkrt_bundle_destroy(ctx, bundle);
    }
    free(ctx);
    return 0;
}
