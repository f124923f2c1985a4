/* The MoE layer's kernels chosen as an engine chooses them, its buffers and
 * dispatches (every weight copy's chain), and its float64 check. */
#include "ops_moe_layer.h"
#include "qk_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QK_MOE_EPS 1e-6f /* the RMSNorm's epsilon: Qwen3's rms_norm_eps */

/* ---------------------------------------------------------------- choice */

/* The library's description of the layer (qkrt_ops.h). */
static qkrt_moe_desc plan_desc(const qk_moe_layer_desc *d) {
    return (qkrt_moe_desc){.format = d->format,
                           .variant = d->variant,
                           .T = d->T,
                           .H = d->H,
                           .F = d->F,
                           .E = d->E,
                           .top_k = d->top_k,
                           .decode_max = d->decode_max,
                           .gate_up = d->gate_up,
                           .router = d->router,
                           .down = d->down,
                           .eps = QK_MOE_EPS};
}

qkrt_result qk_moe_layer_pick(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                              qk_moe_kernels *k, char *err, size_t err_size) {
    const qkrt_moe_desc pd = plan_desc(d);
    qkrt_moe_plan *plan = NULL;
    qkrt_result r = qkrt_moe_plan_create(ctx, b, &pd, &plan);
    if (r == QKRT_OK) {
        *k = *qkrt_moe_plan_kernels(plan);
        if (err_size) err[0] = 0;
    } else {
        snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    }
    qkrt_moe_plan_destroy(plan);
    return r;
}

/* ---------------------------------------------------------------- the layer */

/* The engine's buffers of the layer (the working ones are the plan's). */
enum {
    B_X,      /* [T, H] the layer's input (the normed hidden state) */
    B_RES,    /* [T, H] the residual */
    B_NORM_W, /* [H] the next RMSNorm's weights */
    B_Y,      /* [T, H] */
    B_NORMED, /* [T, H] */
    B_COUNT
};

enum { W_ROUTER, W_GATE, W_UP, W_DOWN, W_COUNT };

struct qk_moe_layer {
    qk_moe_kernels k;
    qk_moe_layer_desc d;
    char format[32], variant[16];
    qkrt_moe_plan *plan;
    qk_weights w[W_COUNT];
    float *x, *res, *norm_w;
    double *xd, *resd, *norm_wd;
    uint32_t copies;
    qk_wbufs wb[QK_MOE_LAYER_MAX_COPIES][W_COUNT];
    qkrt_buffer *buf[B_COUNT];
    qkrt_buffer *work[QKRT_MOE_WORK_COUNT];
    qkrt_chain *chains; /* one per copy */
    uint32_t experts;   /* distinct experts the tokens chose */
};

static const uint32_t NAN32 = 0x7fc00000u;

/* Copy c's chain, as an engine records it through the operations layer. */
static qkrt_result record_chain(qkrt_context *ctx, qk_moe_layer *L, uint32_t c) {
    qkrt_moe_buffers B = {.x = L->buf[B_X],
                          .residual = L->buf[B_RES],
                          .norm_w = L->buf[B_NORM_W],
                          .y = L->buf[B_Y],
                          .normed = L->buf[B_NORMED]};
    qkrt_buffer **planes[W_COUNT] = {B.router, B.gate, B.up, B.down};
    for (int i = 0; i < W_COUNT; i++)
        for (uint32_t p = 0; p < L->wb[c][i].plane_count && p < QKRT_MOE_PLANES; p++)
            planes[i][p] = L->wb[c][i].plane[p];
    memcpy(B.work, L->work, sizeof B.work);
    return qkrt_moe_plan_chain(ctx, L->plan, &B, &L->chains[c]);
}

/* Random weights and activations. The activations are scaled so that the
 * gates' RMS is about 2: random blocks span the whole quant range, so
 * unscaled gates reach hundreds and silu(gate) * up overflows the f16 that
 * matmul tiles stage activations in; real pre-activations are small. */
