/* MoE and post-op host operations: kernels bound by binding name from the
 * manifest (so a new fusion's bindings need no code here), and float64 CPU
 * references written from docs/formats.md's MoE conventions. */
#include "ops_moe.h"
#include "qk_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

qkrt_result qk_dispatch_setup(const qkrt_bundle *b, uint32_t ki, const qk_wbufs *mats,
                              uint32_t nmats, const qk_bind *binds, uint32_t nbinds,
                              const char *const *names, const int64_t *values, uint32_t nvars,
                              qkrt_dispatch *d, qk_slots *s, char *err, size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    memset(d, 0, sizeof *d);
    d->bundle = b, d->kernel = ki;
    uint32_t slot = 0, plane = 0;
    for (uint32_t i = 0; i < k->binding_count; i++) {
        const qkrt_binding_info *bi = &k->bindings[i];
        if (slot + bi->count > QK_MAX_BUFFERS) {
            snprintf(err, err_size, "%s: more than %d buffers", k->name, QK_MAX_BUFFERS);
            return QKRT_ERROR_ARGUMENT;
        }
        if (!strcmp(bi->role, "weights")) {
            if (!nmats || plane >= mats[0].plane_count) {
                snprintf(err, err_size, "%s: no weights for binding %s", k->name, bi->name);
                return QKRT_ERROR_ARGUMENT;
            }
            for (uint32_t m = 0; m < bi->count; m++)
                s->buffers[slot++] = mats[m < nmats ? m : nmats - 1].plane[plane];
            plane++;
            continue;
        }
        qkrt_buffer *buf = NULL;
        for (uint32_t j = 0; j < nbinds && !buf; j++)
            if (!strcmp(binds[j].name, bi->name)) buf = binds[j].buf;
        if (!buf) {
            snprintf(err, err_size, "%s: no buffer for binding %s (role %s)", k->name, bi->name,
                     bi->role);
            return QKRT_ERROR_ARGUMENT;
        }
        for (uint32_t m = 0; m < bi->count; m++)
            s->buffers[slot++] = buf;
    }
    if (nvars > QK_MAX_VARS) {
        snprintf(err, err_size, "%s: more than %d shape variables", k->name, QK_MAX_VARS);
        return QKRT_ERROR_ARGUMENT;
    }
    for (uint32_t i = 0; i < nvars; i++)
        s->names[i] = names[i], s->values[i] = values[i];
    qk_slots_use(d, s, slot, nvars);
    return QKRT_OK;
}

qkrt_result qk_buffer_from(qkrt_context *ctx, const void *data, size_t bytes, qkrt_buffer **out) {
    qkrt_result r = qkrt_buffer_create(ctx, bytes ? bytes : 4, out);
    if (r == QKRT_OK)
        r = data ? qkrt_buffer_upload(ctx, *out, 0, data, bytes)
                 : qkrt_buffer_fill(ctx, *out, 0x7fc00000u); /* NaN: unwritten outputs fail */
    return r;
}

qkrt_result qk_wbufs_upload(qkrt_context *ctx, const qk_weights *w, qk_wbufs *out) {
    memset(out, 0, sizeof *out);
    qkrt_result r = QKRT_OK;
    for (uint32_t p = 0; p < w->plane_count && r == QKRT_OK; p++) {
        r = qk_buffer_from(ctx, w->plane[p], w->bytes[p], &out->plane[p]);
        if (r == QKRT_OK) out->plane_count++;
    }
    return r;
}

void qk_wbufs_destroy(qkrt_context *ctx, qk_wbufs *wb) {
    for (uint32_t p = 0; p < wb->plane_count; p++)
        qkrt_buffer_destroy(ctx, wb->plane[p]);
    wb->plane_count = 0;
}

