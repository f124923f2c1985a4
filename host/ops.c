/* Kernel choice, dispatch and reference for the quantized products. The
 * format model here is the manifest's (rows of blocks or planar groups), so
 * every format a bundle holds runs without code for it. */
#include "ops.h"
#include "ops_moe.h"
#include "qk_decode.h"
#include "qk_util.h" /* qk_parallel */
#include "qkref.h"

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool parse_format(const char *format, uint32_t *bits, uint32_t *group) {
    return sscanf(format, "mlx%u_g%u", bits, group) == 2;
}

bool qk_kernel_fits(const qkrt_kernel_info *k, uint32_t M, uint32_t K, uint32_t T, uint32_t E,
                    uint32_t top_k, uint32_t ne11, uint32_t max_per_expert) {
    static const char *const names[] = {"M", "N", "K", "T", "E", "top_k", "ne11", "max_per_expert"};
    const int64_t values[] = {M, M, K, T, E, top_k, ne11, max_per_expert};
    qkrt_shape s = QK_SHAPE(names, values);
    return qkrt_kernel_fits(k, &s);
}

int qk_pick_kernel(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const qk_weights *w,
                   const char *activation, uint32_t K, uint32_t tokens, char *err,
                   size_t err_size) {
    return qk_pick_fused(ctx, b, family, "none", w, activation, K, tokens, err, err_size);
}

/* The operations layer's default choice (qkrt_op_choose_default), so that
 * the CLI, the tests and an engine without a select table agree. */
int qk_pick_fused(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const char *fusion,
                  const qk_weights *w, const char *activation, uint32_t K, uint32_t tokens,
                  char *err, size_t err_size) {
    const qkrt_op_query q = {.op = family,
                             .fusion = fusion,
                             .format = w->format,
                             .variant = w->variant,
                             .activations = activation,
                             .M = 1,
                             .K = K,
                             .T = tokens};
    qkrt_op_choice c;
    if (qkrt_op_choose_default(ctx, b, &q, &c) != QKRT_OK) {
        snprintf(err, err_size, "%s", qkrt_last_error(ctx));
        return -1;
    }
    return (int)c.kernel;
}

qkrt_result qk_run_matvec(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, const qk_weights *w,
                          const float *x, uint32_t M, uint32_t K, uint32_t T, float *y, double *ns,
                          char *err, size_t err_size) {
    /* the dense product is the MoE one with a single expert and one slot per
     * token; kernels without an ids binding ignore the ids */
    int32_t *ids = qk_xcalloc(T ? T : 1, sizeof *ids);
    qkrt_result r =
        qk_run_matvec_id(ctx, b, ki, w, 1, ids, x, M, K, T, 1, 1, 1, y, ns, err, err_size);
    free(ids);
    return r;
}

/* ---- declared references: a format's `reference:`, registered by the CLI ---- */

typedef struct declared_ref {
    char format[64], variant[64];
    qk_decode *d;
} declared_ref;

static declared_ref *declared;
static uint32_t declared_count;
/* why the last reference or random-weights call of this thread failed */
static _Thread_local char ref_why[512];

void qk_ref_declare(const char *format, const char *variant, qk_decode *d) {
    declared = realloc(declared, sizeof *declared * (declared_count + 1));
    if (!declared) abort();
    declared_ref *r = &declared[declared_count++];
    snprintf(r->format, sizeof r->format, "%s", format);
    snprintf(r->variant, sizeof r->variant, "%s", variant ? variant : "");
    r->d = d;
}

void qk_ref_declared_clear(void) {
    for (uint32_t i = 0; i < declared_count; i++)
        qk_decode_free(declared[i].d);
    free(declared);
    declared = NULL;
    declared_count = 0;
}

/* The declared reference of (format, variant); an empty variant takes the
 * format's first option, as the C references default MLX to bf16. */
static const qk_decode *find_declared(const char *format, const char *variant) {
    for (uint32_t i = 0; i < declared_count; i++)
        if (!strcmp(declared[i].format, format) &&
            (!variant || !variant[0] || !strcmp(declared[i].variant, variant)))
            return declared[i].d;
    return NULL;
}

bool qk_ref_has(const char *format, const char *variant) {
    uint32_t bits, group;
    return find_declared(format, variant) || qkref_find(format) ||
           sscanf(format, "mlx%u_g%u", &bits, &group) == 2;
}

const char *qk_ref_why(void) {
    return ref_why;
}

bool qk_ref_block_format(const char *format, const char *variant, uint32_t *elements,
                         uint32_t *bytes) {
    const qk_decode *d = find_declared(format, variant);
    if (d && !qk_decode_planar(d)) {
        *elements = qk_decode_elements(d), *bytes = qk_decode_block_bytes(d);
        return true;
    }
    const qkref_format *f = d ? NULL : qkref_find(format);
    if (f) *elements = f->elements, *bytes = f->block_bytes;
    return f != NULL;
}