static bool make_data(qk_moe_layer *L, char *err, size_t err_size) {
    const qk_moe_layer_desc *d = &L->d;
    const uint32_t rows[W_COUNT] = {d->E, d->E * d->F, d->E * d->F, d->E * d->H};
    const uint32_t depth[W_COUNT] = {d->H, d->H, d->H, d->F};
    for (int i = 0; i < W_COUNT; i++) {
        const char *why =
            qk_random_weights_try(L->format, L->variant, rows[i], depth[i], d->rng, &L->w[i]);
        if (why) {
            snprintf(err, err_size, "%s: %s", L->format, why);
            return false;
        }
    }
    size_t nx = (size_t)d->T * d->H;
    L->x = malloc(4 * nx), L->res = malloc(4 * nx), L->norm_w = malloc(4 * (size_t)d->H);
    L->xd = malloc(8 * nx), L->resd = malloc(8 * nx), L->norm_wd = malloc(8 * (size_t)d->H);
    if (!L->x || !L->res || !L->norm_w || !L->xd || !L->resd || !L->norm_wd) {
        snprintf(err, err_size, "out of host memory for the activations of %u tokens of %u", d->T,
                 d->H);
        return false;
    }
    struct {
        float *f;
        double *dd;
        size_t n;
    } fill[] = {{L->x, L->xd, nx}, {L->res, L->resd, nx}, {L->norm_w, L->norm_wd, d->H}};
    for (int j = 0; j < 3; j++)
        for (size_t i = 0; i < fill[j].n; i++) {
            *d->rng = *d->rng * 6364136223846793005ull + 1442695040888963407ull;
            fill[j].dd[i] = fill[j].f[i] =
                (float)((double)(*d->rng >> 11) / 9007199254740992.0 * 2 - 1);
        }
    qk_weights g0 = qk_weights_expert(&L->w[W_GATE], 0, d->E);
    double *g = qk_xmalloc(8 * (size_t)d->F), ss = 0;
    qk_ref_matvec(&g0, L->xd, d->F, d->H, 1, g);
    for (uint32_t i = 0; i < d->F; i++)
        ss += g[i] * g[i];
    free(g);
    double scale = ss > 0 ? 2 / sqrt(ss / d->F) : 1;
    for (size_t i = 0; i < nx; i++)
        L->xd[i] = L->x[i] = (float)(L->x[i] * scale);
    return true;
}

static double weight_bytes(const qk_weights *w) {
    double s = 0;
    for (uint32_t p = 0; p < w->plane_count; p++)
        s += (double)w->bytes[p];
    return s;
}

/* Copies so that runs in turn read past rotate_bytes, by the experts T
 * tokens touch on average (E (1 - (1 - top_k / E)^T)); within max_bytes. */
static uint32_t copies_for(const qk_moe_layer *L) {
    const qk_moe_layer_desc *d = &L->d;
    if (!d->rotate_bytes) return 1;
    double experts_bytes = 0;
    for (int i = W_GATE; i < W_COUNT; i++)
        experts_bytes += weight_bytes(&L->w[i]);
    double touched = d->E * (1 - pow(1 - (double)d->top_k / d->E, d->T));
    double run = weight_bytes(&L->w[W_ROUTER]) + experts_bytes / d->E * touched;
    double all = weight_bytes(&L->w[W_ROUTER]) + experts_bytes;
    double n = ceil((double)d->rotate_bytes / run);
    if (d->max_bytes && n * all > (double)d->max_bytes) n = floor((double)d->max_bytes / all);
    return n < 1 ? 1 : n > QK_MOE_LAYER_MAX_COPIES ? QK_MOE_LAYER_MAX_COPIES : (uint32_t)n;
}

/* A layer of kernels k for problem d, nothing on the device yet: its plan. */
static qkrt_result layer_new(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_kernels *k,
                             const qk_moe_layer_desc *d, qk_moe_layer **out, char *err,
                             size_t err_size) {
    qk_moe_layer *L = qk_xcalloc(1, sizeof *L);
    *out = L;
    L->d = *d;
    snprintf(L->format, sizeof L->format, "%s", d->format);
    snprintf(L->variant, sizeof L->variant, "%s", d->variant ? d->variant : "");
    L->d.format = L->format, L->d.variant = L->variant;
    const qkrt_moe_desc pd = plan_desc(&L->d);
    qkrt_result r = qkrt_moe_plan_create_from(ctx, b, &pd, k, &L->plan);
    if (r != QKRT_OK) {
        snprintf(err, err_size, "%s", qkrt_last_error(ctx));
        return r;
    }
    L->k = *qkrt_moe_plan_kernels(L->plan);
    return QKRT_OK;
}

