/* Benchmark runs. Timing is Vulkan timestamps around each dispatch of one
 * command buffer that cycles through copies of the weights, so every run
 * reads its weights from DRAM, not from L2. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "ops_matmul.h"
#include "ops_moe_layer.h"
#include "qk_util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, uint32_t n) {
    qsort(v, n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Whether kernel i of the bundle is a copy kernel (family "copy") that this
 * device runs. */
static bool is_copy_kernel(qkrt_context *ctx, const qkrt_bundle *b, uint32_t i) {
    return !strcmp(qkrt_bundle_kernel(b, i)->family, "copy") &&
           qkrt_kernel_check(ctx, b, i) == QKRT_OK;
}

/* n dispatches of copy kernel ki over `words` 32-bit words, from src[j % nbuf]
 * to dst[j % nbuf]: one malloc'd block with the buffer pairs and the shape
 * value they point to after the dispatches. */
static qkrt_dispatch *copy_dispatches(const qkrt_bundle *b, uint32_t ki, qkrt_buffer **src,
                                      qkrt_buffer **dst, uint32_t nbuf, uint64_t words,
                                      uint32_t n) {
    static const char *const names[] = {"N"};
    qkrt_dispatch *ds = qk_xmalloc(sizeof *ds * n + sizeof(qkrt_buffer *) * 2 * n + 8);
    qkrt_buffer **pairs = (qkrt_buffer **)(void *)(ds + n);
    int64_t *value = (int64_t *)(void *)(pairs + 2 * n);
    *value = (int64_t)words;
    for (uint32_t j = 0; j < n; j++) {
        pairs[2 * j] = src[j % nbuf], pairs[2 * j + 1] = dst[j % nbuf];
        ds[j] = (qkrt_dispatch){.bundle = b,
                                .kernel = ki,
                                .buffer_count = 2,
                                .buffers = &pairs[2 * j],
                                .shape = {1, names, value}};
    }
    return ds;
}

/* The copy kernels of the bundle over nbuf buffer pairs in turn, fastest
 * wins: the median per dispatch (*best, ns) and, with span, back to back
 * (*best_span, ns). INFINITY without a copy kernel. */
static qkrt_result time_copy_kernels(qkrt_context *ctx, const qkrt_bundle *b, qkrt_buffer **src,
                                     qkrt_buffer **dst, uint32_t nbuf, uint64_t words,
                                     double warmup_s, uint32_t n, double *best, double *best_span) {
    qkrt_result r = QKRT_OK;
    double *ns = qk_xcalloc(n, sizeof *ns);
    *best = INFINITY;
    if (best_span) *best_span = INFINITY;
    for (uint32_t i = 0; b && i < qkrt_bundle_kernel_count(b) && r == QKRT_OK; i++) {
        if (!is_copy_kernel(ctx, b, i)) continue;
        qkrt_dispatch *ds = copy_dispatches(b, i, src, dst, nbuf, words, n);
        for (double t0 = qk_now_s(); r == QKRT_OK && qk_now_s() - t0 < warmup_s;)
            r = qkrt_run(ctx, ds, n < 16 ? n : 16);
        if (r == QKRT_OK) r = qkrt_run_timed(ctx, ds, n, ns);
        if (r == QKRT_OK) *best = fmin(*best, median(ns, n));
        double span[3];
        for (uint32_t j = 0; best_span && j < 3 && r == QKRT_OK; j++)
            r = qkrt_run_span(ctx, ds, n, &span[j]);
        if (r == QKRT_OK && best_span) *best_span = fmin(*best_span, median(span, 3) / n);
        free(ds);
    }
    free(ns);
    return r;
}

/* Into how many dispatches (at most max_parts) a copy of `words` words
 * splits so that every copy kernel's grid stays within the device's
 * maxComputeWorkGroupCount and each buffer within its maxStorageBufferRange
 * (Vulkan guarantees only 65,535 workgroups a dimension and 128 MiB: 1 GiB is
 * 65,536 workgroups of 1,024 words); *chunk = the words of each, a multiple
 * of 4. 1 where none fits: the dispatch then fails with the limit. */
static uint32_t copy_parts(qkrt_context *ctx, const qkrt_bundle *b, uint64_t words,
                           uint32_t max_parts, uint64_t *chunk) {
    const qkrt_device_info *dev = qkrt_device(ctx);
    const uint32_t *max = dev->max_workgroup_count;
    const uint64_t range = dev->max_storage_buffer_range / 16 * 4; /* words, whole vectors */
    static const char *const names[] = {"N"};
    /* the parts the grids and the range ask for at the whole size, then up
     * until all fit (rounding can leave one part a workgroup over) */
    uint64_t need = range ? (words + range - 1) / range : 1;
    if (!need) need = 1;
    if (need > max_parts) {
        *chunk = words;
        return 1;
    }
    for (uint32_t parts = (uint32_t)need; parts <= max_parts;
         parts = need > max_parts ? max_parts + 1 : (uint32_t)need) {
        *chunk = ((words + parts - 1) / parts + 3) / 4 * 4;
        int64_t value = (int64_t)*chunk;
        const qkrt_shape shape = {1, names, &value};
        need = parts;
        for (uint32_t i = 0; b && i < qkrt_bundle_kernel_count(b); i++) {
            if (!is_copy_kernel(ctx, b, i)) continue;
            const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
            for (int g = 0; g < 3; g++) {
                int64_t groups;
                if (qkrt_eval(k->grid[g], &shape, &groups, NULL, 0) == QKRT_OK && max[g] &&
                    groups > (int64_t)max[g]) {
                    uint64_t more = parts * (((uint64_t)groups + max[g] - 1) / max[g]);
                    if (more == parts) more++;
                    if (more > need) need = more;
                }
            }
        }
        if (need == parts) return parts;
    }
    *chunk = words;
    return 1;
}

qkrt_result qk_bench_copy(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_opts *o,
                          double *gbps, double *us) {
    enum { MAX_PARTS = 64 };
    uint64_t chunk = 0;
    const uint32_t parts = copy_parts(ctx, b, o->copy_bytes / 4, MAX_PARTS, &chunk);
    /* parts buffer pairs, a dispatch each: the copy is their sum */
    qkrt_buffer *src[MAX_PARTS] = {0}, *dst[MAX_PARTS] = {0};
    uint32_t n = o->runs < 20 ? 20 : o->runs;
    if (n < parts) n = parts;
    double *ns = qk_xcalloc(n, sizeof *ns), best = INFINITY;
    qkrt_result r = QKRT_OK;
    for (uint32_t i = 0; i < parts && r == QKRT_OK; i++) {
        r = qkrt_buffer_create(ctx, chunk * 4, &src[i]);
        if (r == QKRT_OK) r = qkrt_buffer_create(ctx, chunk * 4, &dst[i]);
        if (r == QKRT_OK) r = qkrt_buffer_fill(ctx, src[i], 0x3f800000u);
    }
    if (r == QKRT_OK)
        r = time_copy_kernels(ctx, b, src, dst, parts, chunk, o->warmup_s, n, &best, NULL);
    if (r == QKRT_OK && best == INFINITY) { /* no copy kernel: one copy command */
        for (double t0 = qk_now_s(); r == QKRT_OK && qk_now_s() - t0 < o->warmup_s;)
            r = qkrt_copy(ctx, dst[0], src[0], chunk * 4, 4, NULL);
        if (r == QKRT_OK) r = qkrt_copy(ctx, dst[0], src[0], chunk * 4, n, ns);
        if (r == QKRT_OK) best = median(ns, n);
    }
    if (r == QKRT_OK) {
        *us = best * parts / 1e3;
        *gbps = 2.0 * (double)(chunk * 4) / best;
    }
    for (uint32_t i = 0; i < parts; i++) {
        qkrt_buffer_destroy(ctx, src[i]);
        qkrt_buffer_destroy(ctx, dst[i]);
    }
    free(ns);
    return r;
}

qkrt_result qk_bench_size_copy(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_opts *o,
                               double bytes, double *us, double *us_span) {
    /* half the bytes read, half written, in whole 16-byte vectors; a copy
     * past the device's workgroup counts is timed as parts dispatches of a
     * part each */
    uint64_t words = ((uint64_t)(bytes / 8) + 3) / 4 * 4, chunk = words;
    const uint32_t parts = copy_parts(ctx, b, words, 1u << 16, &chunk);
    words = chunk;
    uint32_t nbuf = (uint32_t)((double)o->rotate_bytes / bytes + 1);
    nbuf = nbuf < 2 ? 2 : nbuf > 64 ? 64 : nbuf;
    uint32_t n = o->runs < 20 ? 20 : o->runs;
    if (n < nbuf) n = nbuf;
    qkrt_buffer *src[64] = {0}, *dst[64] = {0};
    qkrt_result r = QKRT_OK;
    for (uint32_t i = 0; i < nbuf && r == QKRT_OK; i++) {
        r = qkrt_buffer_create(ctx, words * 4, &src[i]);
        if (r == QKRT_OK) r = qkrt_buffer_create(ctx, words * 4, &dst[i]);
        if (r == QKRT_OK) r = qkrt_buffer_fill(ctx, src[i], 0x3f800000u);
    }
    double best = INFINITY, best_span = INFINITY;
    if (r == QKRT_OK)
        r = time_copy_kernels(ctx, b, src, dst, nbuf, words, o->rewarm_s, n, &best, &best_span);
    *us = best == INFINITY ? 0 : best * parts / 1e3;
    *us_span = best_span == INFINITY ? 0 : best_span * parts / 1e3;
    for (uint32_t i = 0; i < nbuf; i++) {
        qkrt_buffer_destroy(ctx, src[i]);
        qkrt_buffer_destroy(ctx, dst[i]);
    }
    return r;
}

