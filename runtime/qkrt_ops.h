/* libqkrt's operations layer: an engine describes an operation once (a
 * quantized product, with or without expert ids, or a whole MoE layer) and
 * gets a plan that owns the kernel choice (the bundle's select table, then
 * the default choice), the quantizer pre-pass, the working buffers' sizes and
 * the barriers; it then records the plan into its own command buffer with
 * its buffers bound by role. `qkgen matmul`, `qkgen bench`, the GPU tests and
 * the tuner choose through these functions, so that they and an engine pick
 * the same kernel for the same query. */
#ifndef QKRT_OPS_H
#define QKRT_OPS_H

#include "qkrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- choosing one kernel ---- */

/* A query: which family, fusion, weights and shape. Zero sizes stand for 1,
 * except K: 0 takes any depth. */
typedef struct qkrt_op_query {
    const char *op;          /* a kernel family: "matvec", "matmul_id", "router_topk", ... */
    const char *fusion;      /* NULL: "none"; "swiglu", "renorm", "residual_rmsnorm" */
    const char *format;      /* "q4_0", "mlx4_g64"; NULL: the kernels without weights */
    const char *variant;     /* the format option ("bf16"); NULL or "": any */
    const char *activations; /* NULL: "f32"; "f16" */
    uint32_t M, K, T, E, top_k, ne11;
    /* matmul_id: the length of each expert's row of pair indices (ids
     * [E, max_per_expert]) and the bound of its token tiles; 0: T, what
     * moe_route writes. An engine that routes on the host and knows the
     * busiest expert's pairs passes that count. */
    uint32_t max_per_expert;
} qkrt_op_query;

typedef enum qkrt_op_source {
    QKRT_OP_DEFAULT = 0,  /* the default choice (no select rule answered) */
    QKRT_OP_SELECTED = 1, /* the bundle's select table */
} qkrt_op_source;

typedef struct qkrt_op_choice {
    uint32_t kernel;          /* index in the bundle */
    int32_t prepass;          /* the quantize kernel that writes the kernel's q8 activations
                                 first (its manifest "prepass"), or -1 */
    qkrt_op_source source;    /* where the choice came from */
    qkrt_selection selection; /* QKRT_OP_SELECTED: the level that answered and the device
                                 its rules were tuned on (qkrt_select_ex) */
} qkrt_op_choice;

/* The kernel for q on this device: for the four products without a fusion,
 * the bundle's select table where a rule answers (qkrt_select_activations);
 * else the default choice: among the kernels of the family, fusion, format,
 * option and activations that this device runs and whose constraints the
 * shape meets, f32 arithmetic first where the family has it (the mat-vec's
 * cooperative-matrix kernels stage f16, the int8-dot ones round activations
 * to 8 bits), then enough token columns for T, then the most rows per
 * workgroup, then the widest workgroup. QKRT_ERROR_UNSUPPORTED when none
 * does (qkrt_last_error says why). */
qkrt_result qkrt_op_choose(qkrt_context *ctx, const qkrt_bundle *bundle, const qkrt_op_query *q,
                           qkrt_op_choice *out);
/* The default choice alone, as if the bundle had no select table. */
qkrt_result qkrt_op_choose_default(qkrt_context *ctx, const qkrt_bundle *bundle,
                                   const qkrt_op_query *q, qkrt_op_choice *out);

/* Whether the shape meets every constraint of the kernel (a missing
 * variable breaks it). */
bool qkrt_kernel_fits(const qkrt_kernel_info *kernel, const qkrt_shape *shape);
/* Whether the kernel reads pre-quantized activations (a read-only binding of
 * role activations_q8): its manifest prepass, the bundle's quantize kernel,
 * runs first. */
bool qkrt_kernel_takes_q8(const qkrt_kernel_info *kernel);
/* The index of the bundle's quantize kernel that this device runs, or -1
 * (qkrt_last_error says why). */
