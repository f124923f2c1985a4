/* The post-op kernels on the device against float64 CPU references: router
 * softmax/top-k (with and without renormalisation) and the other routing
 * forms (topk_softmax, sigmoid_bias: grouped; reading the logits, or
 * computing them from x and the router's weights), the MoE combine with each
 * of its fusions, a shared expert's output (gated or not) among them (reading
 * the slots, or computing them: the down projection inside), elementwise
 * SwiGLU and the quantized embedding gather of every format. */
#include "gpu_common.h"

/* Runs kernel ki once on host arrays: ins are uploaded, outs poisoned with
 * NaN and downloaded; w (optional) are the weights. Prints a failure. */
typedef struct host_buf {
    const char *name;
    void *data; /* in: read; out: written */
    size_t bytes;
    bool out;
} host_buf;

static bool run_host(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, const qk_weights *w,
                     host_buf *hb, uint32_t n, const char *const *names, const int64_t *vals,
                     uint32_t nvars) {
    qk_wbufs wb = {0};
    qk_bind binds[16];
    char err[1024] = "";
    qkrt_result r = w ? qk_wbufs_upload(ctx, w, &wb) : QKRT_OK;
    uint32_t made = 0;
    for (; made < n && r == QKRT_OK; made++) {
        binds[made].name = hb[made].name;
        r = qk_buffer_from(ctx, hb[made].out ? NULL : hb[made].data, hb[made].bytes,
                           &binds[made].buf);
        if (r != QKRT_OK) break;
    }
    qkrt_dispatch d;
    qk_slots slots;
    if (r == QKRT_OK)
        r = qk_dispatch_setup(b, ki, w ? &wb : NULL, w ? 1 : 0, binds, n, names, vals, nvars, &d,
                              &slots, err, sizeof err);
    if (r == QKRT_OK) r = qkrt_run(ctx, &d, 1);
    for (uint32_t i = 0; i < n && r == QKRT_OK; i++)
        if (hb[i].out) r = qkrt_buffer_download(ctx, binds[i].buf, 0, hb[i].data, hb[i].bytes);
    if (r != QKRT_OK) {
        printf("FAIL %s: %s\n", qkrt_bundle_kernel(b, ki)->name,
               err[0] ? err : qkrt_last_error(ctx));
        g_fail++;
    }
    for (uint32_t i = 0; i < made; i++)
        qkrt_buffer_destroy(ctx, binds[i].buf);
    qk_wbufs_destroy(ctx, &wb);
    return r == QKRT_OK;
}

/* A router kernel's routing form (its fusion) with the parameters of a test:
 * sigmoid_bias takes a random bias [E] and scale, and n_group groups of
 * which topk_group are kept (ng 0: the most of 16, 8, 4, 2 that divides E
 * and keeps top_k experts with half the groups). */
typedef struct route_case {
    qk_route_form form;
    float *bias, scale;
    double *biasd;
} route_case;

static void route_case_make(const qkrt_kernel_info *k, uint32_t E, uint32_t TK, uint32_t ng,
                            uint32_t kg, route_case *rc) {
    *rc = (route_case){0};
    qk_route_form_of(k->fusion, &rc->form);
    rc->bias = malloc(4 * E), rc->biasd = malloc(8 * E);
    rnd_fill(rc->bias, rc->biasd, E, 1.0);
    rc->scale = (float)(2 + rnd_unit()), rc->form.scale = rc->scale;
    rc->form.bias = rc->biasd;
    for (uint32_t g = 16; !ng && g >= 1; g /= 2)
        if (E % g == 0 && TK <= (g > 1 ? g / 2 : 1) * (E / g)) ng = g, kg = g > 1 ? g / 2 : 1;
    rc->form.n_group = ng, rc->form.topk_group = kg;
    if (ng > 1 && E / ng >= 1) /* group 1 a copy of group 0: tied groups, tied experts */
        for (uint32_t j = 0; j < E / ng; j++)
            rc->bias[E / ng + j] = rc->bias[j], rc->biasd[E / ng + j] = rc->biasd[j];
    if (E > 3) rc->bias[1] = rc->bias[2], rc->biasd[1] = rc->biasd[2];
}

