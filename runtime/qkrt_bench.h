/* qkrt_bench: libqkrt's hooks for qkgen's benchmarks and tests (GPU timestamps,
 * driver statistics, copy bandwidth). Internal: not installed, no ABI promise. */
#ifndef QKRT_BENCH_H
#define QKRT_BENCH_H

#include "qkrt.h"

#ifdef __cplusplus
extern "C" {
#endif

/* qkrt_create, with pipelines that capture the driver's statistics
 * (qkrt_kernel_stats) where the device offers
 * VK_KHR_pipeline_executable_properties (ignored elsewhere). */
qkrt_result qkrt_create_stats(const qkrt_desc *desc, qkrt_context **out);

/* qkrt_run; ns non-NULL: ns[i] receives dispatch i's GPU time in nanoseconds
 * from timestamp queries (QKRT_ERROR_UNSUPPORTED on a queue without them). */
qkrt_result qkrt_run_timed(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *ns);

/* Records the n dispatches back to back with NO barrier between them but
 * before those marked `depends` (the caller asserts the others are
 * independent, or does not care about their results),
 * submits and waits; *span_ns receives the GPU time from before the first to
 * after the last. Benchmarks use it for throughput with launch gaps hidden
 * (qkrt_run_timed's per-dispatch times include each dispatch's launch). */
qkrt_result qkrt_run_span(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *span_ns);

/* Copies src to dst on the GPU (n times, back to back in one submission) and
 * returns the GPU time of each copy in ns[0..n). Used to measure copy bandwidth. */
qkrt_result qkrt_copy(qkrt_context *ctx, qkrt_buffer *dst, qkrt_buffer *src, size_t bytes,
                      uint32_t n, double *ns);

/* The driver's statistics of the kernel's pipeline (created if it was not
 * yet), as "name=value" pairs separated by "; " (NVIDIA: registers per
 * invocation, shared memory, spills), into out. QKRT_ERROR_UNSUPPORTED if the
 * context was not created by qkrt_create_stats or the device lacks
 * VK_KHR_pipeline_executable_properties. */
qkrt_result qkrt_kernel_stats(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index,
                              char *out, size_t size);

#ifdef __cplusplus
}
#endif
#endif
