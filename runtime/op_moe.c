/* The operations layer's MoE feed-forward layer (qkrt_ops.h): its kernels
 * chosen as an engine chooses them, its working buffers sized, and its chain
 * of dispatches (router, top-k, routing, gate/up with SwiGLU, down, combine
 * with residual and RMSNorm) with barriers only where one reads another. */
#include "internal.h"
#include "qkrt_ops.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct qkrt_moe_plan {
    const qkrt_bundle *b;
    qkrt_moe_desc d;
    char format[64], variant[32];
    qkrt_moe_kernels k;
    size_t work[QKRT_MOE_WORK_COUNT];
    bool used[QKRT_MOE_WORK_COUNT]; /* bound by some dispatch of the chain */
};

/* ---------------------------------------------------------------- choice */

/* The shape variables of a product of the layer (pairs: T * top_k). */
static const char *const prod_names[] = {"M", "K", "T", "top_k", "ne11", "E", "max_per_expert"};
enum { PROD_VARS = 7 };

static void prod_values(int64_t *v, uint32_t M, uint32_t K, const qkrt_moe_desc *d, uint32_t ne11) {
    const int64_t vals[PROD_VARS] = {M, K, d->T, d->top_k, ne11, d->E, d->T};
    memcpy(v, vals, sizeof vals);
}

static bool fits(const qkrt_bundle *b, int ki, uint32_t M, uint32_t K, const qkrt_moe_desc *d,
                 uint32_t ne11, uint32_t max_per_expert) {
    static const char *const names[] = {"M", "N", "K", "T", "E", "top_k", "ne11", "max_per_expert"};
    const int64_t values[] = {M, M, K, d->T, d->E, d->top_k, ne11, max_per_expert};
    const qkrt_shape s = {8, names, values};
    return qkrt_kernel_fits(qkrt_bundle_kernel(b, (uint32_t)ki), &s);
}

/* A product's kernel for op through qkrt_op_choose (the select table, then
 * the default choice); -1 with the reason in ctx. */
static int pick_product(qkrt_context *ctx, const qkrt_moe_plan *P, const char *op,
                        const char *fusion, uint32_t M, uint32_t K, uint32_t ne11, uint32_t tokens,
                        bool *selected) {
    const qkrt_moe_desc *d = &P->d;
    /* a product's token columns: the layer's tokens, or for matmul_id an
     * expert's pairs (the default choice's sense of T) */
    qkrt_op_query q = {op, fusion, P->format, P->variant, "f32", M,
                       K,  tokens, d->E,      d->top_k,   ne11,  0};
    qkrt_op_choice c;
    *selected = false;
    if (qkrt_op_choose(ctx, P->b, &q, &c) != QKRT_OK) return -1;
    /* a two-pass rule: the layer's chain records one dispatch a product and
     * has no scratch for f16 weights yet, so the default choice serves it */
    if (c.selection.two_pass && qkrt_op_choose_default(ctx, P->b, &q, &c) != QKRT_OK) return -1;
    if (!fits(P->b, (int)c.kernel, M, K, d, ne11, d->T)) {
        qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                  "%s: the layer's shape (M=%u K=%u T=%u) breaks its constraints",
                  qkrt_bundle_kernel(P->b, c.kernel)->name, M, K, d->T);
        return -1;
    }
    *selected = c.source == QKRT_OP_SELECTED;
    return (int)c.kernel;
}

/* The first kernel of family with fusion that the device runs, or -1. */
static int find_op(qkrt_context *ctx, const qkrt_bundle *b, qkrt_family family,
                   const char *fusion) {
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (k->family_id == family && !strcmp(k->fusion, fusion) &&
            qkrt_kernel_check(ctx, b, i) == QKRT_OK)
            return (int)i;
    }
    return -1;
}

static const char *spaced(const char *s) {
    return s[0] ? " " : "";
}

/* The expert products on one path (k->routed: matmul_id, else matvec_id):
 * down, and gate/up: the selected kernel's fused sibling (its name +
 * "_swiglu"), or without the table's answer the default choice among the
 * fused kernels; else the plain one twice and the swiglu kernel. */