qkrt_result qk_bench_floor(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_opts *o,
                           double *us, double *us_span) {
    enum { N = 1024 }; /* one workgroup's worth of a copy: 4 KiB */
    uint32_t n = o->runs < 20 ? 20 : o->runs, ki = UINT32_MAX;
    for (uint32_t i = 0; b && i < qkrt_bundle_kernel_count(b) && ki == UINT32_MAX; i++)
        if (is_copy_kernel(ctx, b, i)) ki = i;
    *us = *us_span = 0;
    if (ki == UINT32_MAX) return QKRT_OK;
    qkrt_buffer *src = NULL, *dst = NULL;
    qkrt_result r = qkrt_buffer_create(ctx, N * 4, &src);
    if (r == QKRT_OK) r = qkrt_buffer_create(ctx, N * 4, &dst);
    if (r == QKRT_OK) r = qkrt_buffer_fill(ctx, src, 0x3f800000u);
    qkrt_dispatch *ds = copy_dispatches(b, ki, &src, &dst, 1, N, n);
    double *ns = qk_xcalloc(n, sizeof *ns), span[5];
    if (r == QKRT_OK) r = qkrt_run_timed(ctx, ds, n, ns);
    for (uint32_t i = 0; i < 5 && r == QKRT_OK; i++)
        r = qkrt_run_span(ctx, ds, n, &span[i]);
    if (r == QKRT_OK) {
        *us = median(ns, n) / 1e3;
        *us_span = median(span, 5) / n / 1e3;
    }
    qkrt_buffer_destroy(ctx, src);
    qkrt_buffer_destroy(ctx, dst);
    free(ds), free(ns);
    return r;
}

/* Whether the case's shape meets the kernel's constraints. */
static bool fits(const qkrt_kernel_info *k, const qk_bench_case *c) {
    return qk_kernel_fits(k, c->M, c->K, c->T, c->E, c->top_k, 1, c->T);
}

/* Kernels of the case: its family and format, and unless all_variants, the
 * token tile that fits T best (the smallest NR1 >= T, else the largest). */
static uint32_t eligible(const qkrt_bundle *b, const qk_bench_case *c, const qk_bench_opts *o,
                         uint32_t *idx, uint32_t cap) {
    uint32_t n = 0, fit = 0, largest = 0;
    for (uint32_t pass = 0; pass < 2; pass++)
        for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
            const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
            if (strcmp(k->family, c->family) || strcmp(k->format, c->format) ||
                strcmp(k->activation, o->activation ? o->activation : "f32") ||
                strcmp(k->format_variant, c->variant) || strcmp(k->fusion, "none") ||
                (o->filter && !qk_filter_match(o->filter, k->name)) || !fits(k, c))
                continue;
            if (pass == 0) {
                if (k->nr1 >= c->T && (!fit || k->nr1 < fit)) fit = k->nr1;
                if (k->nr1 > largest) largest = k->nr1;
                continue;
            }
            /* mat-vec reads each weight once per NR1 tokens: the fitting
             * token tile competes, and the one of half as many tokens, whose
             * two column groups run side by side and share the weights
             * through L2 (run 47: q4_0 at 8 tokens, NR1 4 beat NR1 8 by
             * 20%); tiled matmuls all do */
            uint32_t want = fit ? fit : largest;
            bool any_nr1 = o->all_variants || strcmp(c->family, "matvec") ||
                           (o->always && !strcmp(o->always, k->name));
            if ((any_nr1 || k->nr1 == want || 2 * k->nr1 == want) && n < cap) idx[n++] = i;
        }
    return n;
}

/* Buffers of one case: nw copies of the weight planes, x and y. */
typedef struct case_buffers {
    uint32_t copies, planes;
    qkrt_buffer **w; /* copies x planes */
    qkrt_buffer *x, *y, *ids;
    qkrt_buffer *route, *tpe; /* matmul_id: pairs by expert [E, mpe], pairs per expert [E] */
    uint32_t mpe;             /* matmul_id: the most pairs any expert has */
    qkrt_buffer *xq;          /* x as q8 rows, for kernels on pre-quantized activations */
    int qi;                   /* the bundle's quantizer writing xq, or -1 */
    qkrt_buffer **scratch;    /* split-K kernels: one scratch per weight copy, so that */
    size_t scratch_bytes;     /* dispatches in flight together never share one */
    int64_t scratch_owner;    /* the split kernel whose counters it holds; -1: zeros */
    int64_t shape[7];         /* the values of case_shape's variables */
    struct lists **lists;     /* the dispatches' buffer lists (list_alloc) */
} case_buffers;

/* Buffer lists that dispatches point to, in chunks that never move, freed
 * with the case. */
typedef struct lists {
    struct lists *next;
    uint32_t used;
    qkrt_buffer *slot[4096];
} lists;

static qkrt_buffer **list_alloc(lists **head, uint32_t n) {
    if (!*head || (*head)->used + n > 4096) {
        lists *c = qk_xcalloc(1, sizeof *c);
        c->next = *head;
        *head = c;
    }
    qkrt_buffer **p = &(*head)->slot[(*head)->used];
    (*head)->used += n;
    return p;
}

static void free_buffers(qkrt_context *ctx, case_buffers *cb) {
    for (uint32_t i = 0; cb->w && i < cb->copies * cb->planes; i++)
        qkrt_buffer_destroy(ctx, cb->w[i]);
    free(cb->w);
    qkrt_buffer_destroy(ctx, cb->x);
    qkrt_buffer_destroy(ctx, cb->y);
    qkrt_buffer_destroy(ctx, cb->ids);
    qkrt_buffer_destroy(ctx, cb->route);
    qkrt_buffer_destroy(ctx, cb->tpe);
    qkrt_buffer_destroy(ctx, cb->xq);
    for (uint32_t i = 0; cb->scratch && i < cb->copies; i++)
        qkrt_buffer_destroy(ctx, cb->scratch[i]);
    free(cb->scratch);
    for (lists *l = cb->lists ? *cb->lists : NULL, *next; l; l = next) {
        next = l->next;
        free(l);
    }
    free(cb->lists);
    memset(cb, 0, sizeof *cb);
}

static qkrt_result make_buffers(qkrt_context *ctx, const qk_weights *w, const float *x,
                                const qkrt_kernel_info *k0, const int32_t *ids,
                                double touched_fraction, const qk_bench_case *c, uint64_t rotate,
                                case_buffers *cb) {
    /* rotate on the bytes one dispatch reads: only the touched experts */
    double wbytes = 0;
    for (uint32_t p = 0; p < w->plane_count; p++)
        wbytes += (double)w->bytes[p];
    wbytes *= touched_fraction;
    cb->planes = w->plane_count;
    cb->copies = (uint32_t)((double)rotate / wbytes + 1);
    if (cb->copies > 64) cb->copies = 64;
    if (cb->copies < 2) cb->copies = 2;
    cb->w = qk_xcalloc((size_t)cb->copies * cb->planes, sizeof *cb->w);
    qkrt_result r = QKRT_OK;
    /* the first copy uploaded, the others copied from it on the device: a
     * 128-expert case makes tens of copies of 100 MB, which through the
     * host took most of a tune's case */
    for (uint32_t i = 0; i < cb->copies && r == QKRT_OK; i++)
        for (uint32_t p = 0; p < cb->planes && r == QKRT_OK; p++) {
            qkrt_buffer **dst = &cb->w[i * cb->planes + p];
            r = qkrt_buffer_create(ctx, w->bytes[p], dst);
            if (r == QKRT_OK)
                r = i ? qkrt_copy(ctx, *dst, cb->w[p], w->bytes[p], 1, NULL)
                      : qkrt_buffer_upload(ctx, *dst, 0, w->plane[p], w->bytes[p]);
        }
    /* x in the kernels' activation type (k0: one of them; they share it) */
    void *xo;
    size_t xbytes;
    const void *xa = qk_activations_for(k0, x, (size_t)c->T * c->K, &xo, &xbytes);
    if (r == QKRT_OK) r = qkrt_buffer_create(ctx, xbytes, &cb->x);
    if (r == QKRT_OK) r = qkrt_buffer_upload(ctx, cb->x, 0, xa, xbytes);
    free(xo);
    if (r == QKRT_OK && cb->qi >= 0) r = qkrt_buffer_create(ctx, qk_q8_bytes(c->T, c->K), &cb->xq);
    if (r == QKRT_OK && cb->qi >= 0) r = qkrt_buffer_fill(ctx, cb->xq, 0x7fc00000u);
    size_t pairs = (size_t)c->T * (c->E ? c->top_k : 1);
    if (r == QKRT_OK) r = qkrt_buffer_create(ctx, pairs * c->M * 4, &cb->y);
    if (r == QKRT_OK && ids) r = qkrt_buffer_create(ctx, pairs * 4, &cb->ids);
    if (r == QKRT_OK && ids) r = qkrt_buffer_upload(ctx, cb->ids, 0, ids, pairs * 4);
    if (r == QKRT_OK && ids && !strcmp(c->family, "matmul_id")) {
        /* the routing moe_route would build on the GPU, built here */
        uint32_t *tpe = qk_xcalloc(c->E, sizeof *tpe), *route = qk_xcalloc((size_t)c->E * c->T, 4);
        /* once to count, once packed to [E, mpe] with mpe the busiest expert's count */
        qk_route_ref(ids, c->T, c->top_k, c->E, c->T, tpe, route);
        cb->mpe = 1;
        for (uint32_t e = 0; e < c->E; e++)
            cb->mpe = tpe[e] > cb->mpe ? tpe[e] : cb->mpe;
        qk_route_ref(ids, c->T, c->top_k, c->E, cb->mpe, tpe, route);
        r = qkrt_buffer_create(ctx, (size_t)c->E * cb->mpe * 4, &cb->route);
        if (r == QKRT_OK)
            r = qkrt_buffer_upload(ctx, cb->route, 0, route, (size_t)c->E * cb->mpe * 4);
        if (r == QKRT_OK) r = qkrt_buffer_create(ctx, (size_t)c->E * 4, &cb->tpe);
        if (r == QKRT_OK) r = qkrt_buffer_upload(ctx, cb->tpe, 0, tpe, (size_t)c->E * 4);
        free(tpe), free(route);
    }
    const int64_t shape[7] = {c->M, c->K, c->T, c->top_k, 1, c->E, cb->mpe};
    memcpy(cb->shape, shape, sizeof shape);
    cb->lists = qk_xcalloc(1, sizeof *cb->lists);
    return r;
}

