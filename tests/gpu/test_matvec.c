/* Every mat-vec kernel of a bundle against the independent CPU reference, on
 * the default device under the validation layer: fresh random weights and
 * activations each run (the seed is printed; QKGEN_SEED repeats a run),
 * outputs poisoned with NaN, rows that are not multiples of the tile. */
#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const uint32_t rows[] = {1, 7, 33, 1000};
static const uint32_t depths[] = {256, 1024, 4096, 512};

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: test_gpu_matvec BUNDLE [FILTER]\n");
        return 2;
    }
    const char *filter = argc > 2 ? argv[2] : NULL;
    uint64_t seed = getenv("QKGEN_SEED") ? strtoull(getenv("QKGEN_SEED"), NULL, 0)
                                         : (uint64_t)time(NULL) ^ (uint64_t)clock();
    printf("seed %llu (QKGEN_SEED=%llu repeats this run)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    qkrt_context *ctx;
    qkrt_bundle *b;
    if (qkrt_create(&(qkrt_desc){0}, &ctx) != QKRT_OK) {
        printf("FAIL: %s\n", qkrt_create_error());
        return 1;
    }
    if (qkrt_bundle_load(ctx, argv[1], &b) != QKRT_OK) {
        printf("FAIL: %s\n", qkrt_last_error(ctx));
        return 1;
    }
    printf("device: %s\n", qkrt_device(ctx)->name);
    uint64_t rng = seed;
    int pass = 0, fail = 0, kernels = 0;
    for (uint32_t ki = 0; ki < qkrt_bundle_kernel_count(b); ki++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
        if (strcmp(k->family, "matvec") || (filter && !strstr(k->name, filter))) continue;
        if (qkrt_kernel_check(ctx, b, ki) != QKRT_OK) {
            printf("FAIL %s: the device cannot run it: %s\n", k->name, qkrt_last_error(ctx));
            fail++;
            continue;
        }
        kernels++;
        for (int si = 0; si < 4; si++) {
            uint32_t M = rows[si], K = depths[(ki + si) % 4];
            if (K % k->block_elements) K = k->block_elements * (si + 1);
            uint32_t tokens[2] = {1, k->nr1 + 1};
            for (int ti = 0; ti < (k->nr1 > 1 ? 2 : 1); ti++) {
                uint32_t T = tokens[ti];
                qk_weights w;
                if (!qk_random_weights(k->format, k->format_variant, M, K, &rng, &w)) {
                    printf("FAIL %s: no reference for format %s\n", k->name, k->format);
                    fail++;
                    break;
                }
                float *x = malloc(sizeof *x * T * K), *y = malloc(sizeof *y * T * M);
                double *xd = malloc(sizeof *xd * T * K), *ref = malloc(sizeof *ref * T * M);
                for (size_t i = 0; i < (size_t)T * K; i++) {
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    xd[i] = x[i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
                }
                char err[1024] = "";
                qkrt_result r = qk_run_matvec(ctx, b, ki, &w, x, M, K, T, y, NULL, err, sizeof err);
                qk_ref_matvec(&w, xd, M, K, T, ref);
                double nmse = r == QKRT_OK ? qk_nmse(y, ref, (size_t)T * M) : INFINITY;
                bool ok = nmse <= 1e-6;
                if (!ok)
                    printf("FAIL %s M=%u K=%u T=%u: NMSE %.3g %s\n", k->name, M, K, T, nmse, err);
                ok ? pass++ : fail++;
                free(x), free(y), free(xd), free(ref);
                qk_free_weights(&w);
            }
        }
    }
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
