/* A whole MoE decode layer (router, top-k, gate/up with SwiGLU, down, combine
 * with residual and RMSNorm) with every kernel from the bundle's select table
 * alone, recorded as one chain, checked against the engine's float64 reference. */
#include "engine.h"
#include "vk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the layer's shape: hidden size, expert rows, experts, experts per token */
enum { H = 256, F = 128, E = 16, TOP_K = 4, RUNS = 2, Q4_0_BYTES = 18 };
static const uint32_t TOKENS[RUNS] = {1, 3};

/* The steps of the layer, each one query of the select table. */
enum { ROUTER, TOPK, GATE_UP, DOWN, COMBINE, STEPS };
static const char *const STEP_NAMES[STEPS] = {"router", "top-k", "gate/up", "down", "combine"};
static const char *const LEVELS[4] = {"device", "family", "vendor", "default"};

typedef struct chosen {
    const eng_kernel *k, *quant; /* quant: the prepass's kernel, or NULL */
    int level, quant_level;
    eng_shape shape, quant_shape;
} chosen;

struct layer_plan {
    chosen c[RUNS][STEPS]; /* router: NULL where the top-k computes the logits */
};

static void set(eng_shape *s, const char *name, int64_t v) {
    s->names[s->count] = name;
    s->values[s->count++] = v;
}

static int can_run(const eng_kernel *k, void *user) {
    char why[256];
    return vk_can_run((eng_vk *)user, k, why, sizeof why);
}

/* The shape of a step at T tokens: every variable its kernels read. M, K
 * and T are what the rules' ranges hold (the combine's M its row length N,
 * the top-k's its experts). */
static eng_shape step_shape(int step, uint32_t T) {
    eng_shape s = {0};
    static const uint32_t MK[STEPS][2] = {{E, H}, {E, H}, {F, H}, {H, F}, {H, F}};
    const float eps = 1e-6f;
    uint32_t eps_bits;
    memcpy(&eps_bits, &eps, 4);
    set(&s, "M", MK[step][0]);
    set(&s, "K", MK[step][1]);
    set(&s, "T", T);
    set(&s, "E", E);
    set(&s, "top_k", TOP_K);
    set(&s, "ne11", step == DOWN ? TOP_K : 1); /* down: a row per (token, slot) */
    set(&s, "N", H);
    set(&s, "eps_bits", eps_bits);
    return s;
}

/* One query; its kernel's quantizer where it has a prepass. 0, or -1. */
static int choose(const eng_bundle *b, eng_vk *v, const char *op, const char *format, int step,
                  uint32_t T, chosen *c) {
    const eng_device d = vk_device(v);
    c->shape = step_shape(step, T);
    int i = b->select(b, &d, op, format, &c->shape, can_run, v, &c->level);
    if (i < 0) return -1;
    c->k = &b->kernels[i];
    if (!c->k->prepass[0]) return 0;
    /* its activations as q8 rows: K of them per row, a row per token (per
     * pair for the down projection) */
    eng_shape q = {0};
    set(&q, "M", 1);
    set(&q, "K", step == DOWN ? F : H);
    set(&q, "T", step == DOWN ? T * TOP_K : T);
    c->quant_shape = q;
    int j = b->select(b, &d, c->k->prepass, "none", &q, can_run, v, &c->quant_level);
    if (j < 0) {
        fprintf(stderr, "layer: %s needs a %s kernel and no rule answers\n", c->k->name,
                c->k->prepass);
        return -1;
    }
    c->quant = &b->kernels[j];
    return 0;
}

int layer_plan_create(const eng_bundle *b, eng_vk *v, layer_plan **out, const eng_kernel **kernels,
                      uint32_t *n, uint32_t cap) {
    layer_plan *p = calloc(1, sizeof *p);
    *out = p;
    for (int r = 0; r < RUNS; r++) {
        chosen *c = p->c[r];
        const uint32_t T = TOKENS[r];
        /* the router: at T = 3 the top-k that computes its logits itself
         * (format q4_0, one dispatch) where a rule answers; else the router's
         * mat-vec, then the top-k that reads the logits (format none) */
        if (r == 0 || choose(b, v, "router_topk/renorm", "q4_0", TOPK, T, &c[TOPK])) {
            if (choose(b, v, "matvec", "q4_0", ROUTER, T, &c[ROUTER]) ||
                choose(b, v, "router_topk/renorm", "none", TOPK, T, &c[TOPK]))
                return fprintf(stderr, "layer: no rule answers for the router at T = %u\n", T), 2;
        }
        if (choose(b, v, "matvec_id/swiglu", "q4_0", GATE_UP, T, &c[GATE_UP]) ||
            choose(b, v, "matvec_id", "q4_0", DOWN, T, &c[DOWN]) ||
            choose(b, v, "moe_combine/residual_rmsnorm", "none", COMBINE, T, &c[COMBINE]))
            return fprintf(stderr, "layer: no rule answers for a step at T = %u\n", T), 2;
        for (int s = 0; s < STEPS; s++) {
            const eng_kernel *ks[2] = {c[s].k, c[s].quant};
            for (int j = 0; j < 2; j++)
                if (ks[j] && *n < cap) kernels[(*n)++] = ks[j];
        }
    }
    return 0;
}

