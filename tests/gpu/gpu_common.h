/* Shared by the MoE and post-op GPU tests: the printed seed, random data, the
 * context and bundle under the validation layer, and kernel lookup by family,
 * format and fusion. Header-only: each test is one translation unit. */
#ifndef QK_GPU_COMMON_H
#define QK_GPU_COMMON_H

#include "ops_moe.h"
#include "refs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t g_rng;
static int g_pass, g_fail;

static inline double rnd_unit(void) { /* [-1, 1) */
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(g_rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static inline uint32_t rnd_below(uint32_t n) {
    return (uint32_t)((rnd_unit() + 1) / 2 * n) % n;
}

/* n random values in [-scale, scale) into f (float) and d (the same, as double). */
static inline void rnd_fill(float *f, double *d, size_t n, double scale) {
    for (size_t i = 0; i < n; i++)
        d[i] = f[i] = (float)(rnd_unit() * scale);
}

static inline double *to_double(const float *f, size_t n) {
    double *d = malloc(sizeof *d * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        d[i] = f[i];
    return d;
}

/* Opens the default device and bundle; prints the seed and device. */
static inline bool gpu_open(const char *bundle, qkrt_context **ctx, qkrt_bundle **b) {
    uint64_t seed = getenv("QKGEN_SEED") ? strtoull(getenv("QKGEN_SEED"), NULL, 0)
                                         : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    printf("seed %llu (QKGEN_SEED=%llu repeats this run)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    g_rng = seed;
    if (qkrt_create(&(qkrt_desc){0}, ctx) != QKRT_OK) {
        printf("FAIL: %s\n", qkrt_create_error());
        return false;
    }
    if (qkrt_bundle_load(*ctx, bundle, b) != QKRT_OK) {
        printf("FAIL: %s\n", qkrt_last_error(*ctx));
        qkrt_destroy(*ctx);
        return false;
    }
    printf("device: %s\n", qkrt_device(*ctx)->name);
    /* the declared references (reference: in a format's YAML) of the source
     * specs, for the formats that have no built-in C reference */
    if (qk_declare_refs("test", QKGEN_TEST_SPECS)) {
        qkrt_bundle_destroy(*ctx, *b);
        qkrt_destroy(*ctx);
        return false;
    }
    return true;
}

/* The start of every GPU test: `argv[0] BUNDLE [FILTER]`, then gpu_open.
 * Returns 0, or the exit status (2: usage, 1: no device or bundle). */
static inline int gpu_start(int argc, char **argv, const char **filter, qkrt_context **ctx,
                            qkrt_bundle **b) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s BUNDLE [FILTER]\n", argv[0]);
        return 2;
    }
    *filter = argc > 2 ? argv[2] : NULL;
    return gpu_open(argv[1], ctx, b) ? 0 : 1;
}

/* A kernel the device refuses only for its shared-memory size (lavapipe gives
 * 32 KiB; the bandwidth tiles are sized for the 48 KiB of discrete GPUs) is
 * skipped, said so and never counted as passing; any other refusal fails. */
static inline bool gpu_skip_shared(qkrt_context *ctx, const qkrt_kernel_info *k) {
    if (k->shared_memory_bytes <= qkrt_device(ctx)->max_shared_memory) return false;
    printf(
        "SKIP %s: needs %u bytes of shared memory, the device gives %u (not counted as passing)\n",
        k->name, k->shared_memory_bytes, qkrt_device(ctx)->max_shared_memory);
    return true;
}

/* Whether to skip kernel ki because the device lacks the cooperative matrices
 * its path needs (said so, never counted as passing); any other refusal is
 * left to the caller to fail. */
static inline bool gpu_skip_coopmat(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    if (strncmp(k->mma, "coopmat", 7) || qkrt_kernel_check(ctx, b, ki) == QKRT_OK) return false;
    printf("SKIP %s: %s (not counted as passing)\n", k->name, qkrt_last_error(ctx));
    return true;
}

/* Ends the test: validation errors fail it. Returns the exit status. */
static inline int gpu_close(qkrt_context *ctx, qkrt_bundle *b) {
    uint32_t verrs = qkrt_validation_errors(ctx);
    if (verrs) {
        printf("FAIL: the validation layer reported %u errors\n", verrs);
        g_fail++;
    }
    printf("%d passed, %d failed\n", g_pass, g_fail);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return g_fail ? 1 : 0;
}

/* Records one check; prints it when it fails (or always when verbose). */
static inline bool check_nmse(const char *what, const float *out, const double *ref, size_t n,
                              double limit) {
    double e = qk_nmse(out, ref, n);
    bool ok = e <= limit;
    if (!ok || getenv("QKGEN_VERBOSE")) printf("%s %s: NMSE %.3g\n", ok ? "ok" : "FAIL", what, e);
    ok ? g_pass++ : g_fail++;
    return ok;
}

/* The smallest K >= want, a multiple of the kernel's block and of its NK,
 * that every constraint of k on K alone holds for: "K % NK == 0", and the
 * rows of whole words that q6_K's whole-block kernels load ("K / 256 * 210 %
 * 4 == 0": an even block count; its half blocks take any count). */
static inline uint32_t gpu_fit_k(const qkrt_kernel_info *k, uint32_t want) {
    const uint32_t step = k->nk > k->block_elements ? k->nk : k->block_elements;
    want = (want + step - 1) / step * step;
    for (uint32_t K = want, i = 0; i < 64; i++, K += step) {
        static const char *const names[] = {"K"};
        const int64_t values[] = {K};
        qkrt_shape s = {1, names, values};
        bool all = true;
        for (uint32_t c = 0; c < k->constraint_count && all; c++) {
            bool v;
            char err[256];
            /* constraints on other variables fail to evaluate: not K's */
            if (qkrt_eval_bool(k->constraints[c], &s, &v, err, sizeof err) == QKRT_OK && !v)
                all = false;
        }
        if (all) return K;
    }
    return want;
}

/* The first kernel of family for format (NULL: any) with fusion that the
 * device runs; -1 if none. variant: the MLX scale type, or NULL. */
static inline int find_kernel(qkrt_context *ctx, const qkrt_bundle *b, const char *family,
                              const char *format, const char *variant, const char *fusion) {
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (strcmp(k->family, family) || strcmp(k->fusion, fusion) ||
            (format && strcmp(k->format, format)) ||
            (variant && strcmp(k->format_variant, variant)))
            continue;
        /* not the kernels on pre-quantized activations: they need the
         * quantizer before them (qk_run_matvec_id runs it) */
        bool q8 = false;
        for (uint32_t j = 0; j < k->binding_count; j++)
            q8 |= !strcmp(k->bindings[j].role, "activations_q8");
        if (!q8 && qkrt_kernel_check(ctx, b, i) == QKRT_OK) return (int)i;
    }
    return -1;
}

#endif
