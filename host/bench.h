/* The benchmark harness: times kernels of a bundle on a device with weights
 * rotating past the L2 cache, a time-based warm-up, Vulkan timestamps and the
 * median of many runs, after checking each result against the CPU reference.
 * `qkgen bench` and the autotuner are built on it. */
#ifndef QK_BENCH_H
#define QK_BENCH_H

#include "ops_moe_layer.h"

#include <stdio.h>

/* A two-pass candidate's name: the prefix, the first pass (a dequant
 * kernel), '+', the second (an f16w product): "twopass:DQ+MM". The tuner
 * records it as one candidate; its select rule names MM and first_pass DQ. */
#define QK_TWO_PASS_PREFIX "twopass:"

typedef struct qk_bench_case {
    const char *family;  /* "matvec", "matmul", "matvec_id" */
    const char *format;  /* "q4_0", "mlx4_g64" */
    const char *variant; /* format option: MLX scale type, else "" */
    uint32_t M, K, T;
    uint32_t E, top_k; /* MoE (matvec_id): E stacked experts, top_k per token; else 0 */
} qk_bench_case;

typedef struct qk_bench_result {
    char kernel[256];
    qk_bench_case c;
    double us;      /* median of single dispatches, each between barriers (launch included) */
    double us_span; /* the same dispatches back to back without barriers, per dispatch */
    double us_min, us_max;
    double us_pre; /* of us, the quantizer's dispatch for kernels on pre-quantized activations */
    double bytes, flops;
    double gbps, pct_copy, tflops;
    double pct_copy_span;                /* pct_copy of us_span */
    double size_copy_us, size_copy_span; /* a copy of the case's bytes (qk_bench_size_copy) */
    double us_screen; /* the screen's median of a few dispatches (finalists > 0), else 0 */
    uint32_t runs, screen_runs; /* dispatches of us's and us_screen's medians */
    double nmse;
    double prepare_ms;  /* the first run (its pipeline made before, with the case's others) */
    char pipeline[256]; /* the driver's statistics (qkrt_kernel_stats), "" where it gives none */
    bool ok;            /* the result matched the reference */
    bool timed;         /* timed in full: a finalist of the screen, or every variant */
    bool best;          /* fastest correct (or, with time_wrong, timed) variant of its case */
    bool wrong;         /* wrong, and timed anyway (time_wrong) */
    bool skipped;       /* not measured: the deadline had passed */
    bool unsupported;   /* the device cannot run it (qkrt_kernel_check's QKRT_ERROR_UNSUPPORTED):
                           neither checked nor timed, error says what it lacks */
    char error[256];
} qk_bench_result;

/* The screen (qk_bench_opts.finalists): dispatches per variant, at least one
 * per weight copy. */
#define QK_BENCH_SCREEN_RUNS 10u

typedef struct qk_bench_opts {
    uint32_t runs;          /* timed runs per variant (median), at least 20 */
    double warmup_s;        /* GPU busy time right before each case's timed sets */
    double rewarm_s;        /* between variants of one case */
    uint64_t rotate_bytes;  /* weight copies until they exceed this (4 x L2) */
    uint64_t copy_bytes;    /* copy-bandwidth buffer */
    const char *filter;     /* only variants whose name contains one of these (A,B) */
    bool all_variants;      /* also variants whose NR1 does not fit the tokens */
    uint32_t finalists;     /* time only this many fastest of a short screen in full; 0: all */
    bool time_wrong;        /* diagnostics: time a variant whose result is wrong too */
    const char *activation; /* the kernels' activation type: f32 (NULL) or f16 */
    /* matmul cases: also time the two-pass path (a dequant kernel of the
     * format, then an f16w matmul: docs/matmul.md), as results named
     * "twopass:<dequant>+<matmul>", checked first, timed in full */
    bool two_pass;
    uint64_t seed;
    FILE *progress; /* a progress line, or NULL */
    /* the autotuner's hooks, all optional (zero: qkgen bench's behaviour) */
    const char *always;     /* a variant eligible whatever its token tile (a fallback) */
    bool halving;           /* after the screen, halve the field at doubling runs down to finalists
                               (the GPU busy throughout: the first finalist re-warms as the others) */
    double screen_warmup_s; /* before each screened variant but the first; 0: 30 ms */
    double warmup_steady_s; /* > 0: the screen's whole warm-up ends once this has passed and
                               the run time has stopped falling (the clock is up) */
    double deadline;        /* qk_now_s() after which no more variants are screened (0: none) */
    /* a result measured before (a resumed tune): fills ok, wrong, error, nmse
     * and us_screen, or us, us_min, us_max and timed, and returns true; the
     * variant is then not measured again */
    bool (*prior)(void *user, const qkrt_kernel_info *k, qk_bench_result *r);
    /* called once a result is final at a stage: "check" (it failed or is
     * wrong), "screen" or "full" */
    void (*record)(void *user, const qkrt_kernel_info *k, const qk_bench_result *r,
                   const char *stage);
    void *user;
    /* where a case's wall time goes, when set: seconds added to each phase */
    double *phase_s; /* [QK_BENCH_PHASES] */
} qk_bench_opts;