/* The shape every dispatch of the case gets (its values in cb). */
static qkrt_shape case_shape(const case_buffers *cb) {
    static const char *const names[] = {"M", "K", "T", "top_k", "ne11", "E", "max_per_expert"};
    return (qkrt_shape){7, names, cb->shape};
}

/* One scratch per weight copy, zero-filled, as large as the largest scratch
 * of the case's kernels (none without split-K kernels). */
static qkrt_result make_scratch(qkrt_context *ctx, const qkrt_bundle *b, const uint32_t *idx,
                                uint32_t n, case_buffers *cb, char *err, size_t err_size) {
    qkrt_shape s = case_shape(cb);
    for (uint32_t v = 0; v < n; v++) {
        size_t bytes;
        if (!qk_scratch_bytes(qkrt_bundle_kernel(b, idx[v]), &s, &bytes, err, err_size))
            return QKRT_ERROR_ARGUMENT;
        if (bytes > cb->scratch_bytes) cb->scratch_bytes = bytes;
    }
    if (!cb->scratch_bytes) return QKRT_OK;
    cb->scratch = qk_xcalloc(cb->copies, sizeof *cb->scratch);
    cb->scratch_owner = -1;
    qkrt_result r = QKRT_OK;
    for (uint32_t i = 0; i < cb->copies && r == QKRT_OK; i++)
        r = qkrt_buffer_create(ctx, cb->scratch_bytes, &cb->scratch[i]);
    return r;
}

/* Whether kernel ki binds the scratch (a split-K kernel). */
static bool uses_scratch(const qkrt_bundle *b, uint32_t ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    for (uint32_t i = 0; i < k->binding_count; i++)
        if (!strcmp(k->bindings[i].role, "scratch")) return true;
    return false;
}

/* The scratch zeroed before split kernel ki runs where another one ran
 * since: a split kernel's arrival counters (at SK * T * M + tile) lie
 * inside the partial sums of one with a larger SK, and a counter that does
 * not start at zero makes every split think another is last, so none adds
 * the sums: runs that skip their final pass, timed too fast (the tune's
 * alternating finals, 2026-11-26f-h100/tune-splitk-q4_0). */
static qkrt_result own_scratch(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                               case_buffers *cb) {
    if (!cb->scratch || cb->scratch_owner == (int64_t)ki || !uses_scratch(b, ki)) return QKRT_OK;
    qkrt_result r = QKRT_OK;
    for (uint32_t i = 0; i < cb->copies && r == QKRT_OK; i++)
        r = qkrt_buffer_fill(ctx, cb->scratch[i], 0);
    cb->scratch_owner = r == QKRT_OK ? (int64_t)ki : -1;
    return r;
}

/* Appends to d the chain of kernel ki (qkrt_op_chain: the pre-pass where
 * prepass >= 0, then ki, each binding the buffer of its role in ob), its
 * buffer lists kept in cb's, every dispatch with `shape` (the case's
 * values, which outlive the chain); returns how many (0: the chain failed,
 * which the checks before timing rule out). */
static uint32_t chain_into(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, int prepass,
                           const qkrt_op_query *q, const qkrt_op_buffers *ob,
                           const case_buffers *cb, qkrt_shape shape, qkrt_dispatch *d) {
    const qkrt_op_choice choice = {.kernel = ki, .prepass = prepass};
    qkrt_chain *chain = qk_xmalloc(sizeof *chain);
    uint32_t n = 0;
    if (qkrt_op_chain(ctx, b, &choice, q, ob, chain) == QKRT_OK)
        for (; n < chain->count; n++) {
            d[n] = chain->dispatch[n];
            qkrt_buffer **list = list_alloc(cb->lists, d[n].buffer_count);
            memcpy(list, d[n].buffers, sizeof *list * d[n].buffer_count);
            d[n].buffers = list;
            d[n].shape = shape;
        }
    free(chain);
    return n;
}

/* The case's query for the operations layer: the routing's rows as long as
 * the busiest expert's pairs (what moe_route's indirect dispatch would
 * launch), not every token's. */
static qkrt_op_query case_query(const case_buffers *cb) {
    return (qkrt_op_query){.M = (uint32_t)cb->shape[0],
                           .K = (uint32_t)cb->shape[1],
                           .T = (uint32_t)cb->shape[2],
                           .top_k = (uint32_t)cb->shape[3],
                           .ne11 = 1,
                           .E = (uint32_t)cb->shape[5],
                           .max_per_expert = (uint32_t)cb->shape[6]};
}

/* One run of kernel ki on weight copy `copy` into d, as the operations
 * layer records it: the dispatch, or for a kernel on pre-quantized
 * activations the quantizer and then it (its `depends` keeps the barrier
 * between them back to back). Returns how many. */
static uint32_t case_dispatches(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                                const case_buffers *cb, uint32_t copy, qkrt_dispatch *d) {
    qkrt_op_buffers ob = {.matrices = 1,
                          .x = cb->x,
                          .y = cb->y,
                          .ids = cb->route ? cb->route : cb->ids,
                          .tpe = cb->tpe,
                          .x_q8 = cb->xq,
                          .scratch = cb->scratch ? cb->scratch[copy] : NULL};
    for (uint32_t p = 0; p < cb->planes && p < QKRT_OP_PLANES; p++)
        ob.weights[0][p] = cb->w[copy * cb->planes + p];
    const int prepass = cb->qi >= 0 && qk_takes_q8(qkrt_bundle_kernel(b, ki)) ? cb->qi : -1;
    const qkrt_op_query q = case_query(cb);
    return chain_into(ctx, b, ki, prepass, &q, &ob, cb, case_shape(cb), d);
}

/* Runs the n dispatches again and again for `seconds`, so the clock is up. */
static qkrt_result keep_busy(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n,
                             double seconds) {
    qkrt_result r = QKRT_OK;
    for (double t0 = qk_now_s(); r == QKRT_OK && qk_now_s() - t0 < seconds;)
        r = qkrt_run(ctx, d, n);
    return r;
}

/* Keeps the GPU busy for `seconds` with kernel ki, so the clock is up: one
 * run, then batches sized from the time a run took to what is left (at most
 * 64 runs), so that a slow kernel's warm-up does not overshoot by a whole
 * batch (64 runs of a 7 ms fallback were 0.45 s of a 10 ms screen warm-up).
 * With steady_s > 0 it ends sooner, once steady_s has passed and the time a
 * run takes has stopped falling: over the last 50 ms no more than 1% below
 * the 50 ms before (a clock still rising shortens every window). */
static qkrt_result warm(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, case_buffers *cb,
                        double seconds, double steady_s) {
    enum { BATCH = 64 };
    const double window = 0.05;
    qkrt_dispatch *d = qk_xmalloc(sizeof *d * 2 * BATCH);
    uint32_t n = 0;
    for (uint32_t i = 0; i < BATCH; i++)
        n += case_dispatches(ctx, b, ki, cb, i % cb->copies, &d[n]);
    const uint32_t per_run = n / BATCH; /* 1, or 2 with a quantizer */
    qkrt_result r = own_scratch(ctx, b, ki, cb);
    uint32_t runs = 1;
    double win_s = 0, win_runs = 0, last_each = 0; /* the window so far, and the one before's */
    for (double t0 = qk_now_s(); r == QKRT_OK;) {
        double t = qk_now_s();
        r = qkrt_run(ctx, d, runs * per_run);
        double now = qk_now_s(), left = seconds - (now - t0), each = (now - t) / runs;
        if (left <= 0) break;
        win_s += now - t, win_runs += runs;
        if (steady_s > 0 && win_s >= window) {
            double mean = win_s / win_runs;
            if (now - t0 >= steady_s && last_each > 0 && mean >= 0.99 * last_each) break;
            last_each = mean, win_s = win_runs = 0;
        }
        double want = each > 0 ? ceil(left / each) : BATCH;
        runs = want < 1 ? 1 : want > BATCH ? BATCH : (uint32_t)want;
    }
    free(d);
    return r;
}