/* The buffers: x and each pair's expert ids from x and ids where given, the
 * residual and norm weights from L's data, the outputs NaN; every working
 * buffer the plan asks for (scratch zero-filled, the rest NaN); and room for
 * L->copies chains. */
static qkrt_result layer_buffers(qkrt_context *ctx, qk_moe_layer *L, const float *x,
                                 const int32_t *ids) {
    const qk_moe_layer_desc *d = &L->d;
    const size_t T = d->T, H = d->H;
    const struct {
        const void *data;
        size_t bytes;
    } spec[B_COUNT] = {
        [B_X] = {x, 4 * T * H},    [B_RES] = {L->res, 4 * T * H},  [B_NORM_W] = {L->norm_w, 4 * H},
        [B_Y] = {NULL, 4 * T * H}, [B_NORMED] = {NULL, 4 * T * H},
    };
    qkrt_result r = QKRT_OK;
    for (int i = 0; i < B_COUNT && r == QKRT_OK; i++)
        if (i == B_X || (i != B_RES && i != B_NORM_W) || spec[i].data)
            r = qk_buffer_from(ctx, spec[i].data, spec[i].bytes, &L->buf[i]);
    for (int i = 0; i < QKRT_MOE_WORK_COUNT && r == QKRT_OK; i++) {
        const size_t bytes = qkrt_moe_plan_work(L->plan, (qkrt_moe_work)i, NULL);
        if (!bytes) continue;
        r = qk_buffer_from(ctx, i == QKRT_MOE_IDS ? (const void *)ids : NULL, bytes, &L->work[i]);
        if (r == QKRT_OK && i >= QKRT_MOE_SCRATCH0) r = qkrt_buffer_fill(ctx, L->work[i], 0);
    }
    if (r == QKRT_OK) L->chains = qk_xcalloc(L->copies, sizeof *L->chains);
    return r;
}

qkrt_result qk_moe_layer_create(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_kernels *k,
                                const qk_moe_layer_desc *d, qk_moe_layer **out, char *err,
                                size_t err_size) {
    *out = NULL;
    qk_moe_layer *L = NULL;
    qkrt_result r = layer_new(ctx, b, k, d, &L, err, err_size);
    *out = L;
    if (r != QKRT_OK) return r;
    if (k->router < 0 || k->combine < 0) {
        snprintf(err, err_size, "a layer needs every kernel of its path");
        return QKRT_ERROR_ARGUMENT;
    }
    r = make_data(L, err, err_size) ? QKRT_OK : QKRT_ERROR_ARGUMENT;
    if (r == QKRT_OK) {
        L->copies = copies_for(L);
        r = layer_buffers(ctx, L, L->x, NULL);
    }
    for (uint32_t c = 0; c < L->copies && r == QKRT_OK; c++)
        for (int i = 0; i < W_COUNT && r == QKRT_OK; i++)
            r = qk_wbufs_upload(ctx, &L->w[i], &L->wb[c][i]);
    for (uint32_t c = 0; c < L->copies && r == QKRT_OK; c++)
        r = record_chain(ctx, L, c);
    if (r != QKRT_OK && !err[0]) snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    return r;
}

