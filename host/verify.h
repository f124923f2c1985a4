/* qkgen verify's checks, shared with the tests: a product kernel against its
 * float64 reference on fresh random data, and a select table's answers. */
#ifndef QK_VERIFY_H
#define QK_VERIFY_H

#include "ops.h"

/* Whether verify has a reference for kernel k: a product (matvec, matmul and
 * their _id forms), plain or with the swiglu fusion. */
bool qk_verify_has_reference(const qkrt_kernel_info *k);
/* One run of product kernel ki on fresh random data (from *rng) against its
 * float64 reference: *nmse and the kernel's bound *tol.
 * QKRT_ERROR_UNSUPPORTED: a family or fusion without a reference here. */
qkrt_result qk_verify_product(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki, uint32_t M,
                              uint64_t *rng, double *nmse, double *tol, char *err, size_t err_size);
/* A tuned bundle's select table answers every product the bundle has at
 * token counts at, between and beyond what is tuned, with a kernel of that
 * family and activation type that verified (passed[ki], NULL: not asked).
 * Prints each failure and a summary; returns the failures. */
uint32_t qk_verify_select(qkrt_context *ctx, const qkrt_bundle *b, uint32_t M, const bool *passed);

#endif
