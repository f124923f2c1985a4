/* Every matmul and matmul_id kernel of a bundle, the moe_route kernel, and a
 * routed MoE block through indirect dispatch, against the float64 references
 * on the default device under the validation layer: fresh random data each run
 * (the seed is printed; QKGEN_SEED repeats a run), outputs poisoned with NaN,
 * rows and tokens that are not multiples of the tile, experts with no tokens. */
#include "gpu_common.h"
#include "ops_moe_layer.h" /* qk_run_moe_ffn */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static uint64_t rng;
static int pass, fail, skip;
/* the largest NMSE seen on the scalar [0], coopmat [1] and int8-dot [2] paths */
static double worst[3];

static uint64_t next(void) {
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return rng >> 11;
}

static void random_x(float *x, double *xd, size_t n) {
    for (size_t i = 0; i < n; i++)
        xd[i] = x[i] = (float)((double)next() / 9007199254740992.0 * 2 - 1);
}

/* top_k distinct experts per token, never experts 1 and E - 1, so that some
 * experts get no token at all. */
static void random_topk(int32_t *topk, uint32_t T, uint32_t top_k, uint32_t E) {
    int32_t pool[512];
    for (uint32_t t = 0; t < T; t++) {
        uint32_t n = 0;
        for (uint32_t e = 0; e < E; e++)
            if (e != 1 && e != E - 1) pool[n++] = (int32_t)e;
        for (uint32_t s = 0; s < top_k; s++) { /* partial Fisher-Yates */
            uint32_t j = s + (uint32_t)(next() % (n - s));
            int32_t v = pool[j];
            pool[j] = pool[s], pool[s] = v;
            topk[t * top_k + s] = v;
        }
    }
}

static uint32_t weight_count(const qkrt_kernel_info *k) {
    for (uint32_t i = 0; i < k->binding_count; i++)
        if (!strcmp(k->bindings[i].role, "weights")) return k->bindings[i].count;
    return 0;
}

static void report(const qkrt_kernel_info *k, const char *what, double nmse, const char *err) {
    /* 5e-4 for f16 staging (ggml's bound for its matmul tests), 1e-4 against
     * activations rounded to bytes as the int8-dot kernels round them */
    bool ok = nmse <= qk_nmse_bound(k);
    int path = !strncmp(k->mma, "coopmat", 7) ? 1 : qk_rounds_x8(k) ? 2 : 0;
    if (isfinite(nmse) && nmse > worst[path]) worst[path] = nmse;
    if (!ok) printf("FAIL %s %s: NMSE %.3g %s\n", k->name, what, nmse, err);
    ok ? pass++ : fail++;
}

static bool random_weights(const qkrt_kernel_info *k, uint32_t rows, uint32_t K, qk_weights *w,
                           uint32_t nw) {
    for (uint32_t m = 0; m < nw; m++)
        if (!qk_random_weights(k->format, k->format_variant, rows, K, &rng, &w[m])) {
            printf("FAIL %s: no reference for format %s\n", k->name, k->format);
            fail++;
            return false;
        }
    return true;
}

static void test_matmul(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    /* the last: K of one or two steps, so that some of a split-K kernel's
     * splits have no step and store zeros */
    static const uint32_t shapes[][3] = {{33, 256, 5}, {130, 512, 70}, {64, 256, 32}, {20, 64, 9}};
    const uint32_t nw = weight_count(k);
    for (int si = 0; si < 4; si++) {
        uint32_t M = shapes[si][0], K = gpu_fit_k(k, shapes[si][1]), T = shapes[si][2];
        qk_weights w[2];
        if (!random_weights(k, M, K, w, nw)) return;
        float *x = malloc(sizeof *x * T * K), *y = malloc(sizeof *y * T * M);
        double *xd = malloc(sizeof *xd * T * K), *ref = malloc(sizeof *ref * T * M);
        random_x(x, xd, (size_t)T * K);
        char err[1024] = "", what[64];
        qkrt_result r = qk_run_matmul(ctx, b, ki, w, x, M, K, T, y, NULL, err, sizeof err);
        qk_ref_matmul(w, nw, xd, M, K, T, ref);
        snprintf(what, sizeof what, "M=%u K=%u T=%u", M, K, T);
        report(k, what, r == QKRT_OK ? qk_nmse(y, ref, (size_t)T * M) : INFINITY, err);
        free(x), free(y), free(xd), free(ref);
        for (uint32_t m = 0; m < nw; m++)
            qk_free_weights(&w[m]);
    }
    /* K off the block is refused with a message, before any dispatch */
    char err[1024] = "";
    float dummy[4] = {0};
    qk_weights w = {.format = k->format, .plane_count = 1, .plane = {dummy}, .bytes = {16}};
    qk_weights ws[2] = {w, w};
    uint32_t badk = k->block_elements + k->block_elements / 2 + 1;
    qkrt_result r = qk_run_matmul(ctx, b, ki, ws, dummy, 1, badk, 1, dummy, NULL, err, sizeof err);
    if (r == QKRT_OK || !strstr(err, "is not a multiple of")) {
        printf("FAIL %s: K = %u was not refused as it should be: '%s'\n", k->name, badk, err);
        fail++;
    } else {
        pass++;
    }
}