/* The screen's warm-up before each variant but a case's first. */
#define QK_SCREEN_WARM_S 0.03

/* The progress line: the case, the step (e.g. "screen 3/40") and the kernel. */
static void progress(const qk_bench_opts *o, const qk_bench_case *c, const char *step,
                     const char *kernel) {
    if (!o->progress) return;
    fprintf(o->progress, "\r\033[K%s %s m=%u k=%u t=%u: %s%s%s", c->family, c->format, c->M, c->K,
            c->T, step, step[0] ? " " : "", kernel);
    fflush(o->progress);
}

/* `runs` runs of variant ki, each between barriers, into per[] (ns: a run's
 * dispatches, the quantizer's included); d and ns are scratch for 2 * runs
 * dispatches, *nd gets how many were recorded. */
static qkrt_result time_runs(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, case_buffers *cb,
                             uint32_t runs, qkrt_dispatch *d, double *ns, double *per,
                             uint32_t *nd) {
    uint32_t per_run = 1;
    *nd = 0;
    qkrt_result r = own_scratch(ctx, b, ki, cb);
    if (r != QKRT_OK) return r;
    for (uint32_t i = 0; i < runs; i++) {
        per_run = case_dispatches(ctx, b, ki, cb, i % cb->copies, &d[*nd]);
        *nd += per_run;
    }
    r = qkrt_run_timed(ctx, d, *nd, ns);
    for (uint32_t i = 0; r == QKRT_OK && i < runs; i++)
        per[i] = per_run == 2 ? ns[2 * i] + ns[2 * i + 1] : ns[i];
    return r;
}

/* A variant's figures from its timed runs: per[] (n runs' times, sorted
 * here), pre[] (the quantizer's part of each, or NULL), then the same runs
 * back to back without barriers (but the one between a quantizer and its
 * product), launch gaps hidden; d is scratch for 2 * n dispatches. */
static qkrt_result finish_variant(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                                  case_buffers *cb, double *per, double *pre, uint32_t n,
                                  double copy_gbps, qkrt_dispatch *d, qk_bench_result *out) {
    double lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < n; i++)
        lo = fmin(lo, per[i]), hi = fmax(hi, per[i]);
    out->us = median(per, n) / 1e3;
    if (pre) out->us_pre = median(pre, n) / 1e3;
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++)
        nd += case_dispatches(ctx, b, ki, cb, i % cb->copies, &d[nd]);
    double span[3];
    qkrt_result r = own_scratch(ctx, b, ki, cb);
    for (uint32_t i = 0; i < 3 && r == QKRT_OK; i++)
        r = qkrt_run_span(ctx, d, nd, &span[i]);
    if (r != QKRT_OK) return r;
    out->us_span = median(span, 3) / n / 1e3;
    out->pct_copy_span = copy_gbps > 0 ? 100.0 * out->bytes / (out->us_span * 1e3) / copy_gbps : 0;
    out->us_min = lo / 1e3, out->us_max = hi / 1e3, out->runs = n;
    out->gbps = out->bytes / (out->us * 1e3);
    out->pct_copy = copy_gbps > 0 ? 100.0 * out->gbps / copy_gbps : 0;
    out->tflops = out->flops / (out->us * 1e6);
    out->timed = true;
    return r;
}

/* Times variant ki of the case in full: `warm_s` of warm-up, `runs`
 * dispatches each between barriers (the median), then the same back to back;
 * d, ns and per are scratch for 2 * runs dispatches. Sets out's times. */
static qkrt_result time_variant(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                                case_buffers *cb, uint32_t runs, double warm_s, double copy_gbps,
                                qkrt_dispatch *d, double *ns, double *per, qk_bench_result *out) {
    uint32_t nd = 0;
    qkrt_result r = warm(ctx, b, ki, cb, warm_s, 0);
    if (r == QKRT_OK) r = time_runs(ctx, b, ki, cb, runs, d, ns, per, &nd);
    if (r != QKRT_OK) return r;
    double *pre = NULL;
    if (nd == 2 * runs) { /* the quantizer's part */
        pre = qk_xmalloc(sizeof *pre * runs);
        for (uint32_t i = 0; i < runs; i++)
            pre[i] = ns[2 * i];
    }
    r = finish_variant(ctx, b, ki, cb, per, pre, runs, copy_gbps, d, out);
    free(pre);
    return r;
}

/* The tuner's finalists ki[0..nf), timed in alternation: up to
 * QK_FINALIST_ROUNDS slices of their runs each, in forward then reverse order (A B C C B A
 * ...), so that a drift of the clocks over the final (tens of milliseconds,
 * short against the GPU's power management; timed one after another, two
 * finalists 4% apart were measured in the reverse order) weighs on all of
 * them alike. All `runs` are timed; a slice is every weight copy at least
 * once. */
#define QK_FINALIST_ROUNDS 4
static qkrt_result time_finalists(qkrt_context *ctx, const qkrt_bundle *b, const uint32_t *ki,
                                  qk_bench_result *const *out, uint32_t nf, case_buffers *cb,
                                  uint32_t runs, double warm_s, double copy_gbps, qkrt_dispatch *d,
                                  double *ns, double *per) {
    /* slices of runs * i / rounds .. runs * (i + 1) / rounds: all runs, each
     * slice every weight copy at least once (runs >= copies) */
    uint32_t rounds = runs / cb->copies;
    rounds = rounds > QK_FINALIST_ROUNDS ? QK_FINALIST_ROUNDS : rounds ? rounds : 1;
    const uint32_t n = runs;
    double *all = qk_xmalloc(sizeof *all * 2 * n * nf), *pre = all + n * nf;
    bool *quantized = qk_xcalloc(nf, sizeof *quantized); /* two dispatches a run */
    qkrt_result r = warm(ctx, b, ki[0], cb, warm_s, 0);
    for (uint32_t round = 0; round < rounds && r == QKRT_OK; round++)
        for (uint32_t j = 0; j < nf && r == QKRT_OK; j++) {
            const uint32_t f = round % 2 ? nf - 1 - j : j;
            const uint32_t s0 = runs * round / rounds, slice = runs * (round + 1) / rounds - s0;
            uint32_t nd;
            r = time_runs(ctx, b, ki[f], cb, slice, d, ns, per, &nd);
            quantized[f] = nd == 2 * slice;
            for (uint32_t i = 0; r == QKRT_OK && i < slice; i++) {
                all[f * n + s0 + i] = per[i];
                pre[f * n + s0 + i] = quantized[f] ? ns[2 * i] : 0;
            }
        }
    for (uint32_t f = 0; f < nf && r == QKRT_OK; f++)
        r = finish_variant(ctx, b, ki[f], cb, all + f * n, quantized[f] ? pre + f * n : NULL, n,
                           copy_gbps, d, out[f]);
    free(all), free(quantized);
    return r;
}

/* NMSE of the downloaded output y against the reference of its first tr
 * rows and, with last_row, the last row after them (moved beside them, as
 * the reference has it). */
static double checked_nmse(const qk_bench_case *c, float *y, const double *ref, uint32_t tr,
                           bool last_row) {
    if (last_row) memcpy(y + (size_t)tr * c->M, y + (size_t)(c->T - 1) * c->M, (size_t)c->M * 4);
    return qk_nmse(y, ref, (size_t)(last_row ? tr + 1 : tr) * c->M);
}

/* The MoE reference's inputs, shared by its threads. */
typedef struct moe_ref_job {
    const qk_bench_case *c;
    const qk_weights *w;
    const int32_t *ids;
    const double *xd;
    double *ref;
    bool failed; /* a share found no memory for its pairs (set, never cleared) */
} moe_ref_job;

/* Share t of n (qk_parallel): the experts e = t, t + n, ..., each dequantized
 * once for all the pairs routed to it. */
static void moe_ref_share(void *arg, uint32_t t, uint32_t n) {
    moe_ref_job *j = arg;
    const qk_bench_case *c = j->c;
    const uint32_t pairs = c->T * c->top_k;
    uint32_t *sel = malloc(sizeof *sel * pairs);
    double *xs = malloc(sizeof *xs * (size_t)pairs * c->K);
    double *ys = malloc(sizeof *ys * (size_t)pairs * c->M);
    if (!sel || !xs || !ys) {
        j->failed = true;
        free(sel), free(xs), free(ys);
        return;
    }
    for (uint32_t e = t; e < c->E; e += n) {
        uint32_t np = 0;
        for (uint32_t p = 0; p < pairs; p++)
            if ((uint32_t)j->ids[p] == e) {
                memcpy(xs + (size_t)np * c->K, j->xd + (size_t)(p / c->top_k) * c->K,
                       sizeof *xs * c->K);
                sel[np++] = p;
            }
        if (!np) continue;
        qk_weights we = qk_weights_expert(j->w, e, c->E);
        qk_ref_matvec(&we, xs, c->M, c->K, np, ys);
        for (uint32_t i = 0; i < np; i++)
            memcpy(j->ref + (size_t)sel[i] * c->M, ys + (size_t)i * c->M, sizeof *ys * c->M);
    }
    free(sel), free(xs), free(ys);
}

