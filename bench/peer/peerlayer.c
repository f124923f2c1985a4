/* peerlayer: times llama.cpp's Vulkan backend (ggml-vulkan) on a whole MoE FFN
 * layer built as llama.cpp builds it, the peer side of `qkgen bench --layer`.
 *
 * Loads the ggml C API from a released llama.cpp build (index.node of the npm
 * package @fugood/node-llama-linux-x64-vulkan, as ../shared/peer/peerbench.c
 * does) with dlopen; the few declarations below follow ggml.h, no header.
 *
 *   peerlayer LIB [--types q4_0,q8_0,q4_K,q6_K] [--tokens 1,8,32,512]
 *                 [--hidden 2048] [--ffn 768] [--experts 128] [--topk 8]
 *                 [--router f32|f16] [--no-norm-w] [--eps 1e-6]
 *                 [--runs N] [--warmup-ms MS] [--rotate-mb MB] [--min-layers N]
 *                 [--check-tokens N] [--keep-perf FILE] [--small]
 *
 * One layer (a Qwen3-30B-A3B MoE FFN: hidden 2048, expert ffn 768, 128
 * experts, top-8, top-k weights renormalised) is the op sequence of
 * llama.cpp's build_moe_ffn plus the residual and the next RMSNorm:
 *   logits  = mul_mat(router [H x E], x)            [E, T]
 *   probs   = soft_max(logits)
 *   ids     = argsort_top_k(probs, k)               [k, T]
 *   w       = get_rows(probs as [1, E, T], ids)     [1, k, T]
 *   w       = w / clamp(sum_rows(w), 6.1e-5, inf)   (unless --no-norm-w)
 *   up      = mul_mat_id(up_exps, x, ids)           [F, k, T]
 *   gate    = mul_mat_id(gate_exps, x, ids)
 *   act     = swiglu_split(gate, up)
 *   down    = mul_mat_id(down_exps, act, ids)       [H, k, T]
 *   moe     = sum over the k slots of mul(down, w)  (views + adds)
 *   y       = moe + residual                        the residual stream
 *   normed  = mul(rms_norm(y, eps), norm_w)         the next block's input
 * A graph chains L layers as a model does (layer i+1 reads normed_i and
 * y_i), so ggml-vulkan's fusions (top-k MoE, multi-add, rms_norm+mul) apply
 * as in llama.cpp. Layer i uses weight copy i % R; R copies are enough that
 * the weight bytes a layer touches, times R, pass rotate-mb (default 200 MB,
 * four times the H100's L2); L >= min-layers (default 16) is a multiple of R.
 * After >= warmup-ms (default 1000) of graph computes, `runs` (default 30)
 * timed computes. Printed per case:
 *   wall_us : median over runs of graph wall time / L (a layer, host view)
 *   graph_us: median graph wall time
 *   kern_us : with GGML_VK_PERF_LOGGER set, median over runs of the sum of
 *             the perf logger's op times in the graph's block / L (GPU time
 *             of a layer, a barrier after each op); "# op" lines break it down
 *   relerr  : layer 0's MoE output (y - residual) against a float64 CPU
 *             layer on ggml's own dequantized weights (to_float), with the
 *             peer's expert ids (id_mismatch counts tokens whose float64 top-k
 *             differs: near-ties); relerr_out: the same for normed; maxerr:
 *             largest |err| / rms(ref) of the MoE output.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct ggml_context;
struct ggml_tensor;
struct ggml_cgraph;
typedef struct ggml_backend *ggml_backend_t;
typedef struct ggml_backend_buffer *ggml_backend_buffer_t;
struct ggml_init_params {
    size_t mem_size;
    void *mem_buffer;
    bool no_alloc;
};
typedef void (*to_float_t)(const void *x, float *y, int64_t k);
struct type_traits {
    const char *type_name;
    int64_t blck_size;
    int64_t blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    to_float_t to_float;
    void *from_float_ref;
};
typedef struct ggml_tensor tensor;

#define FNS(X)                                                                                     \
    X(const char *, ggml_type_name, (int))                                                         \
    X(const struct type_traits *, ggml_get_type_traits, (int))                                     \
    X(int64_t, ggml_blck_size, (int))                                                              \
    X(size_t, ggml_type_size, (int))                                                               \
    X(size_t, ggml_quantize_chunk,                                                                 \
      (int, const float *, void *, int64_t, int64_t, int64_t, const float *))                      \
    X(void, ggml_fp32_to_fp16_row, (const float *, uint16_t *, int64_t))                           \
    X(void, ggml_fp16_to_fp32_row, (const uint16_t *, float *, int64_t))                           \
    X(size_t, ggml_tensor_overhead, (void))                                                        \
    X(size_t, ggml_graph_overhead_custom, (size_t, bool))                                          \
    X(struct ggml_context *, ggml_init, (struct ggml_init_params))                                 \
    X(void, ggml_free, (struct ggml_context *))                                                    \
    X(tensor *, ggml_new_tensor_1d, (struct ggml_context *, int, int64_t))                         \
    X(tensor *, ggml_new_tensor_2d, (struct ggml_context *, int, int64_t, int64_t))                \
    X(tensor *, ggml_new_tensor_3d, (struct ggml_context *, int, int64_t, int64_t, int64_t))       \
    X(tensor *, ggml_mul_mat, (struct ggml_context *, tensor *, tensor *))                         \
    X(tensor *, ggml_mul_mat_id, (struct ggml_context *, tensor *, tensor *, tensor *))            \
    X(tensor *, ggml_soft_max, (struct ggml_context *, tensor *))                                  \
    X(tensor *, ggml_argsort_top_k, (struct ggml_context *, tensor *, int))                        \
    X(tensor *, ggml_get_rows, (struct ggml_context *, tensor *, tensor *))                        \
    X(tensor *, ggml_sum_rows, (struct ggml_context *, tensor *))                                  \
    X(tensor *, ggml_clamp, (struct ggml_context *, tensor *, float, float))                       \
    X(tensor *, ggml_div, (struct ggml_context *, tensor *, tensor *))                             \
    X(tensor *, ggml_mul, (struct ggml_context *, tensor *, tensor *))                             \
    X(tensor *, ggml_add, (struct ggml_context *, tensor *, tensor *))                             \
    X(tensor *, ggml_cont, (struct ggml_context *, tensor *))                                      \
    X(tensor *, ggml_swiglu_split, (struct ggml_context *, tensor *, tensor *))                    \
    X(tensor *, ggml_rms_norm, (struct ggml_context *, tensor *, float))                           \
    X(tensor *, ggml_reshape_2d, (struct ggml_context *, tensor *, int64_t, int64_t))              \
    X(tensor *, ggml_reshape_3d, (struct ggml_context *, tensor *, int64_t, int64_t, int64_t))     \
    X(tensor *, ggml_view_2d, (struct ggml_context *, tensor *, int64_t, int64_t, size_t, size_t)) \
    X(struct ggml_cgraph *, ggml_new_graph_custom, (struct ggml_context *, size_t, bool))          \
    X(void, ggml_build_forward_expand, (struct ggml_cgraph *, tensor *))                           \
    X(int, ggml_graph_n_nodes, (struct ggml_cgraph *))                                             \
    X(size_t, ggml_nbytes, (const tensor *))                                                       \
    X(ggml_backend_t, ggml_backend_vk_init, (size_t))                                              \
    X(int, ggml_backend_vk_get_device_count, (void))                                               \
    X(void, ggml_backend_vk_get_device_description, (int, char *, size_t))                         \
    X(void, ggml_backend_free, (ggml_backend_t))                                                   \
    X(ggml_backend_buffer_t, ggml_backend_alloc_ctx_tensors,                                       \
      (struct ggml_context *, ggml_backend_t))                                                     \
    X(void, ggml_backend_buffer_free, (ggml_backend_buffer_t))                                     \
    X(void, ggml_backend_tensor_set, (tensor *, const void *, size_t, size_t))                     \
    X(void, ggml_backend_tensor_get, (const tensor *, void *, size_t, size_t))                     \
    X(int, ggml_backend_graph_compute, (ggml_backend_t, struct ggml_cgraph *))

#define DECL(ret, name, args) static ret(*p_##name) args;
FNS(DECL)

static void die(const char *m) {
    fprintf(stderr, "peerlayer: %s\n", m);
    exit(2);
}
static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fprintf(stderr, "peerlayer: out of host memory (%zu bytes)\n", n);
        exit(1);
    }
    return p;
}
static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static double median(double *v, int n) {
    qsort(v, n, sizeof *v, cmpd);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

typedef struct {
    uint64_t s;
} rng_t;
static uint64_t rnext(rng_t *r) {
    uint64_t x = r->s;
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return r->s = x;
}
static double urand(rng_t *r) {
    return (rnext(r) >> 11) * (1.0 / 9007199254740992.0);
}
static float nrand(rng_t *r) {
    double u = urand(r) + 1e-12, v = urand(r);
    return (float)(sqrt(-2 * log(u)) * cos(6.283185307179586 * v));
}

/* ---- quantized weights: `rows` rows of `n_per_row`, normal * 0.05 from a
 * per-chunk seed mixed with `seed` (so gate, up and down differ), quantized
 * with ggml's own quantizer on every core ---- */
