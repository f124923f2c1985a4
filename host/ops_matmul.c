/* The prefill kernels on buffers and their float64 references. Buffers are
 * bound by the roles the manifest gives them, so any format and fusion a
 * bundle holds runs through the same few functions. */
#include "ops_matmul.h"
#include "qk_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool qk_matmul_k_ok(const qkrt_kernel_info *k, uint32_t K, char *msg, size_t size) {
    uint32_t qk = k->block_elements ? k->block_elements : 1;
    if (K > 0 && K % qk == 0) return true;
    snprintf(msg, size, "K = %u is not a multiple of the %s block (%u elements); %s cannot run it",
             K, k->format, qk, k->name);
    return false;
}

void qk_f16_from_f32(const float *x, size_t n, uint16_t *h) {
    for (size_t i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &x[i], 4);
        const uint32_t sign = (u >> 16) & 0x8000u, a = u & 0x7fffffffu;
        if (a >= 0x7f800000u) { /* inf, NaN (kept quiet) */
            h[i] = (uint16_t)(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0));
        } else if (a >= 0x477ff000u) { /* 65520 and past: rounds to inf */
            h[i] = (uint16_t)(sign | 0x7c00u);
        } else if (a < 0x38800000u) { /* below 2^-14: a multiple of 2^-24 */
            float f;
            memcpy(&f, &a, 4);
            h[i] = (uint16_t)(sign | (uint32_t)lrintf(f * 16777216.0f));
        } else {
            uint32_t v = ((a >> 23) - 112u) << 10 | (a & 0x7fffffu) >> 13, rest = a & 0x1fffu;
            v += rest > 0x1000u || (rest == 0x1000u && (v & 1u)); /* a carry moves the exponent */
            h[i] = (uint16_t)(sign | v);
        }
    }
}

const void *qk_activations_for(const qkrt_kernel_info *k, const float *x, size_t n, void **owned,
                               size_t *bytes) {
    *owned = NULL;
    *bytes = n * 4;
    if (strcmp(k->activation, "f16")) return x;
    uint16_t *h = qk_xcalloc(n ? n : 1, sizeof *h);
    qk_f16_from_f32(x, n, h);
    *owned = h;
    *bytes = n * 2;
    return h;
}

/* ---------------------------------------------------------------- buffers */

/* The buffers of one run, destroyed together. */
typedef struct pool {
    qkrt_context *ctx;
    uint32_t n;
    qkrt_buffer *b[QK_MAX_BUFFERS * 2];
} pool;

/* A buffer of bytes, uploaded from data, or filled with pattern if data is NULL. */
static qkrt_buffer *pool_buffer(pool *p, const void *data, size_t bytes, uint32_t pattern,
                                qkrt_result *r) {
    if (*r != QKRT_OK) return NULL;
    if (p->n == sizeof p->b / sizeof p->b[0]) {
        *r = QKRT_ERROR_ARGUMENT;
        return NULL;
    }
    qkrt_buffer *buf = NULL;
    *r = qkrt_buffer_create(p->ctx, bytes ? bytes : 4, &buf);
    if (*r != QKRT_OK) return NULL;
    p->b[p->n++] = buf;
    *r = data ? qkrt_buffer_upload(p->ctx, buf, 0, data, bytes)
              : qkrt_buffer_fill(p->ctx, buf, pattern);
    return buf;
}

static void pool_free(pool *p) {
    for (uint32_t i = 0; i < p->n; i++)
        qkrt_buffer_destroy(p->ctx, p->b[i]);
    p->n = 0;
}

/* Weight matrices w[0..nw) as buffers wb[m * planes + plane]. */
static void pool_weights(pool *p, const qk_weights *w, uint32_t nw, qkrt_buffer **wb,
                         qkrt_result *r) {
    for (uint32_t m = 0; m < nw; m++)
        for (uint32_t i = 0; i < w[0].plane_count; i++)
            wb[m * w[0].plane_count + i] = pool_buffer(p, w[m].plane[i], w[m].bytes[i], 0, r);
}

