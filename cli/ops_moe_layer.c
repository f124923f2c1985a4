/* The MoE layer's kernels chosen as an engine chooses them, its buffers and
 * dispatches (every weight copy's chain), and its float64 check. */
#include "ops_moe_layer.h"
#include "qk_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- choice */

/* The shape variables of a product of the layer (pairs: T * top_k). */
static const char *const prod_names[] = {"M", "K", "T", "top_k", "ne11", "E", "max_per_expert"};
enum { PROD_VARS = 7 };

static void prod_values(int64_t *v, uint32_t M, uint32_t K, const qk_moe_layer_desc *d,
                        uint32_t ne11) {
    const int64_t vals[PROD_VARS] = {M, K, d->T, d->top_k, ne11, d->E, d->T};
    memcpy(v, vals, sizeof vals);
}

/* A product's kernel for op: the select table's answer where the bundle has
 * one, else qk_pick_fused's (fusion "none" or "swiglu"). -1 with err. */
static int pick_product(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                        const char *op, const char *fusion, uint32_t M, uint32_t K, uint32_t ne11,
                        uint32_t tokens, bool *selected, char *err, size_t err_size) {
    int64_t v[PROD_VARS];
    prod_values(v, M, K, d, ne11);
    qkrt_shape shape = {PROD_VARS, prod_names, v};
    *selected = false;
    if (qkrt_bundle_has_select(b) && !strcmp(fusion, "none")) {
        char fmt[96];
        snprintf(fmt, sizeof fmt, "%s%s%s", d->format, d->variant[0] ? "/" : "", d->variant);
        uint32_t ki;
        if (qkrt_select(ctx, b, op, fmt, &shape, &ki) == QKRT_OK) {
            *selected = true;
            return (int)ki;
        }
    }
    qk_weights w = {.format = d->format, .variant = d->variant};
    int ki = qk_pick_fused(ctx, b, op, fusion, &w, "f32", K, tokens, err, err_size);
    if (ki >= 0 && !qk_kernel_fits(qkrt_bundle_kernel(b, (uint32_t)ki), M, K, d->T, d->E, d->top_k,
                                   ne11, d->T)) {
        snprintf(err, err_size, "%s: the layer's shape (M=%u K=%u T=%u) breaks its constraints",
                 qkrt_bundle_kernel(b, (uint32_t)ki)->name, M, K, d->T);
        return -1;
    }
    return ki;
}

/* The first kernel of family with fusion that the device runs, or -1. */
static int find_op(qkrt_context *ctx, const qkrt_bundle *b, const char *family,
                   const char *fusion) {
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (!strcmp(k->family, family) && !strcmp(k->fusion, fusion) &&
            qkrt_kernel_check(ctx, b, i) == QKRT_OK)
            return (int)i;
    }
    return -1;
}

/* The expert products on one path (k->routed: matmul_id, else matvec_id):
 * down, and gate/up: the selected kernel's fused sibling (its name +
 * "_swiglu"), or without a select table the best fused kernel; else the
 * plain one twice and the swiglu kernel. */
static qkrt_result pick_experts(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                                qk_moe_kernels *k, char *err, size_t err_size) {
    const char *op = k->routed ? "matmul_id" : "matvec_id";
    /* a matmul_id tile's token columns are an expert's pairs */
    uint32_t tokens = k->routed ? (d->T * d->top_k + d->E - 1) / d->E : d->T;
    k->gate_up = k->gate = k->glu = -1;
    k->down = pick_product(ctx, b, d, op, "none", d->H, d->F, d->top_k, tokens, &k->selected[2],
                           err, err_size);
    if (k->down < 0) return QKRT_ERROR_ARGUMENT;
    char why[512] = "";
    int plain = pick_product(ctx, b, d, op, "none", d->F, d->H, 1, tokens, &k->selected[1], why,
                             sizeof why);
    const bool split = d->gate_up == QK_FUSE_NEVER;
    if (!split && k->selected[1]) { /* the selected kernel's fused sibling */
        char name[300];
        snprintf(name, sizeof name, "%s_swiglu", qkrt_bundle_kernel(b, (uint32_t)plain)->name);
        int fused = qkrt_bundle_find(b, name);
        if (fused >= 0 && qkrt_kernel_check(ctx, b, (uint32_t)fused) == QKRT_OK &&
            qk_kernel_fits(qkrt_bundle_kernel(b, (uint32_t)fused), d->F, d->H, d->T, d->E, d->top_k,
                           1, d->T))
            k->gate_up = fused;
    }
    /* without the table's answer, or when a fused kernel is asked for: the
     * CLI's choice among the fused ones */
    if (!split && k->gate_up < 0 && (!k->selected[1] || d->gate_up == QK_FUSE_ALWAYS)) {
        bool unused;
        char none[512]; /* none: gate and up apart */
        k->gate_up = pick_product(ctx, b, d, op, "swiglu", d->F, d->H, 1, tokens, &unused, none,
                                  sizeof none);
        if (k->gate_up >= 0) k->selected[1] = false;
    }
    if (k->gate_up >= 0) return QKRT_OK;
    if (d->gate_up == QK_FUSE_ALWAYS) {
        snprintf(err, err_size,
                 "gate/up: no fused %s swiglu kernel for %s%s%s that this device "
                 "runs at the layer's shape",
                 op, d->format, d->variant[0] ? " " : "", d->variant);
        return QKRT_ERROR_ARGUMENT;
    }
    k->gate = plain;
    k->glu = find_op(ctx, b, "swiglu", "none");
    if (plain >= 0 && k->glu >= 0) return QKRT_OK;
    snprintf(err, err_size, "gate/up: no fused %s swiglu kernel for %s, and %s", op, d->format,
             plain < 0 ? why : "no swiglu kernel that this device runs");
    return QKRT_ERROR_ARGUMENT;
}