qkrt_result qk_run_moe_ffn(qkrt_context *ctx, const qkrt_bundle *b, uint32_t route_ki,
                           uint32_t gate_up_ki, uint32_t down_ki, const qk_weights wgu[2],
                           const qk_weights *wd, const float *x, const int32_t *topk, uint32_t T,
                           uint32_t top_k, uint32_t E, uint32_t H, uint32_t F, float *h, float *y,
                           char *err, size_t err_size) {
    const qkrt_kernel_info *kg = qkrt_bundle_kernel(b, gate_up_ki);
    const qkrt_kernel_info *kd = qkrt_bundle_kernel(b, down_ki);
    if (!qk_matmul_k_ok(kg, H, err, err_size) || !qk_matmul_k_ok(kd, F, err, err_size))
        return QKRT_ERROR_ARGUMENT;
    if (strcmp(kg->fusion, "swiglu")) {
        snprintf(err, err_size, "%s: the gate/up kernel must bind two matrices (swiglu)", kg->name);
        return QKRT_ERROR_ARGUMENT;
    }
    /* the layer's expert part alone (qkrt_moe_plan_create_from): the
     * caller's ids, x and weights */
    const qk_moe_kernels k = {.quant = -1,
                              .router = -1,
                              .topk = -1,
                              .route = (int)route_ki,
                              .gate_up = (int)gate_up_ki,
                              .gate = -1,
                              .glu = -1,
                              .down = (int)down_ki,
                              .combine = -1,
                              .routed = true};
    const qk_moe_layer_desc d = {.format = kg->format,
                                 .variant = kg->format_variant,
                                 .T = T,
                                 .H = H,
                                 .F = F,
                                 .E = E,
                                 .top_k = top_k};
    qk_moe_layer *L = NULL;
    qkrt_result r = layer_new(ctx, b, &k, &d, &L, err, err_size);
    L->copies = 1;
    if (r == QKRT_OK) r = layer_buffers(ctx, L, x, topk);
    const qk_weights *w[] = {[W_GATE] = &wgu[0], [W_UP] = &wgu[1], [W_DOWN] = wd};
    for (int i = W_GATE; i < W_COUNT && r == QKRT_OK; i++)
        r = qk_wbufs_upload(ctx, w[i], &L->wb[0][i]);
    if (r == QKRT_OK) r = record_chain(ctx, L, 0);
    if (r == QKRT_OK) r = qkrt_run(ctx, L->chains[0].dispatch, L->chains[0].count);
    const size_t P = (size_t)T * top_k;
    if (r == QKRT_OK && h) r = qkrt_buffer_download(ctx, L->work[QKRT_MOE_ACT], 0, h, 4 * P * F);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, L->work[QKRT_MOE_SLOTS], 0, y, 4 * P * H);
    if (r != QKRT_OK && !err[0]) snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    qk_moe_layer_destroy(ctx, L);
    return r;
}

void qk_moe_layer_destroy(qkrt_context *ctx, qk_moe_layer *L) {
    if (!L) return;
    for (uint32_t c = 0; c < QK_MOE_LAYER_MAX_COPIES; c++)
        for (int i = 0; i < W_COUNT; i++)
            qk_wbufs_destroy(ctx, &L->wb[c][i]);
    for (int i = 0; i < B_COUNT; i++)
        qkrt_buffer_destroy(ctx, L->buf[i]);
    for (int i = 0; i < QKRT_MOE_WORK_COUNT; i++)
        qkrt_buffer_destroy(ctx, L->work[i]);
    for (int i = 0; i < W_COUNT; i++)
        qk_free_weights(&L->w[i]);
    free(L->x), free(L->res), free(L->norm_w), free(L->xd), free(L->resd), free(L->norm_wd);
    qkrt_moe_plan_destroy(L->plan);
    free(L->chains), free(L);
}

const qkrt_dispatch *qk_moe_layer_dispatches(const qk_moe_layer *L, uint32_t copy, uint32_t *n) {
    *n = L->chains[copy].count;
    return L->chains[copy].dispatch;
}

uint32_t qk_moe_layer_copies(const qk_moe_layer *L) {
    return L->copies;
}

double qk_moe_layer_bytes(const qk_moe_layer *L, uint32_t *experts) {
    const qk_moe_layer_desc *d = &L->d;
    double expert = 0;
    for (int i = W_GATE; i < W_COUNT; i++)
        expert += weight_bytes(&L->w[i]) / d->E;
    if (experts) *experts = L->experts;
    /* x, the residual, y and normed of T tokens */
    return weight_bytes(&L->w[W_ROUTER]) + expert * L->experts + 16.0 * d->T * d->H;
}