/* Weight matrices a kernel binds: the count of its weights bindings. */
static uint32_t kernel_weights(const qkrt_kernel_info *k) {
    for (uint32_t i = 0; i < k->binding_count; i++)
        if (!strcmp(k->bindings[i].role, "weights")) return k->bindings[i].count;
    return 0;
}

typedef struct role_buf {
    const char *role;
    qkrt_buffer *buf;
} role_buf;

/* Fills d's buffers (kept in s) in binding order: weights from wb (see
 * pool_weights), the other bindings by role. */
static qkrt_result bind_roles(qkrt_context *ctx, const qkrt_kernel_info *k, qkrt_buffer **wb,
                              uint32_t planes, const role_buf *rb, uint32_t nrb, qkrt_dispatch *d,
                              qk_slots *s, char *err, size_t err_size) {
    uint32_t slot = 0, plane = 0;
    for (uint32_t i = 0; i < k->binding_count; i++) {
        const qkrt_binding_info *bi = &k->bindings[i];
        if (slot + bi->count > QK_MAX_BUFFERS) break;
        if (!strcmp(bi->role, "weights")) {
            if (plane >= planes) {
                snprintf(err, err_size, "%s: more weight planes than the weights have", k->name);
                return QKRT_ERROR_ARGUMENT;
            }
            for (uint32_t m = 0; m < bi->count; m++)
                s->buffers[slot++] = wb[m * planes + plane];
            plane++;
            continue;
        }
        uint32_t j = 0;
        while (j < nrb && strcmp(rb[j].role, bi->role))
            j++;
        if (j == nrb) {
            snprintf(err, err_size,
                     "%s: binding %s has role %s, which this operation does not fill", k->name,
                     bi->name, bi->role);
            return QKRT_ERROR_ARGUMENT;
        }
        for (uint32_t m = 0; m < bi->count; m++)
            s->buffers[slot++] = rb[j].buf;
    }
    d->buffers = s->buffers;
    d->buffer_count = slot;
    (void)ctx;
    return QKRT_OK;
}

/* Appends name = value to sh, whose names and values are kept in s. */
static void shape_add(qkrt_shape *sh, qk_slots *s, const char *name, int64_t value) {
    s->names[sh->count] = name;
    s->values[sh->count] = value;
    *sh = (qkrt_shape){sh->count + 1, s->names, s->values};
}

static qkrt_result finish(qkrt_context *ctx, pool *p, qkrt_result r, char *err, size_t err_size) {
    if (r != QKRT_OK && !err[0]) snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    pool_free(p);
    return r;
}

static const uint32_t NaN32 = 0x7fc00000u; /* unwritten outputs read as NaN and fail */

/* ---------------------------------------------------------------- kernels */

/* The operations layer's buffers (qkrt_op_buffers) of the weights pooled in
 * wb: matrix m's plane j at wb[m * planes + j]. */
static void op_weights(qkrt_op_buffers *B, qkrt_buffer *const *wb, uint32_t mats, uint32_t planes) {
    B->matrices = mats;
    for (uint32_t m = 0; m < mats && m < QKRT_OP_MATS; m++)
        for (uint32_t j = 0; j < planes && j < QKRT_OP_PLANES; j++)
            B->weights[m][j] = wb[m * planes + j];
}

/* Runs choice c's chain (qkrt_op_chain) on B, its working buffer made
 * here: a split-K kernel's scratch zero-filled (its counters start at 0),
 * and the kernel run twice on it, y poisoned again between (the checked run
 * finds the counters as the first left them, so a kernel that did not set
 * them back leaves y unwritten); a two-pass choice's scratch (the f16
 * weights its first pass writes) poisoned, so a half the first pass leaves
 * unwritten is NaN in y. ns gets the GPU time of each dispatch of the last
 * run. */