/* The layer's kernel of family (router_topk renorm, moe_combine
 * residual_rmsnorm) that this device runs: computing its input from weights
 * of the layer's format (the router's logits, M x K = E x H; the combine's
 * slots, H x F), the layer's shape within its constraints; or reading that
 * input (given). Of several computing ones, the first of precision class
 * prefer (the class of the product it replaces; NULL: any). */
static int find_aux(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                    const char *family, const char *fusion, bool computed, uint32_t M, uint32_t K,
                    const char *prefer) {
    int first = -1;
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (strcmp(k->family, family) || strcmp(k->fusion, fusion) ||
            (k->weights_layout[0] != 0) != computed)
            continue;
        if (computed && (strcmp(k->format, d->format) || strcmp(k->format_variant, d->variant) ||
                         !qk_kernel_fits(k, M, K, d->T, d->E, d->top_k, 1, 0)))
            continue;
        if (qkrt_kernel_check(ctx, b, i) != QKRT_OK) continue;
        if (!prefer || !strcmp(k->precision, prefer)) return (int)i;
        if (first < 0) first = (int)i;
    }
    return first;
}

static int find_topk(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                     bool computed) {
    return find_aux(ctx, b, d, "router_topk", "renorm", computed, d->E, d->H, NULL);
}

/* computed: the down projection inside, of the precision class of down (the
 * down product's kernel) where the bundle has one */
static int find_combine(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                        bool computed, int down) {
    const char *prefer = down >= 0 ? qkrt_bundle_kernel(b, (uint32_t)down)->precision : NULL;
    return find_aux(ctx, b, d, "moe_combine", "residual_rmsnorm", computed, d->H, d->F, prefer);
}

/* The ranked form of gate/up kernel gate_up that this device runs at the
 * layer's shape (qk_ranked_name), or -1; name gets its name. */
static int find_ranked(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                       int gate_up, char *name, size_t name_size) {
    name[0] = 0;
    if (gate_up < 0 ||
        !qk_ranked_name(qkrt_bundle_kernel(b, (uint32_t)gate_up)->name, name, name_size))
        return -1;
    const int rk = qkrt_bundle_find(b, name);
    if (rk < 0 || qkrt_kernel_check(ctx, b, (uint32_t)rk) != QKRT_OK ||
        !qk_kernel_fits(qkrt_bundle_kernel(b, (uint32_t)rk), d->F, d->H, d->T, d->E, d->top_k, 1,
                        d->T))
        return -1;
    return rk;
}

