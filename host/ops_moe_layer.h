/* A whole MoE feed-forward layer recorded as an engine records it: router,
 * top-k, routing, gate/up with SwiGLU, down, weighted sum with residual and
 * RMSNorm, one chain of dispatches with barriers only where one reads what
 * another wrote, checked against float64. `qkgen bench --layer` times it and
 * the GPU tests run it, and qk_run_moe_ffn runs its expert part alone: this is
 * the one copy of its recording. */
#ifndef QK_OPS_MOE_LAYER_H
#define QK_OPS_MOE_LAYER_H

#include "ops_moe.h"
#include "qkrt_ops.h"

/* The layer's choice and recording are libqkrt's operations layer
 * (qkrt_ops.h: qkrt_moe_plan); this file adds what a benchmark and a test
 * need around it: random weights in copies, and the float64 check. */
#define QK_MOE_DECODE_TOKENS QKRT_MOE_DECODE_TOKENS
typedef qkrt_moe_kernels qk_moe_kernels;
typedef qkrt_fuse qk_fuse;
#define QK_FUSE_AUTO   QKRT_FUSE_AUTO
#define QK_FUSE_ALWAYS QKRT_FUSE_ALWAYS
#define QK_FUSE_NEVER  QKRT_FUSE_NEVER
#define QK_FUSE_RANKED QKRT_FUSE_RANKED
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

/* The kernels an engine would run for the layer: qkrt_moe_plan_create's
 * (qkrt_ops.h). An error with its message when a kernel is missing. */
qkrt_result qk_moe_layer_pick(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                              qk_moe_kernels *k, char *err, size_t err_size);

enum { QK_MOE_LAYER_MAX_DISPATCHES = QKRT_CHAIN_MAX, QK_MOE_LAYER_MAX_COPIES = 64 };

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