/* ---------------------------------------------------------------- check */

/* The NMSE bound of a product kernel against the unrounded float64
 * reference: its own (qk_nmse_bound), but for kernels that round
 * activations to 8 bits 2e-3, what that rounding costs a random layer's
 * products (about 1e-5 to 1e-3) with room, far below a wrong one's 1e-2 and more. */
static double bound_of(const qkrt_bundle *b, int ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)ki);
    return qk_rounds_x8(k) ? 2e-3 : qk_nmse_bound(k);
}

/* The device's outputs of one run. */
typedef struct outputs {
    float *logits, *rw, *act, *slots, *y, *normed;
    int32_t *ids;
} outputs;

/* The reference of the layer, from the device's logits (the top-k). */
typedef struct reference {
    double *logits, *rw, *act, *slots, *y, *normed;
    int32_t *ids;
} reference;

static qkrt_result run_and_download(qkrt_context *ctx, qk_moe_layer *L, uint32_t c, outputs *o) {
    const qk_moe_layer_desc *d = &L->d;
    const size_t T = d->T, P = T * d->top_k;
    qkrt_buffer *const *W = L->work;
    struct {
        qkrt_buffer *buf;
        void *out;
        size_t bytes;
    } get[] = {{W[QKRT_MOE_LOGITS], o->logits, 4 * T * d->E},
               {W[QKRT_MOE_IDS], o->ids, 4 * P},
               {W[QKRT_MOE_ROUTE_W], o->rw, 4 * P},
               {W[QKRT_MOE_ACT], o->act, 4 * P * d->F},
               {W[QKRT_MOE_SLOTS], o->slots, 4 * P * d->H}, /* none: down inside the combine */
               {L->buf[B_Y], o->y, 4 * T * d->H},
               {L->buf[B_NORMED], o->normed, 4 * T * d->H}};
    enum { NGET = sizeof get / sizeof get[0] };
    qkrt_result r = QKRT_OK;
    for (size_t i = 0; i < NGET && r == QKRT_OK; i++)
        if (get[i].buf) r = qkrt_buffer_fill(ctx, get[i].buf, NAN32);
    uint32_t n;
    const qkrt_dispatch *ds = qk_moe_layer_dispatches(L, c, &n);
    double span;
    if (r == QKRT_OK) r = qkrt_run_span(ctx, ds, n, &span);
    for (size_t i = 0; i < NGET && r == QKRT_OK; i++)
        if (get[i].buf) r = qkrt_buffer_download(ctx, get[i].buf, 0, get[i].out, get[i].bytes);
    return r;
}

static void reference_of(qk_moe_layer *L, const outputs *o, reference *ref) {
    const qk_moe_layer_desc *d = &L->d;
    const size_t T = d->T, P = T * d->top_k;
    qk_ref_matvec(&L->w[W_ROUTER], L->xd, d->E, d->H, d->T, ref->logits);
    double *glog = qk_xmalloc(8 * T * d->E);
    for (size_t i = 0; i < T * d->E; i++)
        glog[i] = o->logits[i];
    qk_ref_router(glog, d->T, d->E, d->top_k, true, ref->ids, ref->rw);
    free(glog);
    qk_moe_shape sg = {d->F, d->H, d->T, d->E, d->top_k, 1};
    qk_moe_shape sd = {d->H, d->F, d->T, d->E, d->top_k, d->top_k};
    qk_ref_matmul_id(&L->w[W_GATE], 2, L->xd, ref->ids, &sg, ref->act);
    qk_ref_matmul_id(&L->w[W_DOWN], 1, ref->act, ref->ids, &sd, ref->slots);
    qk_ref_combine(ref->slots, ref->rw, L->resd, L->norm_wd, QK_MOE_EPS, d->T, d->top_k, d->H,
                   ref->y, ref->normed);
    uint8_t *used = qk_xcalloc(d->E, 1);
    L->experts = 0;
    for (size_t p = 0; p < P; p++)
        if (ref->ids[p] >= 0 && (uint32_t)ref->ids[p] < d->E && !used[ref->ids[p]])
            used[ref->ids[p]] = 1, L->experts++;
    free(used);
}