static void route_case_free(route_case *rc) {
    free(rc->bias), free(rc->biasd);
}

/* The shape variables of a router run: E, T, top_k, then K (computed) and
 * sigmoid_bias's push constants. */
static uint32_t route_vars(const route_case *rc, uint32_t E, uint32_t T, uint32_t TK, uint32_t K,
                           bool computed, const char **names, int64_t *vals) {
    uint32_t n = 0, bits;
    memcpy(&bits, &rc->scale, 4);
    names[n] = "E", vals[n++] = E;
    names[n] = "T", vals[n++] = T;
    names[n] = "top_k", vals[n++] = TK;
    if (computed) names[n] = "K", vals[n++] = K;
    names[n] = "n_group", vals[n++] = rc->form.n_group;
    names[n] = "topk_group", vals[n++] = rc->form.topk_group;
    names[n] = "scale_bits", vals[n++] = bits;
    return n;
}

/* ids and weights against the reference of logits lgd: ids exactly, but
 * where sigmoid_bias's f32 scores break a near tie (scores within 1e-5) the
 * other way the token is counted as such and its weights left out. */
static void check_route(const char *what, const route_case *rc, const double *lgd, uint32_t T,
                        uint32_t E, uint32_t TK, const int32_t *ids, float *w) {
    int32_t *iref = malloc(4 * T * TK);
    double *wref = malloc(8 * T * TK), *choice = malloc(8 * (size_t)T * E);
    qk_ref_route(lgd, T, E, TK, &rc->form, iref, wref, choice);
    uint32_t wrong = 0, near = 0;
    for (uint32_t t = 0; t < T; t++) {
        bool differ = false, close = true;
        uint32_t first = 0;
        for (uint32_t s = 0; s < TK; s++) {
            const uint32_t p = t * TK + s;
            if (ids[p] == iref[p]) continue;
            if (!differ) first = p;
            differ = true;
            const double *c = choice + (size_t)t * E;
            close = close && rc->form.kind == QK_ROUTE_SIGMOID_BIAS && ids[p] >= 0 &&
                    (uint32_t)ids[p] < E && fabs(c[ids[p]] - c[iref[p]]) <= 1e-5;
        }
        if (differ && !close && !wrong++)
            printf("FAIL %s: expert ids differ (token %u slot %u: %d vs %d)\n", what, t, first % TK,
                   ids[first], iref[first]);
        if (differ && close) {
            near++;
            for (uint32_t s = 0; s < TK; s++)
                w[t * TK + s] = (float)wref[t * TK + s];
        }
    }
    if (near) printf("note %s: %u token(s) with a near tie broken the other way\n", what, near);
    wrong ? g_fail++ : g_pass++;
    check_nmse(what, w, wref, (size_t)T * TK, 1e-6);
    free(iref), free(wref), free(choice);
}

static void test_router(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t T,
                        uint32_t E, uint32_t TK, uint32_t ng, uint32_t kg) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    route_case rc;
    route_case_make(k, E, TK, ng, kg, &rc);
    float *lg = malloc(4 * T * E), *w = malloc(4 * T * TK);
    double *lgd = malloc(8 * T * E);
    int32_t *ids = malloc(4 * T * TK);
    rnd_fill(lg, lgd, (size_t)T * E, 4.0);
    if (E > 3) lg[1] = lg[2], lgd[1] = lgd[2]; /* a tie: the lower index goes first */
    const uint32_t G = rc.form.n_group > 1 ? E / rc.form.n_group : 0;
    for (uint32_t t = 0; t < T; t += 2) /* tied groups (route_case_make) in even tokens */
        for (uint32_t j = 0; j < G; j++)
            lg[t * E + G + j] = lg[t * E + j], lgd[t * E + G + j] = lgd[t * E + j];
    host_buf hb[] = {{"logits", lg, 4 * T * E, false},
                     {"ids", ids, 4 * T * TK, true},
                     {"route_w", w, 4 * T * TK, true},
                     {"bias", rc.bias, 4 * E, false}};
    const char *names[8];
    int64_t vals[8];
    const uint32_t nv = route_vars(&rc, E, T, TK, 0, false, names, vals);
    const uint32_t nb = rc.form.kind == QK_ROUTE_SIGMOID_BIAS ? 4 : 3;
    if (run_host(ctx, b, ki, NULL, hb, nb, names, vals, nv)) {
        char what[256];
        snprintf(what, sizeof what, "%s T=%u E=%u top_k=%u", k->name, T, E, TK);
        if (rc.form.kind == QK_ROUTE_SIGMOID_BIAS)
            snprintf(what + strlen(what), sizeof what - strlen(what), " n_group=%u topk_group=%u",
                     rc.form.n_group, rc.form.topk_group);
        check_route(what, &rc, lgd, T, E, TK, ids, w);
    }
    route_case_free(&rc);
    free(lg), free(w), free(lgd), free(ids);
}