/* Bytes of one group of plane p of a planar declared format. */
static size_t plane_group_bytes(const qk_decode *d, uint32_t p) {
    return (size_t)qk_decode_plane_per_group(d, p) * qk_dtype_size(qk_decode_plane_type(d, p));
}

/* Row r of w through its declared reference d. */
static bool declared_row(const qk_decode *d, const qk_weights *w, uint32_t r, uint32_t K,
                         double *out) {
    uint32_t n = qk_decode_elements(d), groups = K / n;
    char err[256];
    for (uint32_t g = 0; g < groups; g++) {
        size_t gi = (size_t)r * groups + g;
        bool ok;
        if (qk_decode_planar(d)) {
            const uint8_t *planes[4];
            for (uint32_t p = 0; p < qk_decode_plane_count(d) && p < 4; p++)
                planes[p] = (const uint8_t *)w->plane[p] + gi * plane_group_bytes(d, p);
            ok = qk_decode_group(d, planes, out + (size_t)g * n, err, sizeof err);
        } else {
            const uint8_t *blk = (const uint8_t *)w->plane[0] + gi * qk_decode_block_bytes(d);
            ok = qk_decode_block(d, blk, out + (size_t)g * n, err, sizeof err);
        }
        if (!ok) {
            snprintf(ref_why, sizeof ref_why, "the reference of format %s, row %u, %s %u: %s",
                     w->format, r, qk_decode_planar(d) ? "group" : "block", g, err);
            return false;
        }
    }
    return true;
}

/* Dequantizes row r of w into out[K] with the independent references. */
static bool ref_row(const qk_weights *w, uint32_t r, uint32_t K, double *out) {
    const qk_decode *d = find_declared(w->format, w->variant);
    if (d) return declared_row(d, w, r, K, out);
    uint32_t bits, group;
    if (parse_format(w->format, &bits, &group)) {
        const char *st = w->variant && w->variant[0] ? w->variant : "bf16";
        size_t ss = strcmp(st, "f32") ? 2 : 4;
        const uint8_t *wp = w->plane[0], *sp = w->plane[1], *bp = w->plane[2];
        qkref_mlx_dequant_row(bits, group, st, (const uint32_t *)(wp + (size_t)r * K * bits / 8),
                              sp + (size_t)r * (K / group) * ss, bp + (size_t)r * (K / group) * ss,
                              K, out);
        return true;
    }
    const qkref_format *f = qkref_find(w->format);
    if (!f) {
        snprintf(ref_why, sizeof ref_why, QK_NO_REFERENCE, w->format);
        return false;
    }
    size_t row = (size_t)K / f->elements * f->block_bytes;
    qkref_dequant_row(f, (const uint8_t *)w->plane[0] + row * r, K, out);
    return true;
}

/* y[t][r] = sum_i W[r][i] x[t][i], or with squares the sum of the terms'
 * squares. */
typedef struct products_job {
    const qk_weights *w;
    const double *x;
    uint32_t M, K, T;
    bool squares;
    double *y;
    bool failed[QK_MAX_THREADS]; /* each share's own */
} products_job;

/* Share t of n: rows t, t + n, ... (each output written by one share). */
static void products_share(void *arg, uint32_t t, uint32_t n) {
    products_job *j = arg;
    double *row = qk_xmalloc(sizeof *row * j->K);
    for (uint32_t r = t; r < j->M; r += n) {
        if (!ref_row(j->w, r, j->K, row)) {
            j->failed[t] = true; /* (a declared reference is checked finite when made) */
            break;
        }
        for (uint32_t tk = 0; tk < j->T; tk++) {
            double s = 0;
            for (uint32_t i = 0; i < j->K; i++) {
                double p = row[i] * j->x[(size_t)tk * j->K + i];
                s += j->squares ? p * p : p;
            }
            j->y[(size_t)tk * j->M + r] = s;
        }
    }
    free(row);
}

/* Elements from which a declared reference's rows are shared among the
 * cores: its evaluator takes ~100 ns an element (a dense 4096 x 14336
 * matrix ~6 s on one), where the C references take a few. Below it (the
 * MoE references' experts, themselves run a thread each) one thread. */
enum { QK_REF_PARALLEL_ELEMENTS = 1 << 22 };