static qkrt_result pick_experts(qkrt_context *ctx, qkrt_moe_plan *P) {
    const qkrt_moe_desc *d = &P->d;
    const qkrt_bundle *b = P->b;
    qkrt_moe_kernels *k = &P->k;
    const char *op = k->routed ? "matmul_id" : "matvec_id";
    /* a matmul_id tile's token columns are an expert's pairs */
    const uint32_t tokens = k->routed ? (d->T * d->top_k + d->E - 1) / d->E : d->T;
    k->gate_up = k->gate = k->glu = -1;
    k->down = pick_product(ctx, P, op, "none", d->H, d->F, d->top_k, tokens, &k->selected[2]);
    if (k->down < 0) return QKRT_ERROR_UNSUPPORTED;
    const int plain = pick_product(ctx, P, op, "none", d->F, d->H, 1, tokens, &k->selected[1]);
    char why[1024] = "";
    if (plain < 0) snprintf(why, sizeof why, "%s", qkrt_last_error(ctx));
    const bool split = d->gate_up == QKRT_FUSE_NEVER;
    if (!split && k->selected[1]) { /* the selected kernel's fused sibling */
        char name[300];
        snprintf(name, sizeof name, "%s_swiglu", qkrt_bundle_kernel(b, (uint32_t)plain)->name);
        const int fused = qkrt_bundle_find(b, name);
        if (fused >= 0 && qkrt_kernel_check(ctx, b, (uint32_t)fused) == QKRT_OK &&
            fits(b, fused, d->F, d->H, d, 1, d->T))
            k->gate_up = fused;
    }
    /* without the table's answer, or when a fused kernel is asked for: the
     * default choice among the fused ones */
    if (!split && k->gate_up < 0 && (!k->selected[1] || d->gate_up == QKRT_FUSE_ALWAYS)) {
        bool unused;
        k->gate_up = pick_product(ctx, P, op, "swiglu", d->F, d->H, 1, tokens, &unused);
        if (k->gate_up >= 0) k->selected[1] = false;
    }
    if (k->gate_up >= 0) return QKRT_OK;
    if (d->gate_up == QKRT_FUSE_ALWAYS)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "gate/up: no fused %s swiglu kernel for %s%s%s that this device runs at "
                         "the layer's shape",
                         op, P->format, spaced(P->variant), P->variant);
    k->gate = plain;
    k->glu = find_op(ctx, b, QKRT_FAMILY_SWIGLU, "none");
    if (plain >= 0 && k->glu >= 0) return QKRT_OK;
    return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                     "gate/up: no fused %s swiglu kernel for %s, and %s", op, P->format,
                     plain < 0 ? why : "no swiglu kernel that this device runs");
}

/* The layer's kernel of family (router_topk renorm, moe_combine
 * residual_rmsnorm) that this device runs: computing its input from weights
 * of the layer's format (the router's logits, M x K = E x H; the combine's
 * slots, H x F), the layer's shape within its constraints; or reading that
 * input. Of several computing ones, the first of precision class prefer
 * (the class of the product it replaces; NULL: any). */
static int find_aux(qkrt_context *ctx, const qkrt_moe_plan *P, qkrt_family family,
                    const char *fusion, bool computed, uint32_t M, uint32_t K, const char *prefer) {
    const qkrt_moe_desc *d = &P->d;
    /* the select table's rule for it, where the bundle has one (a tuned
     * bundle lists every kernel of the layer under its op) */
    static const char *const families[] = {
        [QKRT_FAMILY_ROUTER_TOPK] = "router_topk", [QKRT_FAMILY_MOE_COMBINE] = "moe_combine"};
    if (qkrt_bundle_has_select(P->b) && family < sizeof families / sizeof families[0] &&
        families[family]) {
        const qkrt_op_query q = {.op = families[family],
                                 .fusion = fusion,
                                 .format = computed ? P->format : "none",
                                 .variant = computed ? P->variant : "",
                                 .M = M,
                                 .K = K,
                                 .T = d->T,
                                 .E = d->E,
                                 .top_k = d->top_k,
                                 .ne11 = 1};
        qkrt_op_choice c;
        if (qkrt_op_choose(ctx, P->b, &q, &c) == QKRT_OK && c.source == QKRT_OP_SELECTED &&
            (qkrt_bundle_kernel(P->b, c.kernel)->weights_layout[0] != 0) == computed)
            return (int)c.kernel;
    }
    int first = -1;
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(P->b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(P->b, i);
        if (k->family_id != family || strcmp(k->fusion, fusion) ||
            (k->weights_layout[0] != 0) != computed)
            continue;
        if (computed && (strcmp(k->format, P->format) || strcmp(k->format_variant, P->variant) ||
                         !fits(P->b, (int)i, M, K, d, 1, 0)))
            continue;
        if (qkrt_kernel_check(ctx, P->b, i) != QKRT_OK) continue;
        if (!prefer || !strcmp(k->precision, prefer)) return (int)i;
        if (first < 0) first = (int)i;
    }
    return first;
}

static int find_topk(qkrt_context *ctx, const qkrt_moe_plan *P, bool computed) {
    return find_aux(ctx, P, QKRT_FAMILY_ROUTER_TOPK, "renorm", computed, P->d.E, P->d.H, NULL);
}

/* computed: the down projection inside, of the precision class of the down
 * product's kernel where the bundle has one */
static int find_combine(qkrt_context *ctx, const qkrt_moe_plan *P, bool computed, int down) {
    const char *prefer = down >= 0 ? qkrt_bundle_kernel(P->b, (uint32_t)down)->precision : NULL;
    return find_aux(ctx, P, QKRT_FAMILY_MOE_COMBINE, "residual_rmsnorm", computed, P->d.H, P->d.F,
                    prefer);
}

/* The name of the ranked form of a matvec_id kernel: its routing value
 * "-ids" read "-ranked", and "_swiglu" at the end where it lacks it. */
