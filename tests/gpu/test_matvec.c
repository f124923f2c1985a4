/* Every mat-vec kernel of a bundle against the independent CPU reference, on
 * the default device under the validation layer: fresh random weights and
 * activations each run (the seed is printed; QKGEN_SEED repeats a run),
 * outputs poisoned with NaN, rows that are not multiples of the tile.
 *
 * The first kernel of each format (and scale type) runs every shape of
 * `full`: M in {1, 7, 33, 1000}, K up to 4608 (past the 4096 activations that
 * matvec_xs stages per slab), one token and a partial token
 * tile. The many other tile variants of that format share its dequant code, so
 * each runs one shape, odd M, cycling through K: that keeps a bundle of a
 * thousand variants within the suite's time on lavapipe. QKGEN_TEST_FULL=1
 * runs every shape on every kernel. */
#include "gpu_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct shape {
    uint32_t M, K;
} shape;

static const shape full[] = {{1, 4608}, {7, 256}, {33, 1024}, {1000, 4096}};
static const shape one[] = {{7, 1024}, {33, 256}, {7, 4608}, {33, 512}};

/* The worst NMSE seen per format, for the summary line of each. */
typedef struct format_stat {
    char name[64];
    int kernels, runs;
    double worst;
} format_stat;

static format_stat *stat_of(format_stat *s, int *n, const qkrt_kernel_info *k) {
    char name[64];
    snprintf(name, sizeof name, "%s%s%s", k->format, k->format_variant[0] ? "_" : "",
             k->format_variant);
    for (int i = 0; i < *n; i++)
        if (!strcmp(s[i].name, name)) return &s[i];
    format_stat *f = &s[(*n)++];
    memset(f, 0, sizeof *f);
    snprintf(f->name, sizeof f->name, "%s", name);
    return f;
}

/* One run of kernel ki on M x K with T tokens; returns the NMSE (inf on failure). */
static double run_one(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t M, uint32_t K,
                      uint32_t T, uint64_t *rng, char *err, size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    qk_weights w;
    if (!qk_random_weights(k->format, k->format_variant, M, K, rng, &w)) {
        snprintf(err, err_size, "no reference for format %s", k->format);
        return INFINITY;
    }
    float *x = malloc(sizeof *x * T * K), *y = malloc(sizeof *y * T * M);
    double *xd = malloc(sizeof *xd * T * K), *ref = malloc(sizeof *ref * T * M);
    for (size_t i = 0; i < (size_t)T * K; i++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        xd[i] = x[i] = (float)((double)(*rng >> 11) / 9007199254740992.0 * 2 - 1);
    }
    qkrt_result r = qk_run_matvec(ctx, b, ki, &w, x, M, K, T, y, NULL, err, err_size);
    if (qk_rounds_x8(k)) qk_round_x8(xd, x, (size_t)T * K);
    qk_ref_matvec(&w, xd, M, K, T, ref);
    double nmse = r == QKRT_OK ? qk_nmse(y, ref, (size_t)T * M) : INFINITY;
    /* the error measured against the larger of the results' scale and their
     * terms' (the expected square of a sum of random-signed terms): with one
     * row and one token the single dot product may cancel to near zero, and
     * an f32 sum's error does not shrink with it (seen: 6.9e-6 on M = 1) */
    double *sq = malloc(sizeof *sq * T * M), den = 0, num = 0;
    if (isfinite(nmse) && qk_ref_matvec_sq(&w, xd, M, K, T, sq)) {
        for (size_t i = 0; i < (size_t)T * M; i++) {
            num += (y[i] - ref[i]) * (y[i] - ref[i]);
            den += sq[i];
        }
        if (den > 0 && num / den < nmse) nmse = num / den;
    }
    free(sq);
    free(x), free(y), free(xd), free(ref);
    qk_free_weights(&w);
    return nmse;
}

/* The bundle's quantizer (quantize_q8) against the host's rounding
 * (qk_round_x8) on T rows of K activations whose groups span magnitudes
 * from 1e-3 to 1e3, one group all zeros: every code within one of the
 * host's (a device reciprocal may flip a value on a half), at most one in a
 * thousand off, each group's dx within 3e-7 of max|x| / 127 and its sx
 * dx * the sum of the device's codes, in the q8 rows layout of
 * templates/include/q8.glsl. Returns the
 * number of failures. */