void layer_plan_free(layer_plan *p) {
    free(p);
}

/* ---- data ---- */

static uint64_t rng;

static double uniform(void) { /* [-1, 1) */
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(rng >> 11) / 9007199254740992.0 * 2 - 1;
}

static uint16_t half(float f) { /* f16 bits of a value in f16's normal range */
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

/* rows x cols of q4_0 (docs/formats.md) with scales near 1 / sqrt(cols),
 * so that products stay near 1; w gets them dequantized. */
static void q4_0_random(uint8_t *q, uint32_t rows, uint32_t cols, double *w) {
    const uint32_t blocks = cols / 32;
    for (uint32_t r = 0; r < rows; r++)
        for (uint32_t b = 0; b < blocks; b++) {
            uint8_t *blk = q + ((size_t)r * blocks + b) * Q4_0_BYTES;
            const uint16_t d = half((float)((0.5 + 0.5 * fabs(uniform())) / sqrt(cols) / 4));
            blk[0] = (uint8_t)d, blk[1] = (uint8_t)(d >> 8);
            double *y = w + (size_t)r * cols + b * 32;
            for (int j = 0; j < 16; j++) {
                uniform();
                const uint8_t lo = (uint8_t)(rng >> 20 & 15), hi = (uint8_t)(rng >> 40 & 15);
                blk[2 + j] = (uint8_t)(lo | hi << 4);
                y[j] = from_half(d) * (lo - 8);
                y[j + 16] = from_half(d) * (hi - 8);
            }
        }
}

static double dot(const double *a, const double *b, uint32_t n) {
    double s = 0;
    for (uint32_t i = 0; i < n; i++)
        s += a[i] * b[i];
    return s;
}

/* NMSE of out against ref; infinite where an output is not finite (left
 * unwritten: it was NaN). */
static double nmse(const float *out, const double *ref, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(out[i])) return INFINITY;
        num += (out[i] - ref[i]) * (out[i] - ref[i]), den += ref[i] * ref[i];
    }
    return num / (den > 0 ? den : 1);
}

/* Tolerance of the chain by its kernels' precision classes (docs/manifest.md):
 * the loosest of them, an f16 one twice its kernel's bound (two products). */
static double class_bound(const eng_kernel *k) {
    if (!strcmp(k->precision, "q8")) return 2e-3;
    if (!strcmp(k->precision, "f16")) return 1e-3;
    return 1e-6;
}

/* ---- the layer's buffers, by role ---- */

enum {
    B_X,
    B_RES,
    B_NORM_W,
    B_Y,
    B_NORMED,
    B_LOGITS,
    B_IDS,
    B_ROUTE_W,
    B_ACT,
    B_SLOTS,
    B_XQ,
    B_ACTQ,
    B_WR,
    B_WG,
    B_WU,
    B_WD,
    B_COUNT
};

typedef struct layer_bufs {
    eng_buf b[B_COUNT];
    eng_buf scratch[STEPS];
} layer_bufs;

/* The buffer a step binds to descriptor j of binding i, by the binding's
 * role; NULL for a role this layer has no buffer of. */