int qkrt_op_quantizer(qkrt_context *ctx, const qkrt_bundle *bundle);
/* *bytes = the size of the kernel's scratch binding for the shape (its
 * manifest size expression), 0 when it has none; an engine allocates it
 * zero-filled, one per dispatch in flight. QKRT_ERROR_MANIFEST when the
 * expression fails. */
qkrt_result qkrt_kernel_scratch_bytes(qkrt_context *ctx, const qkrt_kernel_info *kernel,
                                      const qkrt_shape *shape, size_t *bytes);
/* The same for the kernel's first binding of role (the dequant kernels'
 * output: the two-pass scratch). ctx may be NULL: the message then goes to
 * qkrt_last_error(NULL). */
qkrt_result qkrt_kernel_binding_bytes(qkrt_context *ctx, const qkrt_kernel_info *kernel,
                                      qkrt_role role, const qkrt_shape *shape, size_t *bytes);
/* Bytes of rows q8 rows of K activations (what a quantize pre-pass writes). */
size_t qkrt_q8_bytes(uint32_t rows, uint32_t K);

/* ---- recording: a chain of dispatches ---- */

/* Dispatches that a plan fills, with room for what they point to. Each that
 * reads an earlier one's output is marked `depends`, so qkrt_cmd_dispatch
 * puts barriers only there. */
enum { QKRT_CHAIN_MAX = 12, QKRT_OP_MAX_BUFFERS = 32, QKRT_OP_MAX_VARS = 16 };
typedef struct qkrt_chain {
    uint32_t count;
    qkrt_dispatch dispatch[QKRT_CHAIN_MAX];
    qkrt_buffer *buffers_[QKRT_CHAIN_MAX][QKRT_OP_MAX_BUFFERS];
    const char *names_[QKRT_CHAIN_MAX][QKRT_OP_MAX_VARS];
    int64_t values_[QKRT_CHAIN_MAX][QKRT_OP_MAX_VARS];
} qkrt_chain;

/* ---- one product ---- */

/* An engine's buffers of one product, by role: the weights, one buffer per
 * plane (block formats: one; MLX: codes, scales, biases) of each matrix (one;
 * gate and up under the swiglu fusion; one per expert for matvec_id_sep),
 * the activations x [T, ne11, K] (the kernel's activation type), the output
 * y, the MoE ids (and for matmul_id the pairs per expert, tpe), and the
 * working buffers of qkrt_op_work: x_q8 (the quantize pre-pass writes it)
 * and scratch (zero-filled once). */
enum { QKRT_OP_MATS = 8, QKRT_OP_PLANES = 4 };
typedef struct qkrt_op_buffers {
    uint32_t matrices;
    qkrt_buffer *weights[QKRT_OP_MATS][QKRT_OP_PLANES];
    qkrt_buffer *x, *y, *ids, *tpe;
    qkrt_buffer *x_q8, *scratch;
} qkrt_op_buffers;

/* The working buffers' bytes of the chosen kernel on q's shape (0: none).
 * A two-pass choice (choice->selection.two_pass: a select rule that names a
 * first pass) uses the scratch for the weights its first pass writes in
 * f16 and its kernel reads: the scratch is that size, need not be zeroed,
 * and is the engine's to keep (an engine that keeps f16 weights resident
 * records the second pass alone: qkrt_op_chain with two_pass cleared and
 * those weights). */
qkrt_result qkrt_op_work(qkrt_context *ctx, const qkrt_bundle *bundle, const qkrt_op_choice *choice,
                         const qkrt_op_query *q, size_t *x_q8_bytes, size_t *scratch_bytes);
/* The product's dispatches on q's shape: the pre-pass where the choice has
 * one (the quantizer; or for a two-pass choice the first pass, the weights
 * into the scratch), then the kernel, its buffers bound by role. */
qkrt_result qkrt_op_chain(qkrt_context *ctx, const qkrt_bundle *bundle,
                          const qkrt_op_choice *choice, const qkrt_op_query *q,
                          const qkrt_op_buffers *buffers, qkrt_chain *chain);