qkrt_result qk_moe_layer_pick(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                              qk_moe_kernels *k, char *err, size_t err_size) {
    memset(k, 0, sizeof *k);
    k->router = k->topk = k->route = k->gate_up = k->gate = k->glu = k->down = k->combine = -1;
    const bool prefill = d->T > (d->decode_max ? d->decode_max : QK_MOE_DECODE_TOKENS);
    k->combine = find_combine(ctx, b, d, false, -1);
    if (k->combine < 0) {
        snprintf(err, err_size,
                 "the bundle has no moe_combine residual_rmsnorm kernel that this "
                 "device runs");
        return QKRT_ERROR_ARGUMENT;
    }
    /* the experts first: past decode_max tokens the prefill kernels, where
     * the bundle has some that this device runs and the shape fits; else
     * the decode ones */
    k->route = prefill ? find_op(ctx, b, "moe_route", "none") : -1;
    k->routed = k->route >= 0;
    qkrt_result r = pick_experts(ctx, b, d, k, err, err_size);
    if (r != QKRT_OK && k->routed) {
        k->routed = false, k->route = -1;
        r = pick_experts(ctx, b, d, k, err, err_size);
    }
    if (r != QKRT_OK) return r;
    /* the top-k inside gate/up (on the decode path; where asked, or by
     * default where the bundle has it): the gate/up kernel's ranked form */
    if ((d->router == QK_FUSE_RANKED || d->router == QK_FUSE_AUTO) && !k->routed) {
        char name[300];
        const int rk = find_ranked(ctx, b, d, k->gate_up, name, sizeof name);
        if (rk < 0 && d->router == QK_FUSE_RANKED) {
            snprintf(err, err_size,
                     "router: the gate/up kernel %s has no ranked form (%s) that this device "
                     "runs at the layer's shape",
                     k->gate_up >= 0 ? qkrt_bundle_kernel(b, (uint32_t)k->gate_up)->name
                                     : "(gate and up apart)",
                     name[0] ? name : "none");
            return QKRT_ERROR_ARGUMENT;
        }
        if (rk >= 0) k->gate_up = rk, k->ranked = true;
    }
    /* else the router and top-k as one kernel (on the decode path unless
     * asked), or router_topk after the router's product */
    const int fused =
        !k->ranked && (d->router == QK_FUSE_ALWAYS || (d->router == QK_FUSE_AUTO && !prefill))
            ? find_topk(ctx, b, d, true)
            : -1;
    if (d->router == QK_FUSE_ALWAYS && fused < 0) {
        snprintf(err, err_size,
                 "router: no router_topk kernel computing its logits for %s%s%s that this "
                 "device runs at the layer's shape",
                 d->format, d->variant[0] ? " " : "", d->variant);
        return QKRT_ERROR_ARGUMENT;
    }
    if (!k->ranked) k->topk = fused >= 0 ? fused : find_topk(ctx, b, d, false);
    if (!k->ranked && k->topk < 0) {
        snprintf(err, err_size,
                 "the bundle has no router_topk renorm kernel that this device runs");
        return QKRT_ERROR_ARGUMENT;
    }
    if (fused >= 0) k->router = fused;
    if (prefill && fused < 0)
        k->router = pick_product(ctx, b, d, "matmul", "none", d->E, d->H, 1, d->T, &k->selected[0],
                                 err, err_size);
    if (k->router < 0)
        k->router = pick_product(ctx, b, d, "matvec", "none", d->E, d->H, 1, d->T, &k->selected[0],
                                 err, err_size);
    if (k->router < 0) return QKRT_ERROR_ARGUMENT;
    /* down inside the combine (on the decode path, where asked) */
    if (d->down == QK_FUSE_ALWAYS && !k->routed) {
        const int fc = find_combine(ctx, b, d, true, k->down);
        if (fc < 0) {
            snprintf(err, err_size,
                     "down: no moe_combine kernel computing its slots for %s%s%s that this "
                     "device runs",
                     d->format, d->variant[0] ? " " : "", d->variant);
            return QKRT_ERROR_ARGUMENT;
        }
        k->combine = fc, k->down = -1, k->selected[2] = false;
    }
    if (err_size) err[0] = 0; /* a path given up for another is no error */
    return QKRT_OK;
}

/* ---------------------------------------------------------------- the layer */

/* The layer's activation buffers. */
enum {
    B_X,      /* [T, H] the layer's input (the normed hidden state) */
    B_XQ,     /* x as q8 rows, for kernels on pre-quantized activations */
    B_RES,    /* [T, H] the residual */
    B_NORM_W, /* [H] the next RMSNorm's weights */
    B_LOGITS, /* [T, E] */
    B_IDS,    /* [T, top_k] expert of each pair */
    B_RW,     /* [T, top_k] routing weights */
    B_TPE,    /* [E] pairs per expert (prefill) */
    B_RIDS,   /* [E, T] pairs of each expert (prefill) */
    B_DISP,   /* [6] indirect arguments of gate/up and down (prefill) */
    B_G,      /* [T, top_k, F] gate and up, when not fused */
    B_U,
    B_ACT,  /* [T, top_k, F] silu(gate) * up */
    B_ACTQ, /* act as q8 rows */
    B_SLOTS,
    B_Y,
    B_NORMED,
    B_COUNT
};

enum { W_ROUTER, W_GATE, W_UP, W_DOWN, W_COUNT };

