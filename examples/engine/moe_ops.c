/* An engine that runs a whole MoE feed-forward layer through libqkrt's
 * operations layer (qkrt_ops.h) in a handful of calls: the bundle's
 * requirements read before the device exists, a device with exactly those,
 * a plan of the layer (the kernel choice, the quantizer pre-pass, the
 * working buffers' sizes, the barriers), its buffers bound by role, one
 * submission; checked against its own float64 reference on fresh random q4_0
 * weights (seed printed, outputs poisoned). main.c is the same engine's
 * raw-Vulkan path, with nothing of qkgen inside.
 * usage: engine_ops BUNDLE   (ENGINE_SEED=N for a given seed) */
#include <qkrt_ops.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { T = 3, H = 256, F = 128, E = 16, TOP_K = 4, Q4_0_BYTES = 18 };

static uint64_t rng;

static double uniform(void) { /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

/* f16 bits of a value in f16's normal range */
static uint16_t half(float f) {
    int e;
    const float m = frexpf(fabsf(f), &e);
    uint32_t mant = (uint32_t)lrintf(m * 2048.0f);
    if (mant == 2048) mant = 1024, e++;
    return (uint16_t)((f < 0 ? 0x8000 : 0) | (uint32_t)(e + 14) << 10 | (mant - 1024));
}

static double from_half(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const double v = e ? ldexp(m | 1024, e - 25) : ldexp(m, -24);
    return h & 0x8000 ? -v : v;
}

/* rows x cols q4_0 weights (docs/formats.md): random codes and scales of
 * about 1 / sqrt(cols), so that products stay near 1; w gets them dequantized. */
static uint8_t *q4_0_random(uint32_t rows, uint32_t cols, double *w) {
    const uint32_t blocks = cols / 32;
    uint8_t *q = malloc((size_t)rows * blocks * Q4_0_BYTES);
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t b = 0; b < blocks; b++) {
            uint8_t *blk = q + ((size_t)r * blocks + b) * Q4_0_BYTES;
            const uint16_t d = half((float)((0.5 + 0.5 * fabs(uniform())) / sqrt(cols) / 4));
            blk[0] = (uint8_t)d, blk[1] = (uint8_t)(d >> 8);
            for (int j = 0; j < 16; j++) {
                const uint8_t lo = (uint8_t)(rng >> 20 & 15), hi = (uint8_t)(rng >> 40 & 15);
                uniform();
                blk[2 + j] = (uint8_t)(lo | hi << 4);
                double *y = w + (size_t)r * cols + b * 32;
                y[j] = from_half(d) * (lo - 8);
                y[j + 16] = from_half(d) * (hi - 8);
            }
        }
    return q;
}

