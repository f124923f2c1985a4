/* qkgen verify's checks (host/verify.h): a product kernel on fresh random
 * data against its float64 reference, and a select table's answers. */
#include "verify.h"
#include "ops_matmul.h"
#include "ops_moe.h"
#include "qk_util.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The shape variables a select table's rules may read. */
static const char *const SELECT_NAMES[] = {"M", "K", "T", "E", "top_k", "ne11", "max_per_expert"};

/* K for a verification run: a few blocks, a multiple of 256 where it can (the
 * mat-vec kernels' deepest chunks); for matmuls of small blocks an odd count
 * (13), so that steps of several blocks end with a partial one. */
static uint32_t verify_k(uint32_t qk, bool mm) {
    return qk >= 256 ? 2 * qk : mm ? 13 * qk : 512;
}

/* Whether k is a product: matvec, matmul or their _id forms. */
static bool is_product(const qkrt_kernel_info *k) {
    return !strcmp(k->family, "matvec") || !strcmp(k->family, "matvec_id") ||
           !strcmp(k->family, "matmul") || !strcmp(k->family, "matmul_id");
}

/* Whether verify has a reference for kernel k: a product, plain or with the
 * swiglu fusion. */
bool qk_verify_has_reference(const qkrt_kernel_info *k) {
    return is_product(k) && (!strcmp(k->fusion, "swiglu") || !strcmp(k->fusion, "none"));
}

/* One run of a product kernel (matvec, matmul, their _id forms, plain or
 * swiglu) on fresh random data against its float64 reference.
 * QKRT_ERROR_UNSUPPORTED: a family or fusion without a reference here. */
qkrt_result qk_verify_product(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t M,
                              uint64_t *rng, double *nmse, double *tol, char *err,
                              size_t err_size) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    bool mm = !strncmp(k->family, "matmul", 6), id = strstr(k->family, "_id") != NULL;
    bool glu = !strcmp(k->fusion, "swiglu");
    if (!qk_verify_has_reference(k)) return QKRT_ERROR_UNSUPPORTED;
    uint32_t K = verify_k(k->block_elements, mm), E = id ? 4 : 1, top_k = id ? 2 : 1;
    uint32_t T = mm ? (id ? 5 : 37) : k->nr1 > 1 ? k->nr1 + 1 : id ? 3 : 1, nw = glu ? 2 : 1;
    /* a kernel that wants whole steps (the staged matmuls: K % NK == 0) gets
     * the next depth it takes */
    while (!qk_kernel_fits(k, M, K, T, E, top_k, 1, T) && K < 64 * k->block_elements)
        K += k->block_elements;
    qk_weights w[2];
    for (uint32_t m = 0; m < nw; m++)
        if (!qk_random_weights(k->format, k->format_variant, M * E, K, rng, &w[m])) {
            for (uint32_t j = 0; j < m; j++)
                qk_free_weights(&w[j]);
            snprintf(err, err_size, "%s", qk_ref_why());
            return QKRT_ERROR_ARGUMENT;
        }
    size_t pairs = (size_t)T * top_k;
    float *x = qk_xmalloc(sizeof *x * T * K), *y = qk_xmalloc(sizeof *y * pairs * M);
    double *xd = qk_xmalloc(sizeof *xd * T * K), *ref = qk_xmalloc(sizeof *ref * pairs * M);
    int32_t *ids = qk_xmalloc(sizeof *ids * pairs);
    for (size_t j = 0; j < (size_t)T * K; j++) {
        *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
        xd[j] = x[j] = (float)((double)(*rng >> 11) / 9007199254740992.0 * 2 - 1);
    }
    if (qk_rounds_x8(k)) qk_round_x8(xd, x, (size_t)T * K);
    for (size_t p = 0; p < pairs; p++) /* distinct experts per token: slot s takes t + s */
        ids[p] = (int32_t)((p / top_k + p % top_k) % E);
    qkrt_result r;
    if (mm && id) {
        qk_moe_shape s = {M, K, T, E, top_k, 1};
        r = qk_run_matmul_id(ctx, b, ki, w, x, ids, &s, y, NULL, err, err_size);
        qk_ref_matmul_id(w, nw, xd, ids, &s, ref);
    } else if (mm) {
        r = qk_run_matmul(ctx, b, ki, w, x, M, K, T, y, NULL, err, err_size);
        qk_ref_matmul(w, nw, xd, M, K, T, ref);
    } else {
        r = qk_run_matvec_id(ctx, b, ki, w, nw, ids, x, M, K, T, top_k, 1, E, y, NULL, err,
                             err_size);
        qk_weights gate[4], up[4];
        for (uint32_t e = 0; e < E; e++) {
            gate[e] = qk_weights_expert(&w[0], e, E);
            if (glu) up[e] = qk_weights_expert(&w[1], e, E);
        }
        qk_ref_matvec_id(gate, glu ? up : NULL, ids, xd, M, K, T, top_k, 1, ref);
    }
    if (r == QKRT_OK && qk_ref_why()[0]) { /* the reference failed on a block */
        snprintf(err, err_size, "%s", qk_ref_why());
        r = QKRT_ERROR_ARGUMENT;
    }
    *nmse = r == QKRT_OK ? qk_nmse(y, ref, pairs * M) : INFINITY;
    *tol = qk_nmse_bound(k);
    free(x), free(y), free(xd), free(ref), free(ids);
    for (uint32_t m = 0; m < nw; m++)
        qk_free_weights(&w[m]);
    return r;
}