struct qk_moe_layer {
    qk_moe_kernels k;
    qk_moe_layer_desc d;
    char format[32], variant[16];
    int quant; /* the bundle's quantizer, or -1 */
    qk_weights w[W_COUNT];
    float *x, *res, *norm_w;
    double *xd, *resd, *norm_wd;
    uint32_t copies, n;
    qk_wbufs wb[QK_MOE_LAYER_MAX_COPIES][W_COUNT];
    qkrt_buffer *buf[B_COUNT];
    qkrt_buffer *scratch[QK_MOE_LAYER_MAX_DISPATCHES]; /* one per dispatch of a chain */
    qkrt_dispatch *d_all;                              /* copies x n */
    qk_slots *slots;                                   /* copies x n */
    uint32_t experts;                                  /* distinct experts the tokens chose */
};

static const uint32_t NAN32 = 0x7fc00000u;
#define QK_MOE_EPS 1e-6f /* the RMSNorm's epsilon: Qwen3's rms_norm_eps */

static bool takes_q8(const qkrt_bundle *b, int ki) {
    return ki >= 0 && qk_takes_q8(qkrt_bundle_kernel(b, (uint32_t)ki));
}

/* What one chain's next dispatch needs: kernel ki on weights mats (nmats of
 * them), the other bindings by name, the shape; for a prefill product the
 * indirect arguments at offset (moe_route's, else NULL). */
typedef struct step {
    int ki;
    const qk_wbufs *mats;
    uint32_t nmats;
    const qk_bind *binds;
    uint32_t nbinds;
    const char *const *names;
    const int64_t *values;
    uint32_t nvars;
    bool depends;
    qkrt_buffer *indirect;
    size_t offset;
} step;

/* Appends s as dispatch L->n of copy c's chain; the scratch of a split-K
 * kernel is made on copy 0's pass (every copy has the same chain). */
static qkrt_result add(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L, uint32_t c,
                       const step *s, char *err, size_t err_size) {
    if (L->n == QK_MOE_LAYER_MAX_DISPATCHES || s->nbinds >= 8) {
        snprintf(err, err_size, "more than %d dispatches in a layer", QK_MOE_LAYER_MAX_DISPATCHES);
        return QKRT_ERROR_ARGUMENT;
    }
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)s->ki);
    qkrt_shape shape = {s->nvars, s->names, s->values};
    qkrt_result r = QKRT_OK;
    if (c == 0) {
        size_t bytes = 0;
        if (!qk_scratch_bytes(k, &shape, &bytes, err, err_size)) return QKRT_ERROR_ARGUMENT;
        if (bytes) r = qkrt_buffer_create(ctx, bytes, &L->scratch[L->n]);
        if (bytes && r == QKRT_OK) r = qkrt_buffer_fill(ctx, L->scratch[L->n], 0);
        if (r != QKRT_OK) return r;
    }
    qk_bind binds[8];
    memcpy(binds, s->binds, sizeof *binds * s->nbinds);
    binds[s->nbinds] = (qk_bind){"scratch", L->scratch[L->n]};
    size_t i = (size_t)c * QK_MOE_LAYER_MAX_DISPATCHES + L->n;
    qkrt_dispatch *d = &L->d_all[i];
    r = qk_dispatch_setup(b, (uint32_t)s->ki, s->mats, s->nmats, binds, s->nbinds + 1, s->names,
                          s->values, s->nvars, d, &L->slots[i], err, err_size);
    d->depends = s->depends;
    d->indirect = s->indirect;
    d->indirect_offset = s->offset;
    L->n++;
    return r;
}

/* A product of the chain: ki on mats reading x (its q8 rows from xq), writing
 * y, the expert ids (and pairs per expert) of the layer's path bound. */
static qkrt_result add_product(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L, uint32_t c,
                               int ki, const qk_wbufs *mats, uint32_t nmats, int x, int xq, int y,
                               const int64_t *vals, bool depends, size_t offset, char *err,
                               size_t err_size) {
    qkrt_buffer **B = L->buf;
    const bool routed = L->k.routed && ki != L->k.router;
    /* (logits and route_w: the ranked form's, which writes ids and route_w) */
    const qk_bind binds[] = {
        {"x", B[x]},         {"xq", B[xq]}, {"ids", B[routed ? B_RIDS : B_IDS]},
        {"tpe", B[B_TPE]},   {"y", B[y]},   {"logits", B[B_LOGITS]},
        {"route_w", B[B_RW]}};
    step s = {ki,         mats, nmats,     binds,   7,
              prod_names, vals, PROD_VARS, depends, routed ? B[B_DISP] : NULL,
              offset};
    return add(ctx, b, L, c, &s, err, err_size);
}