static qkrt_result run_choice(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_choice *c,
                              const qkrt_op_query *q, qkrt_op_buffers *B, pool *p, double *ns) {
    size_t q8 = 0, scratch = 0;
    qkrt_result r = qkrt_op_work(ctx, b, c, q, &q8, &scratch);
    const bool two = c->selection.two_pass;
    if (r == QKRT_OK && scratch)
        B->scratch = pool_buffer(p, NULL, scratch, two ? QK_F16_NAN2 : 0, &r);
    qkrt_chain *chain = qk_xmalloc(sizeof *chain);
    if (r == QKRT_OK) r = qkrt_op_chain(ctx, b, c, q, B, chain);
    if (scratch && !two && r == QKRT_OK) r = qkrt_run(ctx, chain->dispatch, chain->count);
    if (scratch && !two && r == QKRT_OK) r = qkrt_buffer_fill(ctx, B->y, NaN32);
    /* one submission: a two-pass choice's pass 1, a barrier, pass 2 */
    if (r == QKRT_OK) r = qkrt_run_timed(ctx, chain->dispatch, chain->count, ns);
    free(chain);
    return r;
}

/* A dense product of choice c (k: the kernel that reads x and writes y). */
static qkrt_result run_dense(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_choice *c,
                             const qk_weights *w, const float *x, uint32_t M, uint32_t K,
                             uint32_t T, float *y, double *ns, char *err, size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, c->kernel);
    pool p = {.ctx = ctx};
    qkrt_result r = QKRT_OK;
    qkrt_buffer *wb[8] = {0};
    pool_weights(&p, w, kernel_weights(k), wb, &r);
    qkrt_op_buffers B = {0};
    op_weights(&B, wb, kernel_weights(k), w[0].plane_count);
    const qkrt_op_query q = {.op = k->family, .M = M, .K = K, .T = T};
    void *xo;
    size_t xbytes;
    const void *xa = qk_activations_for(k, x, (size_t)T * K, &xo, &xbytes);
    B.x = pool_buffer(&p, xa, xbytes, 0, &r);
    B.y = pool_buffer(&p, NULL, (size_t)T * M * 4, NaN32, &r);
    if (r == QKRT_OK) r = run_choice(ctx, b, c, &q, &B, &p, ns);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, B.y, 0, y, (size_t)T * M * 4);
    free(xo);
    return finish(ctx, &p, r, err, err_size);
}

qkrt_result qk_run_matmul(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, const qk_weights *w,
                          const float *x, uint32_t M, uint32_t K, uint32_t T, float *y, double *ns,
                          char *err, size_t err_size) {
    if (!qk_matmul_k_ok(qkrt_bundle_kernel(b, ki), K, err, err_size)) return QKRT_ERROR_ARGUMENT;
    const qkrt_op_choice c = {.kernel = ki, .prepass = -1};
    return run_dense(ctx, b, &c, w, x, M, K, T, y, ns, err, err_size);
}

void qk_route_ref(const int32_t *topk, uint32_t T, uint32_t top_k, uint32_t E,
                  uint32_t max_per_expert, uint32_t *tpe, uint32_t *ids) {
    memset(tpe, 0, sizeof *tpe * E);
    for (uint32_t p = 0; p < T * top_k; p++) {
        if (topk[p] < 0 || (uint32_t)topk[p] >= E) continue; /* routes nowhere, as the kernel */
        uint32_t e = (uint32_t)topk[p];
        if (tpe[e] < max_per_expert) ids[(size_t)e * max_per_expert + tpe[e]++] = p;
    }
}

/* A product with expert ids of choice c (k: the kernel that reads x and
 * writes y), the routing built on the host: pairs per expert at most T (a
 * token picks an expert once). */