/* The router with its mat-vec inside (logits computed): E weight rows of
 * the kernel's format against T tokens of x; the logits against the float64
 * mat-vec reference, the ids and weights against the reference router of
 * the kernel's own logits (so that only the routing is compared; x scaled
 * so the logits stay within +-8, where sigmoid has not flattened out). */
static void test_router_computed(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t T,
                                 uint32_t E, uint32_t K, uint32_t TK) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    qk_weights w;
    if (!qk_random_weights(k->format, k->format_variant, E, K, &g_rng, &w)) {
        printf("FAIL %s: no reference for format %s\n", k->name, k->format);
        g_fail++;
        return;
    }
    route_case rc;
    route_case_make(k, E, TK, 0, 0, &rc);
    float *x = malloc(4 * (size_t)T * K), *lg = malloc(4 * T * E), *rw = malloc(4 * T * TK);
    double *xd = malloc(8 * (size_t)T * K), *lgd = malloc(8 * T * E);
    int32_t *ids = malloc(4 * T * TK);
    uint32_t *scratch = calloc(T + (size_t)T * E, 4); /* the counters zero, as the kernel needs */
    rnd_fill(x, xd, (size_t)T * K, 1.0);
    bool ok = qk_ref_matvec(&w, xd, E, K, T, lgd);
    double most = 0;
    for (size_t i = 0; ok && i < (size_t)T * E; i++)
        most = fmax(most, fabs(lgd[i]));
    if (ok && most > 8 && rc.form.kind == QK_ROUTE_SIGMOID_BIAS) {
        for (size_t i = 0; i < (size_t)T * K; i++)
            xd[i] = x[i] = (float)(x[i] * (8 / most));
        ok = qk_ref_matvec(&w, xd, E, K, T, lgd);
    }
    host_buf hb[] = {{"x", x, 4 * (size_t)T * K, false},
                     {"logits", lg, 4 * T * E, true},
                     {"ids", ids, 4 * T * TK, true},
                     {"route_w", rw, 4 * T * TK, true},
                     {"scratch", scratch, 4 * (T + (size_t)T * E), false},
                     {"bias", rc.bias, 4 * E, false}};
    const char *names[8];
    int64_t vals[8];
    const uint32_t nv = route_vars(&rc, E, T, TK, K, true, names, vals);
    const uint32_t nb = rc.form.kind == QK_ROUTE_SIGMOID_BIAS ? 6 : 5;
    if (ok && run_host(ctx, b, ki, &w, hb, nb, names, vals, nv)) {
        char what[256];
        snprintf(what, sizeof what, "%s T=%u E=%u K=%u top_k=%u", k->name, T, E, K, TK);
        check_nmse(what, lg, lgd, (size_t)T * E, 1e-6);
        for (size_t i = 0; i < (size_t)T * E; i++)
            lgd[i] = lg[i];
        check_route(what, &rc, lgd, T, E, TK, ids, rw);
    }
    qk_free_weights(&w);
    route_case_free(&rc);
    free(x), free(lg), free(rw), free(xd), free(lgd), free(ids), free(scratch);
}

/* A shared expert's output [T, N] and gate logits [T] (shared fusions of
 * the combine), random: the gates over +-6, where the sigmoid spans (0, 1). */