static int test_quantizer(qkrt_context *ctx, const qkrt_bundle *b, uint64_t *rng) {
    char err[1024] = "";
    int qi = qk_find_quantizer(ctx, b, err, sizeof err);
    if (qi < 0) return 0; /* a bundle without kernels on pre-quantized activations */
    static const uint32_t shapes[][2] = {{1, 64}, {3, 4608}};
    int fails = 0;
    for (int si = 0; si < 2; si++) {
        uint32_t T = shapes[si][0], K = shapes[si][1], G = K / 32;
        size_t n = (size_t)T * K, nq = qk_q8_bytes(T, K);
        float *x = malloc(4 * n);
        double *xd = malloc(8 * n);
        uint8_t *q = malloc(nq);
        for (size_t g = 0; g < n / 32; g++) {
            *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
            double mag = pow(10.0, (double)(*rng >> 40) / (1ull << 24) * 6 - 3);
            for (size_t i = g * 32; i < g * 32 + 32; i++) {
                *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
                x[i] = g == 1 ? 0.0f
                              : (float)(((double)(*rng >> 11) / 9007199254740992.0 * 2 - 1) * mag);
            }
        }
        qk_round_x8(xd, x, n);
        qkrt_buffer *xb = NULL, *qb = NULL;
        qkrt_result r = qk_buffer_from(ctx, x, 4 * n, &xb);
        if (r == QKRT_OK) r = qk_buffer_from(ctx, NULL, nq, &qb); /* poisoned */
        qkrt_dispatch d;
        qk_slots slots;
        qk_bind binds[] = {{"x", xb}, {"xq", qb}};
        const char *names[] = {"K", "T"};
        int64_t vals[] = {K, T};
        if (r == QKRT_OK)
            r = qk_dispatch_setup(b, (uint32_t)qi, NULL, 0, binds, 2, names, vals, 2, &d, &slots,
                                  err, sizeof err);
        if (r == QKRT_OK) r = qkrt_run(ctx, &d, 1);
        if (r == QKRT_OK) r = qkrt_buffer_download(ctx, qb, 0, q, nq);
        uint32_t off = 0, worst = 0, bad_scale = 0;
        for (uint32_t t = 0; r == QKRT_OK && t < T; t++)
            for (uint32_t g = 0; g < G; g++) {
                const uint8_t *row = q + (size_t)t * K / 4 * 5;
                float s[2];
                memcpy(s, row + K + 8 * g, 8);
                size_t e0 = (size_t)t * K + 32 * g;
                float amax = 0;
                for (size_t i = e0; i < e0 + 32; i++)
                    amax = fmaxf(amax, fabsf(x[i]));
                float dx = amax / 127.0f;
                int sum = 0;
                for (uint32_t i = 0; i < 32; i++) {
                    int c = (int8_t)row[32 * g + i];
                    int want = dx > 0 ? (int)lrint(xd[e0 + i] / dx) : 0;
                    uint32_t dc = (uint32_t)abs(c - want);
                    off += dc != 0, worst = dc > worst ? dc : worst;
                    sum += c;
                }
                /* a device division within 2.5 ulp (Vulkan's bound for x / y) */
                bad_scale += fabsf(s[0] - dx) > 3e-7f * dx ||
                             fabsf(s[1] - s[0] * (float)sum) > 1e-7f * fabsf(s[0] * (float)sum);
            }
        bool ok = r == QKRT_OK && worst <= 1 && off * 1000 <= n && !bad_scale;
        printf("%s %s T=%u K=%u: %u of %zu codes off by one, %u groups with a wrong scale %s\n",
               ok ? "ok  " : "FAIL", qkrt_bundle_kernel(b, (uint32_t)qi)->name, T, K, off, n,
               bad_scale, r == QKRT_OK ? (worst > 1 ? "(a code off by more than one)" : "") : err);
        fails += !ok;
        qkrt_buffer_destroy(ctx, xb), qkrt_buffer_destroy(ctx, qb);
        free(x), free(xd), free(q);
    }
    return fails;
}

/* Whether this test runs kernel ki: a plain mat-vec (fused variants, swiglu,
 * have their own test, tests/gpu/test_moe.c) that the filter names and that
 * the device is not excused from (gpu_skip_shared, gpu_skip_coopmat). */