static bool ranked_name(const char *name, char *out, size_t out_size) {
    const char *at = strstr(name, "-ids_");
    if (!at) at = strstr(name, "-ids-");
    if (!at) return false;
    const size_t n = strlen(name), tail = strlen("_swiglu");
    const bool fused = n >= tail && !strcmp(name + n - tail, "_swiglu");
    const int w = snprintf(out, out_size, "%.*s-ranked%s%s", (int)(at - name), name, at + 4,
                           fused ? "" : "_swiglu");
    return w > 0 && (size_t)w < out_size;
}

/* The ranked form of gate/up kernel gate_up that this device runs at the
 * layer's shape, or -1; name gets its name. */
static int find_ranked(qkrt_context *ctx, const qkrt_moe_plan *P, int gate_up, char *name,
                       size_t name_size) {
    name[0] = 0;
    if (gate_up < 0 ||
        !ranked_name(qkrt_bundle_kernel(P->b, (uint32_t)gate_up)->name, name, name_size))
        return -1;
    const int rk = qkrt_bundle_find(P->b, name);
    if (rk < 0 || qkrt_kernel_check(ctx, P->b, (uint32_t)rk) != QKRT_OK ||
        !fits(P->b, rk, P->d.F, P->d.H, &P->d, 1, P->d.T))
        return -1;
    return rk;
}

static qkrt_result pick(qkrt_context *ctx, qkrt_moe_plan *P) {
    const qkrt_moe_desc *d = &P->d;
    const qkrt_bundle *b = P->b;
    qkrt_moe_kernels *k = &P->k;
    memset(k, 0, sizeof *k);
    k->quant = k->router = k->topk = k->route = k->gate_up = k->gate = k->glu = k->down =
        k->combine = -1;
    const bool prefill = d->T > (d->decode_max ? d->decode_max : QKRT_MOE_DECODE_TOKENS);
    k->combine = find_combine(ctx, P, false, -1);
    if (k->combine < 0)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "the bundle has no moe_combine residual_rmsnorm kernel that this device "
                         "runs");
    /* the experts first: past decode_max tokens the prefill kernels, where
     * the bundle has some that this device runs and the shape fits; else
     * the decode ones */
    k->route = prefill ? find_op(ctx, b, QKRT_FAMILY_MOE_ROUTE, "none") : -1;
    k->routed = k->route >= 0;
    qkrt_result r = pick_experts(ctx, P);
    if (r != QKRT_OK && k->routed) {
        k->routed = false, k->route = -1;
        r = pick_experts(ctx, P);
    }
    if (r != QKRT_OK) return r;
    /* the top-k inside gate/up (on the decode path; where asked, or by
     * default where the bundle has it): the gate/up kernel's ranked form */
    if ((d->router == QKRT_FUSE_RANKED || d->router == QKRT_FUSE_AUTO) && !k->routed) {
        char name[300];
        const int rk = find_ranked(ctx, P, k->gate_up, name, sizeof name);
        if (rk < 0 && d->router == QKRT_FUSE_RANKED)
            return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                             "router: the gate/up kernel %s has no ranked form (%s) that this "
                             "device runs at the layer's shape",
                             k->gate_up >= 0 ? qkrt_bundle_kernel(b, (uint32_t)k->gate_up)->name
                                             : "(gate and up apart)",
                             name[0] ? name : "none");
        if (rk >= 0) k->gate_up = rk, k->ranked = true;
    }
    /* else the router and top-k as one kernel (on the decode path unless
     * asked), or router_topk after the router's product */
    const int fused =
        !k->ranked && (d->router == QKRT_FUSE_ALWAYS || (d->router == QKRT_FUSE_AUTO && !prefill))
            ? find_topk(ctx, P, true)
            : -1;
    if (d->router == QKRT_FUSE_ALWAYS && fused < 0)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "router: no router_topk kernel computing its logits for %s%s%s that this "
                         "device runs at the layer's shape",
                         P->format, spaced(P->variant), P->variant);
    if (!k->ranked) k->topk = fused >= 0 ? fused : find_topk(ctx, P, false);
    if (!k->ranked && k->topk < 0)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "the bundle has no router_topk renorm kernel that this device runs");
    if (fused >= 0) k->router = fused;
    if (prefill && fused < 0)
        k->router = pick_product(ctx, P, "matmul", "none", d->E, d->H, 1, d->T, &k->selected[0]);
    if (k->router < 0)
        k->router = pick_product(ctx, P, "matvec", "none", d->E, d->H, 1, d->T, &k->selected[0]);
    if (k->router < 0) return QKRT_ERROR_UNSUPPORTED;
    /* down inside the combine (on the decode path, where asked) */
    if (d->down == QKRT_FUSE_ALWAYS && !k->routed) {
        const int fc = find_combine(ctx, P, true, k->down);
        if (fc < 0)
            return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                             "down: no moe_combine kernel computing its slots for %s%s%s that "
                             "this device runs",
                             P->format, spaced(P->variant), P->variant);
        k->combine = fc, k->down = -1, k->selected[2] = false;
    }
    return QKRT_OK;
}