static qkrt_result run_routed(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_choice *c,
                              const qk_weights *w, const float *x, const int32_t *topk,
                              const qk_moe_shape *s, float *y, double *ns, char *err,
                              size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, c->kernel);
    uint32_t *tpe = qk_xcalloc(s->E, sizeof *tpe),
             *ids = qk_xcalloc((size_t)s->E * s->T, sizeof *ids);
    qk_route_ref(topk, s->T, s->top_k, s->E, s->T, tpe, ids);
    pool p = {.ctx = ctx};
    qkrt_result r = QKRT_OK;
    qkrt_buffer *wb[8] = {0};
    pool_weights(&p, w, kernel_weights(k), wb, &r);
    qkrt_op_buffers B = {0};
    op_weights(&B, wb, kernel_weights(k), w[0].plane_count);
    size_t ny = (size_t)s->T * s->top_k * s->M;
    void *xo;
    size_t xbytes;
    const void *xa = qk_activations_for(k, x, (size_t)s->T * s->ne11 * s->K, &xo, &xbytes);
    B.x = pool_buffer(&p, xa, xbytes, 0, &r);
    B.ids = pool_buffer(&p, ids, (size_t)s->E * s->T * 4, 0, &r);
    /* (a two-pass choice's dequant_id covers the experts tpe routes to) */
    B.tpe = pool_buffer(&p, tpe, (size_t)s->E * 4, 0, &r);
    B.y = pool_buffer(&p, NULL, ny * 4, NaN32, &r);
    const qkrt_op_query q = {.op = k->family,
                             .M = s->M,
                             .K = s->K,
                             .T = s->T,
                             .E = s->E,
                             .top_k = s->top_k,
                             .ne11 = s->ne11};
    if (r == QKRT_OK) r = run_choice(ctx, b, c, &q, &B, &p, ns);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, B.y, 0, y, ny * 4);
    free(tpe), free(ids), free(xo);
    return finish(ctx, &p, r, err, err_size);
}

qkrt_result qk_run_matmul_id(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                             const qk_weights *w, const float *x, const int32_t *topk,
                             const qk_moe_shape *s, float *y, double *ns, char *err,
                             size_t err_size) {
    if (!qk_matmul_k_ok(qkrt_bundle_kernel(b, ki), s->K, err, err_size)) return QKRT_ERROR_ARGUMENT;
    const qkrt_op_choice c = {.kernel = ki, .prepass = -1};
    return run_routed(ctx, b, &c, w, x, topk, s, y, ns, err, err_size);
}

static void route_shape(qkrt_shape *sh, qk_slots *sl, uint32_t T, uint32_t top_k, uint32_t E,
                        const uint32_t gx[2], const uint32_t tn[2]) {
    shape_add(sh, sl, "T", T), shape_add(sh, sl, "top_k", top_k), shape_add(sh, sl, "E", E);
    shape_add(sh, sl, "max_per_expert", T); /* a token picks an expert at most once */
    shape_add(sh, sl, "groups_x0", gx[0]), shape_add(sh, sl, "tile_n0", tn[0]);
    shape_add(sh, sl, "groups_x1", gx[1]), shape_add(sh, sl, "tile_n1", tn[1]);
}

qkrt_result qk_run_moe_route(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                             const int32_t *topk, uint32_t T, uint32_t top_k, uint32_t E,
                             const uint32_t gx[2], const uint32_t tn[2], uint32_t *tpe,
                             uint32_t *ids, uint32_t *disp, char *err, size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    pool p = {.ctx = ctx};
    qkrt_result r = QKRT_OK;
    /* poisoned with ~0: an id or count the kernel forgets shows */
    role_buf rb[] = {{"topk", pool_buffer(&p, topk, (size_t)T * top_k * 4, 0, &r)},
                     {"tpe", pool_buffer(&p, NULL, (size_t)E * 4, ~0u, &r)},
                     {"ids", pool_buffer(&p, NULL, (size_t)E * T * 4, ~0u, &r)},
                     {"indirect", pool_buffer(&p, NULL, 6 * 4, ~0u, &r)}};
    qkrt_dispatch d = {.bundle = b, .kernel = ki};
    qk_slots sl;
    if (r == QKRT_OK) r = bind_roles(ctx, k, NULL, 0, rb, 4, &d, &sl, err, err_size);
    route_shape(&d.shape, &sl, T, top_k, E, gx, tn);
    if (r == QKRT_OK) r = qkrt_run(ctx, &d, 1);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, rb[1].buf, 0, tpe, (size_t)E * 4);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, rb[2].buf, 0, ids, (size_t)E * T * 4);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, rb[3].buf, 0, disp, 6 * 4);
    return finish(ctx, &p, r, err, err_size);
}

/* ---------------------------------------------------------------- references */