static void test_matmul_id(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    /* M, K, T, E, top_k, ne11 as 1 (gate/up) or top_k (down) */
    static const uint32_t shapes[][6] = {
        {45, 256, 37, 8, 2, 1}, {130, 256, 70, 16, 4, 4}, {20, 512, 3, 8, 2, 2}};
    const uint32_t nw = weight_count(k);
    for (int si = 0; si < 3; si++) {
        qk_moe_shape s = {shapes[si][0], gpu_fit_k(k, shapes[si][1]),
                          shapes[si][2], shapes[si][3],
                          shapes[si][4], shapes[si][5]};
        qk_weights w[2];
        if (!random_weights(k, s.E * s.M, s.K, w, nw)) return;
        size_t nx = (size_t)s.T * s.ne11 * s.K, ny = (size_t)s.T * s.top_k * s.M;
        float *x = malloc(sizeof *x * nx), *y = malloc(sizeof *y * ny);
        double *xd = malloc(sizeof *xd * nx), *ref = malloc(sizeof *ref * ny);
        int32_t *topk = malloc(sizeof *topk * s.T * s.top_k);
        random_x(x, xd, nx);
        random_topk(topk, s.T, s.top_k, s.E);
        /* swiglu_oai clamps the gates and ups of random blocks (hundreds) to
         * +-7 but not the error of their f16-staged sums: x is scaled until
         * the largest gate is 10, a mix of clamped and unclamped values as
         * real pre-activations are */
        if (!strcmp(k->fusion, "swiglu_oai") && qk_ref_matmul_id(w, 1, xd, topk, &s, ref)) {
            double most = 0;
            for (size_t i = 0; i < ny; i++)
                most = fmax(most, fabs(ref[i]));
            for (size_t i = 0; most > 10 && i < nx; i++)
                xd[i] = x[i] = (float)(x[i] * (10 / most));
        }
        char err[1024] = "", what[96];
        qkrt_result r = qk_run_matmul_id(ctx, b, ki, w, x, topk, &s, y, NULL, err, sizeof err);
        if (qk_rounds_x8(k)) qk_round_x8(xd, x, nx);
        qk_ref_matmul_id_glu(w, nw, k->fusion, xd, topk, &s, ref);
        snprintf(what, sizeof what, "M=%u K=%u T=%u E=%u top_k=%u ne11=%u", s.M, s.K, s.T, s.E,
                 s.top_k, s.ne11);
        report(k, what, r == QKRT_OK ? qk_nmse(y, ref, ny) : INFINITY, err);
        free(x), free(y), free(xd), free(ref), free(topk);
        for (uint32_t m = 0; m < nw; m++)
            qk_free_weights(&w[m]);
    }
}

/* The routing kernel against qk_route_ref, exactly: counts, the order of the
 * pairs, and the indirect arguments. */
static void test_route(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    static const uint32_t shapes[][3] = {{37, 2, 8}, {300, 8, 64}, {1, 4, 512}, {70, 4, 16}};
    for (int si = 0; si < 4; si++) {
        uint32_t T = shapes[si][0], top_k = shapes[si][1], E = shapes[si][2];
        int32_t *topk = malloc(sizeof *topk * T * top_k);
        uint32_t *tpe = malloc(sizeof *tpe * E), *ids = malloc(sizeof *ids * E * T);
        uint32_t *rtpe = malloc(sizeof *rtpe * E), *rids = malloc(sizeof *rids * E * T);
        random_topk(topk, T, top_k, E);
        if (si == 3) topk[5] = -1, topk[17] = (int32_t)E + 3; /* bad ids route nowhere */
        const uint32_t gx[2] = {5, 9}, tn[2] = {16, 32};
        uint32_t disp[6];
        char err[1024] = "";
        qkrt_result r = qk_run_moe_route(ctx, b, ki, topk, T, top_k, E, gx, tn, tpe, ids, disp, err,
                                         sizeof err);
        qk_route_ref(topk, T, top_k, E, T, rtpe, rids);
        uint32_t most = 0, bad = 0;
        for (uint32_t e = 0; e < E && r == QKRT_OK; e++) {
            most = rtpe[e] > most ? rtpe[e] : most;
            if (tpe[e] != rtpe[e]) {
                if (!bad++) printf("  tpe[%u] = %u, expected %u\n", e, tpe[e], rtpe[e]);
                continue;
            }
            for (uint32_t j = 0; j < tpe[e]; j++)
                if (ids[e * T + j] != rids[e * T + j] && !bad++)
                    printf("  ids[%u][%u] = %u, expected %u\n", e, j, ids[e * T + j],
                           rids[e * T + j]);
        }
        const uint32_t want[6] = {gx[0], (most + tn[0] - 1) / tn[0], E,
                                  gx[1], (most + tn[1] - 1) / tn[1], E};
        if (r == QKRT_OK && memcmp(disp, want, sizeof want) && !bad++)
            printf("  disp = %u %u %u %u %u %u, expected %u %u %u %u %u %u\n", disp[0], disp[1],
                   disp[2], disp[3], disp[4], disp[5], want[0], want[1], want[2], want[3], want[4],
                   want[5]);
        if (r != QKRT_OK || bad) {
            printf("FAIL %s T=%u top_k=%u E=%u: %u differences %s\n", k->name, T, top_k, E, bad,
                   err);
            fail++;
        } else {
            pass++;
        }
        free(topk), free(tpe), free(ids), free(rtpe), free(rids);
    }
}