/* ---------------------------------------------------------------- the chain */

static const char *const work_names[QKRT_MOE_SCRATCH0] = {
    "xq", "logits", "ids", "route_w", "tpe", "rids", "disp", "gate", "up", "act", "actq", "slots"};

static bool takes_q8(const qkrt_bundle *b, int ki) {
    return ki >= 0 && qkrt_kernel_takes_q8(qkrt_bundle_kernel(b, (uint32_t)ki));
}

/* Whether the chain quantizes x first: the router or gate/up reads its q8 rows. */
static bool x_quantized(const qkrt_bundle *b, const qkrt_moe_kernels *k) {
    return takes_q8(b, k->router) || takes_q8(b, k->gate_up >= 0 ? k->gate_up : k->gate);
}

/* A buffer for a kernel binding of that name. */
typedef struct bind {
    const char *name;
    qkrt_buffer *buf;
} bind;

/* What the chain's next dispatch needs: kernel ki on weight planes mats
 * (nmats matrices), the other bindings by name, the shape; for a prefill
 * product the indirect arguments at offset. */
typedef struct step {
    int ki;
    qkrt_buffer *const (*mats)[QKRT_MOE_PLANES];
    uint32_t nmats;
    const bind *binds;
    uint32_t nbinds;
    const char *const *names;
    const int64_t *values;
    uint32_t nvars;
    bool depends;
    qkrt_buffer *indirect;
    size_t offset;
} step;

/* The recording in progress: the chain filled (NULL: only sizing the
 * scratch of each dispatch into P->work). */
typedef struct recorder {
    qkrt_context *ctx;
    qkrt_moe_plan *P;
    const qkrt_moe_buffers *B;
    qkrt_chain *chain;
    uint32_t n;
} recorder;

/* Working buffer i: the engine's, or while sizing a stand-in that names it,
 * so that the sizing pass learns which ones the chain binds. */
static qkrt_buffer *work(const recorder *R, qkrt_moe_work i) {
    return R->B ? R->B->work[i] : (qkrt_buffer *)(uintptr_t)(1 + i);
}

static void mark_used(recorder *R, const qkrt_buffer *buf) {
    const uintptr_t i = (uintptr_t)buf;
    if (i >= 1 && i <= QKRT_MOE_WORK_COUNT) R->P->used[i - 1] = true;
}

static qkrt_result add(recorder *R, const step *s) {
    const qkrt_bundle *b = R->P->b;
    if (R->n == QKRT_CHAIN_MAX)
        return qkrt_fail(R->ctx, QKRT_ERROR_ARGUMENT, "more than %d dispatches in a layer",
                         QKRT_CHAIN_MAX);
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)s->ki);
    const uint32_t n = R->n++;
    if (!R->chain) { /* sizing: which buffers it binds, and its scratch */
        for (uint32_t i = 0; i < k->binding_count; i++)
            for (uint32_t j = 0; j < s->nbinds; j++)
                if (!strcmp(s->binds[j].name, k->bindings[i].name)) mark_used(R, s->binds[j].buf);
        mark_used(R, s->indirect);
        const qkrt_shape shape = {s->nvars, s->names, s->values};
        return qkrt_kernel_scratch_bytes(R->ctx, k, &shape, &R->P->work[QKRT_MOE_SCRATCH0 + n]);
    }
    if (s->nvars > QKRT_OP_MAX_VARS)
        return qkrt_fail(R->ctx, QKRT_ERROR_ARGUMENT, "%s: more than %d shape variables", k->name,
                         QKRT_OP_MAX_VARS);
    qkrt_chain *c = R->chain;
    qkrt_dispatch *d = &c->dispatch[n];
    memset(d, 0, sizeof *d);
    d->bundle = b, d->kernel = (uint32_t)s->ki;
    uint32_t slot = 0, plane = 0;
    for (uint32_t i = 0; i < k->binding_count; i++) {
        const qkrt_binding_info *bi = &k->bindings[i];
        if (slot + bi->count > QKRT_OP_MAX_BUFFERS)
            return qkrt_fail(R->ctx, QKRT_ERROR_ARGUMENT, "%s: more than %d buffers", k->name,
                             QKRT_OP_MAX_BUFFERS);
        qkrt_buffer *buf = NULL;
        if (bi->role_id == QKRT_ROLE_WEIGHTS) {
            if (!s->nmats || plane >= QKRT_MOE_PLANES)
                return qkrt_fail(R->ctx, QKRT_ERROR_ARGUMENT, "%s: no weights for binding %s",
                                 k->name, bi->name);
            /* an array binding takes one matrix per element (gate, up) */
            for (uint32_t m = 0; m < bi->count; m++) {
                buf = s->mats[m < s->nmats ? m : s->nmats - 1][plane];
                if (!buf)
                    return qkrt_fail(R->ctx, QKRT_ERROR_ARGUMENT,
                                     "%s: no buffer for plane %u of its weights (binding %s)",
                                     k->name, plane, bi->name);
                c->buffers_[n][slot++] = buf;
            }
            plane++;
            continue;
        }
        if (bi->role_id == QKRT_ROLE_SCRATCH) buf = R->B->work[QKRT_MOE_SCRATCH0 + n];
        for (uint32_t j = 0; j < s->nbinds && !buf; j++)
            if (!strcmp(s->binds[j].name, bi->name)) buf = s->binds[j].buf;
        if (!buf)
            return qkrt_fail(R->ctx, QKRT_ERROR_ARGUMENT, "%s: no buffer for binding %s (role %s)",
                             k->name, bi->name, bi->role);
        for (uint32_t m = 0; m < bi->count; m++)
            c->buffers_[n][slot++] = buf;
    }
    for (uint32_t i = 0; i < s->nvars; i++)
        c->names_[n][i] = s->names[i], c->values_[n][i] = s->values[i];
    d->buffer_count = slot;
    d->buffers = c->buffers_[n];
    d->shape = (qkrt_shape){s->nvars, c->names_[n], c->values_[n]};
    d->depends = s->depends;
    d->indirect = s->indirect;
    d->indirect_offset = s->offset;
    c->count = R->n;
    return QKRT_OK;
}

