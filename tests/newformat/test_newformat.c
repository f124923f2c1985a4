/* The check of docs/new-format.md: q3s, a format that lives only in this folder (q3s.yaml and
 * q3s.glsl), runs in qkgen's kernels with no C of its own but the reference dequantizer below. */
#include "ops.h"
#include "qk_npy.h"
#include "qkref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the reference, written from q3s.yaml's description alone */

enum { Q3S_ELEMENTS = 32, Q3S_BYTES = 14 };

/* f16 d, then element i in bits [3i, 3i + 3) of the 12 bytes qs (LSB first); y = d * (q - 4). */
static void q3s_dequant(const uint8_t *b, double *y) {
    double d = qkref_f16_to_f32((uint16_t)(b[0] | b[1] << 8));
    for (int i = 0; i < Q3S_ELEMENTS; i++) {
        int q = 0;
        for (int k = 0; k < 3; k++) {
            int bit = 3 * i + k;
            q |= ((b[2 + bit / 8] >> (bit % 8)) & 1) << k;
        }
        y[i] = d * (q - 4);
    }
}

/* Any bits are a valid block; d finite, |d| in [0.01, 0.11). */
static void q3s_random(uint64_t *rng, uint8_t *b, size_t nblocks) {
    for (size_t n = 0; n < nblocks; n++, b += Q3S_BYTES) {
        double u = qkref_uniform(rng);
        uint16_t d = qkref_f32_to_f16((float)(u < 0 ? u * 0.1 - 0.01 : u * 0.1 + 0.01));
        b[0] = (uint8_t)d, b[1] = (uint8_t)(d >> 8);
        for (int i = 2; i < Q3S_BYTES; i++)
            b[i] = (uint8_t)qkref_rand(rng);
    }
}

/* ---- the harness: random weights and activations, float64 reference sums */

typedef struct problem {
    uint32_t M, K, T;
    uint8_t *w;
    float *x;
    double *ref; /* [T, M] */
} problem;

static void problem_make(problem *p, uint32_t M, uint32_t K, uint32_t T, uint64_t *rng) {
    *p = (problem){M, K, T, NULL, NULL, NULL};
    size_t row = (size_t)K / Q3S_ELEMENTS * Q3S_BYTES;
    p->w = malloc(row * M);
    p->x = malloc(sizeof *p->x * T * K);
    p->ref = calloc((size_t)T * M, sizeof *p->ref);
    q3s_random(rng, p->w, (size_t)M * K / Q3S_ELEMENTS);
    for (size_t i = 0; i < (size_t)T * K; i++)
        p->x[i] = (float)qkref_uniform(rng);
    double *deq = malloc(sizeof *deq * K);
    for (uint32_t r = 0; r < M; r++) {
        for (uint32_t b = 0; b < K / Q3S_ELEMENTS; b++)
            q3s_dequant(p->w + row * r + (size_t)b * Q3S_BYTES, deq + b * Q3S_ELEMENTS);
        for (uint32_t t = 0; t < T; t++)
            for (uint32_t i = 0; i < K; i++)
                p->ref[(size_t)t * M + r] += deq[i] * p->x[(size_t)t * K + i];
    }
    free(deq);
}

static void problem_free(problem *p) {
    free(p->w), free(p->x), free(p->ref);
}

/* Runs every q3s mat-vec kernel of the bundle: the first on M in {1, 7, 33, 1000} and K up to
 * 4096, the others (tile variants of the same hooks) on one odd-M shape each. */