typedef struct {
    int type;
    int64_t rows, n_per_row;
    uint8_t *dst;
    size_t row_bytes;
    uint64_t seed;
    int t, nt;
} qjob;
static void *qwork(void *a) {
    qjob *j = a;
    const int64_t chunk = 64;
    float *f = xmalloc(sizeof(float) * chunk * j->n_per_row);
    for (int64_t r0 = (int64_t)j->t * chunk; r0 < j->rows; r0 += (int64_t)j->nt * chunk) {
        int64_t nr = j->rows - r0 < chunk ? j->rows - r0 : chunk;
        rng_t g = {j->seed ^ (uint64_t)(r0 + 1) * 0xD1B54A32D192ED03ull};
        for (int64_t i = 0; i < nr * j->n_per_row; i++)
            f[i] = nrand(&g) * 0.05f;
        p_ggml_quantize_chunk(j->type, f, j->dst + (size_t)r0 * j->row_bytes, 0, nr, j->n_per_row,
                              NULL);
    }
    free(f);
    return NULL;
}
static uint8_t *make_weights(int type, int64_t rows, int64_t n_per_row, size_t row_bytes,
                             uint64_t seed) {
    uint8_t *q = xmalloc((size_t)rows * row_bytes);
    int nt = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (nt > 32) nt = 32;
    if (nt < 1) nt = 1;
    pthread_t th[32];
    qjob jobs[32];
    for (int t = 0; t < nt; t++) {
        jobs[t] = (qjob){type, rows, n_per_row, q, row_bytes, seed, t, nt};
        pthread_create(&th[t], NULL, qwork, &jobs[t]);
    }
    for (int t = 0; t < nt; t++)
        pthread_join(th[t], NULL);
    return q;
}