/* A product of the chain: ki on mats reading x (its q8 rows from xq), writing
 * y, the expert ids (and pairs per expert) of the layer's path bound. */
static qkrt_result add_product(recorder *R, int ki, qkrt_buffer *const (*mats)[QKRT_MOE_PLANES],
                               uint32_t nmats, qkrt_buffer *x, qkrt_buffer *xq, qkrt_buffer *y,
                               const int64_t *vals, bool depends, size_t offset) {
    const bool routed = R->P->k.routed && ki != R->P->k.router;
    /* (logits and route_w: the ranked form's, which writes ids and route_w) */
    const bind binds[] = {{"x", x},
                          {"xq", xq},
                          {"ids", work(R, routed ? QKRT_MOE_RIDS : QKRT_MOE_IDS)},
                          {"tpe", work(R, QKRT_MOE_TPE)},
                          {"y", y},
                          {"logits", work(R, QKRT_MOE_LOGITS)},
                          {"route_w", work(R, QKRT_MOE_ROUTE_W)}};
    const step s = {ki,         mats, nmats,     binds,   7,
                    prod_names, vals, PROD_VARS, depends, routed ? work(R, QKRT_MOE_DISP) : NULL,
                    offset};
    return add(R, &s);
}

/* Any other kernel of the chain, reading what the dispatch before it wrote. */
static qkrt_result add_op(recorder *R, int ki, const bind *binds, uint32_t nbinds,
                          const char *const *names, const int64_t *vals, uint32_t nvars) {
    const step s = {ki, NULL, 0, binds, nbinds, names, vals, nvars, true, NULL, 0};
    return add(R, &s);
}

static const char *const q_names[] = {"K", "T"}; /* the quantizer's shape */

static qkrt_buffer *const (*planes(const recorder *R, qkrt_buffer *const *p))[QKRT_MOE_PLANES] {
    static qkrt_buffer *const none[QKRT_MOE_PLANES];
    return R->B ? (qkrt_buffer *const(*)[QKRT_MOE_PLANES])p : &none;
}

/* [quantize x,] router, top-k: the logits, each token's experts and routing
 * weights (one kernel where the top-k computes the logits itself). */
static qkrt_result record_router(recorder *R) {
    const qkrt_moe_plan *P = R->P;
    const qkrt_moe_desc *d = &P->d;
    const qkrt_moe_buffers *B = R->B;
    qkrt_buffer *x = B ? B->x : NULL;
    qkrt_result r = QKRT_OK;
    const bool xq = x_quantized(P->b, &P->k);
    if (xq) {
        const bind bq[] = {{"x", x}, {"xq", work(R, QKRT_MOE_XQ)}};
        const int64_t vq[] = {d->H, d->T};
        const step s = {P->k.quant, NULL, 0, bq, 2, q_names, vq, 2, false, NULL, 0};
        r = add(R, &s);
    }
    if (r != QKRT_OK || P->k.router < 0) return r; /* the engine's ids (create_from) */
    if (P->k.router == P->k.topk) {
        static const char *const names[] = {"E", "T", "top_k", "K"};
        const int64_t vals[] = {d->E, d->T, d->top_k, d->H};
        const bind bt[] = {{"x", x},
                           {"logits", work(R, QKRT_MOE_LOGITS)},
                           {"ids", work(R, QKRT_MOE_IDS)},
                           {"route_w", work(R, QKRT_MOE_ROUTE_W)}};
        /* (it reads x itself, not the q8 rows) */
        const step s = {
            P->k.topk, planes(R, B ? B->router : NULL), 1, bt, 4, names, vals, 4, false, NULL, 0};
        return add(R, &s);
    }
    int64_t vr[PROD_VARS];
    prod_values(vr, d->E, d->H, d, 1);
    r = add_product(R, P->k.router, planes(R, B ? B->router : NULL), 1, x, work(R, QKRT_MOE_XQ),
                    work(R, QKRT_MOE_LOGITS), vr, xq, 0);
    if (r != QKRT_OK || P->k.ranked) return r; /* gate/up ranks the logits */
    static const char *const names[] = {"E", "T", "top_k"};
    const int64_t vals[] = {d->E, d->T, d->top_k};
    const bind bt[] = {{"logits", work(R, QKRT_MOE_LOGITS)},
                       {"ids", work(R, QKRT_MOE_IDS)},
                       {"route_w", work(R, QKRT_MOE_ROUTE_W)}};
    return add_op(R, P->k.topk, bt, 3, names, vals, 3);
}