/* The float64 reference of case c on activations xd: every MoE pair (on all
 * the host's cores: a 512-token case is 6-8 G products), or the first tr
 * tokens and, where T > tr, the last one after them. */
static bool bench_ref(const qk_bench_case *c, const qk_weights *w, const int32_t *ids,
                      const double *xd, uint32_t tr, double *ref) {
    if (c->E) {
        moe_ref_job job = {c, w, ids, xd, ref, false};
        qk_parallel(qk_cores() < c->E ? qk_cores() : c->E, moe_ref_share, &job);
        return !job.failed;
    }
    bool ok = qk_ref_matvec(w, xd, c->M, c->K, tr, ref);
    if (ok && c->T > tr)
        ok = qk_ref_matvec(w, xd + (size_t)(c->T - 1) * c->K, c->M, c->K, 1,
                           ref + (size_t)tr * c->M);
    return ok;
}

/* Adds the time since *t to phase p of o->phase_s (where set); *t = now. */
static void phase(const qk_bench_opts *o, int p, double *t) {
    const double now = qk_now_s();
    if (o->phase_s) o->phase_s[p] += now - *t;
    *t = now;
}

/* ---------------------------------------------------------------- two-pass */

/* The two-pass path of a matmul case (docs/matmul.md): pass 1, the bundle's
 * dequant kernel of the case's format (dequant_id for MoE where there is one:
 * only the routed experts), into one f16w scratch; pass 2, an f16w matmul
 * kernel of the case's family on it. Both share the case's buffers (weight
 * copies, x, y, routing); the scratch is one buffer, so every pass has a
 * barrier before it, also back to back. */
typedef struct two_pass {
    uint32_t dq, mm;   /* bundle indices */
    qkrt_buffer *half; /* pass 1's output, pass 2's weights */
    int64_t shape1[3]; /* pass 1's M, K, E */
    const char *names1[3];
} two_pass;

/* A dispatch of tp's pass (0 or 1) on weight copy `copy` into d, as the
 * operations layer records a kernel: pass 1 writes the f16w blocks (its
 * output) that pass 2 reads as its weights. */
static void two_pass_dispatch(qkrt_context *ctx, const qkrt_bundle *b, const two_pass *tp, int pass,
                              const case_buffers *cb, uint32_t copy, qkrt_dispatch *d) {
    qkrt_op_buffers ob = {
        .matrices = 1, .x = cb->x, .y = pass ? cb->y : tp->half, .ids = cb->route, .tpe = cb->tpe};
    for (uint32_t p = 0; p < QKRT_OP_PLANES; p++)
        ob.weights[0][p] = pass ? tp->half : p < cb->planes ? cb->w[copy * cb->planes + p] : NULL;
    const qkrt_op_query q = case_query(cb);
    chain_into(ctx, b, pass ? tp->mm : tp->dq, -1, &q, &ob, cb,
               pass ? case_shape(cb) : (qkrt_shape){3, tp->names1, tp->shape1}, d);
    d->depends = true;
}

/* runs runs of tp into d (scratch for 2 * runs): both passes each. */
static uint32_t two_pass_runs(qkrt_context *ctx, const qkrt_bundle *b, const two_pass *tp,
                              const case_buffers *cb, uint32_t runs, qkrt_dispatch *d) {
    for (uint32_t i = 0; i < runs; i++) {
        two_pass_dispatch(ctx, b, tp, 0, cb, i % cb->copies, &d[2 * i]);
        two_pass_dispatch(ctx, b, tp, 1, cb, i % cb->copies, &d[2 * i + 1]);
    }
    return 2 * runs;
}

/* The dequant kernel for case c that this device runs: dequant_id for MoE
 * where the bundle has one, else dequant; -1 if none. */
static int two_pass_dequant(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_case *c) {
    for (int pass = c->E ? 0 : 1; pass < 2; pass++)
        for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
            const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
            if (!strcmp(k->family, pass ? "dequant" : "dequant_id") &&
                !strcmp(k->format, c->format) && !strcmp(k->format_variant, c->variant) &&
                qkrt_kernel_check(ctx, b, i) == QKRT_OK)
                return (int)i;
        }
    return -1;
}

/* Appends a result for each two-pass candidate of case c: the dequant
 * kernel with each unfused, unsplit f16w kernel of the case's family that
 * fits (a few: f16w takes one tile a path), checked against ref first like
 * every variant, then timed in full (never screened). *best_us and *best
 * as qk_bench_case_run keeps them. */
static qkrt_result two_pass_candidates(qkrt_context *ctx, const qkrt_bundle *b,
                                       const qk_bench_case *c, const qk_bench_opts *o,
                                       case_buffers *cb, double copy_gbps, double wbytes, float *y,
                                       const double *ref, uint32_t tr, bool last_row, uint32_t runs,
                                       qkrt_dispatch *d, double *ns, double *per,
                                       qk_bench_result **res, uint32_t *count, double *best_us,
                                       int *best) {
    if (strcmp(c->family, "matmul") && strcmp(c->family, "matmul_id")) return QKRT_OK;
    int dq = two_pass_dequant(ctx, b, c);
    if (dq < 0) return QKRT_OK;
    two_pass tp = {.dq = (uint32_t)dq, .names1 = {"M", "K", "E"}};
    tp.shape1[0] = c->M, tp.shape1[1] = c->K, tp.shape1[2] = c->E ? c->E : 1;
    size_t bytes = 0;
    char err[256] = "";
    if (!qk_dequant_bytes(qkrt_bundle_kernel(b, tp.dq), c->M, c->K, c->E ? c->E : 1, &bytes, err,
                          sizeof err))
        return QKRT_OK; /* a dequant kernel without its size: no candidate */
    qkrt_result r = QKRT_OK;
    const size_t pairs = (size_t)c->T * (c->E ? c->top_k : 1), ny = pairs * c->M;
    const size_t nx = (size_t)c->T * c->K;
    double *pre = qk_xmalloc(sizeof *pre * runs);
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b) && r == QKRT_OK; i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (strcmp(k->family, c->family) || strcmp(k->format, QK_F16W) ||
            strcmp(k->activation, o->activation ? o->activation : "f32") ||
            strcmp(k->fusion, "none") || uses_scratch(b, i) || !fits(k, c) ||
            qkrt_kernel_check(ctx, b, i) != QKRT_OK)
            continue;
        char name[256];
        snprintf(name, sizeof name, "%s%s+%s", QK_TWO_PASS_PREFIX,
                 qkrt_bundle_kernel(b, tp.dq)->name, k->name);
        if (o->filter && !qk_filter_match(o->filter, name)) continue;
        /* the pair as the tuner's hooks see one kernel: the second pass's
         * family and precision, the pair's name */
        qkrt_kernel_info pair = *k;
        pair.name = name;
        qk_bench_result had = {0};
        if (o->prior && o->prior(o->user, &pair, &had)) { /* a resumed tune measured it */
            if (!had.ok || !had.timed) continue;
            *res = qk_xrealloc(*res, sizeof **res * (*count + 1));
            qk_bench_result *out = &(*res)[(*count)++];
            *out = had;
            snprintf(out->kernel, sizeof out->kernel, "%s", name);
            out->c = *c;
            if (out->us < *best_us) *best_us = out->us, *best = (int)(*count - 1);
            continue;
        }
        tp.mm = i;
        if (!tp.half) r = qkrt_buffer_create(ctx, bytes, &tp.half);
        if (r != QKRT_OK) break;
        *res = qk_xrealloc(*res, sizeof **res * (*count + 1));
        qk_bench_result *out = &(*res)[(*count)++];
        memset(out, 0, sizeof *out);
        snprintf(out->kernel, sizeof out->kernel, "%s", name);
        out->c = *c;
        /* the case's bytes, as its fused kernels': the two passes' traffic
         * (the scratch written and read) is theirs to spend */
        const double xw = strcmp(k->activation, "f16") ? 4.0 : 2.0;
        out->bytes = wbytes + xw * (double)nx + 4.0 * (double)ny + (c->E ? 4.0 * pairs : 0);
        out->flops = 2.0 * c->M * (double)c->K * pairs;
        progress(o, c, "two-pass", name);
        /* correctness first: y and the scratch poisoned */
        r = qkrt_buffer_fill(ctx, cb->y, 0x7fc00000u);
        if (r == QKRT_OK) r = qkrt_buffer_fill(ctx, tp.half, QK_F16_NAN2);
        uint32_t nd = two_pass_runs(ctx, b, &tp, cb, 1, d);
        double t_prep = qk_now_s();
        if (r == QKRT_OK) r = qkrt_run(ctx, d, nd);
        out->prepare_ms = (qk_now_s() - t_prep) * 1e3;
        if (r == QKRT_OK) r = qkrt_buffer_download(ctx, cb->y, 0, y, ny * 4);
        if (r != QKRT_OK) break;
        out->nmse = checked_nmse(c, y, ref, tr, last_row);
        out->ok = out->nmse <= qk_nmse_bound(k);
        if (!out->ok) { /* as any variant's: a check's record where it fails */
            snprintf(out->error, sizeof out->error, "wrong result: NMSE %.3g", out->nmse);
            if (o->record) o->record(o->user, &pair, out, "check");
            continue;
        }
        /* warm, then runs runs between barriers, then the same back to back */
        nd = two_pass_runs(ctx, b, &tp, cb, runs < 64 ? runs : 64, d);
        r = keep_busy(ctx, d, nd, o->rewarm_s > 0 ? o->rewarm_s : o->warmup_s);
        nd = two_pass_runs(ctx, b, &tp, cb, runs, d);
        if (r == QKRT_OK) r = qkrt_run_timed(ctx, d, nd, ns);
        if (r != QKRT_OK) break;
        double lo = INFINITY, hi = 0, span[3];
        for (uint32_t j = 0; j < runs; j++) {
            per[j] = ns[2 * j] + ns[2 * j + 1], pre[j] = ns[2 * j];
            lo = fmin(lo, per[j]), hi = fmax(hi, per[j]);
        }
        out->us = median(per, runs) / 1e3, out->us_pre = median(pre, runs) / 1e3;
        for (uint32_t j = 0; j < 3 && r == QKRT_OK; j++)
            r = qkrt_run_span(ctx, d, nd, &span[j]);
        if (r != QKRT_OK) break;
        out->us_span = median(span, 3) / runs / 1e3;
        out->pct_copy_span =
            copy_gbps > 0 ? 100.0 * out->bytes / (out->us_span * 1e3) / copy_gbps : 0;
        out->us_min = lo / 1e3, out->us_max = hi / 1e3, out->runs = runs;
        out->gbps = out->bytes / (out->us * 1e3);
        out->pct_copy = copy_gbps > 0 ? 100.0 * out->gbps / copy_gbps : 0;
        out->tflops = out->flops / (out->us * 1e6);
        out->timed = true;
        if (o->record) o->record(o->user, &pair, out, "full");
        if (out->us < *best_us) *best_us = out->us, *best = (int)(*count - 1);
    }
    free(pre);
    qkrt_buffer_destroy(ctx, tp.half);
    return r;
}

