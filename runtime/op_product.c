/* The operations layer's one product (qkrt_ops.h): the chosen kernel and its
 * quantize pre-pass as a chain of dispatches, the engine's buffers bound by
 * their roles. */
#include "internal.h"
#include "qkrt_ops.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape variables of a product (and of the pre-pass: K and its rows). */
static const char *const names[] = {"M", "K", "T", "top_k", "ne11", "E", "max_per_expert"};
enum { NVARS = 7 };

static uint32_t or1(uint32_t v) {
    return v ? v : 1;
}

static void values_of(const qkrt_op_query *q, int64_t *v) {
    const int64_t vals[NVARS] = {or1(q->M),
                                 q->K,
                                 or1(q->T),
                                 or1(q->top_k),
                                 or1(q->ne11),
                                 or1(q->E),
                                 q->max_per_expert ? q->max_per_expert : or1(q->T)};
    memcpy(v, vals, sizeof vals);
}

qkrt_result qkrt_op_work(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_choice *c,
                         const qkrt_op_query *q, size_t *x_q8_bytes, size_t *scratch_bytes) {
    int64_t v[NVARS];
    values_of(q, v);
    const qkrt_shape shape = {NVARS, names, v};
    *x_q8_bytes = c->prepass >= 0 ? qkrt_q8_bytes(or1(q->T) * or1(q->ne11), q->K) : 0;
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, c->kernel);
    if (!c->selection.two_pass) return qkrt_kernel_scratch_bytes(ctx, k, &shape, scratch_bytes);
    /* two passes: the scratch holds the first pass's output, the weights
     * the kernel reads; a kernel with a scratch of its own (split K) has no
     * room for it */
    size_t own = 0;
    qkrt_result r = qkrt_kernel_scratch_bytes(ctx, k, &shape, &own);
    if (r == QKRT_OK && own)
        return qkrt_fail(ctx, QKRT_ERROR_MANIFEST,
                         "%s: a two-pass rule names a kernel with a scratch of its own", k->name);
    if (r != QKRT_OK) return r;
    return qkrt_kernel_binding_bytes(ctx, qkrt_bundle_kernel(b, c->selection.first_pass),
                                     QKRT_ROLE_OUTPUT, &shape, scratch_bytes);
}

/* Appends kernel ki to the chain, each binding the engine's buffer of its role. */
static qkrt_result add(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                       const qkrt_op_buffers *B, const int64_t *vals, uint32_t nvars,
                       const char *const *vnames, bool depends, qkrt_chain *c) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    const uint32_t n = c->count;
    qkrt_dispatch *d = &c->dispatch[n];
    memset(d, 0, sizeof *d);
    d->bundle = b, d->kernel = ki;
    uint32_t slot = 0, plane = 0;
    for (uint32_t i = 0; i < k->binding_count; i++) {
        const qkrt_binding_info *bi = &k->bindings[i];
        if (slot + bi->count > QKRT_OP_MAX_BUFFERS)
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "%s: more than %d buffers", k->name,
                             QKRT_OP_MAX_BUFFERS);
        if (bi->role_id == QKRT_ROLE_WEIGHTS) {
            if (!B->matrices || plane >= QKRT_OP_PLANES)
                return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "%s: no weights for binding %s", k->name,
                                 bi->name);
            /* an array binding takes one matrix per element (gate and up; experts) */
            for (uint32_t m = 0; m < bi->count; m++) {
                const uint32_t mat = m < B->matrices ? m : B->matrices - 1;
                if (mat >= QKRT_OP_MATS || !B->weights[mat][plane])
                    return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                                     "%s: no buffer for plane %u of weight matrix %u", k->name,
                                     plane, mat);
                c->buffers_[n][slot++] = B->weights[mat][plane];
            }
            plane++;
            continue;
        }
        qkrt_buffer *buf = NULL;
        switch (bi->role_id) {
        case QKRT_ROLE_ACTIVATIONS:
            buf = B->x;
            break;
        case QKRT_ROLE_ACTIVATIONS_Q8:
            buf = B->x_q8;
            break;
        case QKRT_ROLE_OUTPUT:
            buf = B->y;
            break;
        case QKRT_ROLE_IDS:
            buf = B->ids;
            break;
        case QKRT_ROLE_TPE:
            buf = B->tpe;
            break;
        case QKRT_ROLE_SCRATCH:
            buf = B->scratch;
            break;
        default:
            break;
        }
        if (!buf)
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "%s: no buffer for binding %s (role %s)",
                             k->name, bi->name, bi->role);
        for (uint32_t m = 0; m < bi->count; m++)
            c->buffers_[n][slot++] = buf;
    }
    for (uint32_t i = 0; i < nvars; i++)
        c->names_[n][i] = vnames[i], c->values_[n][i] = vals[i];
    d->buffer_count = slot;
    d->buffers = c->buffers_[n];
    d->shape = (qkrt_shape){nvars, c->names_[n], c->values_[n]};
    d->depends = depends;
    c->count++;
    return QKRT_OK;
}