/* The first kernel of family for format with this math path and fusion that
 * the device runs; -1 if none (why in why). */
static int find(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const char *format,
                const char *mma, const char *fusion, char *why, size_t n) {
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (strcmp(k->family, family) || (format && strcmp(k->format, format)) ||
            (mma && strcmp(k->mma, mma)) || (fusion && strcmp(k->fusion, fusion)) ||
            strcmp(k->activation, "f32"))
            continue;
        if (qkrt_kernel_check(ctx, b, i) == QKRT_OK) return (int)i;
        snprintf(why, n, "%s", qkrt_last_error(ctx));
    }
    return -1;
}

/* moe_route -> matmul_id (swiglu gate/up) -> matmul_id (down), one submission,
 * both products dispatched indirectly from the arguments the router wrote
 * (the down product on the math path mma_down: a mat-vec tile of
 * matmul_id_xq takes its grid's x from its own rule, not from NR0). */
static void test_moe_ffn(qkrt_context *ctx, const qkrt_bundle *b, int route, const char *format,
                         const char *mma, const char *mma_down) {
    char why[512] = "no matmul_id kernel";
    int gu = find(ctx, b, "matmul_id", format, mma, "swiglu", why, sizeof why);
    int dn = gu < 0 ? -1 : find(ctx, b, "matmul_id", format, mma_down, "none", why, sizeof why);
    if (gu < 0 || dn < 0) {
        printf("SKIP moe_ffn %s %s: %s (not counted as passing)\n", format, mma, why);
        skip++;
        return;
    }
    const qkrt_kernel_info *kg = qkrt_bundle_kernel(b, (uint32_t)gu);
    const qkrt_kernel_info *kd = qkrt_bundle_kernel(b, (uint32_t)dn);
    const uint32_t T = 37, top_k = 4, E = 8, F = gpu_fit_k(kd, gpu_fit_k(kg, 256));
    const uint32_t H = gpu_fit_k(kg, 288); /* 288: not a multiple of 64 */
    qk_weights wgu[2], wd;
    if (!random_weights(kg, E * F, H, wgu, 2) || !random_weights(kd, E * H, F, &wd, 1)) return;
    float *x = malloc(sizeof *x * T * H), *h = malloc(sizeof *h * T * top_k * F);
    float *y = malloc(sizeof *y * T * top_k * H);
    double *xd = malloc(sizeof *xd * T * H), *hr = malloc(sizeof *hr * T * top_k * F);
    double *yr = malloc(sizeof *yr * T * top_k * H);
    int32_t *topk = malloc(sizeof *topk * T * top_k);
    random_x(x, xd, (size_t)T * H);
    random_topk(topk, T, top_k, E);
    /* Random blocks use the whole quant range (mxfp4 and K-quant values reach
     * thousands), so silu(g) * u can pass f16's 65504 where the down kernel
     * stages it. Real activations are far smaller: x is scaled until the
     * intermediate stays under 1024 (h shrinks at least as the square of x). */
    qk_moe_shape sg = {F, H, T, E, top_k, 1}, sd = {H, F, T, E, top_k, top_k};
    for (int round = 0; round < 4; round++) {
        qk_ref_matmul_id(wgu, 2, xd, topk, &sg, hr);
        double most = 0;
        for (size_t i = 0; i < (size_t)T * top_k * F; i++)
            most = fmax(most, fabs(hr[i]));
        if (most <= 1024) break;
        double scale = sqrt(1024 / most) * 0.9;
        for (size_t i = 0; i < (size_t)T * H; i++)
            xd[i] = x[i] = (float)(x[i] * scale);
    }
    qk_ref_matmul_id(&wd, 1, hr, topk, &sd, yr);
    char err[1024] = "", what[160];
    qkrt_result r = qk_run_moe_ffn(ctx, b, (uint32_t)route, (uint32_t)gu, (uint32_t)dn, wgu, &wd, x,
                                   topk, T, top_k, E, H, F, h, y, err, sizeof err);
    /* an int8-dot down product rounds its activations, the kernel's h: its
     * reference takes that h so rounded (the gate/up product is checked by nh) */
    if (r == QKRT_OK && qk_rounds_x8(kd)) {
        double *h8 = malloc(sizeof *h8 * T * top_k * F);
        qk_round_x8(h8, h, (size_t)T * top_k * F);
        qk_ref_matmul_id(&wd, 1, h8, topk, &sd, yr);
        free(h8);
    }
    double nh = r == QKRT_OK ? qk_nmse(h, hr, (size_t)T * top_k * F) : INFINITY;
    double ny = r == QKRT_OK ? qk_nmse(y, yr, (size_t)T * top_k * H) : INFINITY;
    snprintf(what, sizeof what,
             "(routed, indirect, gate/up NMSE %.3g) then %s: T=%u E=%u H=%u F=%u", nh, kd->name, T,
             E, H, F);
    report(kg, what, fmax(nh, ny), err);
    printf("moe_ffn %s + %s: gate/up NMSE %.3g, down NMSE %.3g\n", kg->name, kd->name, nh, ny);
    free(x), free(h), free(y), free(xd), free(hr), free(yr), free(topk);
    qk_free_weights(&wgu[0]), qk_free_weights(&wgu[1]), qk_free_weights(&wd);
}