qkrt_result qk_bench_case_run(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_case *c,
                              const qk_bench_opts *o, double copy_gbps, qk_bench_result **res,
                              uint32_t *count, char *err, size_t err_size) {
    double tp = qk_now_s(); /* the current phase's start */
    uint32_t idx[256];
    uint32_t n = eligible(b, c, o, idx, 256);
    if (!n) {
        snprintf(err, err_size, "no %s kernel for %s%s%s in the bundle fits m=%u k=%u t=%u",
                 c->family, c->format, c->variant[0] ? " " : "", c->variant, c->M, c->K, c->T);
        return QKRT_ERROR_ARGUMENT;
    }
    uint64_t rng = o->seed ^ ((uint64_t)c->M << 40) ^ ((uint64_t)c->K << 16) ^ c->T;
    uint32_t E = c->E ? c->E : 1, pairs = c->T * (c->E ? c->top_k : 1);
    if ((uint64_t)c->M * E > UINT32_MAX || (uint64_t)c->T * (c->E ? c->top_k : 1) > UINT32_MAX) {
        snprintf(err, err_size, "m=%u x %u experts or t=%u x top-k %u is past 2^32 rows", c->M, E,
                 c->T, c->top_k);
        return QKRT_ERROR_ARGUMENT;
    }
    /* the host memory the case needs, at most a byte a weight (the formats
     * are 8 bits or fewer) and the activations, results and references:
     * refused past the host's memory before anything is allocated (where
     * the system overcommits, a malloc that succeeds is no promise) */
    const double need = (double)c->M * E * c->K + 24.0 * c->T * c->K + 36.0 * pairs * c->M;
    const double host = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
    if (host > 0 && need > host) {
        snprintf(err, err_size,
                 "out of host memory: m=%u k=%u t=%u needs about %.0f GiB, the host has %.0f GiB",
                 c->M, c->K, c->T, need / 1073741824.0, host / 1073741824.0);
        return QKRT_ERROR_MEMORY;
    }
    qk_weights w;
    const char *why = qk_random_weights_try(c->format, c->variant, c->M * E, c->K, &rng, &w);
    if (why) {
        snprintf(err, err_size, "%s", why);
        return strstr(why, "memory") ? QKRT_ERROR_MEMORY : QKRT_ERROR_ARGUMENT;
    }
    size_t nx = (size_t)c->T * c->K, ny = (size_t)pairs * c->M;
    float *x = malloc(nx * 4), *y = malloc(ny * 4);
    double *xd = malloc(nx * 8), *ref = malloc(ny * 8);
    int32_t *ids = c->E ? malloc(sizeof *ids * pairs) : NULL;
    uint8_t *used = c->E ? calloc(E, 1) : NULL;
    if (!x || !y || !xd || !ref || (c->E && (!ids || !used))) {
        /* a shape past the host's memory: said, not a crash */
        snprintf(err, err_size,
                 "out of host memory for the activations, results and reference of m=%u k=%u "
                 "t=%u",
                 c->M, c->K, c->T);
        free(x), free(y), free(xd), free(ref), free(ids), free(used);
        qk_free_weights(&w);
        return QKRT_ERROR_MEMORY;
    }
    for (size_t i = 0; i < nx; i++) {
        rng = rng * 6364136223846793005ull + 1442695040888963407ull;
        xd[i] = x[i] = (float)((double)(rng >> 11) / 9007199254740992.0 * 2 - 1);
    }
    /* MoE: top_k distinct random experts per token; only the experts touched
     * count as bytes read */
    uint32_t touched = 1;
    if (c->E) {
        touched = 0;
        for (uint32_t t = 0; t < c->T; t++)
            for (uint32_t s = 0; s < c->top_k; s++) {
                int32_t e;
                bool dup;
                do {
                    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                    e = (int32_t)((rng >> 33) % E);
                    dup = false;
                    for (uint32_t j = 0; j < s; j++)
                        dup |= ids[t * c->top_k + j] == e;
                } while (dup);
                ids[t * c->top_k + s] = e;
                touched += !used[e];
                used[e] = 1;
            }
        free(used);
    }
    /* The reference in float64: every MoE pair; for dense cases at most the
     * first 4 tokens and the last, enough to catch a wrong tile and
     * affordable for 512-token prefills. The int8-dot kernels get theirs on
     * activations rounded as they round them. */
    uint32_t tr = c->E ? pairs : c->T < 5 ? c->T : 4;
    bool last_row = !c->E && c->T > tr;
    bool ref_ok = bench_ref(c, &w, ids, xd, tr, ref);
    bool any8 = false;
    for (uint32_t v = 0; v < n; v++)
        any8 |= qk_rounds_x8(qkrt_bundle_kernel(b, idx[v]));
    double *ref8 = any8 ? malloc(ny * 8) : NULL, *x8 = any8 ? malloc(nx * 8) : NULL;
    if (any8 && ref_ok && ref8 && x8) {
        qk_round_x8(x8, x, nx);
        ref_ok = bench_ref(c, &w, ids, x8, tr, ref8);
    }
    free(x8);
    if (!ref_ok || (any8 && (!ref8 || !x8))) {
        snprintf(err, err_size, "out of host memory for the reference of m=%u k=%u t=%u", c->M,
                 c->K, c->T);
        free(x), free(y), free(xd), free(ref), free(ref8), free(ids);
        qk_free_weights(&w);
        return QKRT_ERROR_MEMORY;
    }
    double wbytes = 0;
    for (uint32_t p = 0; p < w.plane_count; p++)
        wbytes += (double)w.bytes[p];
    wbytes = wbytes / E * touched;
    /* kernels on pre-quantized activations run after the bundle's quantizer */
    case_buffers cb = {.qi = -1};
    bool any_q8 = false;
    for (uint32_t v = 0; v < n; v++)
        any_q8 |= qk_takes_q8(qkrt_bundle_kernel(b, idx[v]));
    char qerr[512] = "";
    if (any_q8) cb.qi = qk_find_quantizer(ctx, b, qerr, sizeof qerr);
    qkrt_result r = make_buffers(ctx, &w, x, qkrt_bundle_kernel(b, idx[0]), ids,
                                 (double)touched / E, c, o->rotate_bytes, &cb);
    if (r == QKRT_OK) r = make_scratch(ctx, b, idx, n, &cb, err, err_size);
    uint32_t runs = o->runs < 20 ? 20 : o->runs;
    if (runs < cb.copies) runs = cb.copies;
    qkrt_dispatch *d = qk_xmalloc(sizeof *d * 2 * runs);
    double *ns = qk_xmalloc(sizeof *ns * 2 * runs), *per = qk_xmalloc(sizeof *per * runs);
    double best_us = INFINITY;
    int best = -1;
    const uint32_t first = *count;
    const bool screen = o->finalists && n > o->finalists;
    bool warmed = false; /* the case's whole warm-up is done (its first variants may fail) */
    /* every variant's pipeline first, the driver compiling on all cores at
     * once (run 90: 0.6-0.8 s each for the tiled matmuls, one after another,
     * most of a format's 62-96 s and each a pause that idled the GPU) */
    /* results a resumed tune has already (o->prior) are not measured again */
    qk_bench_result *prior = qk_xcalloc(n, sizeof *prior);
    bool *had = qk_xcalloc(n, sizeof *had);
    uint32_t *fresh = qk_xmalloc(sizeof *fresh * n), nfresh = 0;
    for (uint32_t v = 0; v < n; v++) {
        had[v] = o->prior && o->prior(o->user, qkrt_bundle_kernel(b, idx[v]), &prior[v]);
        if (!had[v]) fresh[nfresh++] = idx[v];
    }
    if (r == QKRT_OK && nfresh) {
        char step[48];
        snprintf(step, sizeof step, "compiling %u pipelines", nfresh);
        progress(o, c, step, "");
        phase(o, QK_PH_SETUP, &tp);
        qkrt_kernels_prepare(ctx, b, fresh, nfresh, 0);
    }
    phase(o, QK_PH_PIPELINES, &tp); /* nothing when none were made */
    bool any_ok = false; /* a variant of the case is correct: the deadline may cut the rest */
    const double screen_warm = o->screen_warmup_s > 0 ? o->screen_warmup_s : QK_SCREEN_WARM_S;
    const uint32_t screen_runs =
        cb.copies > QK_BENCH_SCREEN_RUNS ? cb.copies : QK_BENCH_SCREEN_RUNS;
    for (uint32_t v = 0; v < n && r == QKRT_OK; v++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, idx[v]);
        qk_bench_result *out;
        *res = qk_xrealloc(*res, sizeof **res * (*count + 1));
        out = &(*res)[(*count)++];
        memset(out, 0, sizeof *out);
        snprintf(out->kernel, sizeof out->kernel, "%s", k->name);
        out->c = *c;
        /* x at its kernels' width: 2 bytes an element on f16 activations */
        const double xw = strcmp(k->activation, "f16") ? 4.0 : 2.0;
        out->bytes = wbytes + xw * (double)nx + 4.0 * (double)ny + (ids ? 4.0 * pairs : 0);
        out->flops = 2.0 * c->M * (double)c->K * pairs;
        char step[48] = "";
        if (screen) snprintf(step, sizeof step, "check and screen %u/%u", v + 1, n);
        progress(o, c, step, k->name);
        if (had[v]) {
            const qk_bench_result *p = &prior[v];
            out->ok = p->ok, out->wrong = p->wrong, out->nmse = p->nmse, out->timed = p->timed;
            out->unsupported = p->unsupported;
            out->us_screen = p->us_screen, out->screen_runs = p->screen_runs;
            out->us = p->us, out->us_min = p->us_min, out->us_max = p->us_max, out->runs = p->runs;
            snprintf(out->error, sizeof out->error, "%s", p->error);
            any_ok |= out->ok;
            if (out->ok && out->timed && out->us < best_us)
                best_us = out->us, best = (int)(*count - 1);
            continue;
        }
        if (o->deadline > 0 && any_ok && qk_now_s() > o->deadline) {
            snprintf(out->error, sizeof out->error, "not measured: over the time budget");
            out->skipped = true;
            continue;
        }
        const qkrt_result kr = qkrt_kernel_check(ctx, b, idx[v]);
        if (kr != QKRT_OK) {
            snprintf(out->error, sizeof out->error, "%s", qkrt_last_error(ctx));
            out->unsupported = kr == QKRT_ERROR_UNSUPPORTED;
            if (o->record) o->record(o->user, k, out, "check");
            continue;
        }
        if (qk_takes_q8(k) && cb.qi < 0) {
            snprintf(out->error, sizeof out->error, "%s", qerr);
            if (o->record) o->record(o->user, k, out, "check");
            continue;
        }
        /* correctness first, on this device, with a poisoned output (and
         * split-K counters at zero: a previous variant's back-to-back runs
         * may have left them anywhere) */
        r = qkrt_buffer_fill(ctx, cb.y, 0x7fc00000u);
        cb.scratch_owner = -1;
        if (r == QKRT_OK) r = own_scratch(ctx, b, idx[v], &cb);
        qkrt_dispatch one[2];
        uint32_t per_run = case_dispatches(ctx, b, idx[v], &cb, 0, one);
        if (r == QKRT_OK && !per_run) { /* a binding the case has no buffer for */
            snprintf(out->error, sizeof out->error, "%s", qkrt_last_error(ctx));
            if (o->record) o->record(o->user, k, out, "check");
            continue;
        }
        double t_prep = qk_now_s();
        if (r == QKRT_OK) r = qkrt_run(ctx, one, per_run);
        out->prepare_ms = (qk_now_s() - t_prep) * 1e3;
        /* registers, shared memory and spills, where the driver tells: the
         * evidence for what bounds occupancy; quotes kept out of the JSON */
        if (r == QKRT_OK &&
            qkrt_kernel_stats(ctx, b, idx[v], out->pipeline, sizeof out->pipeline) == QKRT_OK)
            for (char *p = out->pipeline; *p; p++)
                if (*p == '"' || *p == '\\' || (unsigned char)*p < 32) *p = '\'';
        if (r == QKRT_OK) r = qkrt_buffer_download(ctx, cb.y, 0, y, ny * 4);
        if (r != QKRT_OK) break;
        out->nmse = checked_nmse(c, y, qk_rounds_x8(k) ? ref8 : ref, tr, last_row);
        out->ok = out->nmse <= qk_nmse_bound(k);
        any_ok |= out->ok;
        if (!out->ok) {
            snprintf(out->error, sizeof out->error, "wrong result: NMSE %.3g", out->nmse);
            if (o->record) o->record(o->user, k, out, "check");
            if (!o->time_wrong) continue;
            out->wrong = true; /* a diagnostic kernel, timed as the others */
        }
        phase(o, QK_PH_CHECK, &tp);
        if (screen) {
            /* the screen: a few dispatches, every weight copy once, after a
             * short warm-up (the case's whole one before its first) */
            uint32_t nd;
            r = warm(ctx, b, idx[v], &cb, warmed ? screen_warm : o->warmup_s,
                     warmed ? 0 : o->warmup_steady_s);
            if (r == QKRT_OK) r = time_runs(ctx, b, idx[v], &cb, screen_runs, d, ns, per, &nd);
            if (r != QKRT_OK) break;
            out->us_screen = median(per, screen_runs) / 1e3;
            out->screen_runs = screen_runs;
            warmed = true;
            if (o->record) o->record(o->user, k, out, "screen");
            phase(o, QK_PH_SCREEN, &tp);
            continue;
        }
        /* the whole warm-up before the case's first timed variant, a shorter
         * one between variants (no compile idles the GPU between them: the
         * case's pipelines were made before the loop) */
        r = time_variant(ctx, b, idx[v], &cb, runs, warmed ? o->rewarm_s : o->warmup_s, copy_gbps,
                         d, ns, per, out);
        warmed = true;
        if (r != QKRT_OK) break;
        if (o->record) o->record(o->user, k, out, "full");
        if (out->us < best_us) best_us = out->us, best = (int)(*count - 1);
        phase(o, QK_PH_SCREEN, &tp);
    }
    phase(o, QK_PH_CHECK, &tp); /* a last variant's check that went no further */
    /* successive halving: the faster half of the field re-timed at twice
     * the runs, again and again, until the finalists are left (a short
     * screen's noise decides less among close variants); lost[] marks the
     * variants out of the race */
    bool *lost = qk_xcalloc(n, sizeof *lost);
    /* finalists a resumed tune has timed already (o->prior) count as such */
    uint32_t finalists = o->finalists;
    for (uint32_t i = first; i < *count && finalists; i++)
        finalists -= (*res)[i].timed && (*res)[i].ok;
    for (uint32_t rung = screen_runs;
         screen && o->halving && finalists && r == QKRT_OK && rung * 2 <= runs;) {
        uint32_t live = 0;
        for (uint32_t i = first; i < *count; i++) {
            const qk_bench_result *q = &(*res)[i];
            live += (q->ok || q->wrong) && !q->timed && q->us_screen > 0 && !lost[i - first];
        }
        uint32_t field = (live + 1) / 2;
        if (field <= finalists || (o->deadline > 0 && qk_now_s() > o->deadline)) break;
        rung *= 2;
        for (uint32_t drop = live - field; drop; drop--) { /* the slowest leave */
            int pick = -1;
            for (uint32_t i = first; i < *count; i++) {
                const qk_bench_result *q = &(*res)[i];
                if ((q->ok || q->wrong) && !q->timed && q->us_screen > 0 && !lost[i - first] &&
                    (pick < 0 || q->us_screen > (*res)[pick].us_screen))
                    pick = (int)i;
            }
            lost[pick - (int)first] = true;
        }
        for (uint32_t i = first; i < *count && r == QKRT_OK; i++) {
            qk_bench_result *q = &(*res)[i];
            if (!(q->ok || q->wrong) || q->timed || q->us_screen <= 0 || lost[i - first]) continue;
            uint32_t ki = idx[i - first], nd;
            char step[48];
            snprintf(step, sizeof step, "halving: %u at %u runs", field, rung);
            progress(o, c, step, q->kernel);
            /* the GPU has been busy since the screen: a third of its warm-up */
            r = warm(ctx, b, ki, &cb, screen_warm / 3, 0);
            if (r == QKRT_OK) r = time_runs(ctx, b, ki, &cb, rung, d, ns, per, &nd);
            if (r == QKRT_OK) q->us_screen = median(per, rung) / 1e3, q->screen_runs = rung;
        }
    }
    phase(o, QK_PH_HALVING, &tp);
    /* the finalists: the screen's fastest correct variants, timed in full,
     * in alternation (time_finalists), the first slice after the whole
     * warm-up where nothing ran before, as every case's timed set; after
     * the screen and the halving rounds, which kept the GPU busy, a warm-up
     * of three screens' */
    uint32_t *fki = qk_xmalloc(sizeof *fki * (finalists + 1)), nf = 0;
    int *fpick = qk_xmalloc(sizeof *fpick * (finalists + 1));
    qk_bench_result **fout = qk_xmalloc(sizeof *fout * (finalists + 1));
    for (; screen && r == QKRT_OK && nf < finalists; nf++) {
        int pick = -1;
        for (uint32_t i = first; i < *count; i++) {
            const qk_bench_result *q = &(*res)[i];
            if ((q->ok || q->wrong) && !q->timed && q->us_screen > 0 && !lost[i - first] &&
                (pick < 0 || q->us_screen < (*res)[pick].us_screen))
                pick = (int)i;
        }
        if (pick < 0) break;
        lost[pick - (int)first] = true; /* in the final, out of this choice */
        fki[nf] = idx[pick - (int)first], fpick[nf] = pick;
    }
    if (nf && r == QKRT_OK) {
        for (uint32_t f = 0; f < nf; f++)
            fout[f] = &(*res)[fpick[f]];
        char step[48];
        snprintf(step, sizeof step, "%u finalists in alternation", nf);
        progress(o, c, step, "");
        r = time_finalists(ctx, b, fki, fout, nf, &cb, runs,
                           o->halving && warmed ? 3 * screen_warm : o->warmup_s, copy_gbps, d, ns,
                           per);
        /* each finalist's output once more, from a run made as its timed
         * runs are: a kernel that goes wrong while timed is not picked */
        for (uint32_t f = 0; f < nf && r == QKRT_OK; f++) {
            const qkrt_kernel_info *k = qkrt_bundle_kernel(b, fki[f]);
            uint32_t nd;
            if (!fout[f]->ok) continue;
            r = qkrt_buffer_fill(ctx, cb.y, 0x7fc00000u);
            if (r == QKRT_OK) r = time_runs(ctx, b, fki[f], &cb, 1, d, ns, per, &nd);
            if (r == QKRT_OK) r = qkrt_buffer_download(ctx, cb.y, 0, y, ny * 4);
            if (r != QKRT_OK) break;
            double e = checked_nmse(c, y, qk_rounds_x8(k) ? ref8 : ref, tr, last_row);
            if (e <= qk_nmse_bound(k)) continue;
            fout[f]->ok = false;
            snprintf(fout[f]->error, sizeof fout[f]->error, "wrong after its timing: NMSE %.3g", e);
        }
        for (uint32_t f = 0; f < nf && r == QKRT_OK; f++) {
            if (o->record) o->record(o->user, qkrt_bundle_kernel(b, fki[f]), fout[f], "full");
            if (fout[f]->ok && fout[f]->us < best_us) best_us = fout[f]->us, best = fpick[f];
        }
    }
    free(fki), free(fpick), free(fout);
    phase(o, QK_PH_FINAL, &tp);
    if (r == QKRT_OK && o->two_pass)
        r = two_pass_candidates(ctx, b, c, o, &cb, copy_gbps, wbytes, y, ref, tr, last_row, runs, d,
                                ns, per, res, count, &best_us, &best);
    if (best >= 0) (*res)[best].best = true;
    /* the yardstick of the case's size: a copy moving as many bytes */
    double cu = 0, cs = 0;
    if (r == QKRT_OK && best >= 0 && !o->record) { /* the autotuner needs none */
        progress(o, c, "", "copy of the same bytes");
        r = qk_bench_size_copy(ctx, b, o, (*res)[best].bytes, &cu, &cs);
    }
    for (uint32_t i = first; i < *count; i++)
        (*res)[i].size_copy_us = cu, (*res)[i].size_copy_span = cs;
    if (r != QKRT_OK && !err[0]) snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    free_buffers(ctx, &cb);
    qk_free_weights(&w);
    free(x), free(y), free(xd), free(ref), free(ref8), free(d), free(ns), free(per), free(ids);
    free(prior), free(had), free(fresh), free(lost);
    return r;
}