static int run_bundle(const char *dir, uint64_t *rng) {
    static const uint32_t shapes[][3] = {{1, 4096, 1}, {7, 64, 1}, {33, 1024, 3}, {1000, 4096, 1}};
    qkrt_context *ctx;
    qkrt_bundle *b;
    if (qkrt_create(&(qkrt_desc){0}, &ctx) != QKRT_OK) {
        printf("FAIL: %s\n", qkrt_create_error());
        return 1;
    }
    if (qkrt_bundle_load(ctx, dir, &b) != QKRT_OK) {
        printf("FAIL: %s\n", qkrt_last_error(ctx));
        qkrt_destroy(ctx);
        return 1;
    }
    int pass = 0, fail = 0, kernels = 0;
    double worst = 0;
    for (uint32_t ki = 0; ki < qkrt_bundle_kernel_count(b); ki++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
        if (strcmp(k->format, "q3s") || strcmp(k->family, "matvec") || strcmp(k->fusion, "none"))
            continue;
        for (int s = kernels ? (int)ki % 3 + 1 : 0; s < 4; s++) {
            problem p;
            uint32_t T = shapes[s][2] > 1 ? k->nr1 + 1 : 1; /* a partial last token tile */
            problem_make(&p, shapes[s][0], shapes[s][1], T, rng);
            qk_weights w = {.format = "q3s",
                            .variant = "",
                            .plane_count = 1,
                            .plane = {p.w},
                            .bytes = {(size_t)p.K / Q3S_ELEMENTS * Q3S_BYTES * p.M}};
            float *y = malloc(sizeof *y * T * p.M);
            char err[1024] = "";
            qkrt_result r =
                qk_run_matvec(ctx, b, ki, &w, p.x, p.M, p.K, T, y, NULL, err, sizeof err);
            double nmse = r == QKRT_OK ? qk_nmse(y, p.ref, (size_t)T * p.M) : INFINITY;
            if (!(nmse <= worst)) worst = nmse;
            if (nmse <= 1e-6) {
                pass++;
            } else {
                printf("FAIL %s M=%u K=%u T=%u: NMSE %.3g %s\n", k->name, p.M, p.K, T, nmse, err);
                fail++;
            }
            free(y);
            problem_free(&p);
            if (kernels) break; /* one shape for the tile variants */
        }
        kernels++;
    }
    if (qkrt_validation_errors(ctx)) {
        printf("FAIL: the validation layer reported %u errors\n", qkrt_validation_errors(ctx));
        fail++;
    }
    if (!kernels) {
        printf("FAIL: no q3s mat-vec kernel in %s\n", dir);
        fail++;
    }
    printf("q3s: %d kernels, worst NMSE %.2e\n%d passed, %d failed\n", kernels, worst, pass, fail);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return fail ? 1 : 0;
}

/* Writes W.npy (the blocks, uint8 [M, row bytes]), X.npy (float32 [T, K]) and REF.npy (float64
 * [T, M]) into dir, for `qkgen matmul --format q3s`. */
static int write_npy(const char *dir, uint32_t M, uint32_t K, uint32_t T, uint64_t *rng) {
    problem p;
    problem_make(&p, M, K, T, rng);
    uint64_t shapes[3][2] = {{M, (uint64_t)K / Q3S_ELEMENTS * Q3S_BYTES}, {T, K}, {T, M}};
    const char *names[3] = {"W", "X", "REF"}, *dtypes[3] = {"u1", "f4", "f8"};
    const void *data[3] = {p.w, p.x, p.ref};
    qk_error e = {0};
    bool ok = true;
    for (int i = 0; i < 3 && ok; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/%s.npy", dir, names[i]);
        ok = qk_npy_write(path, dtypes[i], 2, shapes[i], data[i], &e);
    }
    if (!ok) printf("FAIL: %s\n", e.msg);
    problem_free(&p);
    return ok ? 0 : 1;
}

int main(int argc, char **argv) {
    uint64_t seed = getenv("QKGEN_SEED") ? strtoull(getenv("QKGEN_SEED"), NULL, 0)
                                         : (uint64_t)time(NULL) ^ (uint64_t)clock();
    printf("seed %llu (QKGEN_SEED=%llu repeats this run)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    uint64_t rng = seed;
    if (argc == 3 && !strcmp(argv[1], "run")) return run_bundle(argv[2], &rng);
    if (argc == 6 && !strcmp(argv[1], "npy"))
        return write_npy(argv[2], (uint32_t)atoi(argv[3]), (uint32_t)atoi(argv[4]),
                         (uint32_t)atoi(argv[5]), &rng);
    fprintf(stderr, "usage: test_newformat run BUNDLE | npy DIR M K T\n");
    return 2;
}