/* The same recorded into the caller's command buffer (qkrt_cmd_dispatch
 * with `barriers` around it). */
qkrt_result qkrt_op_record(qkrt_context *ctx, const qkrt_bundle *bundle,
                           const qkrt_op_choice *choice, const qkrt_op_query *q,
                           const qkrt_op_buffers *buffers, VkCommandBuffer cmd, uint32_t barriers);

/* ---- a whole MoE feed-forward layer ---- */

/* Whether the layer runs two of its steps as one kernel. AUTO: gate and up
 * as one swiglu kernel where the bundle has one; the router's top-k inside
 * the gate/up kernel (its ranked form) on the decode path where the bundle
 * has it, else the router_topk kernel computing its logits; down and the
 * combine apart. ALWAYS: as one kernel, or an error; NEVER: apart. RANKED
 * (router only): the top-k inside gate/up, or an error. */
typedef enum qkrt_fuse {
    QKRT_FUSE_AUTO = 0,
    QKRT_FUSE_ALWAYS,
    QKRT_FUSE_NEVER,
    QKRT_FUSE_RANKED
} qkrt_fuse;

/* Tokens up to which a layer takes the decode path by default (router
 * mat-vec, expert mat-vecs reading the router's ids); above, the prefill
 * path (router matmul, moe_route, expert matmuls through indirect dispatch). */
#define QKRT_MOE_DECODE_TOKENS 8u

/* The layer: T tokens of hidden size H, E experts of F rows, top_k each;
 * softmax over the router's logits, the top_k renormalised, SwiGLU, the
 * weighted sum of the slots plus the residual, and RMSNorm with eps. */
typedef struct qkrt_moe_desc {
    const char *format;  /* the weights' format, "q4_0" */
    const char *variant; /* its option: NULL or "", "bf16" */
    uint32_t T, H, F, E, top_k;
    uint32_t decode_max; /* the decode path up to this many tokens; 0: QKRT_MOE_DECODE_TOKENS */
    qkrt_fuse gate_up, router, down;
    float eps; /* 0: 1e-6 */
} qkrt_moe_desc;

/* The kernels of a layer (indices in the bundle; -1: not used). */
typedef struct qkrt_moe_kernels {
    int quant;        /* the quantize pre-pass of x and of the activations before down */
    int router;       /* matvec or matmul: logits [T, E] */
    int topk;         /* router_topk renorm: ids and routing weights; == router where it
                         computes the logits itself */
    int route;        /* moe_route (prefill): pairs per expert, indirect arguments */
    int gate_up;      /* swiglu-fused matvec_id / matmul_id (or its ranked form) */
    int gate;         /* without a fused kernel: the plain one for gate and for up, */
    int glu;          /* and then the swiglu kernel */
    int down;         /* matvec_id / matmul_id: slots [T, top_k, H]; -1 where the combine computes
                         them */
    int combine;      /* moe_combine residual_rmsnorm */
    bool routed;      /* the prefill path */
    bool ranked;      /* gate_up ranks the router's logits itself: no topk kernel */
    bool selected[3]; /* router, gate/up, down came from the select table */
} qkrt_moe_kernels;

/* The buffers of a layer, by role. The engine's: x [T, H] f32 (the normed
 * hidden state), residual [T, H], norm_w [H], y [T, H] (residual + the
 * experts' weighted sum) and normed [T, H] (y through RMSNorm), and the
 * weights, one buffer per plane (block formats: one; MLX: codes, scales,
 * biases): router [E, H], gate and up [E, F, H], down [E, H, F]. The working
 * buffers, work[i] for each i where qkrt_moe_plan_work says bytes > 0:
 * allocated by the engine, scratch ones zero-filled once. */