/* ---- stderr capture for the perf logger (it writes std::cerr, fd 2) ---- */
static int saved_fd = -1;
static void capture(const char *path) {
    fflush(stderr);
    if (saved_fd < 0) saved_fd = dup(2);
    int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY, 0644);
    if (fd < 0) die("cannot open the perf logger's capture file");
    dup2(fd, 2);
    close(fd);
}
static void release(void) {
    fflush(stderr);
    if (saved_fd >= 0) {
        dup2(saved_fd, 2);
        close(saved_fd);
        saved_fd = -1;
    }
}

/* Per-op totals over all blocks, for the "# op" breakdown. */
#define MAX_OPNAMES 64
static struct {
    char name[200];
    double us;
    long count;
} opsum[MAX_OPNAMES];
static int n_opsum;

/* Parses the perf logger's blocks ("Vulkan Timings:", then lines
 * "NAME: N x A us[ = T us][ (...)]") in path: kern[b] = the sum of block b's
 * op times / layers. Every op line counts (not only MUL_MAT as in
 * peerbench): the layer is all of them. Returns the number of blocks. */
static int parse_perf(const char *path, int layers, double *kern, int maxb) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[4096];
    int nb = -1;
    double sum = 0;
    n_opsum = 0;
    while (fgets(line, sizeof line, f)) {
        if (!strncmp(line, "Vulkan Timings:", 15)) {
            if (nb >= 0 && nb < maxb) kern[nb] = sum / layers;
            nb++;
            sum = 0;
            continue;
        }
        if (nb < 0 || !strncmp(line, "Total time", 10)) continue;
        char *c = strstr(line, ": ");
        int cnt;
        double avg, tot;
        if (!c || sscanf(c + 2, "%d x %lf us", &cnt, &avg) != 2) continue;
        if (sscanf(c + 2, "%*d x %*f us = %lf us", &tot) != 1) tot = cnt * avg;
        sum += tot;
        *c = 0;
        int i = 0;
        while (i < n_opsum && strcmp(opsum[i].name, line))
            i++;
        if (i == n_opsum && n_opsum < MAX_OPNAMES) {
            snprintf(opsum[i].name, sizeof opsum[i].name, "%.199s", line);
            opsum[i].us = 0;
            opsum[i].count = 0;
            n_opsum++;
        }
        if (i < n_opsum) {
            opsum[i].us += tot;
            opsum[i].count += cnt;
        }
    }
    if (nb >= 0 && nb < maxb) kern[nb] = sum / layers;
    fclose(f);
    return nb + 1 > maxb ? maxb : nb + 1;
}

/* ---- the layer ---- */
typedef struct {
    int64_t H, F, T; /* hidden, expert ffn, tokens */
    int E, K;        /* experts, experts per token */
    int type, router_type;
    bool norm_w;
    float eps;
} shape;

typedef struct {
    tensor *router, *gate, *up, *down, *norm;
} weights;

typedef struct {
    tensor *ids, *y, *normed;
} layer_out;

static int t_f32, t_f16, t_i32;

/* Adds one layer to gf: x [H, T] the normalised input, res [H, T] the
 * residual stream; the op sequence of the header comment. */
