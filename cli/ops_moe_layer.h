/* A whole MoE feed-forward layer recorded as an engine records it: router,
 * top-k, routing, gate/up with SwiGLU, down, weighted sum with residual and
 * RMSNorm, one chain of dispatches with barriers only where one reads what
 * another wrote, checked against float64. `qkgen bench --layer` times it and
 * the GPU tests run it, and qk_run_moe_ffn runs its expert part alone: this is
 * the one copy of its recording. */
#ifndef QK_OPS_MOE_LAYER_H
#define QK_OPS_MOE_LAYER_H

#include "ops_moe.h"

/* Tokens up to which a layer takes the decode path (router mat-vec, expert
 * mat-vecs reading the router's ids) by default; above it the prefill path
 * (router matmul, moe_route, expert matmuls with ids through indirect
 * dispatch). 8, where qkgen matmul and the tuned model sets change over. */
#define QK_MOE_DECODE_TOKENS 8u

/* The kernels of a layer (indices in the bundle; -1: not used). */
typedef struct qk_moe_kernels {
    int router;       /* matvec or matmul: logits [T, E] = x Wr^T */
    int topk;         /* router_topk, renorm: ids and routing weights [T, top_k]; the same
                         kernel as router where it computes the logits itself */
    int route;        /* moe_route (prefill path): pairs per expert, indirect arguments */
    int gate_up;      /* swiglu-fused matvec_id / matmul_id: act = silu(x Wg^T) * (x Wu^T) */
    int gate;         /* without a fused kernel: this plain one for gate and for up, */
    int glu;          /* and then the elementwise swiglu kernel */
    int down;         /* matvec_id / matmul_id: slots [T, top_k, H] = act Wd^T */
    int combine;      /* moe_combine residual_rmsnorm; with the down projection inside
                         (slots computed) where down is -1 */
    bool routed;      /* the prefill path (route set; gate_up, gate and down are matmul_id) */
    bool ranked;      /* gate_up ranks the router's logits itself (matvec_id_ranked): no
                         topk kernel; it writes the ids and routing weights */
    bool selected[3]; /* router, gate/up, down came from the bundle's select table */
} qk_moe_kernels;

/* Whether a layer runs two of its steps as one kernel: QK_FUSE_AUTO as
 * qk_moe_layer_pick says, QK_FUSE_ALWAYS always one kernel, QK_FUSE_NEVER
 * always apart.
 * - gate and up: one swiglu-fused kernel (auto: where the bundle has one;
 *   always: the selected kernel's sibling, else the CLI's choice among the
 *   fused ones), apart the plain product twice and the swiglu kernel;
 * - the router: router_topk computing its logits (axis logits=computed;
 *   auto: on the decode path where the bundle has one for the format and
 *   shape), apart the router product and router_topk;
 * - down and the combine: moe_combine computing its slots (axis
 *   slots=computed, the down projection inside; always: on the decode path
 *   where the bundle has one for the format), apart the down product and
 *   moe_combine; auto keeps them apart.
 * QK_FUSE_RANKED (the router only): the top-k inside gate/up instead, on the
 * decode path: the router's mat-vec, then the gate/up kernel's ranked form
 * (its name's routing "-ids" read "-ranked", qk_ranked_name) ranking the
 * logits itself; one dispatch fewer than split, no last-arrival meeting.
 * The router's auto takes it where the bundle has the ranked form, else the
 * computing router_topk. The prefill path keeps router_topk (moe_route reads
 * its ids). */
typedef enum qk_fuse { QK_FUSE_AUTO, QK_FUSE_ALWAYS, QK_FUSE_NEVER, QK_FUSE_RANKED } qk_fuse;

/* A layer's problem: T tokens of hidden size H, E experts of F rows each, top_k per token. */
typedef struct qk_moe_layer_desc {
    const char *format, *variant; /* the weights' format, e.g. "q4_0"; variant "" or "bf16" */
    uint32_t T, H, F, E, top_k;
    /* weight copies, each a whole layer, until the bytes one run reads add up
     * past this, so that runs in turn read their weights from DRAM; 0: one */
    uint64_t rotate_bytes;
    uint64_t max_bytes;  /* at most this much in copies (0: no bound) */
    uint64_t *rng;       /* random weights and activations from here */
    uint32_t decode_max; /* the decode path up to this many tokens; 0: QK_MOE_DECODE_TOKENS */
    qk_fuse gate_up;     /* gate and up as one kernel (qk_moe_layer_pick) */
    qk_fuse router;      /* the router and top-k as one kernel (qk_moe_layer_pick) */
    qk_fuse down;        /* down and the combine as one kernel (qk_moe_layer_pick) */
} qk_moe_layer_desc;

