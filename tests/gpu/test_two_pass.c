/* The two-pass prefill (docs/matmul.md) on the default device under the validation layer:
 * pass 1 (dequant) bit for bit against the CPU reference rounded to f16, then pass 1 + pass 2
 * (the f16w matmul, matmul_id) against the float64 product of the original weights. */
#include "gpu_common.h"
#include "ops_matmul.h"

/* The formats checked: the GGUF ones of the targets and a planar MLX one. */
static const char *const formats[][2] = {
    {"q4_0", ""}, {"q8_0", ""}, {"q4_K", ""}, {"q6_K", ""}, {"mlx4_g64", "bf16"}};

/* The first kernel of family (operation) for format/variant, with no fusion, that the device
 * runs; -1 if none. */
static int find(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const char *format,
                const char *variant) {
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (!strcmp(k->family, family) && !strcmp(k->format, format) &&
            !strcmp(k->format_variant, variant) && !strcmp(k->fusion, "none") &&
            !strcmp(k->activation, "f32") && qkrt_kernel_check(ctx, b, i) == QKRT_OK)
            return (int)i;
    }
    return -1;
}

static void check(bool ok, const char *what) {
    if (!ok) printf("FAIL %s\n", what);
    ok ? g_pass++ : g_fail++;
}

/* top_k distinct experts per token, never 1 nor E - 1: those get no pair (tpe 0). */
static void random_topk(int32_t *topk, uint32_t T, uint32_t top_k, uint32_t E) {
    for (uint32_t t = 0; t < T; t++)
        for (uint32_t s = 0; s < top_k; s++) {
            int32_t e;
            bool again;
            do {
                e = (int32_t)rnd_below(E);
                again = e == 1 || e == (int32_t)E - 1;
                for (uint32_t j = 0; j < s; j++)
                    again |= topk[t * top_k + j] == e;
            } while (again);
            topk[t * top_k + s] = e;
        }
}

/* The value of an IEEE half (finite). */
static double half_value(uint16_t h) {
    uint32_t ex = (h >> 10) & 31u, mant = h & 1023u;
    double v = ex ? ldexp((double)(mant | 1024u), (int)ex - 25) : ldexp((double)mant, -24);
    return h & 0x8000u ? -v : v;
}

/* Pass 1 alone over E matrices of M x K: every half equals the reference rounded to f16,
 * except where the reference lies within a few f32 ulps of a tie between two halves (the
 * kernel's f32 arithmetic may land on either side); experts with tpe 0 stay poisoned. */
static void test_pass1(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi, uint32_t M,
                       uint32_t K, uint32_t E, const uint32_t *tpe) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, dqi);
    qk_weights w;
    char what[512], err[1024] = "";
    snprintf(what, sizeof what, "%s M=%u K=%u E=%u", k->name, M, K, E);
    if (!qk_random_weights(k->format, k->format_variant, E * M, K, &g_rng, &w)) {
        check(false, what);
        return;
    }
    const size_t n = (size_t)E * M * K;
    uint16_t *h = malloc(n * 2), *hr = malloc(n * 2);
    double *ref = malloc(n * sizeof *ref);
    float *rf = malloc(n * sizeof *rf);
    qkrt_result r = qk_run_dequant(ctx, b, dqi, &w, M, K, E, tpe, h, NULL, err, sizeof err);
    bool ok = r == QKRT_OK && qk_ref_dequant(&w, E * M, K, ref);
    size_t bad = 0, ties = 0, first = n;
    for (size_t i = 0; ok && i < n; i++) {
        rf[i] = (float)ref[i];
        qk_f16_from_f32(&rf[i], 1, &hr[i]);
        bool routed = !tpe || tpe[i / ((size_t)M * K)] > 0;
        if (!routed) {
            bad += h[i] != (QK_F16_NAN2 & 0xffffu);
        } else if (h[i] != hr[i]) {
            /* a tie: neighbouring halves, the reference within 2^-20 of their midpoint */
            bool next = (h[i] ^ hr[i]) < 0x8000u && (h[i] == hr[i] + 1u || hr[i] == h[i] + 1u);
            double mid = 0.5 * (half_value(h[i]) + half_value(hr[i]));
            if (next && fabs(ref[i] - mid) <= fabs(ref[i]) * 0x1p-20)
                ties++;
            else if (!bad++)
                first = i;
        }
    }
    if (first < n)
        printf("  %s: half %zu is 0x%04x, the reference %.9g rounds to 0x%04x\n", k->name, first,
               h[first], ref[first], hr[first]);
    printf("pass 1 %s: %zu halves, %zu differ, %zu ties off by one ulp %s\n", what, n, bad, ties,
           err);
    check(ok && bad == 0, what);
    free(h), free(hr), free(ref), free(rf);
    qk_free_weights(&w);
}