static bool ref_products(const qk_weights *w, const double *x, uint32_t M, uint32_t K, uint32_t T,
                         bool squares, double *y) {
    products_job j = {w, x, M, K, T, squares, y, {false}};
    bool declared = find_declared(w->format, w->variant) != NULL;
    uint32_t n = declared && (uint64_t)M * K >= QK_REF_PARALLEL_ELEMENTS ? qk_cores() : 1;
    n = n < M ? n : M ? M : 1;
    n = n < QK_MAX_THREADS ? n : QK_MAX_THREADS;
    qk_parallel(n, products_share, &j);
    for (uint32_t t = 0; t < n; t++)
        if (j.failed[t]) return false;
    return true;
}

bool qk_ref_dequant(const qk_weights *w, uint32_t M, uint32_t K, double *out) {
    bool ok = true;
    for (uint32_t r = 0; r < M && ok; r++)
        ok = ref_row(w, r, K, out + (size_t)r * K);
    return ok;
}

bool qk_ref_matvec(const qk_weights *w, const double *x, uint32_t M, uint32_t K, uint32_t T,
                   double *y) {
    return ref_products(w, x, M, K, T, false, y);
}

bool qk_ref_matvec_sq(const qk_weights *w, const double *x, uint32_t M, uint32_t K, uint32_t T,
                      double *y2) {
    return ref_products(w, x, M, K, T, true, y2);
}

/* The blocks of a declared format checked in shares: bad is the first
 * block (of the lowest share that found one) whose reference fails. */
typedef struct check_job {
    const qk_decode *d;
    const uint8_t *blocks;
    size_t block_bytes, count, bad;
    char why[256];
} check_job;

static void check_share(void *arg, uint32_t t, uint32_t n) {
    check_job *j = arg;
    size_t lo = j->count * t / n, hi = j->count * (t + 1) / n;
    double *y = qk_xmalloc(sizeof *y * qk_decode_elements(j->d));
    char err[256];
    for (size_t g = lo; g < hi; g++)
        if (!qk_decode_block(j->d, j->blocks + g * j->block_bytes, y, err, sizeof err)) {
            /* shares are block ranges in order: the lowest failing block wins */
            static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
            pthread_mutex_lock(&lock);
            if (g < j->bad) j->bad = g, snprintf(j->why, sizeof j->why, "%s", err);
            pthread_mutex_unlock(&lock);
            break;
        }
    free(y);
}

/* Random weights for a declared format, each block (group) checked to
 * decode to finite values. */
static bool declared_random(const qk_decode *d, uint32_t M, uint32_t K, uint64_t *rng,
                            qk_weights *w) {
    uint32_t n = qk_decode_elements(d);
    size_t groups = (size_t)M * (K / n);
    double *y = qk_xmalloc(sizeof *y * n);
    char err[256];
    bool ok = true;
    if (qk_decode_planar(d)) {
        w->plane_count = qk_decode_plane_count(d);
        for (uint32_t p = 0; p < w->plane_count; p++) {
            w->bytes[p] = groups * plane_group_bytes(d, p);
            w->plane[p] = qk_xmalloc(w->bytes[p] ? w->bytes[p] : 1);
        }
        for (size_t g = 0; g < groups && ok; g++) {
            uint8_t *planes[4];
            for (uint32_t p = 0; p < w->plane_count; p++)
                planes[p] = (uint8_t *)w->plane[p] + g * plane_group_bytes(d, p);
            qk_decode_random_group(d, rng, planes);
            ok = qk_decode_group(d, (const uint8_t *const *)planes, y, err, sizeof err);
            if (!ok)
                snprintf(ref_why, sizeof ref_why,
                         "the reference of format %s is not finite on random group %zu: %s",
                         w->format, g, err);
        }
    } else {
        size_t bb = qk_decode_block_bytes(d);
        w->plane_count = 1;
        w->bytes[0] = groups * bb;
        w->plane[0] = qk_xmalloc(w->bytes[0] ? w->bytes[0] : 1);
        for (size_t g = 0; g < groups; g++)
            qk_decode_random_block(d, rng, (uint8_t *)w->plane[0] + g * bb);
        /* checked on all cores (the blocks made in order, for the seed) */
        check_job j = {d, (const uint8_t *)w->plane[0], bb, groups, groups, ""};
        uint64_t el = (uint64_t)groups * n;
        qk_parallel(el >= QK_REF_PARALLEL_ELEMENTS ? qk_cores() : 1, check_share, &j);
        if (j.bad < groups) {
            snprintf(ref_why, sizeof ref_why,
                     "the reference of format %s is not finite on random block %zu: %s", w->format,
                     j.bad, j.why);
            ok = false;
        }
    }
    free(y);
    if (!ok) qk_free_weights(w);
    return ok;
}