static layer_out build_layer(struct ggml_context *ctx, struct ggml_cgraph *gf, const shape *s,
                             const weights *w, tensor *x, tensor *res) {
    const int64_t H = s->H, T = s->T;
    const int E = s->E, K = s->K;
    tensor *logits = p_ggml_mul_mat(ctx, w->router, x);
    tensor *probs = p_ggml_soft_max(ctx, logits);
    tensor *ids = p_ggml_argsort_top_k(ctx, probs, K);
    tensor *wts = p_ggml_get_rows(ctx, p_ggml_reshape_3d(ctx, probs, 1, E, T), ids);
    if (s->norm_w) {
        tensor *w2 = p_ggml_reshape_2d(ctx, wts, K, T);
        tensor *sum = p_ggml_clamp(ctx, p_ggml_sum_rows(ctx, w2), 6.103515625e-5f, INFINITY);
        wts = p_ggml_reshape_3d(ctx, p_ggml_div(ctx, w2, sum), 1, K, T);
    }
    /* expanded early as llama.cpp does, so the top-k MoE fusion sees its ops together */
    p_ggml_build_forward_expand(gf, wts);
    tensor *x3 = p_ggml_reshape_3d(ctx, x, H, 1, T);
    tensor *up = p_ggml_mul_mat_id(ctx, w->up, x3, ids);
    tensor *gate = p_ggml_mul_mat_id(ctx, w->gate, x3, ids);
    tensor *act = p_ggml_swiglu_split(ctx, gate, up);
    tensor *down = p_ggml_mul_mat_id(ctx, w->down, act, ids); /* [H, K, T] */
    tensor *experts = p_ggml_mul(ctx, down, wts);
    p_ggml_build_forward_expand(gf, experts);
    /* the sum over the slots: views of each slot first, then a chain of adds */
    tensor *slot[64];
    for (int i = 0; i < K; i++) {
        slot[i] = p_ggml_view_2d(ctx, experts, H, T, (size_t)H * K * sizeof(float),
                                 (size_t)i * H * sizeof(float));
        p_ggml_build_forward_expand(gf, slot[i]);
    }
    tensor *moe = slot[0];
    for (int i = 1; i < K; i++) {
        moe = p_ggml_add(ctx, moe, slot[i]);
        p_ggml_build_forward_expand(gf, moe);
    }
    if (K == 1) moe = p_ggml_cont(ctx, moe);
    tensor *y = p_ggml_add(ctx, moe, res);
    tensor *normed = p_ggml_mul(ctx, p_ggml_rms_norm(ctx, y, s->eps), w->norm);
    p_ggml_build_forward_expand(gf, normed);
    return (layer_out){ids, y, normed};
}

/* Host copies of one weight set (every copy holds the same bytes). */
typedef struct {
    uint8_t *gate, *up, *down; /* quantized, expert-major */
    size_t row_h, row_f;       /* bytes of a row of H, of F elements */
    float *router;             /* [E][H], as the device holds it (f16-rounded if f16) */
    uint16_t *router_f16;
    float *norm; /* [H] */
} host_weights;

static double dot_row(const struct type_traits *tr, const uint8_t *row, int64_t n, const double *v,
                      float *tmp) {
    tr->to_float(row, tmp, n);
    double a = 0;
    for (int64_t i = 0; i < n; i++)
        a += (double)tmp[i] * v[i];
    return a;
}

static int opt_runs = 30, opt_min_layers = 16, opt_check_tokens = 8;
static double opt_warm = 1.0, opt_rotate = 200e6;
static const char *opt_keep_perf;
static ggml_backend_t backend;
static bool perf_on;
static const char *capdir = "/tmp";

