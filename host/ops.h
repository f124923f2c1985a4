/* Host-side operations over libqkrt shared by the CLI, the benchmarks and the
 * GPU tests: choosing a kernel of a bundle, running a quantized product, and
 * computing its CPU reference. */
#ifndef QK_OPS_H
#define QK_OPS_H

#include "qkrt_bench.h" /* libqkrt and its timing hooks (qkrt_run_timed) */
#include "qkrt_ops.h"   /* the operations layer: kernel choice, MoE layer plans */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Quantized weights of one matrix (or E stacked ones): one plane for block
 * formats, w / scales / biases for planar ones. */
typedef struct qk_weights {
    const char *format;  /* "q4_0", "mlx4_g64" */
    const char *variant; /* "" or the scale type of MLX formats, "bf16" */
    uint32_t plane_count;
    const void *plane[4];
    size_t bytes[4];
} qk_weights;

/* Room for what a qkrt_dispatch points to (its buffers, its shape's names
 * and values), for the host operations that fill dispatches; qk_slots_use
 * points d at it. */
enum { QK_MAX_BUFFERS = 32, QK_MAX_VARS = 16 };
typedef struct qk_slots {
    qkrt_buffer *buffers[QK_MAX_BUFFERS];
    const char *names[QK_MAX_VARS];
    int64_t values[QK_MAX_VARS];
} qk_slots;

/* d's buffers and shape point into s; nbuf buffers and nvars variables. */
static inline void qk_slots_use(qkrt_dispatch *d, qk_slots *s, uint32_t nbuf, uint32_t nvars) {
    d->buffer_count = nbuf;
    d->buffers = s->buffers;
    d->shape = (qkrt_shape){nvars, s->names, s->values};
}

/* A qkrt_shape over two arrays of the same length. */
#define QK_SHAPE(names, values)                                                                    \
    ((qkrt_shape){sizeof(names) / sizeof((names)[0]), (names), (values)})

/* Whether a shape (M, K, T and, for MoE kernels, E, top_k, ne11 and
 * max_per_expert) meets every constraint of kernel k; M is also N, the row
 * length of the kernels that name their output's width so (moe_combine). */
bool qk_kernel_fits(const qkrt_kernel_info *k, uint32_t M, uint32_t K, uint32_t T, uint32_t E,
                    uint32_t top_k, uint32_t ne11, uint32_t max_per_expert);

/* Index of the best kernel of family for (format, variant, activation) that
 * the device can run and whose constraints depth K meets (0: any depth), or
 * -1 (why in err). */
int qk_pick_kernel(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const qk_weights *w,
                   const char *activation, uint32_t K, uint32_t tokens, char *err, size_t err_size);
/* The same among the kernels of that fusion ("swiglu": gate and up in one
 * kernel); qk_pick_kernel is its "none". */
int qk_pick_fused(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const char *fusion,
                  const qk_weights *w, const char *activation, uint32_t K, uint32_t tokens,
                  char *err, size_t err_size);

/* y[T, M] = x[T, K] * W[M, K]^T on the device with kernel index ki. y is
 * poisoned with NaN before the run. ns (optional) gets the GPU time. */
qkrt_result qk_run_matvec(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, const qk_weights *w,
                          const float *x, uint32_t M, uint32_t K, uint32_t T, float *y, double *ns,
                          char *err, size_t err_size);

/* The CPU references: a format's declared reference (its YAML `reference:`,
 * compiled by gen/format and registered here by the CLI before it runs
 * anything), else the independent C dequantizers of tests/ref. */

/* Registers d (owned from now on) as the reference of format (variant: its
 * option, "" none); qk_ref_declared_clear frees them all. */
struct qk_decode;
void qk_ref_declare(const char *format, const char *variant, struct qk_decode *d);
void qk_ref_declared_clear(void);
/* Whether (format, variant) has a reference, declared or built in. */
bool qk_ref_has(const char *format, const char *variant);
/* Why this thread's last qk_random_weights or reference failed: the format
 * has none (QK_NO_REFERENCE), or its reference failed on a block. */