typedef struct shared_expert {
    float *y, *gate;
    double *yd, *gated;
} shared_expert;

static void shared_make(shared_expert *se, uint32_t T, uint32_t N) {
    se->y = malloc(4 * (size_t)T * N), se->yd = malloc(8 * (size_t)T * N);
    se->gate = malloc(4 * T), se->gated = malloc(8 * T);
    rnd_fill(se->y, se->yd, (size_t)T * N, 2.0), rnd_fill(se->gate, se->gated, T, 6.0);
}

static void shared_free(shared_expert *se) {
    free(se->y), free(se->yd), free(se->gate), free(se->gated);
}

static void test_combine(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t T,
                         uint32_t N, uint32_t TK) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    /* the shared fusions (shared_rmsnorm, gated_...) add the residual too */
    const bool shared = strstr(k->fusion, "shared") != NULL, gated = strstr(k->fusion, "gated");
    const bool res = shared || strstr(k->fusion, "residual"), norm = strstr(k->fusion, "rmsnorm");
    size_t ns = (size_t)T * TK * N, ny = (size_t)T * N;
    float *slots = malloc(4 * ns), *w = malloc(4 * T * TK), *resid = malloc(4 * ny);
    float *nw = malloc(4 * N), *y = malloc(4 * ny), *normed = malloc(4 * ny);
    double *sd = malloc(8 * ns), *wd = malloc(8 * T * TK), *rd = malloc(8 * ny),
           *nwd = malloc(8 * N), *yref = malloc(8 * ny), *nref = malloc(8 * ny);
    rnd_fill(slots, sd, ns, 2.0), rnd_fill(w, wd, (size_t)T * TK, 1.0);
    rnd_fill(resid, rd, ny, 1.0), rnd_fill(nw, nwd, N, 1.0);
    const float eps = 1e-6f;
    uint32_t eps_bits;
    memcpy(&eps_bits, &eps, 4);
    shared_expert se;
    shared_make(&se, T, N);
    host_buf hb[] = {{"slots", slots, 4 * ns, false},
                     {"route_w", w, 4 * T * TK, false},
                     {"y", y, 4 * ny, true},
                     {"residual", resid, 4 * ny, false},
                     {"norm_w", nw, 4 * N, false},
                     {"normed", normed, 4 * ny, true},
                     {"shared_y", se.y, 4 * ny, false},
                     {"shared_gate", se.gate, 4 * T, false}};
    const char *names[] = {"N", "T", "top_k", "eps_bits"};
    int64_t vals[] = {N, T, TK, eps_bits};
    /* only the bindings the variant has: 3, 4 with the residual, 6 with the
     * norm, 8 with a shared expert (the gate unused where ungated) */
    if (run_host(ctx, b, ki, NULL, hb, shared ? 8 : norm ? 6 : res ? 4 : 3, names, vals, 4)) {
        if (shared) qk_ref_shared_into(se.yd, gated ? se.gated : NULL, T, N, rd);
        qk_ref_combine(sd, wd, res ? rd : NULL, norm ? nwd : NULL, eps, T, TK, N, yref, nref);
        char what[256];
        snprintf(what, sizeof what, "%s T=%u N=%u top_k=%u", k->name, T, N, TK);
        check_nmse(what, y, yref, ny, 1e-6);
        if (norm) check_nmse(what, normed, nref, ny, 1e-6);
    }
    shared_free(&se);
    free(slots), free(w), free(resid), free(nw), free(y), free(normed);
    free(sd), free(wd), free(rd), free(nwd), free(yref), free(nref);
}

/* The combine with the down projection inside (slots computed, or on the
 * int8-dot lanes): E experts of N rows of K in the kernel's format, top_k
 * distinct experts a token, x the pairs' inputs [T, top_k, K]; y and the
 * RMSNorm against the float64 MoE mat-vec reference (on x rounded to 8 bits
 * where the kernel so rounds it) followed by qk_ref_combine, within the
 * kernel's precision class's bound. A shape outside the kernel's
 * constraints is skipped, said so. */