static eng_buf *by_role(layer_bufs *L, int step, int quant, const eng_binding *bd, uint32_t j) {
    const char *r = bd->role;
    if (quant) /* the quantizer: x (or the experts' activations) into q8 rows */
        return !strcmp(r, "activations")      ? &L->b[step == DOWN ? B_ACT : B_X]
               : !strcmp(r, "activations_q8") ? &L->b[step == DOWN ? B_ACTQ : B_XQ]
                                              : NULL;
    if (!strcmp(r, "weights")) {
        static const int w[STEPS] = {B_WR, B_WR, B_WG, B_WD, B_WD};
        return &L->b[step == GATE_UP && j == 1 ? B_WU : w[step]]; /* swiglu: w[0] gate, w[1] up */
    }
    if (!strcmp(r, "activations")) return &L->b[step == DOWN ? B_ACT : B_X];
    if (!strcmp(r, "activations_q8")) return &L->b[step == DOWN ? B_ACTQ : B_XQ];
    if (!strcmp(r, "output")) {
        static const int o[STEPS] = {B_LOGITS, -1, B_ACT, B_SLOTS, B_Y};
        return o[step] < 0 ? NULL : &L->b[o[step]];
    }
    static const struct {
        const char *role;
        int buf;
    } fixed[] = {{"logits", B_LOGITS}, {"ids", B_IDS},      {"routing_weights", B_ROUTE_W},
                 {"slots", B_SLOTS},   {"residual", B_RES}, {"norm_weight", B_NORM_W},
                 {"normed", B_NORMED}};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        if (!strcmp(r, fixed[i].role)) return &L->b[fixed[i].buf];
    if (!strcmp(r, "scratch")) return &L->scratch[step];
    return NULL;
}

/* One dispatch of kernel k on shape s into st; 0, or -1 with a message. */
static int make_step(layer_bufs *L, int step, int quant, const eng_kernel *k, const eng_shape *s,
                     eng_step *st, eng_vk *v, char *err, size_t n) {
    memset(st, 0, sizeof *st);
    st->k = k;
    int bad = k->check(k, s, err, n);
    if (bad >= 0) return snprintf(err, n, "%s: constraint %d fails", k->name, bad), -1;
    if (k->grid(k, s, st->groups, err, n)) return -1;
    for (uint32_t i = 0; i < k->push_count; i++) {
        int64_t val = -1;
        for (uint32_t j = 0; j < s->count; j++)
            if (!strcmp(s->names[j], k->push_names[i])) val = s->values[j];
        if (val < 0 || val > UINT32_MAX || k->push_offsets[i] + 4 > sizeof st->push)
            return snprintf(err, n, "%s: no value for push constant %s", k->name, k->push_names[i]),
                   -1;
        const uint32_t word = (uint32_t)val;
        memcpy(st->push + k->push_offsets[i], &word, 4);
    }
    uint32_t at = 0;
    for (uint32_t i = 0; i < k->binding_count; i++) {
        const eng_binding *bd = &k->bindings[i];
        if (bd->sized && !strcmp(bd->role, "scratch")) { /* this step's own, zero-filled */
            int64_t bytes;
            if (k->size(k, i, s, &bytes, err, n)) return -1;
            if (vk_buffer(v, (size_t)bytes, &L->scratch[step], err, n)) return -1;
            memset(L->scratch[step].map, 0, L->scratch[step].size);
        }
        for (uint32_t j = 0; j < bd->count; j++) {
            eng_buf *buf = at < ENG_MAX * 2 ? by_role(L, step, quant, bd, j) : NULL;
            if (!buf || !buf->buffer)
                return snprintf(err, n, "%s: binding %s of role %s is not one this layer has",
                                k->name, bd->name, bd->role),
                       -1;
            st->bufs[at++] = buf;
        }
    }
    return 0;
}

/* Barriers between dependent dispatches only: before a step that reads or
 * writes what an earlier step since the last barrier wrote, or writes what
 * one read. */
static void place_barriers(eng_step *steps, uint32_t count) {
    const eng_buf *wrote[64], *read[64];
    uint32_t nw = 0, nr = 0;
    for (uint32_t i = 0; i < count; i++) {
        const eng_kernel *k = steps[i].k;
        int need = 0;
        for (uint32_t b = 0, at = 0; b < k->binding_count; b++)
            for (uint32_t j = 0; j < k->bindings[b].count; j++, at++) {
                for (uint32_t m = 0; m < nw; m++)
                    need |= wrote[m] == steps[i].bufs[at];
                for (uint32_t m = 0; m < nr && k->bindings[b].writable; m++)
                    need |= read[m] == steps[i].bufs[at];
            }
        if (need) steps[i].barrier = 1, nw = nr = 0;
        for (uint32_t b = 0, at = 0; b < k->binding_count; b++)
            for (uint32_t j = 0; j < k->bindings[b].count; j++, at++) {
                /* a scratch binding is read and written: listed as written */
                int w = k->bindings[b].writable || !strcmp(k->bindings[b].role, "scratch");
                if (w && nw < 64) wrote[nw++] = steps[i].bufs[at];
                if (!w && nr < 64) read[nr++] = steps[i].bufs[at];
            }
    }
}

