/* model: a model's shape set (specs/models/NAME.yaml), the products an engine
 * runs for it at the token counts it runs them, for the autotuner. */
#ifndef QK_MODEL_H
#define QK_MODEL_H

#include "spec.h"

enum { QK_MAX_MODEL_OPS = 32, QK_MAX_TOKENS = 16 };

typedef struct qk_model_op {
    char name[QK_MAX_NAME];
    uint32_t m, k;
    bool experts;         /* through the model's experts (ids), else dense */
    uint32_t token_count; /* 0: the model's decode and prefill token counts */
    uint32_t tokens[QK_MAX_TOKENS];
    qk_mark mark;
} qk_model_op;

/* The MoE layer as the model runs it (the file's optional `layer:`): how it
 * routes, activates and combines, so that each of its kernels is chosen by
 * its fusion: router_topk's (qk_model_layer_router_fusion), the gate/up's
 * (activation) and the combine's (qk_model_layer_combine_fusion). */
typedef struct qk_model_layer {
    bool present;
    /* "softmax_topk" (Qwen3, Mixtral: the default), "topk_softmax"
     * (gpt-oss) or "sigmoid_bias" (DeepSeek-V3): router_topk's forms */
    char routing[16];
    bool renorm;                  /* softmax_topk: weights renormalised (default true) */
    uint32_t n_group, topk_group; /* sigmoid_bias: grouped top-k (default 1, 1) */
    double scale;                 /* sigmoid_bias: routed scaling factor (default 1) */
    char activation[16];          /* "swiglu" (default) or "swiglu_oai" (gpt-oss) */
    uint32_t hidden, expert_ffn;
    /* shared experts beside the routed ones (0: none), as one FFN of
     * shared_ffn; gated: scaled by sigmoid of a gate logit (Qwen2-MoE) */
    uint32_t shared_count, shared_ffn;
    bool shared_gated;
    /* a bias on each expert's gate/up and down outputs (gpt-oss) */
    bool bias_gate_up, bias_down;
} qk_model_layer;

/* The fusions of the layer's router_topk and moe_combine kernels. */
const char *qk_model_layer_router_fusion(const qk_model_layer *l);
const char *qk_model_layer_combine_fusion(const qk_model_layer *l);

typedef struct qk_model_spec {
    char path[QK_MAX_PATH];
    char name[QK_MAX_NAME];
    char description[256];
    uint32_t format_count;
    char formats[QK_MAX_LIST][QK_MAX_NAME];
    /* token counts: decode runs the mat-vec families, prefill the tiled ones */
    uint32_t decode_count, prefill_count;
    uint32_t decode[QK_MAX_TOKENS], prefill[QK_MAX_TOKENS];
    uint32_t expert_count, top_k; /* 0: a dense model */
    /* optional: only these kernels (by kernel name or family spec) compete: a
     * small search for CI */
    uint32_t kernel_count;
    char kernels[QK_MAX_LIST][QK_MAX_NAME];
    qk_mark kernel_marks[QK_MAX_LIST]; /* where each is named, for "no such kernel" */
    uint32_t op_count;
    qk_model_op ops[QK_MAX_MODEL_OPS];
    qk_model_layer layer;
} qk_model_spec;

/* Loads a model spec; false with "file:line:col: key.path: message" in e. */
bool qk_model_spec_load(const char *path, qk_model_spec *out, qk_error *e);
/* Every name of m's kernels: list is a kernel of specs or a family spec
 * (a kernel's origin); false with "file:line:col: kernels: no kernel or
 * family 'X' in the specs" in e. A model that names only what the specs lack
 * would tune the fallbacks alone and call it done. */
bool qk_model_spec_check_kernels(const qk_model_spec *m, const qk_spec_set *specs, qk_error *e);

/* One product to tune: the family ("matvec", "matvec_id", "matmul",
 * "matmul_id"), the format and the shape. */
typedef struct qk_model_case {
    char family[16];
    char format[QK_MAX_NAME];
    uint32_t m, k, tokens, experts, top_k;
} qk_model_case;

/* The cases of a model (each op x its token counts x formats, mat-vec
 * families for decode counts, tiled for prefill), distinct, in order; the
 * caller frees *out. formats (comma-separated) overrides the model's. */
uint32_t qk_model_cases(const qk_model_spec *m, const char *formats, qk_model_case **out);

#endif