/* The phases of qk_bench_case_run that o->phase_s times: data, reference
 * and buffers; pipelines; checks; screen (or full timing without one);
 * halving rounds; finalists. */
enum {
    QK_PH_SETUP,
    QK_PH_PIPELINES,
    QK_PH_CHECK,
    QK_PH_SCREEN,
    QK_PH_HALVING,
    QK_PH_FINAL,
    QK_BENCH_PHASES
};

/* Device copy bandwidth in GB/s (bytes read plus written): the median of runs
 * copies of copy_bytes by the bundle's fastest copy kernel (family "copy"),
 * or by vkCmdCopyBuffer when the bundle has none. */
qkrt_result qk_bench_copy(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_opts *o,
                          double *gbps, double *us);

/* The harness's floor: a one-workgroup copy timed as kernels are, per
 * dispatch between barriers (*us) and back to back (*us_span); 0 without a
 * copy kernel in the bundle. */
qkrt_result qk_bench_floor(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_opts *o,
                           double *us, double *us_span);

/* Benchmarks the eligible variants of the case; appends to *res (realloc'd).
 * Every variant is checked against the reference; with o->finalists, each
 * correct one is then timed over a few dispatches (the screen) and only the
 * o->finalists fastest of those are timed in full. */
qkrt_result qk_bench_case_run(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_case *c,
                              const qk_bench_opts *o, double copy_gbps, qk_bench_result **res,
                              uint32_t *count, char *err, size_t err_size);

/* One MoE layer (qkgen bench --layer) at one token count and format. */
typedef struct qk_bench_layer_result {
    qk_moe_layer_desc d;
    qk_moe_kernels k;
    qk_moe_check check;
    uint32_t runs, copies, dispatches;
    uint32_t experts;          /* distinct experts the tokens chose */
    double us, us_min, us_max; /* median, fastest and slowest run of the layer */
    double us_chain; /* a run of --runs layers back to back in one command buffer, per layer */
    /* each dispatch of a run timed alone (timestamps around it, barriers
     * between), the median over the runs: where the layer's time goes */
    double stage_us[QK_MOE_LAYER_MAX_DISPATCHES];
    uint32_t stage_kernel[QK_MOE_LAYER_MAX_DISPATCHES]; /* bundle index */
    double bytes, gbps, pct_copy;
    bool ok; /* it ran, was right, and was timed */
    bool timed;
    char error[512];
} qk_bench_layer_result;

/* Times the MoE layer of d (qk_moe_layer) as an engine records it, with the
 * kernels qk_moe_layer_pick chooses: first every weight copy checked
 * against float64 (a wrong one is not timed: res->ok false, the reason in
 * res->error), then o->warmup_s of the copies' chains, then o->runs runs
 * (at least 20, at least one per copy), each one command buffer with a
 * timestamp before its first dispatch and after its last; the median. And
 * us_chain: the runs' layers back to back in one command buffer, a barrier
 * between layers, as a model's layers follow one another (no idle GPU
 * between them); the median of 3 such spans over the layers. And
 * stage_us: the runs again with a timestamp pair around each dispatch.
 * QKRT_OK unless the device failed; a layer that cannot be built (a kernel
 * missing) returns QKRT_ERROR_ARGUMENT with res->error. */
qkrt_result qk_bench_layer(qkrt_context *ctx, const qkrt_bundle *b, const qk_moe_layer_desc *d,
                           const qk_bench_opts *o, double copy_gbps, qk_bench_layer_result *res);

#endif