/* One run at T tokens: 0 pass, 1 wrong, 2 could not run. */
static int run_layer(eng_vk *v, const chosen *c, uint32_t T) {
    char err[512] = "";
    const uint32_t P = T * TOP_K;
    layer_bufs L;
    memset(&L, 0, sizeof L);
    const size_t wbytes[4] = {(size_t)E * H / 32 * Q4_0_BYTES, (size_t)E * F * H / 32 * Q4_0_BYTES,
                              (size_t)E * F * H / 32 * Q4_0_BYTES,
                              (size_t)E * H * F / 32 * Q4_0_BYTES};
    const size_t bytes[B_COUNT] = {4 * T * H, 4 * T * H, 4 * H,         4 * T * H,
                                   4 * T * H, 4 * T * E, 4 * P,         4 * P,
                                   4 * P * F, 4 * P * H, 5 * H / 4 * T, 5 * F / 4 * P,
                                   wbytes[0], wbytes[1], wbytes[2],     wbytes[3]};
    int rc = 0;
    for (int i = 0; i < B_COUNT && !rc; i++)
        if (vk_buffer(v, bytes[i], &L.b[i], err, sizeof err)) rc = 2;
    /* weights and activations, their float64 copies for the reference */
    double *wr = malloc(sizeof(double) * E * H), *wg = malloc(sizeof(double) * E * F * H);
    double *wu = malloc(sizeof(double) * E * F * H), *wd = malloc(sizeof(double) * E * H * F);
    float *x = NULL, *res = NULL, *nw = NULL;
    if (!rc) {
        q4_0_random(L.b[B_WR].map, E, H, wr);
        q4_0_random(L.b[B_WG].map, E * F, H, wg);
        q4_0_random(L.b[B_WU].map, E * F, H, wu);
        q4_0_random(L.b[B_WD].map, E * H, F, wd);
        x = L.b[B_X].map, res = L.b[B_RES].map, nw = L.b[B_NORM_W].map;
        for (uint32_t i = 0; i < T * H; i++)
            x[i] = (float)uniform(), res[i] = (float)uniform();
        for (uint32_t i = 0; i < H; i++)
            nw[i] = (float)(1 + 0.5 * uniform());
        /* every output and working buffer NaN: a value never written fails */
        for (int i = B_Y; i <= B_ACTQ; i++)
            for (size_t j = 0; j < L.b[i].size / 4; j++)
                ((uint32_t *)L.b[i].map)[j] = 0x7fc00000u;
    }
    /* the chain: [router,] top-k, gate/up, down, combine, each after its prepass */
    eng_step steps[2 * STEPS];
    uint32_t count = 0;
    for (int s = 0; s < STEPS && !rc; s++) {
        if (!c[s].k) continue;
        if (c[s].quant &&
            make_step(&L, s, 1, c[s].quant, &c[s].quant_shape, &steps[count++], v, err, sizeof err))
            rc = 2;
        if (!rc && make_step(&L, s, 0, c[s].k, &c[s].shape, &steps[count++], v, err, sizeof err))
            rc = 2;
    }
    if (!rc) {
        place_barriers(steps, count);
        uint32_t barriers = 0;
        for (uint32_t i = 0; i < count; i++)
            barriers += steps[i].barrier;
        printf("layer T=%u: %u dispatches and %u barriers in one command buffer\n", T, count,
               barriers);
        if (vk_chain(v, steps, count, err, sizeof err)) rc = 2;
    }
    if (rc) fprintf(stderr, "layer T=%u: %s\n", T, err);
    if (!rc) {
        /* the reference in float64 from the device's logits (top-k is
         * discontinuous: the same logits must pick the same experts) */
        const float *logits = L.b[B_LOGITS].map, *route_w = L.b[B_ROUTE_W].map;
        const float *y = L.b[B_Y].map, *normed = L.b[B_NORMED].map;
        const int32_t *ids = L.b[B_IDS].map;
        double *lref = malloc(sizeof(double) * T * E), *wref = malloc(sizeof(double) * P);
        double *yref = malloc(sizeof(double) * T * H), *nref = malloc(sizeof(double) * T * H);
        double *xd = malloc(sizeof(double) * T * H), act[F];
        int bad = 0;
        for (uint32_t i = 0; i < T * H; i++)
            xd[i] = x[i];
        for (uint32_t t = 0; t < T; t++) {
            for (uint32_t e = 0; e < E; e++)
                lref[t * E + e] = dot(xd + t * H, wr + (size_t)e * H, H);
            double p[E], mx = -INFINITY, sum = 0, chosen_sum = 0;
            for (uint32_t e = 0; e < E; e++)
                mx = fmax(mx, logits[t * E + e]);
            for (uint32_t e = 0; e < E; e++)
                sum += p[e] = exp(logits[t * E + e] - mx);
            int pick[TOP_K];
            for (int s = 0; s < TOP_K; s++) { /* the largest, ties to the lower index */
                int best = -1;
                for (uint32_t e = 0; e < E; e++) {
                    int taken = 0;
                    for (int j = 0; j < s; j++)
                        taken |= pick[j] == (int)e;
                    if (!taken && (best < 0 || p[e] > p[best])) best = (int)e;
                }
                pick[s] = best, chosen_sum += p[best] / sum;
                bad += ids[t * TOP_K + s] != best;
            }
            for (uint32_t h = 0; h < H; h++)
                yref[t * H + h] = res[t * H + h];
            for (int s = 0; s < TOP_K; s++) {
                const int e = pick[s];
                const double w = p[e] / sum / chosen_sum; /* renormalised */
                wref[t * TOP_K + s] = w;
                for (uint32_t f = 0; f < F; f++) {
                    const double g = dot(xd + t * H, wg + ((size_t)e * F + f) * H, H);
                    const double u = dot(xd + t * H, wu + ((size_t)e * F + f) * H, H);
                    act[f] = g / (1 + exp(-g)) * u;
                }
                for (uint32_t h = 0; h < H; h++)
                    yref[t * H + h] += w * dot(act, wd + ((size_t)e * H + h) * F, F);
            }
            double ms = 0;
            for (uint32_t h = 0; h < H; h++)
                ms += yref[t * H + h] * yref[t * H + h] / H;
            for (uint32_t h = 0; h < H; h++)
                nref[t * H + h] = yref[t * H + h] / sqrt(ms + 1e-6) * nw[h];
        }
        double bound = 0;
        for (uint32_t i = 0; i < count; i++)
            bound = fmax(bound, class_bound(steps[i].k));
        const double e_l = nmse(logits, lref, T * E), e_w = nmse(route_w, wref, P);
        const double e_y = nmse(y, yref, T * H), e_n = nmse(normed, nref, T * H);
        rc = bad || !(e_l <= bound && e_w <= bound && e_y <= bound && e_n <= bound);
        printf("layer T=%u: NMSE logits %.2e, routing weights %.2e, out %.2e, normed %.2e "
               "(bound %.0e); expert ids %s  %s\n",
               T, e_l, e_w, e_y, e_n, bound, bad ? "differ" : "match", rc ? "FAIL" : "ok");
        free(lref), free(wref), free(yref), free(nref), free(xd);
    }
    for (int i = 0; i < B_COUNT; i++)
        if (L.b[i].buffer) vk_buffer_free(v, &L.b[i]);
    for (int i = 0; i < STEPS; i++)
        if (L.scratch[i].buffer) vk_buffer_free(v, &L.scratch[i]);
    free(wr), free(wg), free(wu), free(wd);
    return rc;
}

int layer_run(eng_vk *v, const eng_bundle *b, layer_plan *p, uint64_t seed) {
    (void)b;
    rng = seed;
    int worst = 0;
    for (int r = 0; r < RUNS; r++) {
        const chosen *c = p->c[r];
        for (int s = 0; s < STEPS; s++) {
            if (!c[s].k) continue;
            if (c[s].quant)
                printf("layer T=%u %-8s %-60s (rule: %s)\n", TOKENS[r], "quantize",
                       c[s].quant->name, LEVELS[c[s].quant_level]);
            printf("layer T=%u %-8s %-60s (rule: %s, precision %s)\n", TOKENS[r], STEP_NAMES[s],
                   c[s].k->name, LEVELS[c[s].level], c[s].k->precision);
        }
        const int rc = run_layer(v, c, TOKENS[r]);
        worst = rc > worst ? rc : worst;
    }
    return worst;
}