/* Any other kernel of the chain, its buffers bound by name. */
static qkrt_result add_op(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L, uint32_t c,
                          int ki, const qk_bind *binds, uint32_t nbinds, const char *const *names,
                          const int64_t *vals, uint32_t nvars, char *err, size_t err_size) {
    /* each reads what the dispatch before it wrote */
    step s = {ki, NULL, 0, binds, nbinds, names, vals, nvars, true, NULL, 0};
    return add(ctx, b, L, c, &s, err, err_size);
}

/* Whether the chain quantizes x first: the router or gate/up reads its q8 rows. */
static bool x_quantized(const qkrt_bundle *b, const qk_moe_kernels *k) {
    return takes_q8(b, k->router) || takes_q8(b, k->gate_up >= 0 ? k->gate_up : k->gate);
}

static const char *const q_names[] = {"K", "T"}; /* the quantizer's shape */

/* [quantize x]: the q8 rows of the layer's input. */
static qkrt_result record_input(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L,
                                uint32_t c, char *err, size_t err_size) {
    if (!x_quantized(b, &L->k)) return QKRT_OK;
    const qk_bind bq[] = {{"x", L->buf[B_X]}, {"xq", L->buf[B_XQ]}};
    const int64_t vq[] = {L->d.H, L->d.T};
    step s = {L->quant, NULL, 0, bq, 2, q_names, vq, 2, false, NULL, 0};
    return add(ctx, b, L, c, &s, err, err_size);
}

/* router, top-k: the logits, each token's experts and routing weights (one
 * kernel where the top-k computes the logits itself). */
static qkrt_result record_router(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L,
                                 uint32_t c, char *err, size_t err_size) {
    const qk_moe_layer_desc *d = &L->d;
    if (L->k.router == L->k.topk) {
        static const char *const names[] = {"E", "T", "top_k", "K"};
        const int64_t vals[] = {d->E, d->T, d->top_k, d->H};
        qkrt_buffer **B = L->buf;
        const qk_bind bt[] = {
            {"x", B[B_X]}, {"logits", B[B_LOGITS]}, {"ids", B[B_IDS]}, {"route_w", B[B_RW]}};
        step s = {L->k.topk, &L->wb[c][W_ROUTER], 1, bt, 4, names, vals, 4, false, NULL, 0};
        return add(ctx, b, L, c, &s, err, err_size);
    }
    int64_t vr[PROD_VARS];
    prod_values(vr, d->E, d->H, d, 1);
    qkrt_result r = add_product(ctx, b, L, c, L->k.router, &L->wb[c][W_ROUTER], 1, B_X, B_XQ,
                                B_LOGITS, vr, x_quantized(b, &L->k), 0, err, err_size);
    if (L->k.ranked) return r; /* gate/up ranks the logits */
    static const char *const names[] = {"E", "T", "top_k"};
    const int64_t vals[] = {d->E, d->T, d->top_k};
    qkrt_buffer **B = L->buf;
    const qk_bind bt[] = {{"logits", B[B_LOGITS]}, {"ids", B[B_IDS]}, {"route_w", B[B_RW]}};
    if (r == QKRT_OK) r = add_op(ctx, b, L, c, L->k.topk, bt, 3, names, vals, 3, err, err_size);
    return r;
}

/* The experts, from each pair's expert id (B_IDS) and x: [moe_route,]
 * gate/up (fused, or gate, up and swiglu), [quantize act,] down, into the
 * slots. The one recording of this sequence: the layer's, and
 * qk_run_moe_ffn's. */