enum { QKRT_MOE_PLANES = QKRT_OP_PLANES };
typedef enum qkrt_moe_work {
    QKRT_MOE_XQ = 0,  /* x as q8 rows */
    QKRT_MOE_LOGITS,  /* [T, E] f32 */
    QKRT_MOE_IDS,     /* [T, top_k] i32: the experts of each token */
    QKRT_MOE_ROUTE_W, /* [T, top_k] f32: their weights */
    QKRT_MOE_TPE,     /* [E] pairs per expert (prefill) */
    QKRT_MOE_RIDS,    /* [E, T] the pairs of each expert (prefill) */
    QKRT_MOE_DISP,    /* 6 u32: indirect arguments (prefill) */
    QKRT_MOE_GATE,    /* [T, top_k, F] gate and up, when not fused */
    QKRT_MOE_UP,
    QKRT_MOE_ACT,      /* [T, top_k, F] silu(gate) * up */
    QKRT_MOE_ACTQ,     /* act as q8 rows */
    QKRT_MOE_SLOTS,    /* [T, top_k, H] */
    QKRT_MOE_SCRATCH0, /* the split-K kernels' scratch, one per dispatch (zero-filled) */
    QKRT_MOE_WORK_COUNT = QKRT_MOE_SCRATCH0 + 12
} qkrt_moe_work;

typedef struct qkrt_moe_buffers {
    qkrt_buffer *x, *residual, *norm_w, *y, *normed;
    qkrt_buffer *router[QKRT_MOE_PLANES], *gate[QKRT_MOE_PLANES], *up[QKRT_MOE_PLANES],
        *down[QKRT_MOE_PLANES];
    qkrt_buffer *work[QKRT_MOE_WORK_COUNT];
} qkrt_moe_buffers;

typedef struct qkrt_moe_plan qkrt_moe_plan;

/* Chooses the layer's kernels on this device (each product through
 * qkrt_op_choose; gate/up as the selected kernel's swiglu sibling where the
 * table chose the plain one) and sizes its working buffers. QKRT_ERROR_ARGUMENT
 * or QKRT_ERROR_UNSUPPORTED (qkrt_last_error says which step) when a kernel is
 * missing. */
qkrt_result qkrt_moe_plan_create(qkrt_context *ctx, const qkrt_bundle *bundle,
                                 const qkrt_moe_desc *desc, qkrt_moe_plan **out);
/* A plan on kernels the engine chose itself (the exported header's select
 * functions, say): the same checks, sizing and recording. The quantizer (-1:
 * found where needed) and, for a layer's expert part alone, router, topk and
 * combine may be -1: the engine then writes the ids and routing weights
 * (work QKRT_MOE_IDS, QKRT_MOE_ROUTE_W) and reads the slots. */
qkrt_result qkrt_moe_plan_create_from(qkrt_context *ctx, const qkrt_bundle *bundle,
                                      const qkrt_moe_desc *desc, const qkrt_moe_kernels *kernels,
                                      qkrt_moe_plan **out);
void qkrt_moe_plan_destroy(qkrt_moe_plan *plan);
const qkrt_moe_kernels *qkrt_moe_plan_kernels(const qkrt_moe_plan *plan);
/* Bytes of working buffer i (0: the plan does not use it) and its name. */
size_t qkrt_moe_plan_work(const qkrt_moe_plan *plan, qkrt_moe_work i, const char **name);

/* The layer's dispatches (qkrt_chain) for qkrt_cmd_dispatch or qkrt_run;
 * each that reads an earlier one's output is marked `depends`: barriers only
 * there. */
qkrt_result qkrt_moe_plan_chain(qkrt_context *ctx, const qkrt_moe_plan *plan,
                                const qkrt_moe_buffers *buffers, qkrt_chain *chain);
/* Records the layer into the caller's command buffer (qkrt_cmd_dispatch
 * with `barriers`, QKRT_BARRIER_*, around it). */
qkrt_result qkrt_moe_plan_record(qkrt_context *ctx, const qkrt_moe_plan *plan, VkCommandBuffer cmd,
                                 const qkrt_moe_buffers *buffers, uint32_t barriers);

#ifdef __cplusplus
}
#endif
#endif