static void test_combine_computed(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t T,
                                  uint32_t N, uint32_t K, uint32_t E, uint32_t TK) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    if (!qk_kernel_fits(k, N, K, T, E, TK, 1, 0)) {
        printf("skip %s T=%u N=%u K=%u E=%u top_k=%u: outside its constraints\n", k->name, T, N, K,
               E, TK);
        return;
    }
    const float eps = 1e-6f;
    uint32_t eps_bits;
    memcpy(&eps_bits, &eps, 4);
    const char *names[] = {"N", "T", "top_k", "eps_bits", "K", "E"};
    int64_t vals[] = {N, T, TK, eps_bits, K, E};
    qkrt_shape shape = {6, names, vals};
    size_t scratch_bytes = 0;
    char why[256];
    if (!qk_scratch_bytes(k, &shape, &scratch_bytes, why, sizeof why)) {
        printf("FAIL %s: %s\n", k->name, why);
        g_fail++;
        return;
    }
    qk_weights w;
    if (!qk_random_weights(k->format, k->format_variant, E * N, K, &g_rng, &w)) {
        printf("FAIL %s: no reference for format %s\n", k->name, k->format);
        g_fail++;
        return;
    }
    const size_t np = (size_t)T * TK, nx = np * K, ny = (size_t)T * N;
    qk_weights *experts = malloc(sizeof *experts * E);
    for (uint32_t e = 0; e < E; e++)
        experts[e] = qk_weights_expert(&w, e, E);
    int32_t *ids = malloc(4 * np);
    for (uint32_t t = 0; t < T; t++) /* top_k distinct experts a token */
        for (uint32_t s = 0; s < TK; s++) {
            bool dup;
            do {
                ids[t * TK + s] = (int32_t)rnd_below(E);
                dup = false;
                for (uint32_t j = 0; j < s; j++)
                    dup |= ids[t * TK + j] == ids[t * TK + s];
            } while (dup);
        }
    for (uint32_t s = 1; s < TK; s++) /* the last expert's rows, in slot 0 */
        if (ids[s] == (int32_t)(E - 1)) ids[s] = ids[0];
    ids[0] = (int32_t)(E - 1);
    const bool shared = strstr(k->fusion, "shared") != NULL, gated = strstr(k->fusion, "gated");
    shared_expert se;
    shared_make(&se, T, N);
    float *x = malloc(4 * nx), *rw = malloc(4 * np), *resid = malloc(4 * ny), *nw = malloc(4 * N);
    float *y = malloc(4 * ny), *normed = malloc(4 * ny);
    double *xd = malloc(8 * nx), *rwd = malloc(8 * np), *rd = malloc(8 * ny), *nwd = malloc(8 * N);
    double *sd = malloc(8 * np * N), *yref = malloc(8 * ny), *nref = malloc(8 * ny);
    uint32_t *scratch = calloc(scratch_bytes / 4, 4); /* the counters zero, as the kernel needs */
    rnd_fill(x, xd, nx, 1.0), rnd_fill(rw, rwd, np, 1.0);
    rnd_fill(resid, rd, ny, 1.0), rnd_fill(nw, nwd, N, 1.0);
    if (qk_rounds_x8(k)) qk_round_x8(xd, x, nx);
    host_buf hb[] = {{"x", x, 4 * nx, false},
                     {"ids", ids, 4 * np, false},
                     {"scratch", scratch, scratch_bytes, false},
                     {"route_w", rw, 4 * np, false},
                     {"y", y, 4 * ny, true},
                     {"residual", resid, 4 * ny, false},
                     {"norm_w", nw, 4 * N, false},
                     {"normed", normed, 4 * ny, true},
                     {"shared_y", se.y, 4 * ny, false},
                     {"shared_gate", se.gate, 4 * T, false}};
    if (run_host(ctx, b, ki, &w, hb, shared ? 10 : 8, names, vals, 6) &&
        qk_ref_matvec_id(experts, NULL, ids, xd, N, K, T, TK, TK, sd)) {
        if (shared) qk_ref_shared_into(se.yd, gated ? se.gated : NULL, T, N, rd);
        qk_ref_combine(sd, rwd, rd, nwd, eps, T, TK, N, yref, nref);
        char what[256];
        snprintf(what, sizeof what, "%s T=%u N=%u K=%u E=%u top_k=%u", k->name, T, N, K, E, TK);
        check_nmse(what, y, yref, ny, qk_nmse_bound(k));
        check_nmse(what, normed, nref, ny, qk_nmse_bound(k));
    }
    qk_free_weights(&w);
    shared_free(&se);
    free(experts), free(ids), free(x), free(rw), free(resid), free(nw), free(y), free(normed);
    free(xd), free(rwd), free(rd), free(nwd), free(sd), free(yref), free(nref), free(scratch);
}