static void test_dense(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi, uint32_t mmi) {
    const qkrt_kernel_info *dq = qkrt_bundle_kernel(b, dqi), *mm = qkrt_bundle_kernel(b, mmi);
    static const uint32_t shapes[][3] = {{33, 256, 5}, {130, 512, 70}, {20, 64, 9}};
    for (int si = 0; si < 3; si++) {
        uint32_t M = shapes[si][0], K = gpu_fit_k(mm, gpu_fit_k(dq, shapes[si][1])),
                 T = shapes[si][2];
        qk_weights w;
        char what[512], err[1024] = "";
        snprintf(what, sizeof what, "%s + %s M=%u K=%u T=%u", dq->name, mm->name, M, K, T);
        if (!qk_random_weights(dq->format, dq->format_variant, M, K, &g_rng, &w)) {
            check(false, what);
            continue;
        }
        float *x = malloc(sizeof *x * T * K), *y = malloc(sizeof *y * T * M);
        double *xd = malloc(sizeof *xd * T * K), *ref = malloc(sizeof *ref * T * M);
        rnd_fill(x, xd, (size_t)T * K, 1.0);
        double ns[2] = {0};
        qkrt_result r =
            qk_run_matmul_two_pass(ctx, b, dqi, mmi, &w, x, M, K, T, y, ns, err, sizeof err);
        qk_ref_matmul(&w, 1, xd, M, K, T, ref);
        double nmse = r == QKRT_OK ? qk_nmse(y, ref, (size_t)T * M) : INFINITY;
        printf("two-pass %s: NMSE %.3g (bound %.0e) %s\n", what, nmse, qk_nmse_bound(mm), err);
        check(nmse <= qk_nmse_bound(mm), what);
        free(x), free(y), free(xd), free(ref);
        qk_free_weights(&w);
    }
}

static void test_moe(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi, uint32_t mmi) {
    const qkrt_kernel_info *dq = qkrt_bundle_kernel(b, dqi), *mm = qkrt_bundle_kernel(b, mmi);
    /* M, K, T, E, top_k, ne11 as 1 (gate/up) or top_k (down) */
    static const uint32_t shapes[][6] = {{45, 256, 37, 8, 2, 1}, {130, 256, 70, 16, 4, 4}};
    for (int si = 0; si < 2; si++) {
        qk_moe_shape s = {shapes[si][0], gpu_fit_k(mm, gpu_fit_k(dq, shapes[si][1])),
                          shapes[si][2], shapes[si][3],
                          shapes[si][4], shapes[si][5]};
        qk_weights w;
        char what[512], err[1024] = "";
        snprintf(what, sizeof what, "%s + %s M=%u K=%u T=%u E=%u top_k=%u ne11=%u", dq->name,
                 mm->name, s.M, s.K, s.T, s.E, s.top_k, s.ne11);
        if (!qk_random_weights(dq->format, dq->format_variant, s.E * s.M, s.K, &g_rng, &w)) {
            check(false, what);
            continue;
        }
        size_t nx = (size_t)s.T * s.ne11 * s.K, ny = (size_t)s.T * s.top_k * s.M;
        float *x = malloc(sizeof *x * nx), *y = malloc(sizeof *y * ny);
        double *xd = malloc(sizeof *xd * nx), *ref = malloc(sizeof *ref * ny);
        int32_t *topk = malloc(sizeof *topk * s.T * s.top_k);
        rnd_fill(x, xd, nx, 1.0);
        random_topk(topk, s.T, s.top_k, s.E);
        qkrt_result r =
            qk_run_matmul_id_two_pass(ctx, b, dqi, mmi, &w, x, topk, &s, y, NULL, err, sizeof err);
        qk_ref_matmul_id(&w, 1, xd, topk, &s, ref);
        double nmse = r == QKRT_OK ? qk_nmse(y, ref, ny) : INFINITY;
        printf("two-pass %s: NMSE %.3g %s\n", what, nmse, err);
        check(nmse <= qk_nmse_bound(mm), what);
        free(x), free(y), free(xd), free(ref), free(topk);
        qk_free_weights(&w);
    }
}

