/* qkrt: the qkgen runtime. Loads generated bundles (manifest.json + SPIR-V)
 * and runs their kernels on a Vulkan device. The only public header of libqkrt.
 *
 * Conventions (after sokol and SPIRV-Reflect):
 *  - descriptor structs where zero means default: qkrt_create(&(qkrt_desc){0}, &ctx);
 *  - every call returns a qkrt_result; on failure the context keeps a message
 *    (qkrt_last_error); the library never calls exit() nor prints by itself
 *    (messages go to desc.log when set);
 *  - enumerations are count-then-fill, as Vulkan's.
 */
#ifndef QKRT_H
#define QKRT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qkrt_result {
    QKRT_OK = 0,
    QKRT_ERROR_ARGUMENT,    /* a bad argument from the caller */
    QKRT_ERROR_NO_DEVICE,   /* no Vulkan device, or none matches the request */
    QKRT_ERROR_VULKAN,      /* a Vulkan call failed; the message names it and its VkResult */
    QKRT_ERROR_IO,          /* a file could not be read or written */
    QKRT_ERROR_MANIFEST,    /* a bundle's manifest is malformed or of another schema */
    QKRT_ERROR_UNSUPPORTED, /* the device lacks what a kernel requires; the message names it */
    QKRT_ERROR_MEMORY,      /* host or device allocation failed */
} qkrt_result;

typedef struct qkrt_context qkrt_context;
typedef struct qkrt_buffer qkrt_buffer;
typedef struct qkrt_bundle qkrt_bundle;

enum { QKRT_LOG_DEBUG = 0, QKRT_LOG_INFO = 1, QKRT_LOG_WARN = 2, QKRT_LOG_ERROR = 3 };

typedef struct qkrt_desc {
    /* NULL: $QKGEN_DEVICE if set, else the first discrete GPU, else any GPU,
     * else any device (lavapipe). Otherwise a device index ("0", "1", ...) as
     * listed by qkrt_enumerate_devices. */
    const char *device;
    /* Enable VK_LAYER_KHRONOS_validation with a debug messenger that counts
     * every error (qkrt_validation_errors). Also enabled by $QKGEN_VALIDATION=1.
     * Fails with QKRT_ERROR_UNSUPPORTED if the layer is not installed. */
    bool validation;
    /* Folder for the persisted VkPipelineCache. NULL: $QKGEN_CACHE_DIR, else
     * $XDG_CACHE_HOME/qkgen, else $HOME/.cache/qkgen. "" disables persistence. */
    const char *pipeline_cache_dir;
    void (*log)(void *user, int level, const char *message);
    void *log_user;
    /* Pipelines capture the driver's statistics (registers, shared memory,
     * spills: qkrt_kernel_stats) where the device offers
     * VK_KHR_pipeline_executable_properties; ignored elsewhere. */
    bool pipeline_stats;
} qkrt_desc;

/* What kernels care about in a device. */
typedef struct qkrt_device_info {
    uint32_t index;
    char name[256];
    char type[16];    /* "discrete", "integrated", "virtual", "cpu", "other" */
    char driver[256]; /* driver name and info */
    uint32_t vendor_id, device_id;
    uint32_t api_version;                          /* VK_MAKE_API_VERSION form */
    uint32_t subgroup_size;                        /* default subgroup size */
    uint32_t min_subgroup_size, max_subgroup_size; /* subgroup size control, or both = default */
    bool subgroup_arithmetic;                      /* arithmetic subgroup ops in compute shaders */
    uint32_t max_shared_memory;                    /* maxComputeSharedMemorySize, bytes */
    uint32_t max_workgroup_invocations;
    bool storage_8bit, storage_16bit; /* storageBuffer8/16BitAccess */
    bool float16, int8;               /* shaderFloat16, shaderInt8 */
    bool int64;                       /* shaderInt64 */
    bool integer_dot_product;         /* shaderIntegerDotProduct (1.3 or the KHR ext.) */
    bool cooperative_matrix_nv;       /* VK_NV_cooperative_matrix with a f16 x f16 -> f32 shape */
    bool cooperative_matrix_khr;      /* VK_KHR_cooperative_matrix */
    uint32_t coopmat_m, coopmat_n, coopmat_k; /* first usable NV f16 shape, 0 if none */
    uint64_t device_local_bytes;
    double timestamp_period_ns; /* 0 if compute queue has no timestamps */
} qkrt_device_info;

