/* The operations layer's kernel choice (qkrt_ops.h): the select table, then
 * the default choice; the one place a kernel is chosen for a query. */
#include "internal.h"
#include "qkrt_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool qkrt_kernel_fits(const qkrt_kernel_info *k, const qkrt_shape *shape) {
    for (uint32_t i = 0; i < k->constraint_count; i++) {
        bool ok = false;
        char err[256];
        if (qkrt_eval_bool(k->constraints[i], shape, &ok, err, sizeof err) != QKRT_OK || !ok)
            return false;
    }
    return true;
}

bool qkrt_kernel_takes_q8(const qkrt_kernel_info *k) {
    for (uint32_t i = 0; i < k->binding_count; i++)
        if (k->bindings[i].role_id == QKRT_ROLE_ACTIVATIONS_Q8 && !k->bindings[i].writable)
            return true;
    return false;
}

int qkrt_op_quantizer(qkrt_context *ctx, const qkrt_bundle *b) {
    char why[1024] = "";
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (k->family_id != QKRT_FAMILY_QUANTIZE) continue;
        if (qkrt_kernel_check(ctx, b, i) == QKRT_OK) return (int)i;
        snprintf(why, sizeof why, "%s", qkrt_last_error(ctx));
    }
    qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
              "the bundle has no quantize kernel%s%s (the pre-quantized int8-dot kernels need "
              "quantize_q8)",
              why[0] ? " that this device runs: " : "", why);
    return -1;
}

qkrt_result qkrt_kernel_scratch_bytes(qkrt_context *ctx, const qkrt_kernel_info *k,
                                      const qkrt_shape *shape, size_t *bytes) {
    return qkrt_kernel_binding_bytes(ctx, k, QKRT_ROLE_SCRATCH, shape, bytes);
}

qkrt_result qkrt_kernel_binding_bytes(qkrt_context *ctx, const qkrt_kernel_info *k, qkrt_role role,
                                      const qkrt_shape *shape, size_t *bytes) {
    *bytes = 0;
    for (uint32_t i = 0; i < k->binding_count; i++) {
        if (k->bindings[i].role_id != role) continue;
        int64_t v = 0;
        char why[256] = "";
        if (!k->bindings[i].size[0])
            snprintf(why, sizeof why, "no size in the manifest");
        else if (qkrt_eval(k->bindings[i].size, shape, &v, why, sizeof why) == QKRT_OK && v <= 0)
            snprintf(why, sizeof why, "%lld bytes", (long long)v);
        if (why[0])
            return qkrt_fail(ctx, QKRT_ERROR_MANIFEST, "%s: the size of %s binding %s: %s", k->name,
                             k->bindings[i].role, k->bindings[i].name, why);
        *bytes = (size_t)v;
        return QKRT_OK;
    }
    return QKRT_OK;
}

size_t qkrt_q8_bytes(uint32_t rows, uint32_t K) {
    return (size_t)rows * K / 4 * 5;
}

static uint32_t or1(uint32_t v) {
    return v ? v : 1;
}

/* The query's shape as the constraints name it (M is also N, the row length
 * of the kernels that call their output's width so; a kernel's own pairs
 * per expert are at most T). */
typedef struct query_shape {
    const char *names[8];
    int64_t values[8];
    qkrt_shape shape;
} query_shape;

static void shape_of(const qkrt_op_query *q, query_shape *s) {
    static const char *const names[] = {"M", "N", "K", "T", "E", "top_k", "ne11", "max_per_expert"};
    const int64_t values[] = {or1(q->M), or1(q->M),     q->K,         or1(q->T),
                              or1(q->E), or1(q->top_k), or1(q->ne11), or1(q->T)};
    memcpy(s->names, names, sizeof names);
    memcpy(s->values, values, sizeof values);
    /* K 0: any depth, so the constraints on K are not asked */
    s->shape = (qkrt_shape){8, s->names, s->values};
}

static bool fits_query(const qkrt_kernel_info *k, const qkrt_op_query *q, const query_shape *s) {
    if (q->K) return qkrt_kernel_fits(k, &s->shape);
    /* without a depth: every constraint that does not name K */
    for (uint32_t i = 0; i < k->constraint_count; i++) {
        if (strchr(k->constraints[i], 'K')) continue;
        bool ok = false;
        char err[256];
        if (qkrt_eval_bool(k->constraints[i], &s->shape, &ok, err, sizeof err) != QKRT_OK || !ok)
            return false;
    }
    return true;
}

static const char *str_or(const char *s, const char *dflt) {
    return s && s[0] ? s : dflt;
}

