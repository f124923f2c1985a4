/* Host-side MoE and post-op operations over libqkrt, shared by the CLI and the
 * GPU tests: binding device buffers to kernels by name, the mat-vec with expert
 * ids, and float64 CPU references of the router, the combine and SwiGLU. */
#ifndef QK_OPS_MOE_H
#define QK_OPS_MOE_H

#include "ops.h"
#include "ops_matmul.h" /* qk_weights_expert */

/* One weight matrix (or a stack of experts) on the device: one buffer per
 * plane, in the order of the kernel's weight bindings. */
typedef struct qk_wbufs {
    uint32_t plane_count;
    qkrt_buffer *plane[4];
} qk_wbufs;

/* A device buffer for the kernel binding of that name. */
typedef struct qk_bind {
    const char *name;
    qkrt_buffer *buf;
} qk_bind;

enum { QK_MOE_MAX_MATS = 8 };

/* Fills d (zeroed first) for kernel ki, its buffers and shape kept in s
 * (which must live as long as d is used): weight binding slot m takes
 * mats[m] (mats[nmats - 1] for slots past nmats, so an 8-slot array may hold
 * fewer experts), every other binding the buffer of its name in binds; the
 * shape from names/values. QKRT_ERROR_ARGUMENT with a message if a binding
 * has no buffer. */
qkrt_result qk_dispatch_setup(const qkrt_bundle *b, uint32_t ki, const qk_wbufs *mats,
                              uint32_t nmats, const qk_bind *binds, uint32_t nbinds,
                              const char *const *names, const int64_t *values, uint32_t nvars,
                              qkrt_dispatch *d, qk_slots *s, char *err, size_t err_size);

/* Creates a buffer holding bytes of data (data NULL: filled with NaN). */
qkrt_result qk_buffer_from(qkrt_context *ctx, const void *data, size_t bytes, qkrt_buffer **out);
/* Uploads the planes of w; qk_wbufs_destroy frees them. */
qkrt_result qk_wbufs_upload(qkrt_context *ctx, const qk_weights *w, qk_wbufs *out);
void qk_wbufs_destroy(qkrt_context *ctx, qk_wbufs *wb);

/* The MoE mat-vec: y[T, top_k, M] with pair p = t * top_k + s using expert
 * ids[p] of the weights; x is [T, ne11, K]. Kernel families: "matvec_id"
 * (w[0] stacked experts; swiglu variants take w[0] gates, w[1] ups, nw = 2,
 * E experts each) and "matvec_id_sep" (w[0..nw) one expert each, ids index
 * them). y is poisoned with NaN before the run. A kernel on pre-quantized
 * activations (qk_takes_q8) runs after the bundle's quantizer, and *ns is
 * then the time of both. */
qkrt_result qk_run_matvec_id(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                             const qk_weights *w, uint32_t nw, const int32_t *ids, const float *x,
                             uint32_t M, uint32_t K, uint32_t T, uint32_t top_k, uint32_t ne11,
                             uint32_t E, float *y, double *ns, char *err, size_t err_size);

/* Reference of the above: experts[i] is the matrix id i names (a view of a
 * stack, or a separate matrix); with up non-NULL, y = silu(gate) * up where
 * up[i] is the up matrix of id i. */
bool qk_ref_matvec_id(const qk_weights *experts, const qk_weights *up, const int32_t *ids,
                      const double *x, uint32_t M, uint32_t K, uint32_t T, uint32_t top_k,
                      uint32_t ne11, double *y);

/* The name of the ranked form (routing ranked, family matvec_id_ranked: the
 * router's top-k inside) of matvec_id kernel `name` with the swiglu fusion:
 * its routing value "-ids" read "-ranked", and "_swiglu" at the end where
 * name lacks it. False when name has no "-ids" value or out is too small. */
bool qk_ranked_name(const char *name, char *out, size_t out_size);

/* silu(g) * u in float64. */
double qk_ref_swiglu(double g, double u);

/* Router reference: softmax over logits[t][0..E), the top_k experts by logit
 * (ties to the lower index), their probabilities, renormalised to sum 1 when
 * renorm. */
void qk_ref_router(const double *logits, uint32_t T, uint32_t E, uint32_t top_k, bool renorm,
                   int32_t *ids, double *w);

/* The routing forms (router_topk's fusions): softmax over all E then top-k
 * (none, renorm), top-k by logit then softmax over the k (topk_softmax:
 * gpt-oss), sigmoid scores with a correction bias for choosing, grouped
 * top-k, the chosen scores normalised and scaled (sigmoid_bias: DeepSeek-V3).
 * A zero form is softmax_topk without renormalisation. */
typedef enum qk_route_kind {
    QK_ROUTE_SOFTMAX_TOPK,
    QK_ROUTE_TOPK_SOFTMAX,
    QK_ROUTE_SIGMOID_BIAS
} qk_route_kind;

typedef struct qk_route_form {
    qk_route_kind kind;
    bool renorm;                  /* softmax_topk: weights renormalised to sum 1 */
    const double *bias;           /* sigmoid_bias: [E], added for choosing only */
    uint32_t n_group, topk_group; /* sigmoid_bias: grouped top-k (0 reads 1) */
    double scale;                 /* sigmoid_bias: the routed scaling factor */
} qk_route_form;

/* The form of router_topk fusion `fusion` (its parameters left zero); false
 * for a name that is no routing form. */
bool qk_route_form_of(const char *fusion, qk_route_form *f);

/* Router reference of every form: ids[t][s] the s-th chosen expert (by
 * logit, or biased score among the kept groups; ties to the lower id, groups
 * too), w[t][s] its weight; choice (optional, [T, E]) gets the score each
 * expert was ranked by (the logit, or sigmoid + bias; -inf outside the kept
 * groups), for telling a near tie from a wrong pick. */
void qk_ref_route(const double *logits, uint32_t T, uint32_t E, uint32_t top_k,
                  const qk_route_form *f, int32_t *ids, double *w, double *choice);

/* Combine reference: y[t] = residual[t] (if non-NULL) + sum_s w[t][s] *
 * slots[t][s]; with norm_w non-NULL, normed[t] = y[t] / sqrt(mean(y[t]^2) + eps) * norm_w. */
void qk_ref_combine(const double *slots, const double *w, const double *residual,
                    const double *norm_w, double eps, uint32_t T, uint32_t top_k, uint32_t N,
                    double *y, double *normed);

/* The shared-expert fusions' reference (shared_rmsnorm, gated_shared_rmsnorm):
 * residual[t][i] += g * shared[t][i], g = sigmoid(gate[t]) where gate is
 * non-NULL, else 1; qk_ref_combine on that residual is then the layer's. */
void qk_ref_shared_into(const double *shared, const double *gate, uint32_t T, uint32_t N,
                        double *residual);

#endif