static void run_case(const shape *s, const host_weights *hw) {
    const int64_t H = s->H, F = s->F, T = s->T;
    const int E = s->E, K = s->K;
    const struct type_traits *tr = p_ggml_get_type_traits(s->type);
    const size_t expert_bytes = (size_t)F * hw->row_h * 2 + (size_t)H * hw->row_f;
    const size_t router_bytes = (size_t)E * H * (s->router_type == t_f16 ? 2 : 4);
    const size_t copy_bytes = expert_bytes * E + router_bytes + H * 4;
    /* the bytes one layer reads: the experts its tokens touch (expected) and the router */
    double touched = E * (1 - pow(1 - (double)K / E, (double)T)) * expert_bytes + router_bytes;
    int R = (int)ceil(opt_rotate / touched) + 1;
    if (R < 2) R = 2;
    while (R > 2 && (double)R * copy_bytes > 40e9)
        R--;
    const int L = R * ((opt_min_layers + R - 1) / R);

    /* nodes a layer adds: about 24 ops and views, 2 per slot */
    const size_t gsize = (size_t)L * (40 + 2 * K) + 64;
    const size_t ntens = (size_t)R * 5 + gsize + 16;
    struct ggml_init_params ip = {p_ggml_tensor_overhead() * ntens +
                                      p_ggml_graph_overhead_custom(gsize, false) + (1 << 20),
                                  NULL, true};
    struct ggml_context *ctx = p_ggml_init(ip);
    if (!ctx) die("ggml_init failed");
    weights *w = xmalloc(sizeof *w * R);
    for (int r = 0; r < R; r++) {
        w[r].router = p_ggml_new_tensor_2d(ctx, s->router_type, H, E);
        w[r].gate = p_ggml_new_tensor_3d(ctx, s->type, H, F, E);
        w[r].up = p_ggml_new_tensor_3d(ctx, s->type, H, F, E);
        w[r].down = p_ggml_new_tensor_3d(ctx, s->type, F, H, E);
        w[r].norm = p_ggml_new_tensor_1d(ctx, t_f32, H);
    }
    tensor *x0 = p_ggml_new_tensor_2d(ctx, t_f32, H, T);
    tensor *res0 = p_ggml_new_tensor_2d(ctx, t_f32, H, T);
    struct ggml_cgraph *gf = p_ggml_new_graph_custom(ctx, gsize, false);
    layer_out first = {0}, o = {0};
    tensor *x = x0, *res = res0;
    for (int l = 0; l < L; l++) {
        o = build_layer(ctx, gf, s, &w[l % R], x, res);
        if (l == 0) first = o;
        x = o.normed;
        res = o.y;
    }
    const int nodes = p_ggml_graph_n_nodes(gf);
    ggml_backend_buffer_t buf = p_ggml_backend_alloc_ctx_tensors(ctx, backend);
    if (!buf) die("ggml_backend_alloc_ctx_tensors failed (out of device memory?)");
    for (int r = 0; r < R; r++) {
        p_ggml_backend_tensor_set(w[r].gate, hw->gate, 0, (size_t)E * F * hw->row_h);
        p_ggml_backend_tensor_set(w[r].up, hw->up, 0, (size_t)E * F * hw->row_h);
        p_ggml_backend_tensor_set(w[r].down, hw->down, 0, (size_t)E * H * hw->row_f);
        if (s->router_type == t_f16)
            p_ggml_backend_tensor_set(w[r].router, hw->router_f16, 0, router_bytes);
        else
            p_ggml_backend_tensor_set(w[r].router, hw->router, 0, router_bytes);
        p_ggml_backend_tensor_set(w[r].norm, hw->norm, 0, H * sizeof(float));
    }
    const size_t xn = (size_t)H * T;
    float *xh = xmalloc(xn * sizeof(float)), *rh = xmalloc(xn * sizeof(float));
    rng_t g = {0x243F6A8885A308D3ull ^ (uint64_t)(T * 131 + s->type)};
    for (size_t i = 0; i < xn; i++) {
        xh[i] = nrand(&g);
        rh[i] = nrand(&g);
    }
    p_ggml_backend_tensor_set(x0, xh, 0, xn * sizeof(float));
    p_ggml_backend_tensor_set(res0, rh, 0, xn * sizeof(float));

    /* first compute (pipelines made), then >= opt_warm s of computes, then timed */
    char cap[512];
    snprintf(cap, sizeof cap, "%s/peerlayer-perf-%d.txt", capdir, (int)getpid());
    if (perf_on) capture("/dev/null");
    double tfirst = now_s();
    if (p_ggml_backend_graph_compute(backend, gf) != 0) {
        release();
        die("graph compute failed");
    }
    tfirst = now_s() - tfirst;
    int nwarm = 0;
    for (double t0 = now_s(); now_s() - t0 < opt_warm; nwarm++)
        p_ggml_backend_graph_compute(backend, gf);
    if (perf_on) {
        release();
        capture(opt_keep_perf ? opt_keep_perf : cap);
    }
    double *wall = xmalloc(sizeof(double) * opt_runs), *graph = xmalloc(sizeof(double) * opt_runs);
    for (int i = 0; i < opt_runs; i++) {
        double t0 = now_s();
        p_ggml_backend_graph_compute(backend, gf);
        graph[i] = (now_s() - t0) * 1e6;
        wall[i] = graph[i] / L;
    }
    if (perf_on) release();
    double wall_min = INFINITY;
    for (int i = 0; i < opt_runs; i++)
        wall_min = fmin(wall_min, wall[i]);
    double wall_us = median(wall, opt_runs), graph_us = median(graph, opt_runs);
    double kern_us = NAN;
    int nblocks = 0;
    if (perf_on) {
        double *kern = calloc(opt_runs + 8, sizeof(double));
        nblocks = parse_perf(opt_keep_perf ? opt_keep_perf : cap, L, kern, opt_runs + 8);
        if (nblocks > 0) kern_us = median(kern, nblocks);
        free(kern);
        if (!opt_keep_perf) unlink(cap);
    }

    /* ---- correctness: layer 0 against float64 on ggml's dequantized weights ---- */
    const size_t ids_bytes = p_ggml_nbytes(first.ids);
    int32_t *ids = xmalloc(ids_bytes);
    p_ggml_backend_tensor_get(first.ids, ids, 0, ids_bytes);
    /* argsort_top_k is a view of the full argsort: rows are E apart, derived
     * from its byte size so no field of ggml_tensor is read */
    const int64_t id_stride = T > 1 ? ((int64_t)(ids_bytes / 4) - K) / (T - 1) : K;
    float *yh = xmalloc(xn * sizeof(float)), *nh = xmalloc(xn * sizeof(float));
    p_ggml_backend_tensor_get(first.y, yh, 0, xn * sizeof(float));
    p_ggml_backend_tensor_get(first.normed, nh, 0, xn * sizeof(float));
    int ct = T < opt_check_tokens ? (int)T : opt_check_tokens;
    double *xd = xmalloc(sizeof(double) * (H > F ? H : F)), *act = xmalloc(sizeof(double) * F);
    double *acc = xmalloc(sizeof(double) * H), *p = xmalloc(sizeof(double) * E);
    float *tmp = xmalloc(sizeof(float) * (H > F ? H : F));
    double num = 0, den = 0, onum = 0, oden = 0;
    double *err = xmalloc(sizeof(double) * H * ct);
    int id_mismatch = 0, bad_ids = 0, nonfinite = 0;
    for (int c = 0; c < ct; c++) {
        int64_t t = ct == T ? c : (int64_t)c * (T - 1) / (ct - 1 > 0 ? ct - 1 : 1);
        for (int64_t h = 0; h < H; h++)
            xd[h] = xh[t * H + h];
        double mx = -INFINITY, z = 0;
        for (int e = 0; e < E; e++) {
            double a = 0;
            for (int64_t h = 0; h < H; h++)
                a += (double)hw->router[(size_t)e * H + h] * xd[h];
            p[e] = a;
            mx = fmax(mx, a);
        }
        for (int e = 0; e < E; e++)
            z += p[e] = exp(p[e] - mx);
        for (int e = 0; e < E; e++)
            p[e] /= z;
        const int32_t *tid = ids + t * id_stride;
        /* the float64 top-k as a set: a GPU id outside it is a near-tie swap */
        double kth = 0;
        {
            double *sorted = xmalloc(sizeof(double) * E);
            memcpy(sorted, p, sizeof(double) * E);
            qsort(sorted, E, sizeof(double), cmpd);
            kth = sorted[E - K];
            free(sorted);
        }
        bool mismatch = false;
        double wsum = 0;
        for (int j = 0; j < K; j++) {
            bool dup = false;
            for (int q = 0; q < j; q++)
                dup |= tid[q] == tid[j];
            if (tid[j] < 0 || tid[j] >= E || dup) {
                bad_ids++;
                continue;
            }
            mismatch |= p[tid[j]] < kth;
            wsum += p[tid[j]];
        }
        id_mismatch += mismatch;
        if (!s->norm_w)
            wsum = 1;
        else if (wsum < 6.103515625e-5)
            wsum = 6.103515625e-5;
        for (int64_t h = 0; h < H; h++)
            acc[h] = 0;
        for (int j = 0; j < K; j++) {
            int e = tid[j];
            if (e < 0 || e >= E) continue;
            for (int64_t f = 0; f < F; f++) {
                size_t row = (size_t)e * F + f;
                double gv = dot_row(tr, hw->gate + row * hw->row_h, H, xd, tmp);
                double uv = dot_row(tr, hw->up + row * hw->row_h, H, xd, tmp);
                act[f] = gv / (1 + exp(-gv)) * uv;
            }
            double wj = p[e] / wsum;
            for (int64_t h = 0; h < H; h++)
                acc[h] += wj * dot_row(tr, hw->down + ((size_t)e * H + h) * hw->row_f, F, act, tmp);
        }
        double ss = 0;
        for (int64_t h = 0; h < H; h++) {
            double yr = rh[t * H + h] + acc[h];
            ss += yr * yr;
        }
        double inv = 1 / sqrt(ss / H + s->eps);
        for (int64_t h = 0; h < H; h++) {
            double yr = rh[t * H + h] + acc[h];
            double got = yh[t * H + h], gotn = nh[t * H + h];
            if (!isfinite(got) || !isfinite(gotn)) nonfinite++;
            double e = got - yr, en = gotn - yr * inv * hw->norm[h];
            err[(size_t)c * H + h] = e;
            num += e * e;
            den += acc[h] * acc[h];
            onum += en * en;
            oden += (yr * inv * hw->norm[h]) * (yr * inv * hw->norm[h]);
        }
    }
    double rms = sqrt(den / ((double)H * ct)), maxe = 0;
    for (size_t i = 0; i < (size_t)H * ct; i++)
        maxe = fmax(maxe, fabs(err[i]) / rms);
    /* the experts layer 0 touched, for the bytes a layer reads */
    char *seen = calloc(E, 1);
    int distinct = 0;
    for (int64_t t = 0; t < T; t++)
        for (int j = 0; j < K; j++) {
            int32_t e = ids[t * id_stride + j];
            if (e >= 0 && e < E && !seen[e]) seen[e] = 1, distinct++;
        }
    free(seen);
    double mb_layer = (distinct * (double)expert_bytes + router_bytes) / 1e6;

    printf("RESULT case=moe_layer type=%s tokens=%lld hidden=%lld ffn=%lld E=%d topk=%d router=%s "
           "norm_w=%d R=%d layers=%d nodes=%d mb_layer=%.1f experts_hit=%d wall_us=%.2f "
           "wall_min_us=%.2f graph_us=%.1f kern_us=%.2f kern_runs=%d warm_computes=%d "
           "first_ms=%.0f gbs_wall=%.1f gbs_kern=%.1f relerr=%.2e relerr_out=%.2e maxerr=%.2e "
           "id_mismatch=%d bad_ids=%d nonfinite=%d checked_tokens=%d\n",
           p_ggml_type_name(s->type), (long long)T, (long long)H, (long long)F, E, K,
           p_ggml_type_name(s->router_type), s->norm_w, R, L, nodes, mb_layer, distinct, wall_us,
           wall_min, graph_us, kern_us, nblocks, nwarm, tfirst * 1e3,
           mb_layer * 1e6 / wall_us / 1e3, mb_layer * 1e6 / kern_us / 1e3, sqrt(num / den),
           sqrt(onum / oden), maxe, id_mismatch, bad_ids, nonfinite, ct);
    for (int i = 0; perf_on && nblocks > 0 && i < n_opsum; i++) {
        for (char *c = opsum[i].name; *c; c++)
            if (*c == ' ') *c = '_';
        printf("# op tokens=%lld %s: %.2f per layer, %.2f us per layer\n", (long long)T,
               opsum[i].name, (double)opsum[i].count / nblocks / L, opsum[i].us / nblocks / L);
    }
    fflush(stdout);
    free(err);
    free(tmp);
    free(p);
    free(acc);
    free(act);
    free(xd);
    free(yh);
    free(nh);
    free(ids);
    free(xh);
    free(rh);
    free(wall);
    free(graph);
    free(w);
    p_ggml_backend_buffer_free(buf);
    p_ggml_free(ctx);
}