/* Whether o and k are plain kernels of one product: family, format (and
 * option) and activation type. */
static bool same_product(const qkrt_kernel_info *o, const qkrt_kernel_info *k) {
    return !strcmp(o->family, k->family) && !strcmp(o->format, k->format) &&
           !strcmp(o->format_variant, k->format_variant) && !strcmp(o->fusion, "none") &&
           !strcmp(o->activation, k->activation);
}

/* The first depth from K that every kernel of kernel i's product takes. */
static uint32_t product_depth(const qkrt_bundle *b, uint32_t i, uint32_t M, uint32_t K) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
    bool all = false;
    while (!all && K < 64 * k->block_elements) {
        all = true;
        for (uint32_t j = i; j < qkrt_bundle_kernel_count(b) && all; j++) {
            const qkrt_kernel_info *o = qkrt_bundle_kernel(b, j);
            all = !same_product(o, k) || qk_kernel_fits(o, M, K, 37, 4, 2, 1, 37);
        }
        if (!all) K += k->block_elements;
    }
    return K;
}

/* A tuned bundle's select table answers every product the bundle has (each
 * family, format and activation type of its plain kernels) at token counts
 * at, between and beyond what is tuned, with a kernel of that family and
 * activation type that verified (passed, when every kernel was checked
 * here). Returns the failures. */
uint32_t qk_verify_select(qkrt_context *ctx, const qkrt_bundle *b, uint32_t M, const bool *passed) {
    static const uint32_t tokens[] = {1, 2, 3, 4, 5, 8, 16, 37, 128, 512, 2048};
    uint32_t n = qkrt_bundle_kernel_count(b), asked = 0, fails = 0;
    for (uint32_t i = 0; i < n; i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (!is_product(k) || strcmp(k->fusion, "none") ||
            (strcmp(k->activation, "f32") && strcmp(k->activation, "f16")))
            continue;
        /* a product on f16w blocks is a two-pass rule's second pass: the
         * table answers for the format its first pass reads */
        if (!strcmp(k->format, QK_F16W)) continue;
        bool seen = false; /* each (family, format, activations) once */
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = same_product(qkrt_bundle_kernel(b, j), k);
        if (seen) continue;
        char fmt[96];
        snprintf(fmt, sizeof fmt, "%s%s%s", k->format, k->format_variant[0] ? "/" : "",
                 k->format_variant);
        bool id = strstr(k->family, "_id") != NULL;
        uint32_t K = verify_k(k->block_elements, !strncmp(k->family, "matmul", 6));
        /* f32: at 13 blocks, which every format's fallback takes; other
         * activations (the f16 staged matmuls, whole steps of K only) at the
         * first depth from there that every kernel of the product takes */
        if (strcmp(k->activation, "f32")) K = product_depth(b, i, M, K);
        for (size_t t = 0; t < sizeof tokens / sizeof tokens[0]; t++) {
            const int64_t values[] = {M, K, tokens[t], id ? 4 : 1, id ? 2 : 1, 1, tokens[t]};
            qkrt_shape s = QK_SHAPE(SELECT_NAMES, values);
            uint32_t ki;
            asked++;
            if (qkrt_select_activations(ctx, b, k->family, fmt, k->activation, &s, &ki) !=
                QKRT_OK) {
                printf("select: %s %s (%s activations) m=%u k=%u t=%u: %s\n", k->family, fmt,
                       k->activation, M, K, tokens[t], qkrt_last_error(ctx));
                fails++;
            } else if (strcmp(qkrt_bundle_kernel(b, ki)->family, k->family) ||
                       strcmp(qkrt_bundle_kernel(b, ki)->activation, k->activation) ||
                       (passed && !passed[ki])) {
                printf("select: %s %s (%s activations) t=%u answers %s, which %s\n", k->family, fmt,
                       k->activation, tokens[t], qkrt_bundle_kernel(b, ki)->name,
                       passed && !passed[ki] ? "did not pass"
                       : strcmp(qkrt_bundle_kernel(b, ki)->family, k->family)
                           ? "is of another family"
                           : "reads other activations");
                fails++;
            }
        }
    }
    printf("select table: %u shapes asked, %u answered with a verified kernel of their family\n",
           asked, asked - fails);
    return fails;
}