qk_weights qk_weights_expert(const qk_weights *w, uint32_t e, uint32_t E) {
    qk_weights v = *w;
    for (uint32_t i = 0; i < w->plane_count; i++) {
        v.bytes[i] = w->bytes[i] / E;
        v.plane[i] = (const uint8_t *)w->plane[i] + v.bytes[i] * e;
    }
    return v;
}

double qk_ref_glu(const char *fusion, double g, double u) {
    if (strcmp(fusion, "swiglu_oai")) return g / (1 + exp(-g)) * u;
    const double alpha = 1.702, limit = 7;
    g = fmin(g, limit), u = fmax(-limit, fmin(u, limit));
    return g / (1 + exp(-alpha * g)) * (u + 1);
}

bool qk_ref_matmul_glu(const qk_weights *w, uint32_t nw, const char *fusion, const double *x,
                       uint32_t M, uint32_t K, uint32_t T, double *y) {
    if (nw == 1) return qk_ref_matvec(w, x, M, K, T, y);
    double *u = qk_xmalloc(sizeof *u * T * M);
    bool ok = qk_ref_matvec(&w[0], x, M, K, T, y) && qk_ref_matvec(&w[1], x, M, K, T, u);
    for (size_t i = 0; ok && i < (size_t)T * M; i++)
        y[i] = qk_ref_glu(fusion, y[i], u[i]);
    free(u);
    return ok;
}

bool qk_ref_matmul(const qk_weights *w, uint32_t nw, const double *x, uint32_t M, uint32_t K,
                   uint32_t T, double *y) {
    return qk_ref_matmul_glu(w, nw, "swiglu", x, M, K, T, y);
}

/* The reference's inputs, shared by its threads. */
typedef struct ref_id_job {
    const qk_weights *w;
    uint32_t nw;
    const char *fusion; /* the combine of nw = 2 (qk_ref_glu) */
    const double *x;
    const int32_t *topk;
    const qk_moe_shape *s;
    double *y;
    bool failed[QK_MAX_THREADS]; /* share t found no reference for the format */
} ref_id_job;

/* Share t of n (qk_parallel): the experts e = t, t + n, ..., each on its
 * pairs' rows at once; a pair belongs to one expert, so shares write
 * disjoint rows of y. */
static void ref_id_share(void *arg, uint32_t t, uint32_t n) {
    ref_id_job *j = arg;
    const qk_moe_shape *s = j->s;
    const uint32_t npairs = s->T * s->top_k;
    uint32_t *pairs = qk_xmalloc(sizeof *pairs * npairs);
    double *xe = qk_xmalloc(sizeof *xe * npairs * s->K),
           *ye = qk_xmalloc(sizeof *ye * npairs * s->M);
    bool ok = true;
    for (uint32_t e = t; e < s->E && ok; e += n) {
        uint32_t np = 0;
        for (uint32_t p = 0; p < npairs; p++)
            if (j->topk[p] == (int32_t)e) pairs[np++] = p;
        if (!np) continue;
        for (uint32_t i = 0; i < np; i++) {
            uint32_t tok = pairs[i] / s->top_k, slot = pairs[i] % s->top_k;
            memcpy(xe + (size_t)i * s->K, j->x + ((size_t)tok * s->ne11 + slot % s->ne11) * s->K,
                   sizeof *xe * s->K);
        }
        qk_weights we[2];
        for (uint32_t m = 0; m < j->nw; m++)
            we[m] = qk_weights_expert(&j->w[m], e, s->E);
        ok = qk_ref_matmul_glu(we, j->nw, j->fusion, xe, s->M, s->K, np, ye);
        for (uint32_t i = 0; i < np && ok; i++)
            memcpy(j->y + (size_t)pairs[i] * s->M, ye + (size_t)i * s->M, sizeof *ye * s->M);
    }
    j->failed[t] = !ok;
    free(pairs), free(xe), free(ye);
}

bool qk_ref_matmul_id(const qk_weights *w, uint32_t nw, const double *x, const int32_t *topk,
                      const qk_moe_shape *s, double *y) {
    return qk_ref_matmul_id_glu(w, nw, "swiglu", x, topk, s, y);
}