const char *qk_ref_why(void);
#define QK_NO_REFERENCE                                                                            \
    "no CPU reference for format %s: declare reference: in its YAML (docs/new-format.md)"

/* Elements and bytes of a block of a block format with a reference; false
 * for a planar format or one without. */
bool qk_ref_block_format(const char *format, const char *variant, uint32_t *elements,
                         uint32_t *bytes);
/* out[M * K] = the M rows of w through its reference (false: qk_ref_why). */
bool qk_ref_dequant(const qk_weights *w, uint32_t M, uint32_t K, double *out);

/* The CPU reference in float64 (a declared one, else tests/ref's); false if
 * there is none for the format or it fails (qk_ref_why says which). */
bool qk_ref_matvec(const qk_weights *w, const double *x, uint32_t M, uint32_t K, uint32_t T,
                   double *y);

/* The sum of each output's squared terms, sum_k (W[r][k] x[t][k])^2: what a
 * sum of random-signed terms has as its expected square. A test of few
 * outputs measures its error against it too, since one result may cancel to
 * near zero and an f32 sum's error does not shrink with it. */
bool qk_ref_matvec_sq(const qk_weights *w, const double *x, uint32_t M, uint32_t K, uint32_t T,
                      double *y2);

/* Random valid weights for M x K: fills planes (malloc'd, caller frees each
 * plane) from the seed. NULL, or why not (the format has no reference,
 * its declared reference is not finite on a random block, or the host has
 * no memory for them: nothing is left allocated; qk_ref_why says it too). */
const char *qk_random_weights_try(const char *format, const char *variant, uint32_t M, uint32_t K,
                                  uint64_t *rng, qk_weights *w);
/* qk_random_weights_try: true where it made them. */
bool qk_random_weights(const char *format, const char *variant, uint32_t M, uint32_t K,
                       uint64_t *rng, qk_weights *w);
void qk_free_weights(qk_weights *w);

/* NMSE = sum((out - ref)^2) / sum(ref^2) (the denominator floored at f32's
 * smallest normal squared per element); NaN in out gives +inf. */
double qk_nmse(const float *out, const double *ref, size_t n);

/* The NMSE bound a product kernel is held to: 5e-4 where it stages f16
 * operands (tiled matmuls, cooperative-matrix paths; ggml's bound for them),
 * 1e-6 for f32 paths, 1e-4 for the int8-dot paths against activations
 * rounded by qk_round_x8. */
double qk_nmse_bound(const qkrt_kernel_info *k);

/* Whether kernel k rounds its activations to 8 bits (math path dot8), so that
 * its reference takes them through qk_round_x8. */
bool qk_rounds_x8(const qkrt_kernel_info *k);

/* Whether kernel k reads its activations pre-quantized: a binding of role
 * activations_q8, the q8 rows (templates/include/q8.glsl) that the bundle's
 * quantize kernel writes from the f32 activations first. */
bool qk_takes_q8(const qkrt_kernel_info *k);

/* Index of the bundle's quantize kernel (family "quantize", writing
 * activations_q8) that this device runs, or -1 (why in err). */
int qk_find_quantizer(qkrt_context *ctx, const qkrt_bundle *b, char *err, size_t err_size);

/* *bytes = the size of kernel k's scratch binding (role "scratch": the
 * split-K kernels' partial sums and counters) for the shape, from its
 * manifest size expression; 0 when it has none. False (why in err) if the
 * expression fails. A host allocates it zero-filled and gives each dispatch
 * in flight its own. */
bool qk_scratch_bytes(const qkrt_kernel_info *k, const qkrt_shape *shape, size_t *bytes, char *err,
                      size_t err_size);

/* Bytes of `rows` q8 rows of K activations: 5 K / 4 each. */
size_t qk_q8_bytes(uint32_t rows, uint32_t K);

/* xd[i] = x[i] rounded as the int8-dot kernels do (templates/matvec_xq.comp):
 * per 32-element group (n and the rows a multiple of 32), in f32,
 * q = rint(x * (127 * (1 / max|x|))), each operation rounded to f32, and
 * x = q * (max|x| / 127). */
void qk_round_x8(double *xd, const float *x, size_t n);

#endif