static qkrt_result record_experts(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L,
                                  uint32_t c, char *err, size_t err_size) {
    const qk_moe_layer_desc *d = &L->d;
    const qk_moe_kernels *k = &L->k;
    qkrt_buffer **B = L->buf;
    const qk_wbufs *W = L->wb[c];
    const uint32_t P = d->T * d->top_k;
    const int gk = k->gate_up >= 0 ? k->gate_up : k->gate;
    int64_t vg[PROD_VARS], vd[PROD_VARS];
    prod_values(vg, d->F, d->H, d, 1);
    prod_values(vd, d->H, d->F, d, d->top_k);
    qkrt_result r = QKRT_OK;
    /* prefill: moe_route writes each product's grid, x from the kernel's own
     * grid rule, y from the busiest expert's pairs over its NR1 */
    if (k->routed) {
        const qkrt_kernel_info *kg = qkrt_bundle_kernel(b, (uint32_t)gk);
        const qkrt_kernel_info *kd = qkrt_bundle_kernel(b, (uint32_t)k->down);
        qkrt_shape sg = {PROD_VARS, prod_names, vg}, sd = {PROD_VARS, prod_names, vd};
        int64_t gx0 = 0, gx1 = 0;
        r = qkrt_eval(kg->grid[0], &sg, &gx0, err, err_size);
        if (r == QKRT_OK) r = qkrt_eval(kd->grid[0], &sd, &gx1, err, err_size);
        static const char *const names[] = {"T",         "top_k",   "E",         "max_per_expert",
                                            "groups_x0", "tile_n0", "groups_x1", "tile_n1"};
        /* a token picks an expert at most once: T pairs per expert at most */
        const int64_t vals[] = {d->T, d->top_k, d->E, d->T, gx0, kg->nr1, gx1, kd->nr1};
        const qk_bind br[] = {
            {"topk", B[B_IDS]}, {"tpe", B[B_TPE]}, {"ids", B[B_RIDS]}, {"disp", B[B_DISP]}};
        if (r == QKRT_OK) r = add_op(ctx, b, L, c, k->route, br, 4, names, vals, 8, err, err_size);
    }
    if (r == QKRT_OK && k->gate_up >= 0) {
        r = add_product(ctx, b, L, c, k->gate_up, &W[W_GATE], 2, B_X, B_XQ, B_ACT, vg, true, 0, err,
                        err_size);
    } else if (r == QKRT_OK) {
        /* gate and up are independent: no barrier between them */
        r = add_product(ctx, b, L, c, k->gate, &W[W_GATE], 1, B_X, B_XQ, B_G, vg, true, 0, err,
                        err_size);
        if (r == QKRT_OK)
            r = add_product(ctx, b, L, c, k->gate, &W[W_UP], 1, B_X, B_XQ, B_U, vg, false, 0, err,
                            err_size);
        static const char *const names[] = {"N"};
        const int64_t vals[] = {(int64_t)P * d->F};
        const qk_bind bg[] = {{"g", B[B_G]}, {"u", B[B_U]}, {"y", B[B_ACT]}};
        if (r == QKRT_OK) r = add_op(ctx, b, L, c, k->glu, bg, 3, names, vals, 1, err, err_size);
    }
    if (k->down < 0) return r; /* the combine computes the slots */
    if (r == QKRT_OK && takes_q8(b, k->down)) {
        const qk_bind bq[] = {{"x", B[B_ACT]}, {"xq", B[B_ACTQ]}};
        const int64_t vq[] = {d->F, P};
        r = add_op(ctx, b, L, c, L->quant, bq, 2, q_names, vq, 2, err, err_size);
    }
    if (r == QKRT_OK)
        r = add_product(ctx, b, L, c, k->down, &W[W_DOWN], 1, B_ACT, B_ACTQ, B_SLOTS, vd, true, 12,
                        err, err_size);
    return r;
}

/* combine: the slots weighted and summed, the residual added, and RMSNorm. */
static qkrt_result record_combine(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L,
                                  uint32_t c, char *err, size_t err_size) {
    const qk_moe_layer_desc *d = &L->d;
    qkrt_buffer **B = L->buf;
    static const char *const names[] = {"N", "T", "top_k", "eps_bits"};
    const float eps = QK_MOE_EPS;
    uint32_t eps_bits;
    memcpy(&eps_bits, &eps, 4);
    const int64_t vals[] = {d->H, d->T, d->top_k, eps_bits};
    const qk_bind bc[] = {{"slots", B[B_SLOTS]},  {"route_w", B[B_RW]},    {"y", B[B_Y]},
                          {"residual", B[B_RES]}, {"norm_w", B[B_NORM_W]}, {"normed", B[B_NORMED]}};
    if (L->k.down >= 0)
        return add_op(ctx, b, L, c, L->k.combine, bc, 6, names, vals, 4, err, err_size);
    /* the down projection inside: its weights, the activations and the ids */
    static const char *const cnames[] = {"N", "T", "top_k", "eps_bits", "K", "E"};
    const int64_t cvals[] = {d->H, d->T, d->top_k, eps_bits, d->F, d->E};
    const qk_bind cb[] = {{"x", B[B_ACT]},        {"ids", B[B_IDS]},      {"route_w", B[B_RW]},
                          {"y", B[B_Y]},          {"residual", B[B_RES]}, {"norm_w", B[B_NORM_W]},
                          {"normed", B[B_NORMED]}};
    step s = {L->k.combine, &L->wb[c][W_DOWN], 1, cb, 7, cnames, cvals, 6, true, NULL, 0};
    return add(ctx, b, L, c, &s, err, err_size);
}