static qkrt_result with_prepass(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                                qkrt_op_source source, qkrt_op_choice *out) {
    /* a selected choice keeps what qkrt_select_ex wrote into out->selection */
    const qkrt_selection sel = source == QKRT_OP_SELECTED
                                   ? out->selection
                                   : (qkrt_selection){ki, QKRT_SELECT_DEFAULT, "", false, 0};
    *out = (qkrt_op_choice){ki, -1, source, sel};
    /* two passes: the weights into f16 blocks first, which the kernel reads
     * from the scratch (qkrt_op_work, qkrt_op_chain) */
    if (sel.two_pass) return QKRT_OK;
    if (!qkrt_kernel_takes_q8(qkrt_bundle_kernel(b, ki))) return QKRT_OK;
    out->prepass = qkrt_op_quantizer(ctx, b);
    return out->prepass < 0 ? QKRT_ERROR_UNSUPPORTED : QKRT_OK;
}

qkrt_result qkrt_op_choose_default(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_query *q,
                                   qkrt_op_choice *out) {
    const char *fusion = str_or(q->fusion, "none"), *act = str_or(q->activations, "f32");
    /* the kernels without weights say format "none" */
    const char *format = str_or(q->format, "none"), *variant = str_or(q->variant, "");
    const uint32_t tokens = or1(q->T);
    query_shape s;
    shape_of(q, &s);
    int best = -1;
    uint32_t best_score = 0;
    char why[1024] = "";
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        /* fused variants compute something else (silu(gate) * up): only the one asked for */
        if (strcmp(k->family, q->op) || strcmp(k->format, format) || strcmp(k->fusion, fusion))
            continue;
        /* kernels without activations of their own (the router's top-k on
         * logits) say none; the rest must match */
        if (k->activation[0] && strcmp(k->activation, act)) continue;
        /* exact: "f16" is a substring of "bf16", so the kernel name cannot tell */
        if (variant[0] && strcmp(k->format_variant, variant)) continue;
        if (!fits_query(k, q, &s)) continue;
        if (qkrt_kernel_check(ctx, b, i) != QKRT_OK) {
            snprintf(why, sizeof why, "%s", qkrt_last_error(ctx));
            continue;
        }
        /* Without tuning data: f32 arithmetic where the family has it, then
         * enough token columns for the tokens, then the most rows per
         * workgroup, then the widest workgroup (its size / 8 in the low
         * byte: up to 1024 invocations). */
        const bool f32 = strcmp(k->mma, "dot8") &&
                         (strncmp(k->mma, "coopmat", 7) || k->family_id != QKRT_FAMILY_MATVEC);
        const uint32_t score = (uint32_t)f32 << 25 | (k->nr1 >= tokens ? 1u << 24 : k->nr1 << 16) |
                               k->nr0 << 8 | (k->workgroup_size[0] >> 3);
        if (best < 0 || score > best_score) best = (int)i, best_score = score;
    }
    if (best < 0)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "the bundle has no %s%s%s kernel for %s%s%s with %s activations%s%s",
                         q->op, strcmp(fusion, "none") ? " " : "",
                         strcmp(fusion, "none") ? fusion : "",
                         strcmp(format, "none") ? format : "(no weights)", variant[0] ? " " : "",
                         variant, act, why[0] ? " that this device runs: " : "", why);
    return with_prepass(ctx, b, (uint32_t)best, QKRT_OP_DEFAULT, out);
}

qkrt_result qkrt_op_choose(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_query *q,
                           qkrt_op_choice *out) {
    if (!q || !q->op) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_op_choose: no operation");
    if (qkrt_bundle_has_select(b)) {
        /* the rule's op: the family, or "family/fusion" for a fused kernel;
         * its format with the option: "mlx4_g64/bf16" ("none": no weights) */
        const char *fusion = str_or(q->fusion, "none"), *variant = str_or(q->variant, "");
        char op[128], fmt[160];
        snprintf(op, sizeof op, "%s%s%s", q->op, strcmp(fusion, "none") ? "/" : "",
                 strcmp(fusion, "none") ? fusion : "");
        snprintf(fmt, sizeof fmt, "%s%s%s", str_or(q->format, "none"), variant[0] ? "/" : "",
                 variant);
        query_shape s;
        shape_of(q, &s);
        if (qkrt_select_ex(ctx, b, op, fmt, str_or(q->activations, "f32"), &s.shape,
                           &out->selection) == QKRT_OK)
            return with_prepass(ctx, b, out->selection.kernel, QKRT_OP_SELECTED, out);
    }
    return qkrt_op_choose_default(ctx, b, q, out);
}