/* The experts, from each pair's expert id and x: [moe_route,] gate/up
 * (fused, or gate, up and swiglu), [quantize act,] down, into the slots. */
static qkrt_result record_experts(recorder *R) {
    const qkrt_moe_plan *P = R->P;
    const qkrt_moe_desc *d = &P->d;
    const qkrt_moe_kernels *k = &P->k;
    const qkrt_bundle *b = P->b;
    const qkrt_moe_buffers *B = R->B;
    qkrt_buffer *x = B ? B->x : NULL;
    const uint32_t pairs = d->T * d->top_k;
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
        const qkrt_shape sg = {PROD_VARS, prod_names, vg}, sd = {PROD_VARS, prod_names, vd};
        int64_t gx0 = 0, gx1 = 0;
        char err[512] = "";
        if (qkrt_eval(kg->grid[0], &sg, &gx0, err, sizeof err) != QKRT_OK ||
            qkrt_eval(kd->grid[0], &sd, &gx1, err, sizeof err) != QKRT_OK)
            return qkrt_fail(R->ctx, QKRT_ERROR_MANIFEST, "a prefill product's grid: %s", err);
        static const char *const names[] = {"T",         "top_k",   "E",         "max_per_expert",
                                            "groups_x0", "tile_n0", "groups_x1", "tile_n1"};
        /* a token picks an expert at most once: T pairs per expert at most */
        const int64_t vals[] = {d->T, d->top_k, d->E, d->T, gx0, kg->nr1, gx1, kd->nr1};
        const bind br[] = {{"topk", work(R, QKRT_MOE_IDS)},
                           {"tpe", work(R, QKRT_MOE_TPE)},
                           {"ids", work(R, QKRT_MOE_RIDS)},
                           {"disp", work(R, QKRT_MOE_DISP)}};
        r = add_op(R, k->route, br, 4, names, vals, 8);
    }
    if (r == QKRT_OK && k->gate_up >= 0) {
        qkrt_buffer *const gu[2][QKRT_MOE_PLANES] = {
            {B ? B->gate[0] : NULL, B ? B->gate[1] : NULL, B ? B->gate[2] : NULL,
             B ? B->gate[3] : NULL},
            {B ? B->up[0] : NULL, B ? B->up[1] : NULL, B ? B->up[2] : NULL, B ? B->up[3] : NULL}};
        r = add_product(R, k->gate_up, gu, 2, x, work(R, QKRT_MOE_XQ), work(R, QKRT_MOE_ACT), vg,
                        true, 0);
    } else if (r == QKRT_OK) {
        /* gate and up are independent: no barrier between them */
        r = add_product(R, k->gate, planes(R, B ? B->gate : NULL), 1, x, work(R, QKRT_MOE_XQ),
                        work(R, QKRT_MOE_GATE), vg, true, 0);
        if (r == QKRT_OK)
            r = add_product(R, k->gate, planes(R, B ? B->up : NULL), 1, x, work(R, QKRT_MOE_XQ),
                            work(R, QKRT_MOE_UP), vg, false, 0);
        static const char *const names[] = {"N"};
        const int64_t vals[] = {(int64_t)pairs * d->F};
        const bind bg[] = {{"g", work(R, QKRT_MOE_GATE)},
                           {"u", work(R, QKRT_MOE_UP)},
                           {"y", work(R, QKRT_MOE_ACT)}};
        if (r == QKRT_OK) r = add_op(R, k->glu, bg, 3, names, vals, 1);
    }
    if (k->down < 0) return r; /* the combine computes the slots */
    if (r == QKRT_OK && takes_q8(b, k->down)) {
        const bind bq[] = {{"x", work(R, QKRT_MOE_ACT)}, {"xq", work(R, QKRT_MOE_ACTQ)}};
        const int64_t vq[] = {d->F, pairs};
        r = add_op(R, k->quant, bq, 2, q_names, vq, 2);
    }
    if (r == QKRT_OK)
        r = add_product(R, k->down, planes(R, B ? B->down : NULL), 1, work(R, QKRT_MOE_ACT),
                        work(R, QKRT_MOE_ACTQ), work(R, QKRT_MOE_SLOTS), vd, true, 12);
    return r;
}