int main(int argc, char **argv) {
    const char *filter;
    qkrt_context *ctx;
    qkrt_bundle *b;
    int start = gpu_start(argc, argv, &filter, &ctx, &b);
    if (start) return start;
    rng = g_rng; /* the printed seed */
    const qkrt_device_info *dev = qkrt_device(ctx);
    printf("cooperative matrix NV: %s\n", dev->cooperative_matrix_nv ? "yes" : "no");
    int kernels = 0, route = -1;
    char formats[64][64];
    uint32_t nformats = 0;
    for (uint32_t ki = 0; ki < qkrt_bundle_kernel_count(b); ki++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
        bool mm = !strcmp(k->family, "matmul"), id = !strcmp(k->family, "matmul_id");
        if (!strcmp(k->family, "moe_route") && qkrt_kernel_check(ctx, b, ki) == QKRT_OK)
            route = (int)ki;
        if ((!mm && !id) || (filter && !strstr(k->name, filter))) continue;
        /* the coopmat path needs VK_NV_cooperative_matrix, and a tile past the
         * device's shared memory (lavapipe: 32 KiB) cannot run; any other
         * kernel must */
        if (gpu_skip_shared(ctx, k) || gpu_skip_coopmat(ctx, b, ki)) {
            skip++;
            continue;
        }
        if (qkrt_kernel_check(ctx, b, ki) != QKRT_OK) {
            printf("FAIL %s: the device cannot run it: %s\n", k->name, qkrt_last_error(ctx));
            fail++;
            continue;
        }
        kernels++;
        mm ? test_matmul(ctx, b, ki) : test_matmul_id(ctx, b, ki);
        uint32_t f = 0;
        while (f < nformats && strcmp(formats[f], k->format))
            f++;
        if (id && f == nformats && nformats < 64)
            snprintf(formats[nformats++], 64, "%s", k->format);
    }
    if (route < 0) {
        printf("FAIL: no moe_route kernel this device runs in %s\n", argv[1]);
        fail++;
    } else if (!filter || strstr("moe_route", filter) || nformats) {
        test_route(ctx, b, (uint32_t)route);
        for (uint32_t f = 0; f < nformats; f++) {
            test_moe_ffn(ctx, b, route, formats[f], "scalar", "scalar");
            test_moe_ffn(ctx, b, route, formats[f], "coopmat", "coopmat");
            char why[512];
            if (find(ctx, b, "matmul_id", formats[f], "dot8", "none", why, sizeof why) >= 0)
                test_moe_ffn(ctx, b, route, formats[f], "scalar", "dot8");
        }
    }
    uint32_t verrs = qkrt_validation_errors(ctx);
    if (verrs) {
        printf("FAIL: the validation layer reported %u errors\n", verrs);
        fail++;
    }
    if (kernels == 0 && !(filter && strstr("moe_route", filter))) {
        printf("FAIL: no matmul kernel in %s that this device runs\n", argv[1]);
        fail++;
    }
    printf("largest NMSE: scalar %.3g, coopmat %.3g (bound 5e-4), int8 dot %.3g (bound 1e-4)\n",
           worst[0], worst[1], worst[2]);
    printf("%d kernels; %d passed, %d failed, %d skipped\n", kernels, pass, fail, skip);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return fail ? 1 : 0;
}