/* Copy c's chain: [quantize x,] router, top-k, the experts, combine. */
static qkrt_result record_chain(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L,
                                uint32_t c, char *err, size_t err_size) {
    L->n = 0;
    qkrt_result r = record_input(ctx, b, L, c, err, err_size);
    if (r == QKRT_OK) r = record_router(ctx, b, L, c, err, err_size);
    if (r == QKRT_OK) r = record_experts(ctx, b, L, c, err, err_size);
    if (r == QKRT_OK) r = record_combine(ctx, b, L, c, err, err_size);
    return r;
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

/* A layer of kernels k for problem d, nothing on the device yet. */
static qk_moe_layer *layer_new(const qk_moe_kernels *k, const qk_moe_layer_desc *d) {
    qk_moe_layer *L = qk_xcalloc(1, sizeof *L);
    L->k = *k, L->d = *d, L->quant = -1;
    snprintf(L->format, sizeof L->format, "%s", d->format);
    snprintf(L->variant, sizeof L->variant, "%s", d->variant ? d->variant : "");
    L->d.format = L->format, L->d.variant = L->variant;
    return L;
}

/* The bundle's quantizer where a kernel reads pre-quantized activations; the
 * activation buffers, x and each pair's expert ids from x and ids where
 * given, the residual and norm weights from L's data, the others NaN; and
 * room for L->copies chains. */
static qkrt_result layer_buffers(qkrt_context *ctx, const qkrt_bundle *b, qk_moe_layer *L,
                                 const float *x, const int32_t *ids, char *err, size_t err_size) {
    const qk_moe_layer_desc *d = &L->d;
    const qk_moe_kernels *k = &L->k;
    qkrt_result r = QKRT_OK;
    if (x_quantized(b, k) || takes_q8(b, k->down)) {
        L->quant = qk_find_quantizer(ctx, b, err, err_size);
        if (L->quant < 0) return QKRT_ERROR_UNSUPPORTED;
    }
    const size_t T = d->T, H = d->H, F = d->F, E = d->E, P = T * d->top_k;
    const struct {
        const void *data;
        size_t bytes;
    } spec[B_COUNT] = {
        [B_X] = {x, 4 * T * H},
        [B_XQ] = {NULL, qk_q8_bytes(d->T, d->H)},
        [B_RES] = {L->res, 4 * T * H},
        [B_NORM_W] = {L->norm_w, 4 * H},
        [B_LOGITS] = {NULL, 4 * T * E},
        [B_IDS] = {ids, 4 * P},
        [B_RW] = {NULL, 4 * P},
        [B_TPE] = {NULL, 4 * E},
        [B_RIDS] = {NULL, 4 * E * T},
        [B_DISP] = {NULL, 6 * 4},
        [B_G] = {NULL, k->gate_up < 0 ? 4 * P * F : 4},
        [B_U] = {NULL, k->gate_up < 0 ? 4 * P * F : 4},
        [B_ACT] = {NULL, 4 * P * F},
        [B_ACTQ] = {NULL, qk_q8_bytes((uint32_t)P, d->F)},
        [B_SLOTS] = {NULL, 4 * P * H},
        [B_Y] = {NULL, 4 * T * H},
        [B_NORMED] = {NULL, 4 * T * H},
    };
    for (int i = 0; i < B_COUNT && r == QKRT_OK; i++)
        r = qk_buffer_from(ctx, spec[i].data, spec[i].bytes, &L->buf[i]);
    if (r == QKRT_OK) {
        L->d_all = qk_xcalloc((size_t)L->copies * QK_MOE_LAYER_MAX_DISPATCHES, sizeof *L->d_all);
        L->slots = qk_xcalloc((size_t)L->copies * QK_MOE_LAYER_MAX_DISPATCHES, sizeof *L->slots);
    }
    return r;
}

qkrt_result qk_moe_layer_create(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_kernels *k,
                                const qk_moe_layer_desc *d, qk_moe_layer **out, char *err,
                                size_t err_size) {
    *out = NULL;
    const int gk = k->gate_up >= 0 ? k->gate_up : k->gate;
    const bool down_inside =
        k->combine >= 0 && qkrt_bundle_kernel(b, (uint32_t)k->combine)->weights_layout[0];
    if (k->router < 0 || (k->topk < 0) != k->ranked || (k->ranked && k->gate_up < 0) ||
        (k->down < 0) != down_inside || k->combine < 0 || gk < 0 ||
        (k->gate_up < 0 && k->glu < 0) || (k->routed && k->route < 0)) {
        snprintf(err, err_size, "a layer needs every kernel of its path");
        return QKRT_ERROR_ARGUMENT;
    }
    if (!d->T || !d->H || !d->F || !d->E || !d->top_k || d->top_k > d->E) {
        snprintf(err, err_size,
                 "a layer of T=%u H=%u F=%u E=%u top_k=%u: all at least 1, top_k <= E", d->T, d->H,
                 d->F, d->E, d->top_k);
        return QKRT_ERROR_ARGUMENT;
    }
    const qkrt_kernel_info *kd =
        qkrt_bundle_kernel(b, (uint32_t)(down_inside ? k->combine : k->down));
    if (kd->block_elements && (d->H % kd->block_elements || d->F % kd->block_elements)) {
        snprintf(err, err_size,
                 "hidden %u and expert ffn %u must be multiples of the %s block (%u)", d->H, d->F,
                 d->format, kd->block_elements);
        return QKRT_ERROR_ARGUMENT;
    }
    qk_moe_layer *L = layer_new(k, d);
    *out = L;
    qkrt_result r = make_data(L, err, err_size) ? QKRT_OK : QKRT_ERROR_ARGUMENT;
    if (r == QKRT_OK) {
        L->copies = copies_for(L);
        r = layer_buffers(ctx, b, L, L->x, NULL, err, err_size);
    }
    for (uint32_t c = 0; c < L->copies && r == QKRT_OK; c++)
        for (int i = 0; i < W_COUNT && r == QKRT_OK; i++)
            r = qk_wbufs_upload(ctx, &L->w[i], &L->wb[c][i]);
    for (uint32_t c = 0; c < L->copies && r == QKRT_OK; c++)
        r = record_chain(ctx, b, L, c, err, err_size);
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
    /* a layer with only its experts' kernels, and the caller's ids, x and weights */
    const qk_moe_kernels k = {.router = -1,
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
    qk_moe_layer *L = layer_new(&k, &d);
    L->copies = 1;
    qkrt_result r = layer_buffers(ctx, b, L, x, topk, err, err_size);
    const qk_weights *w[] = {[W_GATE] = &wgu[0], [W_UP] = &wgu[1], [W_DOWN] = wd};
    for (int i = W_GATE; i < W_COUNT && r == QKRT_OK; i++)
        r = qk_wbufs_upload(ctx, w[i], &L->wb[0][i]);
    if (r == QKRT_OK) r = record_input(ctx, b, L, 0, err, err_size);
    if (r == QKRT_OK) r = record_experts(ctx, b, L, 0, err, err_size);
    if (r == QKRT_OK) r = qkrt_run(ctx, L->d_all, L->n);
    const size_t P = (size_t)T * top_k;
    if (r == QKRT_OK && h) r = qkrt_buffer_download(ctx, L->buf[B_ACT], 0, h, 4 * P * F);
    if (r == QKRT_OK) r = qkrt_buffer_download(ctx, L->buf[B_SLOTS], 0, y, 4 * P * H);
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
    for (int i = 0; i < QK_MOE_LAYER_MAX_DISPATCHES; i++)
        qkrt_buffer_destroy(ctx, L->scratch[i]);
    for (int i = 0; i < W_COUNT; i++)
        qk_free_weights(&L->w[i]);
    free(L->x), free(L->res), free(L->norm_w), free(L->xd), free(L->resd), free(L->norm_wd);
    free(L->d_all), free(L->slots), free(L);
}

const qkrt_dispatch *qk_moe_layer_dispatches(const qk_moe_layer *L, uint32_t copy, uint32_t *n) {
    *n = L->n;
    return &L->d_all[(size_t)copy * QK_MOE_LAYER_MAX_DISPATCHES];
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
    const int poisoned[] = {B_LOGITS, B_IDS, B_RW, B_ACT, B_SLOTS, B_Y, B_NORMED};
    qkrt_result r = QKRT_OK;
    for (size_t i = 0; i < sizeof poisoned / sizeof poisoned[0] && r == QKRT_OK; i++)
        r = qkrt_buffer_fill(ctx, L->buf[poisoned[i]], NAN32);
    uint32_t n;
    const qkrt_dispatch *ds = qk_moe_layer_dispatches(L, c, &n);
    double span;
    if (r == QKRT_OK) r = qkrt_run_span(ctx, ds, n, &span);
    struct {
        int buf;
        void *out;
        size_t bytes;
    } get[] = {{B_LOGITS, o->logits, 4 * T * d->E},
               {B_IDS, o->ids, 4 * P},
               {B_RW, o->rw, 4 * P},
               {B_ACT, o->act, 4 * P * d->F},
               {B_SLOTS, o->slots, 4 * P * d->H},
               {B_Y, o->y, 4 * T * d->H},
               {B_NORMED, o->normed, 4 * T * d->H}};
    for (size_t i = 0; i < sizeof get / sizeof get[0] && r == QKRT_OK; i++)
        r = qkrt_buffer_download(ctx, L->buf[get[i].buf], 0, get[i].out, get[i].bytes);
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
    const qkrt_bundle *b = L->d_all[0].bundle;
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
