/* Host-side operations for the prefill kernels (matmul, matmul_id, moe_route)
 * shared by the GPU tests, the CLI and the benchmarks: running them on
 * buffers, and their float64 CPU references over the dequantizers of tests/ref. */
#ifndef QK_OPS_MATMUL_H
#define QK_OPS_MATMUL_H

#include "ops.h"

/* true if the kernel can take depth K; else false with a message naming the
 * format's block, e.g. "K = 100 is not a multiple of the q4_0 block (32 elements)". */
bool qk_matmul_k_ok(const qkrt_kernel_info *k, uint32_t K, char *msg, size_t size);

/* x[0..n) as IEEE half bits, rounded to nearest even (inf past 65504): the
 * activations of kernels on f16 activations (activations: f16). */
void qk_f16_from_f32(const float *x, size_t n, uint16_t *h);

/* The activations kernel k reads, from x[0..n): x itself (*owned NULL) or a
 * copy in its activation type (*owned, freed by the caller); *bytes their
 * size. */
const void *qk_activations_for(const qkrt_kernel_info *k, const float *x, size_t n, void **owned,
                               size_t *bytes);

/* y[T, M] = x[T, K] * W[M, K]^T with matmul kernel ki. w holds one matrix per
 * weight binding slot of the kernel (2 under the swiglu fusion: gate, up).
 * y is poisoned with NaN before the run. ns (optional) gets the GPU time. */
qkrt_result qk_run_matmul(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, const qk_weights *w,
                          const float *x, uint32_t M, uint32_t K, uint32_t T, float *y, double *ns,
                          char *err, size_t err_size);

/* An MoE prefill problem: E stacked experts of M x K (w[m], one per weight
 * slot of the kernel), T tokens routed to top_k experts each (topk[T * top_k],
 * the expert of pair p = token * top_k + slot), activations x [T, ne11, K]
 * with ne11 = 1 (gate/up) or top_k (down). Output y [T, top_k, M]. */
typedef struct qk_moe_shape {
    uint32_t M, K, T, E, top_k, ne11;
} qk_moe_shape;

/* The routing on the CPU, the reference for moe_route: tpe[E] and
 * ids[E * max_per_expert], pairs of each expert in increasing order. */
void qk_route_ref(const int32_t *topk, uint32_t T, uint32_t top_k, uint32_t E,
                  uint32_t max_per_expert, uint32_t *tpe, uint32_t *ids);

/* matmul_id kernel ki on routing built on the host (qk_route_ref, with
 * max_per_expert = T); y poisoned with NaN first. */
qkrt_result qk_run_matmul_id(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                             const qk_weights *w, const float *x, const int32_t *topk,
                             const qk_moe_shape *s, float *y, double *ns, char *err,
                             size_t err_size);

/* moe_route kernel ki: tpe[E], ids[E * T] and disp[6] (the indirect arguments
 * for consumers with x groups gx[i] and column tiles tn[i]). */
qkrt_result qk_run_moe_route(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                             const int32_t *topk, uint32_t T, uint32_t top_k, uint32_t E,
                             const uint32_t gx[2], const uint32_t tn[2], uint32_t *tpe,
                             uint32_t *ids, uint32_t *disp, char *err, size_t err_size);

/* float64 references. nw matrices (1, or 2 with swiglu: y = silu(g) * u). */
bool qk_ref_matmul(const qk_weights *w, uint32_t nw, const double *x, uint32_t M, uint32_t K,
                   uint32_t T, double *y);
bool qk_ref_matmul_id(const qk_weights *w, uint32_t nw, const double *x, const int32_t *topk,
                      const qk_moe_shape *s, double *y);
/* The gate/up combine of fusion `fusion` in float64: "swiglu" (and any other
 * name) silu(g) * u; "swiglu_oai" gpt-oss's clamped form, at the stage's
 * alpha 1.702 and limit 7: min(g, 7) * sigmoid(1.702 * min(g, 7)) *
 * (clamp(u, -7, 7) + 1). */
double qk_ref_glu(const char *fusion, double g, double u);
/* qk_ref_matmul and qk_ref_matmul_id whose two matrices (nw = 2) combine as
 * fusion's qk_ref_glu (nw = 1: as those). */
bool qk_ref_matmul_glu(const qk_weights *w, uint32_t nw, const char *fusion, const double *x,
                       uint32_t M, uint32_t K, uint32_t T, double *y);
bool qk_ref_matmul_id_glu(const qk_weights *w, uint32_t nw, const char *fusion, const double *x,
                          const int32_t *topk, const qk_moe_shape *s, double *y);

/* The weights of expert e of E stacked ones (a view: nothing is copied). */
qk_weights qk_weights_expert(const qk_weights *w, uint32_t e, uint32_t E);

/* ---------------------------------------------------------------- two-pass
 * The two-pass prefill (docs/matmul.md): pass 1, a dequant kernel, writes
 * the weights as f16w blocks (plain halves, row-major) into a scratch; pass 2
 * is the matmul (matmul_id) kernel of format f16w on that scratch. */

#define QK_F16W     "f16w"      /* the format of pass 2's weights (specs/formats/f16w.yaml) */
#define QK_F16_NAN2 0x7e007e00u /* two quiet f16 NaNs: unwritten halves show */

/* *bytes = the scratch pass 1 of dequant kernel k writes for E matrices of
 * M x K (its output binding's manifest size); false (why in err) if the
 * kernel has none or the expression fails. */
bool qk_dequant_bytes(const qkrt_kernel_info *k, uint32_t M, uint32_t K, uint32_t E, size_t *bytes,
                      char *err, size_t err_size);

/* Pass 1 alone: dequant kernel dqi over E stacked M x K matrices w into
 * h[E * M * K] (halves' bits), which starts as QK_F16_NAN2. tpe[E] (NULL for
 * the dense kernel) is required by a dequant_id kernel: the experts with
 * tpe[e] == 0 stay NaN. ns (optional) gets the GPU time. */
qkrt_result qk_run_dequant(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi,
                           const qk_weights *w, uint32_t M, uint32_t K, uint32_t E,
                           const uint32_t *tpe, uint16_t *h, double *ns, char *err,
                           size_t err_size);

/* y[T, M] = x[T, K] * W[M, K]^T in two passes, one submission: dequant
 * kernel dqi (w's format), a barrier, matmul kernel mmi (format f16w, no
 * fusion) on the scratch. ns (optional) gets each pass's GPU time. y and the
 * scratch are poisoned with NaN first. */
qkrt_result qk_run_matmul_two_pass(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi,
                                   uint32_t mmi, const qk_weights *w, const float *x, uint32_t M,
                                   uint32_t K, uint32_t T, float *y, double ns[2], char *err,
                                   size_t err_size);

/* The MoE form (as qk_run_matmul_id, routing built on the host): pass 1 over
 * the experts the routing touches when dqi reads tpe (dequant_id), else over
 * all E; pass 2 the matmul_id kernel mmi of format f16w. */
qkrt_result qk_run_matmul_id_two_pass(qkrt_context *ctx, const qkrt_bundle *b, uint32_t dqi,
                                      uint32_t mmi, const qk_weights *w, const float *x,
                                      const int32_t *topk, const qk_moe_shape *s, float *y,
                                      double ns[2], char *err, size_t err_size);

#endif