static void test_swiglu(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t N) {
    float *g = malloc(4 * N), *u = malloc(4 * N), *y = malloc(4 * N);
    double *gd = malloc(8 * N), *ud = malloc(8 * N), *ref = malloc(8 * N);
    rnd_fill(g, gd, N, 8.0), rnd_fill(u, ud, N, 2.0);
    if (N > 1) g[N - 1] = -100.0f, gd[N - 1] = -100.0; /* e^-g overflows: silu's limit, -0 */
    host_buf hb[] = {{"g", g, 4 * N, false}, {"u", u, 4 * N, false}, {"y", y, 4 * N, true}};
    const char *names[] = {"N"};
    int64_t vals[] = {N};
    if (run_host(ctx, b, ki, NULL, hb, 3, names, vals, 1)) {
        for (uint32_t i = 0; i < N; i++)
            ref[i] = qk_ref_swiglu(gd[i], ud[i]);
        char what[256];
        snprintf(what, sizeof what, "%s N=%u", qkrt_bundle_kernel(b, ki)->name, N);
        check_nmse(what, y, ref, N, 1e-6);
    }
    free(g), free(u), free(y), free(gd), free(ud), free(ref);
}

/* Rows ids[t] of an M x K table, dequantized; the reference reads each row
 * through the mat-vec reference against the unit vectors. */
static void test_embed(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t T) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    const uint32_t M = 50, K = k->block_elements >= 256 ? 2 * k->block_elements : 320;
    const uint32_t Kt = K % k->block_elements ? k->block_elements * 5 : K;
    qk_weights w;
    if (!qk_random_weights(k->format, k->format_variant, M, Kt, &g_rng, &w)) {
        printf("FAIL %s: no reference for format %s\n", k->name, k->format);
        g_fail++;
        return;
    }
    int32_t *ids = malloc(4 * T);
    for (uint32_t t = 0; t < T; t++)
        ids[t] = (int32_t)rnd_below(M);
    ids[0] = (int32_t)(M - 1); /* the last row */
    float *y = malloc(4 * (size_t)T * Kt);
    double *ref = malloc(8 * (size_t)T * Kt), *eye = calloc((size_t)Kt * Kt, 8);
    for (uint32_t i = 0; i < Kt; i++)
        eye[(size_t)i * Kt + i] = 1;
    host_buf hb[] = {{"ids", ids, 4 * T, false}, {"y", y, 4 * (size_t)T * Kt, true}};
    const char *names[] = {"M", "K", "T"};
    int64_t vals[] = {M, Kt, T};
    if (run_host(ctx, b, ki, &w, hb, 2, names, vals, 3)) {
        for (uint32_t t = 0; t < T; t++) {
            qk_weights row = qk_weights_expert(&w, (uint32_t)ids[t], M);
            qk_ref_matvec(&row, eye, 1, Kt, Kt, ref + (size_t)t * Kt);
        }
        char what[256];
        snprintf(what, sizeof what, "%s M=%u K=%u T=%u", k->name, M, Kt, T);
        check_nmse(what, y, ref, (size_t)T * Kt, 1e-6);
    }
    qk_free_weights(&w);
    free(ids), free(y), free(ref), free(eye);
}