qkrt_result qkrt_op_chain(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_choice *choice,
                          const qkrt_op_query *q, const qkrt_op_buffers *B, qkrt_chain *chain) {
    memset(chain, 0, sizeof *chain);
    const uint32_t n = qkrt_bundle_kernel_count(b);
    if (choice->kernel >= n || (choice->prepass >= 0 && (uint32_t)choice->prepass >= n))
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_op_chain: a kernel not in the bundle");
    int64_t v[NVARS];
    values_of(q, v);
    qkrt_result r = QKRT_OK;
    if (choice->selection.two_pass) { /* the weights to f16 blocks, then the kernel on them */
        const uint32_t fp = choice->selection.first_pass;
        if (fp >= n)
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_op_chain: a kernel not in the bundle");
        if (!B->scratch)
            return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                             "%s: a two-pass choice needs the scratch (qkrt_op_work's size): the "
                             "f16 weights its first pass writes",
                             qkrt_bundle_kernel(b, choice->kernel)->name);
        qkrt_op_buffers first = *B, second = *B;
        first.y = B->scratch;
        second.matrices = 1, second.scratch = NULL;
        for (uint32_t p = 0; p < QKRT_OP_PLANES; p++)
            second.weights[0][p] = B->scratch;
        r = add(ctx, b, fp, &first, v, NVARS, names, false, chain);
        if (r == QKRT_OK) r = add(ctx, b, choice->kernel, &second, v, NVARS, names, true, chain);
        return r;
    }
    if (choice->prepass >= 0) { /* the q8 rows of every row of x */
        const int64_t qv[] = {q->K, (int64_t)or1(q->T) * or1(q->ne11)};
        static const char *const qn[] = {"K", "T"};
        /* the quantizer reads x and writes x_q8 (role activations_q8) */
        r = add(ctx, b, (uint32_t)choice->prepass, B, qv, 2, qn, false, chain);
    }
    if (r == QKRT_OK) r = add(ctx, b, choice->kernel, B, v, NVARS, names, chain->count > 0, chain);
    return r;
}

qkrt_result qkrt_op_record(qkrt_context *ctx, const qkrt_bundle *b, const qkrt_op_choice *choice,
                           const qkrt_op_query *q, const qkrt_op_buffers *B, VkCommandBuffer cmd,
                           uint32_t barriers) {
    qkrt_chain *chain = malloc(sizeof *chain);
    if (!chain) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "qkrt_op_record: out of memory");
    qkrt_result r = qkrt_op_chain(ctx, b, choice, q, B, chain);
    if (r == QKRT_OK) r = qkrt_cmd_dispatch(ctx, cmd, chain->dispatch, chain->count, barriers);
    free(chain);
    return r;
}