/* combine: the slots weighted and summed, the residual added, and RMSNorm. */
static qkrt_result record_combine(recorder *R) {
    const qkrt_moe_plan *P = R->P;
    const qkrt_moe_desc *d = &P->d;
    const qkrt_moe_buffers *B = R->B;
    const float eps = d->eps > 0 ? d->eps : 1e-6f;
    uint32_t eps_bits;
    memcpy(&eps_bits, &eps, 4);
    qkrt_buffer *y = B ? B->y : NULL, *res = B ? B->residual : NULL;
    qkrt_buffer *nw = B ? B->norm_w : NULL, *normed = B ? B->normed : NULL;
    if (P->k.combine < 0) return QKRT_OK; /* the slots are the output (create_from) */
    if (P->k.down >= 0) {
        static const char *const names[] = {"N", "T", "top_k", "eps_bits"};
        const int64_t vals[] = {d->H, d->T, d->top_k, eps_bits};
        const bind bc[] = {{"slots", work(R, QKRT_MOE_SLOTS)},
                           {"route_w", work(R, QKRT_MOE_ROUTE_W)},
                           {"y", y},
                           {"residual", res},
                           {"norm_w", nw},
                           {"normed", normed}};
        return add_op(R, P->k.combine, bc, 6, names, vals, 4);
    }
    /* the down projection inside: its weights, the activations and the ids */
    static const char *const names[] = {"N", "T", "top_k", "eps_bits", "K", "E"};
    const int64_t vals[] = {d->H, d->T, d->top_k, eps_bits, d->F, d->E};
    const bind bc[] = {{"x", work(R, QKRT_MOE_ACT)},
                       {"ids", work(R, QKRT_MOE_IDS)},
                       {"route_w", work(R, QKRT_MOE_ROUTE_W)},
                       {"y", y},
                       {"residual", res},
                       {"norm_w", nw},
                       {"normed", normed}};
    const step s = {
        P->k.combine, planes(R, B ? B->down : NULL), 1, bc, 7, names, vals, 6, true, NULL, 0};
    return add(R, &s);
}

static qkrt_result record(recorder *R) {
    qkrt_result r = record_router(R);
    if (r == QKRT_OK) r = record_experts(R);
    if (r == QKRT_OK) r = record_combine(R);
    return r;
}

/* The working buffers' sizes (4-byte elements; q8 rows 5/4 bytes each),
 * kept for the ones the chain binds. */
static void size_work(qkrt_moe_plan *P) {
    const qkrt_moe_desc *d = &P->d;
    const size_t T = d->T, pairs = (size_t)d->T * d->top_k;
    size_t *w = P->work;
    w[QKRT_MOE_XQ] = qkrt_q8_bytes(d->T, d->H);
    w[QKRT_MOE_LOGITS] = T * d->E * 4;
    w[QKRT_MOE_IDS] = w[QKRT_MOE_ROUTE_W] = pairs * 4;
    w[QKRT_MOE_TPE] = (size_t)d->E * 4;
    w[QKRT_MOE_RIDS] = (size_t)d->E * T * 4;
    w[QKRT_MOE_DISP] = 6 * 4;
    w[QKRT_MOE_GATE] = w[QKRT_MOE_UP] = w[QKRT_MOE_ACT] = pairs * d->F * 4;
    w[QKRT_MOE_ACTQ] = qkrt_q8_bytes((uint32_t)pairs, d->F);
    w[QKRT_MOE_SLOTS] = pairs * d->H * 4;
    /* the ids and routing weights are the layer's too where the engine gives them */
    if (P->k.router < 0) P->used[QKRT_MOE_IDS] = P->used[QKRT_MOE_ROUTE_W] = true;
    if (P->k.combine < 0) P->used[QKRT_MOE_SLOTS] = P->k.down >= 0;
    for (int i = 0; i < QKRT_MOE_SCRATCH0; i++)
        if (!P->used[i]) w[i] = 0;
}

/* A plan of kernels k: checks that the path is whole, adds the quantizer
 * where a kernel needs it, sizes the working buffers. */
static qkrt_result plan_finish(qkrt_context *ctx, qkrt_moe_plan *P) {
    const qkrt_moe_kernels *k = &P->k;
    const int gk = k->gate_up >= 0 ? k->gate_up : k->gate;
    const int n = (int)qkrt_bundle_kernel_count(P->b);
    const int all[] = {k->quant, k->router, k->topk, k->route,  k->gate_up,
                       k->gate,  k->glu,    k->down, k->combine};
    for (int i = 0; i < 9; i++)
        if (all[i] >= n)
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "a layer's kernel %d is not in the bundle",
                             all[i]);
    if (gk < 0 || (k->gate_up < 0 && k->glu < 0) || (k->routed && k->route < 0) ||
        (k->router >= 0 && k->topk < 0 && !k->ranked) || (k->ranked && k->gate_up < 0) ||
        (k->down < 0 && k->combine < 0))
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "a layer needs every kernel of its path");
    const qkrt_kernel_info *kd =
        qkrt_bundle_kernel(P->b, (uint32_t)(k->down >= 0 ? k->down : k->combine));
    if (kd->block_elements && (P->d.H % kd->block_elements || P->d.F % kd->block_elements))
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                         "hidden %u and expert ffn %u must be multiples of the %s block (%u)",
                         P->d.H, P->d.F, P->format, kd->block_elements);
    const bool q8 = x_quantized(P->b, k) || takes_q8(P->b, k->down);
    if (q8 && P->k.quant < 0 && (P->k.quant = qkrt_op_quantizer(ctx, P->b)) < 0)
        return QKRT_ERROR_UNSUPPORTED;
    recorder R = {ctx, P, NULL, NULL, 0};
    qkrt_result r = record(&R); /* which buffers each dispatch binds, its scratch */
    if (r == QKRT_OK) size_work(P);
    return r;
}