static bool tested(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, const char *filter) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    return !strcmp(k->family, "matvec") && !strcmp(k->fusion, "none") &&
           (!filter || strstr(k->name, filter)) && !gpu_skip_shared(ctx, k) &&
           !gpu_skip_coopmat(ctx, b, ki);
}

int main(int argc, char **argv) {
    bool all_shapes = getenv("QKGEN_TEST_FULL") && atoi(getenv("QKGEN_TEST_FULL"));
    const char *filter;
    qkrt_context *ctx;
    qkrt_bundle *b;
    int start = gpu_start(argc, argv, &filter, &ctx, &b);
    if (start) return start;
    uint64_t rng = g_rng; /* the printed seed */
    int pass = 0, fail = 0, kernels = 0, nstats = 0;
    format_stat *stats = calloc(qkrt_bundle_kernel_count(b) + 1, sizeof *stats);
    if (!filter || strstr("quantize_q8", filter)) fail += test_quantizer(ctx, b, &rng);
    /* the kernels this test runs, their pipelines made first on four
     * threads at once (qkrt_kernels_prepare, as qkgen bench does): each one
     * the device runs must come out, and the validation layer watches the
     * threads' calls */
    uint32_t *list = malloc(sizeof *list * qkrt_bundle_kernel_count(b)), nlist = 0, runnable = 0;
    for (uint32_t ki = 0; ki < qkrt_bundle_kernel_count(b); ki++)
        if (tested(ctx, b, ki, filter)) {
            list[nlist++] = ki;
            runnable += qkrt_kernel_check(ctx, b, ki) == QKRT_OK;
        }
    uint32_t ready = qkrt_kernels_prepare(ctx, b, list, nlist, 4);
    if (ready != runnable) {
        printf("FAIL qkrt_kernels_prepare: %u of %u pipelines\n", ready, runnable);
        fail++;
    }
    for (uint32_t li = 0; li < nlist; li++) {
        const uint32_t ki = list[li];
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
        if (qkrt_kernel_check(ctx, b, ki) != QKRT_OK) {
            printf("FAIL %s: the device cannot run it: %s\n", k->name, qkrt_last_error(ctx));
            fail++;
            continue;
        }
        format_stat *fs = stat_of(stats, &nstats, k);
        bool first = fs->kernels++ == 0;
        kernels++;
        const shape *shapes = first || all_shapes ? full : &one[ki % 4];
        int nshapes = first || all_shapes ? 4 : 1;
        for (int si = 0; si < nshapes; si++) {
            uint32_t M = shapes[si].M, K = shapes[si].K;
            if (K % k->block_elements) K = k->block_elements * (si + 1);
            K = gpu_fit_k(k, K); /* a step of two q6_K blocks (512) where NK is */
            /* one token, and a partial last column of NR1 tokens */
            uint32_t tokens[2] = {1, k->nr1 + 1};
            int t0 = first || all_shapes || k->nr1 == 1 ? 0 : 1;
            for (int ti = t0; ti < (k->nr1 > 1 ? 2 : 1); ti++) {
                uint32_t T = tokens[ti];
                char err[1024] = "";
                double nmse = run_one(ctx, b, ki, M, K, T, &rng, err, sizeof err);
                fs->runs++;
                if (!(nmse <= fs->worst)) fs->worst = nmse;
                bool ok = nmse <= qk_nmse_bound(k);
                if (!ok)
                    printf("FAIL %s M=%u K=%u T=%u: NMSE %.3g %s\n", k->name, M, K, T, nmse, err);
                ok ? pass++ : fail++;
            }
        }
    }
    for (int i = 0; i < nstats; i++)
        printf("%-20s %4d kernels %5d runs, worst NMSE %.2e\n", stats[i].name, stats[i].kernels,
               stats[i].runs, stats[i].worst);
    free(stats);
    free(list);
    uint32_t verrs = qkrt_validation_errors(ctx);
    if (verrs) {
        printf("FAIL: the validation layer reported %u errors\n", verrs);
        fail++;
    }
    if (kernels == 0) {
        printf("FAIL: no mat-vec kernel in %s\n", argv[1]);
        fail++;
    }
    printf("%d kernels; %d passed, %d failed\n", kernels, pass, fail);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return fail ? 1 : 0;
}