qkrt_result qk_run_matvec_id(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                             const qk_weights *w, uint32_t nw, const int32_t *ids, const float *x,
                             uint32_t M, uint32_t K, uint32_t T, uint32_t top_k, uint32_t ne11,
                             uint32_t E, float *y, double *ns, char *err, size_t err_size) {
    qk_wbufs mats[QK_MOE_MAX_MATS] = {0};
    qkrt_op_buffers B = {.matrices = nw};
    size_t pairs = (size_t)T * top_k;
    qkrt_result r = nw >= 1 && nw <= QK_MOE_MAX_MATS ? QKRT_OK : QKRT_ERROR_ARGUMENT;
    if (r != QKRT_OK) snprintf(err, err_size, "%u weight matrices: 1 to %d", nw, QK_MOE_MAX_MATS);
    for (uint32_t m = 0; m < nw && r == QKRT_OK; m++) {
        r = qk_wbufs_upload(ctx, &w[m], &mats[m]);
        for (uint32_t p = 0; p < mats[m].plane_count && p < QKRT_OP_PLANES; p++)
            B.weights[m][p] = mats[m].plane[p];
    }
    if (r == QKRT_OK) r = qk_buffer_from(ctx, x, (size_t)T * ne11 * K * 4, &B.x);
    if (r == QKRT_OK) r = qk_buffer_from(ctx, ids, pairs * 4, &B.ids);
    if (r == QKRT_OK) r = qk_buffer_from(ctx, NULL, pairs * M * 4, &B.y);
    /* the operations layer's chain for kernel ki: the bundle's quantizer
     * first (over every row of x) where the kernel reads q8 rows */
    const qkrt_op_query q = {.op = qkrt_bundle_kernel(b, ki)->family,
                             .M = M,
                             .K = K,
                             .T = T,
                             .E = E,
                             .top_k = top_k,
                             .ne11 = ne11};
    qkrt_op_choice c = {.kernel = ki, .prepass = -1};
    if (r == QKRT_OK && qk_takes_q8(qkrt_bundle_kernel(b, ki)) &&
        (c.prepass = qk_find_quantizer(ctx, b, err, err_size)) < 0)
        r = QKRT_ERROR_UNSUPPORTED;
    size_t q8 = 0, scratch = 0;
    if (r == QKRT_OK) r = qkrt_op_work(ctx, b, &c, &q, &q8, &scratch);
    if (q8 && r == QKRT_OK) r = qk_buffer_from(ctx, NULL, q8, &B.x_q8);
    /* a split-K kernel's scratch, zero-filled: its counters start at 0 */
    if (scratch && r == QKRT_OK) r = qkrt_buffer_create(ctx, scratch, &B.scratch);
    if (B.scratch && r == QKRT_OK) r = qkrt_buffer_fill(ctx, B.scratch, 0);
    qkrt_chain *chain = qk_xmalloc(sizeof *chain);
    if (r == QKRT_OK) r = qkrt_op_chain(ctx, b, &c, &q, &B, chain);
    if (r == QKRT_OK) {
        double t[2] = {0, 0};
        /* a split-K kernel runs twice on one scratch, y poisoned again
         * between: the checked run finds the counters as the first left
         * them, so a kernel that did not set them back leaves y unwritten */
        if (B.scratch) r = qkrt_run(ctx, chain->dispatch, chain->count);
        if (B.scratch && r == QKRT_OK) r = qkrt_buffer_fill(ctx, B.y, 0x7fc00000u);
        if (r == QKRT_OK) r = qkrt_run_timed(ctx, chain->dispatch, chain->count, ns ? t : NULL);
        if (ns) *ns = t[0] + t[1]; /* the quantizer's time counts */
        if (r == QKRT_OK) r = qkrt_buffer_download(ctx, B.y, 0, y, pairs * M * 4);
    }
    free(chain);
    if (r != QKRT_OK && !err[0]) snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    for (uint32_t m = 0; m < nw; m++)
        qk_wbufs_destroy(ctx, &mats[m]);
    qkrt_buffer *bufs[] = {B.x, B.ids, B.y, B.x_q8, B.scratch};
    for (int i = 0; i < 5; i++)
        if (bufs[i]) qkrt_buffer_destroy(ctx, bufs[i]);
    return r;
}