/* ---------------------------------------------------------------- layers */

qkrt_result qk_bench_layer(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                           const qk_bench_opts *o, double copy_gbps, qk_bench_layer_result *res) {
    memset(res, 0, sizeof *res);
    res->d = *d;
    qk_moe_layer *L = NULL;
    qkrt_result r = qk_moe_layer_pick(ctx, b, d, &res->k, res->error, sizeof res->error);
    if (r == QKRT_OK) {
        const int used[] = {res->k.router, res->k.topk, res->k.route, res->k.gate_up,
                            res->k.gate,   res->k.glu,  res->k.down,  res->k.combine};
        uint32_t idx[8], n = 0;
        for (int i = 0; i < 8; i++)
            if (used[i] >= 0) idx[n++] = (uint32_t)used[i];
        qkrt_kernels_prepare(ctx, b, idx, n, 0); /* the driver compiling on all cores */
        r = qk_moe_layer_create(ctx, b, &res->k, d, &L, res->error, sizeof res->error);
    }
    /* correctness first: every copy against the float64 reference */
    if (r == QKRT_OK) r = qk_moe_layer_check(ctx, L, &res->check);
    if (r == QKRT_OK && !res->check.ok) {
        snprintf(res->error, sizeof res->error, "%s", res->check.error);
        qk_moe_layer_destroy(ctx, L);
        return QKRT_OK;
    }
    const uint32_t copies = r == QKRT_OK ? qk_moe_layer_copies(L) : 0;
    uint32_t runs = o->runs < 20 ? 20 : o->runs;
    if (runs < copies) runs = copies;
    /* the warm-up: the copies' chains in turn, 64 dispatches at least a submission */
    uint32_t n = 0, nb = 0;
    if (r == QKRT_OK) qk_moe_layer_dispatches(L, 0, &n);
    qkrt_dispatch *batch = qk_xmalloc(sizeof *batch * (n * copies + 64 + n));
    for (uint32_t i = 0; r == QKRT_OK && (i < copies || nb < 64); i++) {
        memcpy(&batch[nb], qk_moe_layer_dispatches(L, i % copies, &n), sizeof *batch * n);
        nb += n;
    }
    if (r == QKRT_OK) r = keep_busy(ctx, batch, nb, o->warmup_s);
    /* each run one command buffer, timestamps before its first dispatch and
     * after its last (qkrt_run_span: barriers only before the dispatches
     * that read an earlier one's output), the copies in turn */
    double *per = qk_xmalloc(sizeof *per * runs), lo = INFINITY, hi = 0;
    for (uint32_t i = 0; i < runs && r == QKRT_OK; i++) {
        const qkrt_dispatch *ds = qk_moe_layer_dispatches(L, i % copies, &n);
        r = qkrt_run_span(ctx, ds, n, &per[i]);
        lo = fmin(lo, per[i]), hi = fmax(hi, per[i]);
    }
    /* and as a model's layers follow one another: the runs' chains back to
     * back in one command buffer, a barrier before each (the next layer
     * reads this one's output), the span over all of them a run */
    qkrt_dispatch *chain = qk_xmalloc(sizeof *chain * (size_t)n * runs);
    double span[3];
    for (uint32_t i = 0; i < runs && r == QKRT_OK; i++) {
        memcpy(&chain[(size_t)i * n], qk_moe_layer_dispatches(L, i % copies, &n),
               sizeof *chain * n);
        chain[(size_t)i * n].depends = true;
    }
    for (uint32_t i = 0; i < 3 && r == QKRT_OK; i++)
        r = qkrt_run_span(ctx, chain, n * runs, &span[i]);
    free(chain);
    /* where the time goes: each dispatch between timestamps, the runs again */
    double *st = qk_xmalloc(sizeof *st * ((size_t)n * runs + 1)), *v = qk_xmalloc(sizeof *v * runs);
    for (uint32_t i = 0; i < runs && r == QKRT_OK; i++)
        r = qkrt_run_timed(ctx, qk_moe_layer_dispatches(L, i % copies, &n), n, &st[(size_t)i * n]);
    const qkrt_dispatch *ds = r == QKRT_OK ? qk_moe_layer_dispatches(L, 0, &n) : NULL;
    for (uint32_t s = 0; s < n && r == QKRT_OK; s++) { /* every copy runs the same kernels */
        for (uint32_t i = 0; i < runs; i++)
            v[i] = st[(size_t)i * n + s];
        res->stage_us[s] = median(v, runs) / 1e3;
        res->stage_kernel[s] = ds[s].kernel;
    }
    free(st), free(v);
    if (r == QKRT_OK) {
        res->us = median(per, runs) / 1e3;
        res->us_chain = median(span, 3) / runs / 1e3;
        res->us_min = lo / 1e3, res->us_max = hi / 1e3;
        res->runs = runs, res->copies = copies, res->dispatches = n;
        res->bytes = qk_moe_layer_bytes(L, &res->experts);
        res->gbps = res->bytes / (res->us * 1e3);
        res->pct_copy = copy_gbps > 0 ? 100.0 * res->gbps / copy_gbps : 0;
        res->timed = true;
    } else if (!res->error[0]) {
        snprintf(res->error, sizeof res->error, "%s", qkrt_last_error(ctx));
    }
    res->ok = r == QKRT_OK;
    free(per), free(batch);
    qk_moe_layer_destroy(ctx, L);
    return r;
}