bool qk_ref_matmul_id_glu(const qk_weights *w, uint32_t nw, const char *fusion, const double *x,
                          const int32_t *topk, const qk_moe_shape *s, double *y) {
    /* on every core: a 512-token layer's experts are 10-20 G products */
    ref_id_job job = {w, nw, fusion, x, topk, s, y, {false}};
    uint32_t threads = qk_cores() < s->E ? qk_cores() : s->E;
    threads = threads < QK_MAX_THREADS ? threads : QK_MAX_THREADS;
    qk_parallel(threads, ref_id_share, &job);
    bool ok = true;
    for (uint32_t t = 0; t < threads; t++)
        ok &= !job.failed[t];
    return ok;
}

/* ---------------------------------------------------------------- two-pass */

bool qk_dequant_bytes(const qkrt_kernel_info *k, uint32_t M, uint32_t K, uint32_t E, size_t *bytes,
                      char *err, size_t err_size) {
    qk_slots sl;
    qkrt_shape sh = {0};
    shape_add(&sh, &sl, "M", M), shape_add(&sh, &sl, "K", K), shape_add(&sh, &sl, "E", E);
    bool output = false;
    for (uint32_t i = 0; i < k->binding_count; i++)
        output |= k->bindings[i].role_id == QKRT_ROLE_OUTPUT;
    if (!output) {
        snprintf(err, err_size, "%s has no output binding: it is not a dequant kernel", k->name);
        return false;
    }
    if (qkrt_kernel_binding_bytes(NULL, k, QKRT_ROLE_OUTPUT, &sh, bytes) == QKRT_OK) return true;
    snprintf(err, err_size, "%s", qkrt_last_error(NULL));
    return false;
}

/* Whether dqi is a dequant kernel of w's format and mmi (when not ~0u) a
 * kernel of family `family` on f16w weights; else false with a message. */
static bool two_pass_pair(const qkrt_bundle *b, uint32_t dqi, uint32_t mmi, const char *family,
                          const qk_weights *w, char *err, size_t err_size) {
    const qkrt_kernel_info *dq = qkrt_bundle_kernel(b, dqi);
    if (strncmp(dq->family, "dequant", 7) || strcmp(dq->format, w->format)) {
        snprintf(err, err_size, "%s is not a dequant kernel of format %s", dq->name, w->format);
        return false;
    }
    if (mmi == ~0u) return true;
    const qkrt_kernel_info *mm = qkrt_bundle_kernel(b, mmi);
    if (strcmp(mm->family, family) || strcmp(mm->format, QK_F16W) || kernel_weights(mm) != 1) {
        snprintf(err, err_size, "%s is not an unfused %s kernel on %s weights (pass 2)", mm->name,
                 family, QK_F16W);
        return false;
    }
    return true;
}

/* Fills d (buffers and shape in sl) with pass 1 over w into h: every matrix,
 * or under a tpe binding the experts tpe routes to. */
static qkrt_result dequant_dispatch(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi, pool *p,
                                    const qk_weights *w, uint32_t M, uint32_t K, uint32_t E,
                                    qkrt_buffer *tpe, qkrt_buffer *h, qkrt_dispatch *d,
                                    qk_slots *sl, char *err, size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, dqi);
    if (!qk_matmul_k_ok(k, K, err, err_size)) return QKRT_ERROR_ARGUMENT;
    qkrt_result r = QKRT_OK;
    qkrt_buffer *wb[4] = {0};
    pool_weights(p, w, 1, wb, &r);
    role_buf rb[] = {{"output", h}, {"tpe", tpe}};
    *d = (qkrt_dispatch){.bundle = b, .kernel = dqi};
    if (r == QKRT_OK) r = bind_roles(ctx, k, wb, w->plane_count, rb, 2, d, sl, err, err_size);
    if (r == QKRT_OK && tpe == NULL)
        for (uint32_t i = 0; i < k->binding_count; i++)
            if (!strcmp(k->bindings[i].role, "tpe")) {
                snprintf(err, err_size, "%s reads expert counts (tpe) this call has none of",
                         k->name);
                return QKRT_ERROR_ARGUMENT;
            }
    shape_add(&d->shape, sl, "M", M), shape_add(&d->shape, sl, "K", K);
    shape_add(&d->shape, sl, "E", E);
    return r;
}