qkrt_result qk_moe_layer_check(qkrt_context *ctx, qk_moe_layer *L, qk_moe_check *c) {
    const qk_moe_layer_desc *d = &L->d;
    const size_t T = d->T, P = T * d->top_k;
    const qkrt_bundle *b = L->chains[0].dispatch[0].bundle;
    memset(c, 0, sizeof *c);
    const int gk = L->k.gate_up >= 0 ? L->k.gate_up : L->k.gate;
    c->bound_logits = bound_of(b, L->k.router);
    c->bound = bound_of(b, gk) + bound_of(b, L->k.down >= 0 ? L->k.down : L->k.combine);
    outputs o = {malloc(4 * T * d->E), malloc(4 * P),        malloc(4 * P * d->F),
                 malloc(4 * P * d->H), malloc(4 * T * d->H), malloc(4 * T * d->H),
                 malloc(4 * P)};
    reference ref = {malloc(8 * T * d->E), malloc(8 * P),        malloc(8 * P * d->F),
                     malloc(8 * P * d->H), malloc(8 * T * d->H), malloc(8 * T * d->H),
                     malloc(4 * P)};
    qkrt_result r = QKRT_OK;
    if (!o.logits || !o.rw || !o.act || !o.slots || !o.y || !o.normed || !o.ids || !ref.logits ||
        !ref.rw || !ref.act || !ref.slots || !ref.y || !ref.normed || !ref.ids) {
        r = QKRT_ERROR_MEMORY;
        snprintf(c->error, sizeof c->error, "out of host memory for the layer's check");
    }
    c->ids_match = true;
    for (uint32_t copy = 0; copy < L->copies && r == QKRT_OK; copy++) {
        r = run_and_download(ctx, L, copy, &o);
        if (r != QKRT_OK) break;
        /* every copy holds the same weights: one reference for all */
        if (copy == 0) reference_of(L, &o, &ref);
        c->ids_match &= !memcmp(o.ids, ref.ids, 4 * P);
        const double e[] = {qk_nmse(o.logits, ref.logits, T * d->E), qk_nmse(o.rw, ref.rw, P),
                            qk_nmse(o.act, ref.act, P * d->F),
                            /* down inside the combine: no slots in memory */
                            L->k.down >= 0 ? qk_nmse(o.slots, ref.slots, P * d->H) : 0,
                            qk_nmse(o.y, ref.y, T * d->H), qk_nmse(o.normed, ref.normed, T * d->H)};
        double *worst[] = {&c->logits, &c->route_w, &c->act, &c->slots, &c->y, &c->normed};
        for (int i = 0; i < 6; i++)
            *worst[i] = fmax(*worst[i], e[i]);
    }
    if (r != QKRT_OK) {
        if (!c->error[0]) snprintf(c->error, sizeof c->error, "%s", qkrt_last_error(ctx));
    } else {
        c->ok = c->ids_match && c->logits <= c->bound_logits && c->route_w <= 1e-6 &&
                c->act <= c->bound && c->slots <= c->bound && c->y <= c->bound &&
                c->normed <= c->bound;
        if (!c->ok)
            snprintf(c->error, sizeof c->error,
                     "wrong result: %sNMSE logits %.3g (bound %.3g), routing weights %.3g, gate/up "
                     "%.3g, down %.3g, out %.3g, normed %.3g (bound %.3g)",
                     c->ids_match ? "" : "expert ids differ; ", c->logits, c->bound_logits,
                     c->route_w, c->act, c->slots, c->y, c->normed, c->bound);
    }
    free(o.logits), free(o.rw), free(o.act), free(o.slots), free(o.y), free(o.normed), free(o.ids);
    free(ref.logits), free(ref.rw), free(ref.act), free(ref.slots), free(ref.y), free(ref.normed);
    free(ref.ids);
    return r;
}