int main(int argc, char **argv) {
    const char *filter;
    qkrt_context *ctx;
    qkrt_bundle *b;
    int start = gpu_start(argc, argv, &filter, &ctx, &b);
    if (start) return start;
    const char *families[] = {"router_topk", "moe_combine", "swiglu", "embed"};
    uint32_t seen[4] = {0};
    for (uint32_t ki = 0; ki < qkrt_bundle_kernel_count(b); ki++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
        int f = -1;
        for (int i = 0; i < 4; i++)
            if (!strcmp(k->family, families[i])) f = i;
        if (f < 0 || (filter && !strstr(k->name, filter))) continue;
        if (qkrt_kernel_check(ctx, b, ki) != QKRT_OK) {
            printf("FAIL %s: the device cannot run it: %s\n", k->name, qkrt_last_error(ctx));
            g_fail++;
            continue;
        }
        seen[f]++;
        switch (f) {
        case 0:                         /* k up to 16, experts up to 512, odd counts */
            if (k->weights_layout[0]) { /* logits computed: E rows of K, K up to 4096 */
                const uint32_t qk = k->block_elements;
                test_router_computed(ctx, b, ki, 1, 128, 2048 / qk * qk, 8); /* Qwen3-30B-A3B */
                test_router_computed(ctx, b, ki, 3, 37, 5 * qk, 5);
                test_router_computed(ctx, b, ki, 2, 512, 4096 / qk * qk, 16);
                break;
            }
            test_router(ctx, b, ki, 1, 16, 4, 0, 0);
            test_router(ctx, b, ki, 37, 100, 7, 0, 0);
            test_router(ctx, b, ki, 3, 512, 16, 0, 0);
            test_router(ctx, b, ki, 2, 5, 5, 0, 0);
            test_router(ctx, b, ki, 8, 128, 8, 0, 0); /* Qwen3-30B-A3B's router */
            test_router(ctx, b, ki, 5, 256, 8, 8, 4); /* DeepSeek-V3's */
            test_router(ctx, b, ki, 3, 32, 4, 0, 0);  /* gpt-oss-20b's */
            test_router(ctx, b, ki, 4, 60, 4, 1, 1);  /* Qwen2-MoE's, ungrouped */
            test_router(ctx, b, ki, 2, 96, 6, 12, 5); /* groups of 8, an odd count kept */
            break;
        case 1:
            if (k->weights_layout[0]) { /* slots computed: the down projection inside */
                const uint32_t qk = k->block_elements;
                /* Qwen3-30B-A3B's down, of 16 experts: 128 pass lavapipe's storage range */
                test_combine_computed(ctx, b, ki, 1, 2048, 768 / qk * qk, 16, 8);
                test_combine_computed(ctx, b, ki, 3, 37, 5 * qk, 6, 2);
                test_combine_computed(ctx, b, ki, 2, 301, 4 * qk, 9, 3);
                /* the lanes form's chunks (64 or 128) need K = 6 blocks of 32 */
                test_combine_computed(ctx, b, ki, 5, 130, 6 * qk, 12, 4);
                /* and chunks of four blocks (mxfp4's odd block size) or of two
                 * blocks of 256 (q3_K's) need K = 8 blocks */
                test_combine_computed(ctx, b, ki, 2, 67, 8 * qk, 10, 3);
                break;
            }
            test_combine(ctx, b, ki, 1, 257, 4);
            test_combine(ctx, b, ki, 37, 1000, 3);
            test_combine(ctx, b, ki, 2, 3, 1);
            test_combine(ctx, b, ki, 8, 2048, 8);  /* one step of 8 x 256 elements, exactly */
            test_combine(ctx, b, ki, 2, 5001, 16); /* three steps, the last one partial */
            break;
        case 2:
            test_swiglu(ctx, b, ki, 1);
            test_swiglu(ctx, b, ki, 1000003);
            break;
        default:
            test_embed(ctx, b, ki, 1);
            test_embed(ctx, b, ki, 5);
        }
    }
    for (int i = 0; i < 4; i++) {
        printf("%u %s kernels tested\n", seen[i], families[i]);
        if (!seen[i] && !filter) {
            printf("FAIL: no %s kernel in %s\n", families[i], argv[1]);
            g_fail++;
        }
    }
    return gpu_close(ctx, b);
}
