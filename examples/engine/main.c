/* An engine that runs qkgen's kernels with nothing of qkgen inside: a q4_0
 * mat-vec, a q4_K MoE mat-vec with expert ids and a tiled matmul, each on fresh
 * random data against its own CPU reference (qkgen's docs/formats.md's rules);
 * given a tuned bundle (a select table), a whole MoE layer instead (layer.c). */
#include "engine.h"
#include "vk.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- data: a seeded generator, f16, and the two formats' rules ---- */

static uint64_t rng_state;

static uint32_t rnd(void) { /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

static float uniform(float lo, float hi) {
    return lo + (hi - lo) * (float)(rnd() >> 8) / 16777216.0f;
}

static float half_to_float(uint16_t h) {
    int e = (h >> 10) & 31, m = h & 1023;
    float v = e == 0    ? ldexpf((float)m, -24)
              : e == 31 ? INFINITY
                        : ldexpf((float)(m | 1024), e - 25);
    return h & 0x8000 ? -v : v;
}

/* Nearest f16 of a value in f16's normal range (the scales drawn here). */
static uint16_t float_to_half(float f) {
    int e;
    float m = frexpf(fabsf(f), &e); /* f = m * 2^e, m in [0.5, 1) */
    uint32_t mant = (uint32_t)lrintf(m * 2048.0f);
    if (mant == 2048) mant = 1024, e++;
    return (uint16_t)((f < 0 ? 0x8000 : 0) | (uint32_t)(e + 14) << 10 | (mant - 1024));
}

static uint16_t get16(const uint8_t *p) {
    return (uint16_t)(p[0] | p[1] << 8);
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

enum { Q4_0_BYTES = 18, Q4_K_BYTES = 144 };

/* y[32] of one q4_0 block: f16 d; u8 qs[16], low nibbles first */
static void dequant_q4_0(const uint8_t *b, double *y) {
    double d = half_to_float(get16(b));
    for (int j = 0; j < 16; j++) {
        y[j] = d * ((b[2 + j] & 15) - 8);
        y[j + 16] = d * ((b[2 + j] >> 4) - 8);
    }
}

static void scale_min_k4(int j, const uint8_t *s, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* y[256] of one q4_K block: f16 d, dmin; u8 scales[12]; u8 qs[128] */
static void dequant_q4_K(const uint8_t *b, double *y) {
    double d = half_to_float(get16(b)), dmin = half_to_float(get16(b + 2));
    const uint8_t *scales = b + 4, *qs = b + 16;
    for (int c = 0; c < 4; c++) {
        int sc1, mn1, sc2, mn2;
        scale_min_k4(2 * c, scales, &sc1, &mn1);
        scale_min_k4(2 * c + 1, scales, &sc2, &mn2);
        const uint8_t *q = qs + 32 * c;
        for (int l = 0; l < 32; l++) {
            y[64 * c + l] = d * sc1 * (q[l] & 15) - dmin * mn1;
            y[64 * c + 32 + l] = d * sc2 * (q[l] >> 4) - dmin * mn2;
        }
    }
}

typedef struct format {
    const char *name;
    uint32_t block_elements, block_bytes;
    void (*dequant)(const uint8_t *block, double *y);
    uint32_t scale_offsets[2]; /* f16 scales to keep finite and small */
    uint32_t scale_count;
} format;

static const format Q4_0 = {"q4_0", 32, Q4_0_BYTES, dequant_q4_0, {0, 0}, 1};
static const format Q4_K = {"q4_K", 256, Q4_K_BYTES, dequant_q4_K, {0, 2}, 2};

/* Random blocks (any bits are a valid block) with small finite scales. */
static void random_blocks(const format *f, uint8_t *w, size_t blocks) {
    for (size_t i = 0; i < blocks * f->block_bytes; i++)
        w[i] = (uint8_t)rnd();
    for (size_t b = 0; b < blocks; b++)
        for (uint32_t s = 0; s < f->scale_count; s++)
            put16(w + b * f->block_bytes + f->scale_offsets[s],
                  float_to_half(uniform(0.002f, 0.02f)));
}

/* Row r of a matrix of rows of K / block_elements blocks, dequantized. */
static void dequant_row(const format *f, const uint8_t *w, size_t r, uint32_t K, double *out) {
    size_t nb = K / f->block_elements;
    for (size_t b = 0; b < nb; b++)
        f->dequant(w + (r * nb + b) * f->block_bytes, out + b * f->block_elements);
}

/* ---- the engine ---- */

typedef struct want {
    const char *family, *format;
} want;

/* Every kernel of the family and format that is plain (f32 activations, no
 * fusion, no pre-quantized activations or scratch) and that the device runs,
 * into out[*n]; an engine would take one, this example checks them all (the
 * tile sizes of kernels that share a module are specialization constants). */
static int pick(const eng_bundle *b, eng_vk *v, want w, const eng_kernel **out, uint32_t *n,
                uint32_t cap) {
    char why[256] = "none in the bundle";
    uint32_t found = 0;
    for (uint32_t i = 0; i < b->count; i++) {
        const eng_kernel *k = &b->kernels[i];
        int plain = !strcmp(k->activation, "f32") && (!k->fusion[0] || !strcmp(k->fusion, "none"));
        for (uint32_t j = 0; j < k->binding_count; j++)
            plain &= strcmp(k->bindings[j].role, "activations_q8") && !k->bindings[j].sized;
        if (strcmp(k->family, w.family) || strcmp(k->format, w.format) || !plain) continue;
        if (!vk_can_run(v, k, why, sizeof why)) {
            fprintf(stderr, "  skip %s: the device lacks %s\n", k->name, why);
        } else if (*n < cap) {
            out[(*n)++] = k;
            found++;
        }
    }
    if (!found) fprintf(stderr, "no runnable %s kernel for %s (%s)\n", w.family, w.format, why);
    return found ? 0 : -1;
}

/* Tolerance by the entry's precision class (docs/manifest.md). */
static double nmse_bound(const eng_kernel *k) {
    if (!strcmp(k->precision, "q8")) return 1e-4;
    if (!strcmp(k->precision, "f16")) return 5e-4;
    if (!strcmp(k->precision, "f32")) return 1e-6;
    return !strncmp(k->family, "matmul", 6) ? 5e-4 : 1e-6; /* a manifest without the field */
}

typedef struct problem {
    const char *title;
    const eng_kernel *k;
    const format *f;
    eng_shape shape;
    uint32_t M, K, T, E, top_k;
    uint32_t out_rows; /* rows of M outputs */
} problem;

static void set(eng_shape *s, const char *name, int64_t v) {
    s->names[s->count] = name;
    s->values[s->count++] = v;
}

static int64_t get(const eng_shape *s, const char *name) {
    for (uint32_t i = 0; i < s->count; i++)
        if (!strcmp(s->names[i], name)) return s->values[i];
    return -1;
}

/* Runs p on the device and checks it; 0 pass, 1 wrong, 2 could not run. */
static int run(eng_vk *v, problem *p) {
    const eng_kernel *k = p->k;
    char err[512] = "";
    uint32_t groups[3];
    int bad = k->check(k, &p->shape, err, sizeof err);
    if (bad >= 0) {
        fprintf(stderr, "%s: constraint %d fails for this shape %s\n", k->name, bad, err);
        return 2;
    }
    if (k->grid(k, &p->shape, groups, err, sizeof err)) return fprintf(stderr, "%s\n", err), 2;
    uint8_t push[256] = {0};
    for (uint32_t i = 0; i < k->push_count; i++) {
        int64_t val = get(&p->shape, k->push_names[i]);
        if (val < 0 || k->push_offsets[i] + 4 > sizeof push)
            return fprintf(stderr, "%s: no value for push constant %s\n", k->name,
                           k->push_names[i]),
                   2;
        uint32_t word = (uint32_t)val;
        memcpy(push + k->push_offsets[i], &word, 4);
    }
    /* host data */
    uint32_t M = p->M, K = p->K, E = p->E ? p->E : 1, rows_x = p->T;
    size_t nb = (size_t)E * M * (K / p->f->block_elements);
    uint8_t *w = malloc(nb * p->f->block_bytes);
    random_blocks(p->f, w, nb);
    int64_t ne11 = get(&p->shape, "ne11");
    if (ne11 > 1) rows_x = p->T * (uint32_t)ne11;
    float *x = malloc(sizeof(float) * rows_x * K);
    for (size_t i = 0; i < (size_t)rows_x * K; i++)
        x[i] = uniform(-1, 1);
    int32_t *ids = calloc((size_t)p->T * (p->top_k ? p->top_k : 1), sizeof *ids);
    for (uint32_t t = 0; t < p->T && p->top_k; t++) /* distinct experts per token */
        for (uint32_t s = 0; s < p->top_k; s++) {
            int32_t e;
            int dup;
            do {
                e = (int32_t)(rnd() % E);
                dup = 0;
                for (uint32_t j = 0; j < s; j++)
                    dup |= ids[t * p->top_k + j] == e;
            } while (dup);
            ids[t * p->top_k + s] = e;
        }
    /* device buffers by role */
    size_t out_count = (size_t)p->out_rows * M;
    eng_buf bufs[ENG_MAX];
    eng_buf *order[ENG_MAX];
    uint32_t nbuf = 0, out = 0;
    int rc = 0;
    for (uint32_t i = 0; i < k->binding_count && !rc; i++) {
        const eng_binding *b = &k->bindings[i];
        const void *src = NULL;
        size_t bytes = 0;
        if (!strcmp(b->role, "weights"))
            src = w, bytes = nb * p->f->block_bytes;
        else if (!strcmp(b->role, "activations"))
            src = x, bytes = sizeof(float) * rows_x * K;
        else if (!strcmp(b->role, "ids"))
            src = ids, bytes = sizeof(int32_t) * p->T * (p->top_k ? p->top_k : 1);
        else if (!strcmp(b->role, "output"))
            out = nbuf, bytes = sizeof(float) * out_count;
        else {
            fprintf(stderr, "%s: binding %s of role %s is not one this example fills\n", k->name,
                    b->name, b->role);
            rc = 2;
            break;
        }
        if (b->count != 1) {
            rc = 2;
            fprintf(stderr, "%s: array binding %s\n", k->name, b->name);
            break;
        }
        if (vk_buffer(v, bytes, &bufs[nbuf], err, sizeof err)) {
            rc = 2;
            fprintf(stderr, "%s\n", err);
            break;
        }
        if (src)
            memcpy(bufs[nbuf].map, src, bytes);
        else /* poison: every output the kernel leaves unwritten stays NaN */
            for (size_t j = 0; j < out_count; j++)
                ((uint32_t *)bufs[nbuf].map)[j] = 0x7fc00000u;
        order[nbuf] = &bufs[nbuf];
        nbuf++;
    }
    if (!rc && vk_dispatch(v, k, order, push, groups, err, sizeof err))
        rc = 2, fprintf(stderr, "%s\n", err);
    if (!rc) {
        /* reference: y[row][m] = sum_k W_e[m][k] x[xrow][k], in double */
        const float *y = bufs[out].map;
        double *wr = malloc(sizeof(double) * K), num = 0, den = 0;
        size_t nan = 0;
        for (uint32_t r = 0; r < p->out_rows; r++) {
            uint32_t t = p->top_k ? r / p->top_k : r;
            uint32_t e = p->top_k ? (uint32_t)ids[r] : 0;
            uint32_t xr = ne11 > 1 ? r : t;
            for (uint32_t m = 0; m < M; m++) {
                dequant_row(p->f, w, (size_t)e * M + m, K, wr);
                double ref = 0;
                for (uint32_t i = 0; i < K; i++)
                    ref += wr[i] * x[(size_t)xr * K + i];
                double got = y[(size_t)r * M + m];
                if (got != got)
                    nan++;
                else
                    num += (got - ref) * (got - ref);
                den += ref * ref;
            }
        }
        free(wr);
        double nmse = num / (den > 0 ? den : 1), bound = nmse_bound(k);
        rc = nan || !(nmse <= bound);
        printf("%-10s %-44s grid %u x %u x %u  NMSE %.2e (bound %.0e, precision %s)%s%s\n",
               p->title, k->name, groups[0], groups[1], groups[2], nmse, bound,
               k->precision[0] ? k->precision : "?", nan ? "  outputs left unwritten" : "",
               rc ? "  FAIL" : "  ok");
    }
    for (uint32_t i = 0; i < nbuf; i++)
        vk_buffer_free(v, &bufs[i]);
    free(w);
    free(x);
    free(ids);
    return rc;
}

/* A tuned bundle: the MoE layer with every kernel from its select table. */
static int run_layer_only(eng_bundle *b, eng_vk *v, uint64_t seed) {
    char err[1024];
    const eng_kernel *kernels[4 * ENG_MAX];
    uint32_t count = 0;
    layer_plan *p = NULL;
    int rc = layer_plan_create(b, v, &p, kernels, &count, 4 * ENG_MAX);
    if (!rc && vk_create_device(v, kernels, count, err, sizeof err))
        rc = 2, fprintf(stderr, "engine: %s\n", err);
    if (!rc) rc = layer_run(v, b, p, seed);
    uint32_t errors = vk_errors(v);
    layer_plan_free(p);
    vk_close(v);
    eng_bundle_close(b);
    printf("the MoE layer from the select table: %s, %u validation errors\n",
           rc || errors ? "FAIL" : "passed", errors);
    return errors && !rc ? 1 : rc;
}

int main(int argc, char **argv) {
    char err[1024];
    eng_bundle b;
    eng_vk *v = NULL;
    const char *seed_env = getenv("ENGINE_SEED");
    uint64_t seed = seed_env ? strtoull(seed_env, NULL, 0) : 0;
    if (!seed) {
        FILE *f = fopen("/dev/urandom", "rb");
        if (!f || fread(&seed, sizeof seed, 1, f) != 1) seed = 0x9E3779B97F4A7C15ULL;
        if (f) fclose(f);
        seed |= 1;
    }
    rng_state = seed;
    printf("bundle: %s\nseed: %llu (rerun with ENGINE_SEED=%llu)\n", eng_bundle_source(),
           (unsigned long long)seed, (unsigned long long)seed);
    if (eng_bundle_open(argc, argv, &b, err, sizeof err) || vk_open(&v, err, sizeof err)) {
        fprintf(stderr, "engine: %s\n", err);
        vk_close(v);
        return 2;
    }
    printf("%u kernels\n", b.count);
    if (b.has_select) return run_layer_only(&b, v, seed);
    const want wants[3] = {{"matvec", "q4_0"}, {"matvec_id", "q4_K"}, {"matmul", "q4_0"}};
    const eng_kernel *picked[ENG_MAX];
    uint32_t count = 0, first[4] = {0};
    for (int i = 0; i < 3; i++) {
        first[i] = count;
        if (pick(&b, v, wants[i], picked, &count, ENG_MAX))
            return vk_close(v), eng_bundle_close(&b), 2;
    }
    first[3] = count;
    if (vk_create_device(v, picked, count, err, sizeof err)) {
        fprintf(stderr, "engine: %s\n", err);
        return vk_close(v), eng_bundle_close(&b), 2;
    }
    /* shapes that are no multiple of the tiles; K a multiple of the block */
    const problem kinds[3] = {
        {"q4_0 mv", NULL, &Q4_0, {0}, 67, 320, 3, 0, 0, 3},
        {"q4_K moe", NULL, &Q4_K, {0}, 40, 512, 3, 6, 2, 6},
        {"q4_0 mm", NULL, &Q4_0, {0}, 70, 256, 37, 0, 0, 37},
    };
    int failed = 0, worst = 0, runs = 0;
    for (int i = 0; i < 3; i++)
        for (uint32_t j = first[i]; j < first[i + 1]; j++)
            /* MoE: ne11 = 1, a row per token (gate, up), then ne11 = top_k, a row
             * per (token, slot) pair (down) */
            for (int pass = 0; pass < (kinds[i].top_k > 1 ? 2 : 1); pass++) {
                uint32_t ne11 = pass ? kinds[i].top_k : 1;
                problem p = kinds[i];
                p.k = picked[j];
                set(&p.shape, "M", p.M);
                set(&p.shape, "K", p.K);
                set(&p.shape, "T", p.T);
                if (p.top_k) {
                    if (ne11 > 1) p.title = "q4_K down";
                    set(&p.shape, "top_k", p.top_k);
                    set(&p.shape, "ne11", ne11);
                    set(&p.shape, "E", p.E);
                }
                int rc = run(v, &p);
                runs++;
                failed += rc != 0;
                worst = rc > worst ? rc : worst;
            }
    uint32_t errors = vk_errors(v);
    vk_close(v);
    eng_bundle_close(&b);
    printf("%d passed, %d failed, %u validation errors\n", runs - failed, failed, errors);
    return errors ? 1 : worst;
}