/* Pairs the host operations refuse, with their message, before any dispatch. */
static void test_refused(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dq, uint32_t dqid,
                         uint32_t mm) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, dq);
    qk_weights w;
    if (!qk_random_weights(k->format, k->format_variant, 4, k->block_elements, &g_rng, &w)) return;
    float x[512] = {0}, y[16];
    const uint32_t K = k->block_elements;
    const struct {
        uint32_t dq, mm;
        const char *says;
    } bad[] = {{dq, dq, "is not an unfused matmul kernel on f16w weights"},
               {mm, mm, "is not a dequant kernel of format"},
               {dqid, mm, "reads expert counts (tpe) this call has none of"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char err[1024] = "", what[256];
        qkrt_result r = qk_run_matmul_two_pass(ctx, b, bad[i].dq, bad[i].mm, &w, x, 4, K, 1, y,
                                               NULL, err, sizeof err);
        snprintf(what, sizeof what, "refused (%s): got '%s'", bad[i].says, err);
        check(r != QKRT_OK && strstr(err, bad[i].says), what);
    }
    qk_free_weights(&w);
}

int main(int argc, char **argv) {
    const char *filter;
    qkrt_context *ctx;
    qkrt_bundle *b;
    int start = gpu_start(argc, argv, &filter, &ctx, &b);
    if (start) return start;
    for (size_t f = 0; f < sizeof formats / sizeof formats[0]; f++) {
        const char *fmt = formats[f][0], *var = formats[f][1];
        if (filter && !strstr(fmt, filter)) continue;
        int dq = find(ctx, b, "dequant", fmt, var), dqid = find(ctx, b, "dequant_id", fmt, var);
        int mm = find(ctx, b, "matmul", QK_F16W, ""), mmid = find(ctx, b, "matmul_id", QK_F16W, "");
        if (dq < 0 || dqid < 0 || mm < 0 || mmid < 0) {
            printf("FAIL %s%s%s: the bundle lacks a dequant (%d), dequant_id (%d), f16w matmul "
                   "(%d) or matmul_id (%d) kernel this device runs\n",
                   fmt, var[0] ? "/" : "", var, dq, dqid, mm, mmid);
            g_fail++;
            continue;
        }
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)dq);
        /* rows off any tile; K of one block, and of several, at least 1000 hook calls so that
         * several workgroups and the last one's partial run show */
        test_pass1(ctx, b, (uint32_t)dq, 37, gpu_fit_k(k, 32), 1, NULL);
        test_pass1(ctx, b, (uint32_t)dq, 67, gpu_fit_k(k, 768), 1, NULL);
        test_pass1(ctx, b, (uint32_t)dq, 19, gpu_fit_k(k, 256), 3, NULL);
        const uint32_t tpe[6] = {3, 0, 1, 7, 0, 2}; /* experts 1 and 4 routed nowhere */
        test_pass1(ctx, b, (uint32_t)dqid, 19, gpu_fit_k(k, 512), 6, tpe);
        test_dense(ctx, b, (uint32_t)dq, (uint32_t)mm);
        test_moe(ctx, b, (uint32_t)dqid, (uint32_t)mmid);
        test_moe(ctx, b, (uint32_t)dq, (uint32_t)mmid); /* pass 1 over all experts */
        if (f == 0) test_refused(ctx, b, (uint32_t)dq, (uint32_t)dqid, (uint32_t)mm);
    }
    return gpu_close(ctx, b);
}