static int type_by_name(const char *n) {
    for (int i = 0; i < 64; i++) {
        const char *nm = p_ggml_type_name(i);
        if (nm && !strcasecmp(nm, n)) return i;
    }
    return -1;
}

static int parse_list(const char *arg, int64_t *v, int max) {
    int n = 0;
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s", arg);
    for (char *t = strtok(tmp, ","); t && n < max; t = strtok(NULL, ",")) {
        char *end;
        long long x = strtoll(t, &end, 10);
        if (*end || x < 1) die("--tokens: expected a list of positive integers");
        v[n++] = x;
    }
    return n;
}

/* The number in an option's value, or exit 2 naming the option. */
static double num_arg(const char *opt, const char *v) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || !isfinite(x)) {
        fprintf(stderr, "peerlayer: %s: expected a number, got '%s'\n", opt, v);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help"))
        die("usage: peerlayer LIB [--types A,B] [--tokens 1,8,32,512] [--hidden H] [--ffn F] "
            "[--experts E] [--topk K] [--router f32|f16] [--no-norm-w] [--eps X] [--runs N] "
            "[--warmup-ms MS] [--rotate-mb MB] [--min-layers N] [--check-tokens N] "
            "[--keep-perf FILE] [--small]");
    const char *types = "q4_0,q8_0,q4_K,q6_K", *tokens = NULL, *router = "f32";
    int64_t H = 2048, F = 768;
    int E = 128, K = 8;
    bool norm_w = true, small = false;
    float eps = 1e-6f;
    bool set_rotate = false, set_warm = false, set_min = false;
    /* --small first, so that explicit options override its shapes */
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "--small")) small = true;
    if (small) H = 256, F = 256, E = 16, K = 4;
    for (int i = 2; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--small")) continue;
        if (!strcmp(a, "--no-norm-w")) {
            norm_w = false;
            continue;
        }
        if (!v) die("an option lacks its value (see --help)");
        i++;
        if (!strcmp(a, "--types"))
            types = v;
        else if (!strcmp(a, "--tokens"))
            tokens = v;
        else if (!strcmp(a, "--hidden"))
            H = (int64_t)num_arg(a, v);
        else if (!strcmp(a, "--ffn"))
            F = (int64_t)num_arg(a, v);
        else if (!strcmp(a, "--experts"))
            E = (int)num_arg(a, v);
        else if (!strcmp(a, "--topk"))
            K = (int)num_arg(a, v);
        else if (!strcmp(a, "--router"))
            router = v;
        else if (!strcmp(a, "--eps"))
            eps = (float)num_arg(a, v);
        else if (!strcmp(a, "--runs"))
            opt_runs = (int)num_arg(a, v);
        else if (!strcmp(a, "--warmup-ms"))
            opt_warm = num_arg(a, v) / 1e3, set_warm = true;
        else if (!strcmp(a, "--rotate-mb"))
            opt_rotate = num_arg(a, v) * 1e6, set_rotate = true;
        else if (!strcmp(a, "--min-layers"))
            opt_min_layers = (int)num_arg(a, v), set_min = true;
        else if (!strcmp(a, "--check-tokens"))
            opt_check_tokens = (int)num_arg(a, v);
        else if (!strcmp(a, "--keep-perf"))
            opt_keep_perf = v;
        else {
            fprintf(stderr, "peerlayer: unknown option %s (see --help)\n", a);
            exit(2);
        }
    }
    if (small) {
        /* lavapipe: tiny weights, so no rotation past an L2, few layers */
        if (!set_rotate) opt_rotate = 1e6;
        if (!set_warm) opt_warm = 0.1;
        if (!set_min) opt_min_layers = 4;
    }
    if (opt_runs < 20) die("--runs must be >= 20");
    if (H < 1 || F < 1 || E < 1 || K < 1 || K > E || K > 64 || E > 4096)
        die("bad shape: need hidden, ffn >= 1 and 1 <= topk <= min(experts, 64)");
    if (opt_min_layers < 1 || opt_check_tokens < 1) die("--min-layers and --check-tokens >= 1");
    int64_t tok[16];
    int ntok = parse_list(tokens ? tokens : small ? "1,4,16" : "1,8,32,512", tok, 16);
    if (getenv("TMPDIR")) capdir = getenv("TMPDIR");

    void *lib = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    if (!lib) die(dlerror());