qkrt_result qk_run_dequant(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi,
                           const qk_weights *w, uint32_t M, uint32_t K, uint32_t E,
                           const uint32_t *tpe, uint16_t *h, double *ns, char *err,
                           size_t err_size) {
    if (!two_pass_pair(b, dqi, ~0u, NULL, w, err, err_size)) return QKRT_ERROR_ARGUMENT;
    size_t bytes = 0;
    if (!qk_dequant_bytes(qkrt_bundle_kernel(b, dqi), M, K, E, &bytes, err, err_size))
        return QKRT_ERROR_ARGUMENT;
    pool p = {.ctx = ctx};
    qkrt_result r = QKRT_OK;
    qkrt_buffer *hb = pool_buffer(&p, NULL, bytes, QK_F16_NAN2, &r);
    qkrt_buffer *tb = tpe ? pool_buffer(&p, tpe, (size_t)E * 4, 0, &r) : NULL;
    qkrt_dispatch d;
    qk_slots sl;
    if (r == QKRT_OK)
        r = dequant_dispatch(ctx, b, dqi, &p, w, M, K, E, tb, hb, &d, &sl, err, err_size);
    if (r == QKRT_OK) r = qkrt_run_timed(ctx, &d, 1, ns);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, hb, 0, h, bytes);
    return finish(ctx, &p, r, err, err_size);
}

/* The two-pass choice of first pass dqi and kernel mmi, as an engine gets
 * it from a select rule that names a first pass. */
static qkrt_op_choice two_pass_choice(uint32_t dqi, uint32_t mmi) {
    qkrt_op_choice c = {.kernel = mmi, .prepass = -1};
    c.selection = (qkrt_selection){.kernel = mmi, .two_pass = true, .first_pass = dqi};
    return c;
}

qkrt_result qk_run_matmul_two_pass(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi,
                                   uint32_t mmi, const qk_weights *w, const float *x, uint32_t M,
                                   uint32_t K, uint32_t T, float *y, double ns[2], char *err,
                                   size_t err_size) {
    if (!two_pass_pair(b, dqi, mmi, "matmul", w, err, err_size)) return QKRT_ERROR_ARGUMENT;
    const qkrt_kernel_info *mm = qkrt_bundle_kernel(b, mmi), *dq = qkrt_bundle_kernel(b, dqi);
    if (!qk_matmul_k_ok(mm, K, err, err_size) || !qk_matmul_k_ok(dq, K, err, err_size))
        return QKRT_ERROR_ARGUMENT;
    for (uint32_t i = 0; i < dq->binding_count; i++) /* a dense product has no routing */
        if (dq->bindings[i].role_id == QKRT_ROLE_TPE) {
            snprintf(err, err_size, "%s reads expert counts (tpe) this call has none of", dq->name);
            return QKRT_ERROR_ARGUMENT;
        }
    const qkrt_op_choice c = two_pass_choice(dqi, mmi);
    return run_dense(ctx, b, &c, w, x, M, K, T, y, ns, err, err_size);
}

qkrt_result qk_run_matmul_id_two_pass(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi,
                                      uint32_t mmi, const qk_weights *w, const float *x,
                                      const int32_t *topk, const qk_moe_shape *s, float *y,
                                      double ns[2], char *err, size_t err_size) {
    if (!two_pass_pair(b, dqi, mmi, "matmul_id", w, err, err_size)) return QKRT_ERROR_ARGUMENT;
    if (!qk_matmul_k_ok(qkrt_bundle_kernel(b, mmi), s->K, err, err_size) ||
        !qk_matmul_k_ok(qkrt_bundle_kernel(b, dqi), s->K, err, err_size))
        return QKRT_ERROR_ARGUMENT;
    const qkrt_op_choice c = two_pass_choice(dqi, mmi);
    return run_routed(ctx, b, &c, w, x, topk, s, y, ns, err, err_size);
}