/* The kernels an engine would run for the layer: the bundle's select table
 * where it has one (qkrt_select: router, gate/up and down; the fused swiglu
 * kernel of the selected one's name plus "_swiglu" where the bundle has
 * it), else qk_pick_kernel's choice (a fused swiglu kernel where the bundle
 * has one); without a fused kernel, gate and up separately and the swiglu
 * kernel. Above d->decode_max tokens the prefill kernels (router matmul;
 * moe_route and matmul_id) where the bundle has ones that this device runs
 * and the shape fits, else the decode ones. QKRT_ERROR_ARGUMENT
 * with a message when a kernel is missing. */
qkrt_result qk_moe_layer_pick(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                              qk_moe_kernels *k, char *err, size_t err_size);

enum { QK_MOE_LAYER_MAX_DISPATCHES = 12, QK_MOE_LAYER_MAX_COPIES = 64 };

typedef struct qk_moe_layer qk_moe_layer;

/* Random weights (router [E, H], gate and up [E, F, H], down [E, H, F]),
 * activations scaled so the gates stay in the range real ones have, a
 * residual and norm weights; their buffers on the device (the weights in
 * copies, see rotate_bytes) and every copy's dispatches. A kernel on
 * pre-quantized activations gets the bundle's quantizer before it. */
qkrt_result qk_moe_layer_create(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_kernels *k,
                                const qk_moe_layer_desc *d, qk_moe_layer **out, char *err,
                                size_t err_size);
void qk_moe_layer_destroy(qkrt_context *ctx, qk_moe_layer *L);

/* The dispatches of weight copy `copy` (*n of them), in order, each that
 * reads an earlier one's output marked `depends`: what an engine records
 * into one command buffer (qkrt_cmd_dispatch), and what qkrt_run_span runs
 * with barriers only there. */
const qkrt_dispatch *qk_moe_layer_dispatches(const qk_moe_layer *L, uint32_t copy, uint32_t *n);
uint32_t qk_moe_layer_copies(const qk_moe_layer *L);
/* Bytes a run reads: the router's weights, the gate, up and down weights of
 * the experts the tokens chose (*experts of them), and the activations. Known
 * after qk_moe_layer_check. */
double qk_moe_layer_bytes(const qk_moe_layer *L, uint32_t *experts);

/* The result of a layer against float64, stage by stage: the logits, the
 * routing (from the device's logits, so that both pick the same experts),
 * gate/up, then down, the residual sum and its RMSNorm from the reference's
 * own gate/up (the whole layer end to end). */
typedef struct qk_moe_check {
    double logits, route_w, act, slots, y, normed; /* NMSE of each */
    bool ids_match;
    double bound; /* of act, slots, y and normed; logits: bound_logits */
    double bound_logits;
    bool ok;
    char error[512]; /* a run that failed, or what is wrong */
} qk_moe_check;

/* Runs every weight copy once as qkrt_run_span records it (outputs poisoned
 * with NaN before each) and checks each against the reference; *c holds each
 * stage's worst NMSE over the copies. QKRT_OK when it ran (c->ok says
 * whether it was right). */
qkrt_result qk_moe_layer_check(qkrt_context *ctx, qk_moe_layer *L, qk_moe_check *c);

/* A MoE feed-forward block in one submission, with no host round trip: the
 * layer's expert part on the caller's kernels, ids, x and weights. moe_route
 * (kernel route_ki) from topk, then matmul_id gate_up_ki (the swiglu fusion:
 * h = silu(x Wg^T) * (x Wu^T), [T, top_k, F]) and matmul_id down_ki (y = h
 * Wd^T, [T, top_k, H]) both through vkCmdDispatchIndirect on the arguments
 * moe_route wrote (and the bundle's quantizer before a kernel on
 * pre-quantized activations). wgu: gate and up [E, F, H]; wd: [E, H, F]. h
 * (optional) receives the intermediate. */
qkrt_result qk_run_moe_ffn(qkrt_context *ctx, const qkrt_bundle *b, uint32_t route_ki,
                           uint32_t gate_up_ki, uint32_t down_ki, const qk_weights wgu[2],
                           const qk_weights *wd, const float *x, const int32_t *topk, uint32_t T,
                           uint32_t top_k, uint32_t E, uint32_t H, uint32_t F, float *h, float *y,
                           char *err, size_t err_size);

#endif