double qk_ref_swiglu(double g, double u) {
    return g / (1.0 + exp(-g)) * u;
}

bool qk_ref_matvec_id(const qk_weights *experts, const qk_weights *up, const int32_t *ids,
                      const double *x, uint32_t M, uint32_t K, uint32_t T, uint32_t top_k,
                      uint32_t ne11, double *y) {
    double *u = up ? qk_xmalloc(sizeof *u * M) : NULL;
    bool ok = true;
    for (uint32_t p = 0; p < T * top_k && ok; p++) {
        const double *xr = x + ((size_t)(p / top_k) * ne11 + (p % top_k) % ne11) * K;
        double *yr = y + (size_t)p * M;
        ok = qk_ref_matvec(&experts[ids[p]], xr, M, K, 1, yr);
        if (ok && up) {
            ok = qk_ref_matvec(&up[ids[p]], xr, M, K, 1, u);
            for (uint32_t r = 0; r < M; r++)
                yr[r] = qk_ref_swiglu(yr[r], u[r]);
        }
    }
    free(u);
    return ok;
}

bool qk_ranked_name(const char *name, char *out, size_t out_size) {
    const char *at = strstr(name, "-ids_");
    if (!at) at = strstr(name, "-ids-");
    if (!at) return false;
    const size_t n = strlen(name), tail = strlen("_swiglu");
    const bool fused = n >= tail && !strcmp(name + n - tail, "_swiglu");
    int w = snprintf(out, out_size, "%.*s-ranked%s%s", (int)(at - name), name, at + 4,
                     fused ? "" : "_swiglu");
    return w > 0 && (size_t)w < out_size;
}

/* The k experts of the highest score c[0..E) in order, ties to the lower id. */
static void top_k_of(const double *c, uint32_t E, uint32_t k, bool *taken, int32_t *ids) {
    memset(taken, 0, E);
    for (uint32_t s = 0; s < k; s++) {
        uint32_t best = E;
        for (uint32_t e = 0; e < E; e++)
            if (!taken[e] && (best == E || c[e] > c[best])) best = e;
        taken[best] = true;
        ids[s] = (int32_t)best;
    }
}

void qk_ref_router(const double *logits, uint32_t T, uint32_t E, uint32_t top_k, bool renorm,
                   int32_t *ids, double *w) {
    bool *taken = qk_xmalloc(E);
    for (uint32_t t = 0; t < T; t++) {
        const double *l = logits + (size_t)t * E;
        double mx = -INFINITY, sum = 0, sel = 0;
        for (uint32_t e = 0; e < E; e++)
            mx = fmax(mx, l[e]);
        for (uint32_t e = 0; e < E; e++)
            sum += exp(l[e] - mx);
        top_k_of(l, E, top_k, taken, ids + (size_t)t * top_k);
        for (uint32_t s = 0; s < top_k; s++) {
            w[t * top_k + s] = exp(l[ids[t * top_k + s]] - mx) / sum;
            sel += w[t * top_k + s];
        }
        for (uint32_t s = 0; renorm && s < top_k; s++)
            w[t * top_k + s] /= sel;
    }
    free(taken);
}

bool qk_route_form_of(const char *fusion, qk_route_form *f) {
    *f = (qk_route_form){0};
    if (!strcmp(fusion, "none") || !strcmp(fusion, "renorm"))
        f->renorm = !strcmp(fusion, "renorm");
    else if (!strcmp(fusion, "topk_softmax"))
        f->kind = QK_ROUTE_TOPK_SOFTMAX;
    else if (!strcmp(fusion, "sigmoid_bias"))
        f->kind = QK_ROUTE_SIGMOID_BIAS;
    else
        return false;
    return true;
}

/* sigmoid_bias's choice scores of one token: sigmoid + bias, then the
 * experts outside the topk_group best groups (by the sum of their two best
 * scores, ties to the lower group) at -inf. */