static double dot(const double *a, const double *b, uint32_t n) {
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

static int fail(qkrt_context *ctx, const char *what) {
    fprintf(stderr, "engine_ops: %s: %s\n", what, qkrt_last_error(ctx));
    return 1;
}

static double nmse(const float *out, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i])) return INFINITY;
        num += (out[i] - ref[i]) * (out[i] - ref[i]), den += ref[i] * ref[i];
    }
    return num / (den > 0 ? den : 1);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: engine_ops BUNDLE\n");
        return 2;
    }
    const char *seed = getenv("ENGINE_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL);
    printf("engine_ops: seed %llu\n", (unsigned long long)rng);

    /* 1. what the bundle needs, before any device: the device gets exactly that */
    qkrt_requirements *req;
    if (qkrt_bundle_requirements(argv[1], &req) != QKRT_OK) return fail(NULL, argv[1]);
    printf("the bundle's %u kernels need Vulkan %s, %u features, %u extensions\n",
           req->kernel_count, req->vulkan_version, req->feature_count, req->extension_count);
    const qkrt_desc desc = {.features = req->features, .feature_count = req->feature_count};
    qkrt_context *ctx;
    if (qkrt_create(&desc, &ctx) != QKRT_OK) return fail(NULL, "qkrt_create");
    qkrt_requirements_free(req);
    qkrt_bundle *b;
    if (qkrt_bundle_load(ctx, argv[1], &b) != QKRT_OK) return fail(ctx, argv[1]);

    /* 2. the layer, described once: the plan chooses every kernel */
    const qkrt_moe_desc layer = {.format = "q4_0", .T = T, .H = H, .F = F, .E = E, .top_k = TOP_K};
    qkrt_moe_plan *plan;
    if (qkrt_moe_plan_create(ctx, b, &layer, &plan) != QKRT_OK) return fail(ctx, "the layer");
    const qkrt_moe_kernels *k = qkrt_moe_plan_kernels(plan);
    const int steps[] = {k->quant, k->router, k->topk, k->gate_up,
                         k->gate,  k->glu,    k->down, k->combine};
    printf("kernels:");
    for (int i = 0; i < 8; i++)
        if (steps[i] >= 0 && (i != 2 || k->topk != k->router))
            printf(" %s", qkrt_bundle_kernel(b, (uint32_t)steps[i])->name);
    printf("\n");

    /* 3. the data and the buffers, by role */
    double *wr = malloc(sizeof(double) * E * H), *wg = malloc(sizeof(double) * E * F * H);
    double *wu = malloc(sizeof(double) * E * F * H), *wd = malloc(sizeof(double) * E * H * F);
    uint8_t *qr = q4_0_random(E, H, wr), *qg = q4_0_random(E * F, H, wg);
    uint8_t *qu = q4_0_random(E * F, H, wu), *qd = q4_0_random(E * H, F, wd);
    static float x[T * H], res[T * H], norm_w[H];
    for (int i = 0; i < T * H; i++)
        x[i] = (float)uniform(), res[i] = (float)uniform();
    for (int i = 0; i < H; i++)
        norm_w[i] = (float)(1 + 0.5 * uniform());
    qkrt_moe_buffers B = {0};
    struct {
        qkrt_buffer **buf;
        const void *data;
        size_t bytes;
    } io[] = {{&B.x, x, sizeof x},
              {&B.residual, res, sizeof res},
              {&B.norm_w, norm_w, sizeof norm_w},
              {&B.y, NULL, sizeof x},
              {&B.normed, NULL, sizeof x},
              {&B.router[0], qr, (size_t)E * H / 32 * Q4_0_BYTES},
              {&B.gate[0], qg, (size_t)E * F * H / 32 * Q4_0_BYTES},
              {&B.up[0], qu, (size_t)E * F * H / 32 * Q4_0_BYTES},
              {&B.down[0], qd, (size_t)E * H * F / 32 * Q4_0_BYTES}};
    for (size_t i = 0; i < sizeof io / sizeof io[0]; i++) {
        if (qkrt_buffer_create(ctx, io[i].bytes, io[i].buf) != QKRT_OK) return fail(ctx, "buffer");
        qkrt_result r = io[i].data ? qkrt_buffer_upload(ctx, *io[i].buf, 0, io[i].data, io[i].bytes)
                                   : qkrt_buffer_fill(ctx, *io[i].buf, 0x7fc00000u); /* NaN */
        if (r != QKRT_OK) return fail(ctx, "upload");
    }
    for (int i = 0; i < QKRT_MOE_WORK_COUNT; i++) { /* the plan's working buffers */
        const size_t bytes = qkrt_moe_plan_work(plan, (qkrt_moe_work)i, NULL);
        if (!bytes) continue;
        if (qkrt_buffer_create(ctx, bytes, &B.work[i]) != QKRT_OK ||
            qkrt_buffer_fill(ctx, B.work[i], i >= QKRT_MOE_SCRATCH0 ? 0 : 0x7fc00000u) != QKRT_OK)
            return fail(ctx, "working buffer");
    }

    /* 4. record and run: qkrt_moe_plan_record puts the same chain into an
     * engine's own command buffer; qkrt_run submits it on libqkrt's queue */
    static qkrt_chain chain;
    if (qkrt_moe_plan_chain(ctx, plan, &B, &chain) != QKRT_OK ||
        qkrt_run(ctx, chain.dispatch, chain.count) != QKRT_OK)
        return fail(ctx, "the layer's run");
    printf("%u dispatches in one submission\n", chain.count);

    /* 5. the check, in float64, from the device's logits (top-k is
     * discontinuous: the same logits must pick the same experts) */
    static float logits[T * E], route_w[T * TOP_K], y[T * H], normed[T * H];
    static int32_t ids[T * TOP_K];
    if (qkrt_buffer_download(ctx, B.work[QKRT_MOE_LOGITS], 0, logits, sizeof logits) ||
        qkrt_buffer_download(ctx, B.work[QKRT_MOE_IDS], 0, ids, sizeof ids) ||
        qkrt_buffer_download(ctx, B.work[QKRT_MOE_ROUTE_W], 0, route_w, sizeof route_w) ||
        qkrt_buffer_download(ctx, B.y, 0, y, sizeof y) ||
        qkrt_buffer_download(ctx, B.normed, 0, normed, sizeof normed))
        return fail(ctx, "download");
    static double xd[T * H], lref[T * E], yref[T * H], nref[T * H], act[F];
    int bad = 0;
    for (int i = 0; i < T * H; i++)
        xd[i] = x[i];
    for (int t = 0; t < T; t++) {
        for (int e = 0; e < E; e++)
            lref[t * E + e] = dot(xd + t * H, wr + (size_t)e * H, H);
        double p[E], mx = -INFINITY, sum = 0, chosen = 0;
        for (int e = 0; e < E; e++)
            mx = fmax(mx, logits[t * E + e]);
        for (int e = 0; e < E; e++)
            sum += p[e] = exp(logits[t * E + e] - mx);
        int pick[TOP_K];
        for (int s = 0; s < TOP_K; s++) { /* the largest, ties to the lower index */
            int best = -1;
            for (int e = 0; e < E; e++) {
                int taken = 0;
                for (int j = 0; j < s; j++)
                    taken |= pick[j] == e;
                if (!taken && (best < 0 || p[e] > p[best])) best = e;
            }
            pick[s] = best, chosen += p[best] / sum;
            if (ids[t * TOP_K + s] != best) bad++;
        }
        for (int h = 0; h < H; h++)
            yref[t * H + h] = res[t * H + h];
        for (int s = 0; s < TOP_K; s++) {
            const int e = pick[s];
            const double w = p[e] / sum / chosen;
            for (int f = 0; f < F; f++) {
                const double g = dot(xd + t * H, wg + ((size_t)e * F + f) * H, H);
                const double u = dot(xd + t * H, wu + ((size_t)e * F + f) * H, H);
                act[f] = g / (1 + exp(-g)) * u;
            }
            for (int h = 0; h < H; h++)
                yref[t * H + h] += w * dot(act, wd + ((size_t)e * H + h) * F, F);
        }
        double ms = 0;
        for (int h = 0; h < H; h++)
            ms += yref[t * H + h] * yref[t * H + h] / H;
        for (int h = 0; h < H; h++)
            nref[t * H + h] = yref[t * H + h] / sqrt(ms + 1e-6) * norm_w[h];
    }
    const double e_logits = nmse(logits, lref, T * E), e_y = nmse(y, yref, T * H);
    const double e_normed = nmse(normed, nref, T * H);
    printf("NMSE logits %.2e, out %.2e, normed %.2e; expert ids %s\n", e_logits, e_y, e_normed,
           bad ? "differ" : "match");
    const int ok =
        !bad && e_logits < 1e-5 && e_y < 2e-3 && e_normed < 2e-3 && !qkrt_validation_errors(ctx);
    printf("%s: the MoE layer through the operations layer\n", ok ? "ok" : "FAIL");

    for (size_t i = 0; i < sizeof io / sizeof io[0]; i++)
        qkrt_buffer_destroy(ctx, *io[i].buf);
    for (int i = 0; i < QKRT_MOE_WORK_COUNT; i++)
        qkrt_buffer_destroy(ctx, B.work[i]);
    qkrt_moe_plan_destroy(plan);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    free(wr), free(wg), free(wu), free(wd), free(qr), free(qg), free(qu), free(qd);
    return ok ? 0 : 1;
}