static qkrt_result plan_new(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_moe_desc *d,
                            qkrt_moe_plan **out) {
    *out = NULL;
    if (!d->format || !d->format[0] || !d->T || !d->H || !d->F || !d->E || !d->top_k ||
        d->top_k > d->E)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                         "a layer of T=%u H=%u F=%u E=%u top_k=%u%s: a format, all at least 1, "
                         "top_k <= E",
                         d->T, d->H, d->F, d->E, d->top_k,
                         d->format && d->format[0] ? "" : " without a format");
    qkrt_moe_plan *P = calloc(1, sizeof *P);
    if (!P) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "a layer's plan: out of memory");
    P->b = b;
    P->d = *d;
    snprintf(P->format, sizeof P->format, "%s", d->format);
    snprintf(P->variant, sizeof P->variant, "%s", d->variant ? d->variant : "");
    P->d.format = P->format, P->d.variant = P->variant;
    *out = P;
    return QKRT_OK;
}

qkrt_result qkrt_moe_plan_create(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_moe_desc *d,
                                 qkrt_moe_plan **out) {
    qkrt_moe_plan *P;
    qkrt_result r = plan_new(ctx, b, d, &P);
    if (r == QKRT_OK) r = pick(ctx, P);
    if (r == QKRT_OK) r = plan_finish(ctx, P);
    if (r != QKRT_OK) free(P), P = NULL;
    *out = P;
    return r;
}

qkrt_result qkrt_moe_plan_create_from(qkrt_context *ctx, const qkrt_bundle *b,
                                      const qkrt_moe_desc *d, const qkrt_moe_kernels *k,
                                      qkrt_moe_plan **out) {
    qkrt_moe_plan *P;
    qkrt_result r = plan_new(ctx, b, d, &P);
    if (r == QKRT_OK) P->k = *k, r = plan_finish(ctx, P);
    if (r != QKRT_OK) free(P), P = NULL;
    *out = P;
    return r;
}

void qkrt_moe_plan_destroy(qkrt_moe_plan *P) {
    free(P);
}

const qkrt_moe_kernels *qkrt_moe_plan_kernels(const qkrt_moe_plan *P) {
    return &P->k;
}

size_t qkrt_moe_plan_work(const qkrt_moe_plan *P, qkrt_moe_work i, const char **name) {
    static char scratch_names[12][16];
    if ((int)i < 0 || i >= QKRT_MOE_WORK_COUNT) {
        if (name) *name = "";
        return 0;
    }
    if (name) {
        if (i < QKRT_MOE_SCRATCH0) {
            *name = work_names[i];
        } else {
            const unsigned s = (unsigned)(i - QKRT_MOE_SCRATCH0);
            snprintf(scratch_names[s], sizeof scratch_names[s], "scratch%u", s);
            *name = scratch_names[s];
        }
    }
    return P->work[i];
}

qkrt_result qkrt_moe_plan_chain(qkrt_context *ctx, const qkrt_moe_plan *P,
                                const qkrt_moe_buffers *buffers, qkrt_chain *chain) {
    for (int i = 0; i < QKRT_MOE_WORK_COUNT; i++)
        if (P->work[i] && !buffers->work[i]) {
            const char *name;
            qkrt_moe_plan_work(P, (qkrt_moe_work)i, &name);
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                             "the layer's working buffer %s (%zu bytes) is not bound", name,
                             P->work[i]);
        }
    memset(chain, 0, sizeof *chain);
    /* the recorder does not write the plan when it fills a chain */
    recorder R = {ctx, (qkrt_moe_plan *)P, buffers, chain, 0};
    return record(&R);
}

qkrt_result qkrt_moe_plan_record(qkrt_context *ctx, const qkrt_moe_plan *P, VkCommandBuffer cmd,
                                 const qkrt_moe_buffers *buffers, uint32_t barriers) {
    qkrt_chain *chain = malloc(sizeof *chain);
    if (!chain) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "qkrt_moe_plan_record: out of memory");
    qkrt_result r = qkrt_moe_plan_chain(ctx, P, buffers, chain);
    if (r == QKRT_OK) r = qkrt_cmd_dispatch(ctx, cmd, chain->dispatch, chain->count, barriers);
    free(chain);
    return r;
}