#define LOAD(ret, name, args)                                                                      \
    p_##name = (ret(*) args)dlsym(lib, #name);                                                     \
    if (!p_##name)                                                                                 \
        die("missing symbol " #name " in "                                                         \
            "the library");
    FNS(LOAD)
    t_f32 = type_by_name("f32");
    t_f16 = type_by_name("f16");
    t_i32 = type_by_name("i32");
    if (t_f32 < 0 || t_f16 < 0 || t_i32 < 0) die("no f32, f16 or i32 type in this build");
    int rtype = type_by_name(router);
    if (rtype != t_f32 && rtype != t_f16) die("--router must be f32 or f16");
    perf_on = getenv("GGML_VK_PERF_LOGGER") != NULL;
    int ndev = p_ggml_backend_vk_get_device_count();
    char desc[256] = "";
    if (ndev > 0) p_ggml_backend_vk_get_device_description(0, desc, sizeof desc);
    printf("devices %d, device 0: %s, perf logger %s\n", ndev, desc, perf_on ? "on" : "off");

    char tl[256];
    snprintf(tl, sizeof tl, "%s", types);
    char *save = NULL;
    for (char *tn = strtok_r(tl, ",", &save); tn; tn = strtok_r(NULL, ",", &save)) {
        int type = type_by_name(tn);
        if (type < 0) {
            fprintf(stderr, "peerlayer: unknown type %s\n", tn);
            exit(2);
        }
        const struct type_traits *tr = p_ggml_get_type_traits(type);
        if (tr->blck_size != p_ggml_blck_size(type) || tr->type_size != p_ggml_type_size(type) ||
            !tr->to_float)
            die("type traits layout does not match this build");
        if (H % tr->blck_size || F % tr->blck_size) {
            fprintf(stderr, "peerlayer: hidden and ffn must be multiples of %s's block (%lld)\n",
                    tn, (long long)tr->blck_size);
            exit(2);
        }
        host_weights hw;
        hw.row_h = (size_t)(H / tr->blck_size * tr->type_size);
        hw.row_f = (size_t)(F / tr->blck_size * tr->type_size);
        double tq = now_s();
        hw.gate = make_weights(type, (int64_t)E * F, H, hw.row_h, 0x9E3779B97F4A7C15ull);
        hw.up = make_weights(type, (int64_t)E * F, H, hw.row_h, 0x3C6EF372FE94F82Aull);
        hw.down = make_weights(type, (int64_t)E * H, F, hw.row_f, 0xDAA66D2C7DDF743Full);
        printf("# %s: %.0f M expert weights quantized in %.2f s\n", tn, 3.0 * E * F * H / 1e6,
               now_s() - tq);
        /* router and norm weights: the same for every type, f16-rounded when f16 */
        rng_t g = {0xA4093822299F31D0ull};
        size_t rn = (size_t)E * H;
        hw.router = xmalloc(rn * sizeof(float));
        hw.router_f16 = xmalloc(rn * sizeof(uint16_t));
        for (size_t i = 0; i < rn; i++)
            hw.router[i] = nrand(&g) * 0.05f;
        p_ggml_fp32_to_fp16_row(hw.router, hw.router_f16, (int64_t)rn);
        if (rtype == t_f16) p_ggml_fp16_to_fp32_row(hw.router_f16, hw.router, (int64_t)rn);
        hw.norm = xmalloc(H * sizeof(float));
        for (int64_t h = 0; h < H; h++)
            hw.norm[h] = 1 + 0.1f * nrand(&g);
        for (int ti = 0; ti < ntok; ti++) {
            /* a fresh backend per case: with its fusions on, this ggml-vulkan
             * build crashed lavapipe on a graph of other shapes after the
             * first graph's buffers were freed (stale state in the backend) */
            backend = p_ggml_backend_vk_init(0);
            if (!backend) die("ggml_backend_vk_init(0) failed");
            shape s = {H, F, tok[ti], E, K, type, rtype, norm_w, eps};
            run_case(&s, &hw);
            p_ggml_backend_free(backend);
        }
        free(hw.gate);
        free(hw.up);
        free(hw.down);
        free(hw.router);
        free(hw.router_f16);
        free(hw.norm);
    }
    return 0;
}