/* Count-then-fill: with infos NULL, *count receives the number of devices.
 * Creates and destroys a Vulkan instance of its own. */
qkrt_result qkrt_enumerate_devices(qkrt_device_info *infos, uint32_t *count, char *error,
                                   size_t error_size);

qkrt_result qkrt_create(const qkrt_desc *desc, qkrt_context **out);
/* On failure of qkrt_create the message is in qkrt_create_error() (thread-local). */
const char *qkrt_create_error(void);
void qkrt_destroy(qkrt_context *ctx);
const char *qkrt_last_error(const qkrt_context *ctx);
const qkrt_device_info *qkrt_device(const qkrt_context *ctx);
/* Number of validation-layer errors reported since qkrt_create (0 without validation). */
uint32_t qkrt_validation_errors(const qkrt_context *ctx);

/* ---- buffers: device-local storage buffers, moved through staging ---- */
qkrt_result qkrt_buffer_create(qkrt_context *ctx, size_t bytes, qkrt_buffer **out);
void qkrt_buffer_destroy(qkrt_context *ctx, qkrt_buffer *buf);
size_t qkrt_buffer_size(const qkrt_buffer *buf);
qkrt_result qkrt_buffer_upload(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, const void *data,
                               size_t bytes);
qkrt_result qkrt_buffer_download(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, void *data,
                                 size_t bytes);
/* Fills the whole buffer with a 32-bit pattern (0x7fc00000 poisons f32 with NaN). */
qkrt_result qkrt_buffer_fill(qkrt_context *ctx, qkrt_buffer *buf, uint32_t pattern);

/* ---- bundles: manifest.json + .spv files ---- */

enum { QKRT_MAX_BINDINGS = 32, QKRT_MAX_PUSH = 32, QKRT_MAX_VARS = 32 };

typedef struct qkrt_binding_info {
    uint32_t set, binding, count; /* count > 1: an array of buffers, bound in order */
    const char *name;             /* e.g. "w", "x", "y" */
    const char *role;             /* "weights", "activations", "output", ... */
    const char *type;             /* element type: "u32", "f32", ... */
    bool writable;
    const char *size; /* "" or the bytes to allocate: an expression over the
                         shape (qkrt_eval), for scratch buffers */
} qkrt_binding_info;

typedef struct qkrt_push_info {
    const char *name; /* value taken from the shape variable of the same name */
    uint32_t offset;  /* bytes */
    const char *type; /* "u32" or "i32" or "f32" */
} qkrt_push_info;

typedef struct qkrt_kernel_info {
    const char *name, *family, *format, *activation;
    uint32_t nr0, nr1, nk;
    uint32_t workgroup_size[3];
    uint32_t required_subgroup_size; /* 0: any */
    uint32_t min_subgroup_size;      /* 0: any */
    uint32_t shared_memory_bytes;
    uint32_t binding_count;
    qkrt_binding_info bindings[QKRT_MAX_BINDINGS];
    uint32_t push_count, push_size;
    qkrt_push_info push[QKRT_MAX_PUSH];
    const char *grid[3]; /* integer expressions over the shape variables */
    /* conditions on the shape (qkrt_eval_bool); qkrt_run refuses a shape that
     * breaks one */
    uint32_t constraint_count;
    const char *const *constraints;
    /* the format option ("bf16" for MLX scale types, else ""), the math path
     * ("scalar", "coopmat") and the fusion ("none", "swiglu", ...) */
    const char *format_variant, *mma, *fusion;
    /* the weights, from the manifest's "weights" object: "block" or "planar"
     * ("" for kernels without weights); elements per block or group; block
     * bytes; planes of planar formats with their elements per group */
    const char *weights_layout;
    uint32_t block_elements, block_bytes;
    uint32_t plane_count;
    struct {
        const char *name, *type;
        uint32_t per_group;
    } planes[4];
} qkrt_kernel_info;

/* Loads dir/manifest.json; checks the schema version and every .spv hash. */
qkrt_result qkrt_bundle_load(qkrt_context *ctx, const char *dir, qkrt_bundle **out);
void qkrt_bundle_destroy(qkrt_context *ctx, qkrt_bundle *bundle);
uint32_t qkrt_bundle_kernel_count(const qkrt_bundle *bundle);
const qkrt_kernel_info *qkrt_bundle_kernel(const qkrt_bundle *bundle, uint32_t index);
/* Index of the kernel called name, or -1. */
int qkrt_bundle_find(const qkrt_bundle *bundle, const char *name);
/* QKRT_OK if the context's device can run the kernel; else
 * QKRT_ERROR_UNSUPPORTED with a message naming the missing feature. */