static void sigmoid_choice(const double *l, uint32_t E, const qk_route_form *f, double *c) {
    const uint32_t ng = f->n_group ? f->n_group : 1, G = E / ng;
    const uint32_t kg = f->topk_group ? f->topk_group : 1;
    for (uint32_t e = 0; e < E; e++)
        c[e] = 1 / (1 + exp(-l[e])) + (f->bias ? f->bias[e] : 0);
    if (kg >= ng) return;
    double gs[64];
    for (uint32_t g = 0; g < ng && g < 64; g++) {
        double b1 = -INFINITY, b2 = -INFINITY;
        for (uint32_t j = g * G; j < g * G + G; j++)
            if (c[j] > b1)
                b2 = b1, b1 = c[j];
            else if (c[j] > b2)
                b2 = c[j];
        gs[g] = G > 1 ? b1 + b2 : b1;
    }
    for (uint32_t g = 0; g < ng && g < 64; g++) {
        uint32_t rank = 0;
        for (uint32_t h = 0; h < ng && h < 64; h++)
            rank += gs[h] > gs[g] || (gs[h] == gs[g] && h < g);
        for (uint32_t j = g * G; rank >= kg && j < g * G + G; j++)
            c[j] = -INFINITY;
    }
}

void qk_ref_route(const double *logits, uint32_t T, uint32_t E, uint32_t top_k,
                  const qk_route_form *f, int32_t *ids, double *w, double *choice) {
    if (f->kind == QK_ROUTE_SOFTMAX_TOPK) {
        qk_ref_router(logits, T, E, top_k, f->renorm, ids, w);
        for (size_t i = 0; choice && i < (size_t)T * E; i++)
            choice[i] = logits[i];
        return;
    }
    bool *taken = qk_xmalloc(E);
    double *c = qk_xmalloc(sizeof *c * E);
    for (uint32_t t = 0; t < T; t++) {
        const double *l = logits + (size_t)t * E;
        int32_t *id = ids + (size_t)t * top_k;
        double *wt = w + (size_t)t * top_k, sum = 0;
        if (f->kind == QK_ROUTE_SIGMOID_BIAS)
            sigmoid_choice(l, E, f, c);
        else
            memcpy(c, l, sizeof *c * E);
        top_k_of(c, E, top_k, taken, id);
        for (uint32_t s = 0; s < top_k; s++) { /* the sum in selection order */
            wt[s] = f->kind == QK_ROUTE_SIGMOID_BIAS ? 1 / (1 + exp(-l[id[s]]))
                                                     : exp(l[id[s]] - l[id[0]]);
            sum += wt[s];
        }
        for (uint32_t s = 0; s < top_k; s++)
            wt[s] = f->kind == QK_ROUTE_SIGMOID_BIAS ? wt[s] / sum * f->scale : wt[s] / sum;
        if (choice) memcpy(choice + (size_t)t * E, c, sizeof *c * E);
    }
    free(taken), free(c);
}

void qk_ref_combine(const double *slots, const double *w, const double *residual,
                    const double *norm_w, double eps, uint32_t T, uint32_t top_k, uint32_t N,
                    double *y, double *normed) {
    for (uint32_t t = 0; t < T; t++) {
        double ss = 0;
        for (uint32_t i = 0; i < N; i++) {
            double v = residual ? residual[(size_t)t * N + i] : 0;
            for (uint32_t s = 0; s < top_k; s++)
                v += w[t * top_k + s] * slots[((size_t)t * top_k + s) * N + i];
            y[(size_t)t * N + i] = v;
            ss += v * v;
        }
        double scale = 1 / sqrt(ss / N + eps);
        for (uint32_t i = 0; norm_w && i < N; i++)
            normed[(size_t)t * N + i] = y[(size_t)t * N + i] * scale * norm_w[i];
    }
}

void qk_ref_shared_into(const double *shared, const double *gate, uint32_t T, uint32_t N,
                        double *residual) {
    for (uint32_t t = 0; t < T; t++) {
        const double g = gate ? 1 / (1 + exp(-gate[t])) : 1;
        for (uint32_t i = 0; i < N; i++)
            residual[(size_t)t * N + i] += g * shared[(size_t)t * N + i];
    }
}