const char *qk_random_weights_try(const char *format, const char *variant, uint32_t M, uint32_t K,
                                  uint64_t *rng, qk_weights *w) {
    memset(w, 0, sizeof *w);
    w->format = format;
    w->variant = variant ? variant : "";
    ref_why[0] = 0;
    static const char *const no_memory = "out of host memory for the weights";
    const qk_decode *d = find_declared(format, variant);
    if (d) return declared_random(d, M, K, rng, w) ? NULL : ref_why;
    uint32_t bits, group;
    if (parse_format(format, &bits, &group)) {
        const char *st = w->variant[0] ? w->variant : "bf16";
        size_t ss = strcmp(st, "f32") ? 2 : 4;
        w->plane_count = 3;
        w->bytes[0] = (size_t)M * K * bits / 8;
        w->bytes[1] = w->bytes[2] = (size_t)M * (K / group) * ss;
        for (int i = 0; i < 3; i++)
            w->plane[i] = malloc(w->bytes[i]);
        if (!w->plane[0] || !w->plane[1] || !w->plane[2]) {
            qk_free_weights(w);
            return no_memory;
        }
        qkref_mlx_random(bits, group, st, rng, M, K, (uint32_t *)w->plane[0], (void *)w->plane[1],
                         (void *)w->plane[2]);
        return NULL;
    }
    const qkref_format *f = qkref_find(format);
    if (!f) {
        snprintf(ref_why, sizeof ref_why, QK_NO_REFERENCE, format);
        return ref_why;
    }
    w->plane_count = 1;
    size_t nblocks = (size_t)M * (K / f->elements);
    w->bytes[0] = nblocks * f->block_bytes;
    w->plane[0] = malloc(w->bytes[0]);
    if (!w->plane[0]) {
        qk_free_weights(w);
        return no_memory;
    }
    qkref_random_blocks(f, rng, (uint8_t *)w->plane[0], nblocks);
    return NULL;
}

bool qk_random_weights(const char *format, const char *variant, uint32_t M, uint32_t K,
                       uint64_t *rng, qk_weights *w) {
    return !qk_random_weights_try(format, variant, M, K, rng, w);
}

void qk_free_weights(qk_weights *w) {
    for (uint32_t i = 0; i < w->plane_count; i++)
        free((void *)w->plane[i]);
    w->plane_count = 0;
}

double qk_nmse_bound(const qkrt_kernel_info *k) {
    const char *p = k->precision;
    /* q8, against qk_round_x8's activations: f32 sums whose min term (b
     * times the group sums) cancels against the codes' (seen up to 4e-6 on
     * the one-row shapes), and codes a device's reciprocal can flip where
     * 127 x / max|x| lies within an ulp of a half. A wrong group, scale or
     * slab gives 1e-2 and more. */
    if (!strcmp(p, "q8")) return 1e-4;
    /* f16 staging (the tiled matmuls, cooperative matrices): ggml's bound */
    if (!strcmp(p, "f16")) return 5e-4;
    return 1e-6;
}

bool qk_rounds_x8(const qkrt_kernel_info *k) {
    return !strcmp(k->mma, "dot8");
}

bool qk_takes_q8(const qkrt_kernel_info *k) {
    return qkrt_kernel_takes_q8(k);
}

int qk_find_quantizer(qkrt_context *ctx, const qkrt_bundle *b, char *err, size_t err_size) {
    const int q = qkrt_op_quantizer(ctx, b);
    if (q < 0) snprintf(err, err_size, "%s", qkrt_last_error(ctx));
    return q;
}

bool qk_scratch_bytes(const qkrt_kernel_info *k, const qkrt_shape *shape, size_t *bytes, char *err,
                      size_t err_size) {
    if (qkrt_kernel_scratch_bytes(NULL, k, shape, bytes) == QKRT_OK) return true;
    snprintf(err, err_size, "%s", qkrt_last_error(NULL));
    return false;
}

size_t qk_q8_bytes(uint32_t rows, uint32_t K) {
    return qkrt_q8_bytes(rows, K);
}

void qk_round_x8(double *xd, const float *x, size_t n) {
    for (size_t g = 0; g < n; g += 32) {
        float amax = 0;
        for (size_t i = g; i < g + 32 && i < n; i++)
            amax = fmaxf(amax, fabsf(x[i]));
        float scale = amax > 0 ? 127.0f * (1.0f / amax) : 0, dx = amax / 127.0f;
        for (size_t i = g; i < g + 32 && i < n; i++)
            xd[i] = (double)dx * rintf(x[i] * scale); /* to nearest even, as the kernel */
    }
}

double qk_nmse(const float *out, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i])) return INFINITY;
        double d = out[i] - ref[i];
        num += d * d;
        den += ref[i] * ref[i];
    }
    /* A reference wholly below f32's normal range (silu of a very negative
     * gate) is 0 in f32: measure against that range, not against nothing. */
    den += (double)n * FLT_MIN * FLT_MIN;
    return num / den;
}