qkrt_result qkrt_kernel_check(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index);
/* Creates the pipelines of the kernels indices[0 .. n) that the device runs
 * and that have none yet, on `threads` threads at once (0: one a core), so
 * that a driver's compiles overlap; kernels are otherwise built on first use.
 * Returns how many of them have a pipeline now. A kernel the device cannot
 * run, or whose pipeline fails, is left as it was: its first use reports why.
 * No other call may use the context while it runs. */
uint32_t qkrt_kernels_prepare(qkrt_context *ctx, const qkrt_bundle *bundle, const uint32_t *indices,
                              uint32_t n, uint32_t threads);
/* The driver's statistics of the kernel's pipeline (created if it was not
 * yet), as "name=value" pairs separated by "; " (NVIDIA: registers per
 * invocation, shared memory, spills), into out. QKRT_ERROR_UNSUPPORTED if the
 * context was not created with qkrt_desc.pipeline_stats or the device lacks
 * VK_KHR_pipeline_executable_properties. */
qkrt_result qkrt_kernel_stats(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index,
                              char *out, size_t size);

/* ---- shapes: named integer variables (M, K, T, ...) ---- */
typedef struct qkrt_shape {
    uint32_t count;
    const char *names[QKRT_MAX_VARS];
    int64_t values[QKRT_MAX_VARS];
} qkrt_shape;

/* Evaluates an integer expression (+ - * / % and parentheses, / rounding
 * down, names looked up in shape). Also: unary minus, decimal literals; %
 * matches the floor division (a / b * b + a % b == a). Unknown names, division
 * by zero, int64 overflow and syntax errors return QKRT_ERROR_ARGUMENT with a
 * message in error, e.g. "unknown variable 'Q' in expression '(Q+1)/2' (column 2)". */
qkrt_result qkrt_eval(const char *expr, const qkrt_shape *shape, int64_t *value, char *error,
                      size_t error_size);
/* Evaluates a manifest constraint: a comparison (== != <= >= < >) of two
 * expressions, e.g. "K % 32 == 0", or such comparisons joined by && || and !.
 * The evaluator is qkgen's own (common/qk_expr.c), so engines and the
 * generator agree on every value. */
qkrt_result qkrt_eval_bool(const char *expr, const qkrt_shape *shape, bool *value, char *error,
                           size_t error_size);

/* ---- dispatch ---- */
typedef struct qkrt_dispatch {
    const qkrt_bundle *bundle;
    uint32_t kernel;                         /* index in the bundle */
    qkrt_buffer *buffers[QKRT_MAX_BINDINGS]; /* one per buffer, in binding order
                                                (an array binding takes count slots) */
    qkrt_shape shape;                        /* push constants and the grid come from here */
    uint32_t groups[3];                      /* all zero: evaluate the manifest's grid rule */
    qkrt_buffer *indirect;                   /* non-NULL: vkCmdDispatchIndirect from here */
    size_t indirect_offset;
    bool depends; /* reads what the dispatch before it wrote:
                     qkrt_run_span keeps the barrier before it */
} qkrt_dispatch;

/* Records the n dispatches in one command buffer, in order, with a memory
 * barrier between consecutive ones, submits it and waits. Pipelines are created
 * on first use. If ns is non-NULL, ns[i] receives dispatch i's GPU time in
 * nanoseconds from timestamp queries. */
qkrt_result qkrt_run(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *ns);

/* Records the n dispatches back to back with NO barrier between them but
 * before those marked `depends` (the caller asserts the others are
 * independent, or does not care about their results),
 * submits and waits; *span_ns receives the GPU time from before the first to
 * after the last. Benchmarks use it for throughput with launch gaps hidden
 * (qkrt_run's per-dispatch times include each dispatch's launch). */
qkrt_result qkrt_run_span(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *span_ns);

/* Copies src to dst on the GPU (n times, back to back in one submission) and
 * returns the GPU time of each copy in ns[0..n). Used to measure copy bandwidth. */
qkrt_result qkrt_copy(qkrt_context *ctx, qkrt_buffer *dst, qkrt_buffer *src, size_t bytes,
                      uint32_t n, double *ns);

#ifdef __cplusplus
}
#endif
#endif
