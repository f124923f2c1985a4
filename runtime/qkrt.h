/* qkrt: the qkgen runtime. Loads generated bundles (manifest.json + SPIR-V)
 * and runs their kernels on a Vulkan device. The only public header of libqkrt.
 *
 * Two ways in: qkrt_create, where libqkrt makes its own instance, device and
 * queue and its calls submit and wait (qkrt_run); or qkrt_create_from_vulkan,
 * on an engine's VkDevice, where qkrt_cmd_dispatch records kernels into the
 * engine's command buffers and never submits. The first is built on the second.
 * A context and its bundles are used by one thread at a time.
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
#include <vulkan/vulkan_core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum qkrt_result {
    QKRT_OK = 0,
    QKRT_ERROR_ARGUMENT,    /* a bad argument from the caller */
    QKRT_ERROR_NO_DEVICE,   /* no Vulkan device, or none matches the request */
    QKRT_ERROR_VULKAN,      /* a Vulkan call failed; the message names it and its VkResult */
    QKRT_ERROR_IO,          /* a file could not be read or written */
    QKRT_ERROR_MANIFEST,    /* a manifest is malformed, of another schema, or not its SPIR-V */
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
    /* The kernel features (manifest names, docs/manifest.md: "float16",
     * "storage_8bit", ...) to enable on the device, where it has them: the
     * device gets exactly these, as an engine that enables what its kernels'
     * entries list, and qkrt_kernel_check refuses a kernel that needs another.
     * NULL: every feature libqkrt knows that the device has. An unknown name
     * fails qkrt_create with QKRT_ERROR_ARGUMENT. */
    const char *const *features;
    uint32_t feature_count;
} qkrt_desc;

/* What kernels care about in a device. */
typedef struct qkrt_device_info {
    uint32_t index;
    char name[256];
    char type[16];                    /* "discrete", "integrated", "virtual", "cpu", "other" */
    VkPhysicalDeviceType device_type; /* the same as Vulkan's enum */
    char driver[256];                 /* driver name and info */
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
    bool cooperative_matrix2_nv;      /* VK_NV_cooperative_matrix2 (workgroup scope, tensor
                                         addressing, per-element operations) on Vulkan 1.3 */
    uint32_t coopmat_m, coopmat_n, coopmat_k; /* first usable NV f16 shape, 0 if none */
    uint64_t device_local_bytes;
    double timestamp_period_ns;        /* 0 if compute queue has no timestamps */
    uint32_t max_workgroup_count[3];   /* maxComputeWorkGroupCount: a dispatch's groups */
    uint32_t max_storage_buffer_range; /* maxStorageBufferRange: bytes a binding sees */
} qkrt_device_info;

/* Count-then-fill: with infos NULL, *count receives the number of devices;
 * else up to *count infos are filled and *count becomes how many. Creates and
 * destroys a Vulkan instance of its own (not for embedded use: an engine
 * knows its device). error (may be NULL) receives the message of a failure,
 * which also goes to qkrt_last_error(NULL). */
qkrt_result qkrt_enumerate_devices(qkrt_device_info *infos, uint32_t *count, char *error,
                                   size_t error_size);

/* The convenience context: libqkrt creates its own VkInstance, picks a
 * device (desc->device), creates a VkDevice with the features kernels use and
 * a compute queue, and the context's calls submit and wait on it. It is a
 * qkrt_create_from_vulkan context on that device, so everything below works
 * on both. desc NULL: all defaults. Returns QKRT_OK and *out, or an error
 * with *out NULL and the message in qkrt_last_error(NULL). */
qkrt_result qkrt_create(const qkrt_desc *desc, qkrt_context **out);

/* How kernels' buffers reach their descriptor set in recorded dispatches. */
typedef enum qkrt_descriptor_mode {
    /* PUSH where VK_KHR_push_descriptor is enabled on the device, else POOL */
    QKRT_DESCRIPTORS_AUTO = 0,
    /* vkCmdPushDescriptorSetKHR: nothing to free; needs VK_KHR_push_descriptor */
    QKRT_DESCRIPTORS_PUSH = 1,
    /* sets allocated from descriptor pools the context owns; the caller frees
     * them all with qkrt_descriptors_reset once the command buffers that used
     * them completed. Also lets a caller pass sets of its own (qkrt_dispatch.set). */
    QKRT_DESCRIPTORS_POOL = 2,
} qkrt_descriptor_mode;

/* An embedded context: the caller's Vulkan objects, none created by libqkrt
 * (but pipelines, layouts, descriptor pools and, for the convenience calls, a
 * command pool, a fence and buffers). Zero means default for optional fields. */
typedef struct qkrt_vulkan_desc {
    VkInstance instance;              /* required */
    uint32_t api_version;             /* the instance's apiVersion; 0: Vulkan 1.2 */
    VkPhysicalDevice physical_device; /* required: the device's, Vulkan 1.2 or later */
    VkDevice device;                  /* required */
    /* Required: the VkDeviceCreateInfo the device was created with, read
     * during the call only. Its pEnabledFeatures, pNext chain of feature
     * structs (VkPhysicalDeviceFeatures2, Vulkan11/12/13Features or the
     * extensions' structs) and ppEnabledExtensionNames say what is enabled:
     * kernels that need more are refused (qkrt_kernel_check), never run. */
    const VkDeviceCreateInfo *device_info;
    uint32_t queue_family; /* the family of the command buffers recorded into (compute) */
    /* Optional: a queue of queue_family for the convenience calls that submit
     * and wait (buffer create/upload/download/fill, qkrt_run), which the
     * caller must not use from another thread meanwhile. VK_NULL_HANDLE:
     * those calls fail with QKRT_ERROR_ARGUMENT. */
    VkQueue queue;
    VkPipelineCache pipeline_cache;         /* optional; libqkrt never saves nor destroys it */
    const VkAllocationCallbacks *allocator; /* optional: for every object libqkrt creates */
    qkrt_descriptor_mode descriptors;
    void (*log)(void *user, int level, const char *message); /* optional */
    void *log_user;
} qkrt_vulkan_desc;

/* Creates a context on the caller's device. Returns QKRT_OK and *out;
 * QKRT_ERROR_ARGUMENT for a missing required field, QKRT_ERROR_UNSUPPORTED for
 * QKRT_DESCRIPTORS_PUSH without the extension or a device before Vulkan 1.2;
 * the message in qkrt_last_error(NULL). The caller's objects must outlive the
 * context. */
qkrt_result qkrt_create_from_vulkan(const qkrt_vulkan_desc *desc, qkrt_context **out);

/* Same as qkrt_last_error(NULL): the message of the last failed create on this thread. */
const char *qkrt_create_error(void);
/* Waits for the context's own submissions, destroys what libqkrt created
 * (pipelines of bundles already destroyed; for qkrt_create also the device
 * and instance) and saves the pipeline cache of qkrt_create. NULL: no-op. */
void qkrt_destroy(qkrt_context *ctx);
/* The one error channel: the message of the context's last failed call
 * (every failing call sets it; it is not cleared by success). ctx NULL: the
 * last failed call without a context on this thread (qkrt_create,
 * qkrt_create_from_vulkan, qkrt_enumerate_devices, qkrt_eval, qkrt_eval_bool).
 * Never NULL. */
const char *qkrt_last_error(const qkrt_context *ctx);
/* The device's capabilities as the context sees them: for an embedded context
 * the optional features are those the caller enabled. */
const qkrt_device_info *qkrt_device(const qkrt_context *ctx);
/* Number of validation-layer errors reported since qkrt_create (0 without
 * validation; an embedded context leaves validation to the caller's messenger). */
uint32_t qkrt_validation_errors(const qkrt_context *ctx);

/* ---- buffers: device-local storage buffers, moved through staging ---- */
/* A device-local storage buffer of at least `bytes` (never 0: 16 at least;
 * a multiple of 4), also usable as transfer source, destination and indirect
 * arguments; contents undefined. Returns QKRT_OK and *out, or
 * QKRT_ERROR_MEMORY / QKRT_ERROR_VULKAN with *out NULL. */
qkrt_result qkrt_buffer_create(qkrt_context *ctx, size_t bytes, qkrt_buffer **out);
/* A buffer of the caller's as a qkrt_buffer, to bind in dispatches: created
 * with VK_BUFFER_USAGE_STORAGE_BUFFER_BIT (and INDIRECT_BUFFER_BIT to be an
 * indirect argument), bound to memory, at least `bytes` long. libqkrt never
 * frees it: qkrt_buffer_destroy releases only the wrapper. The transfer calls
 * below work on it if it also has the TRANSFER_SRC/DST usage. */
qkrt_result qkrt_buffer_wrap(qkrt_context *ctx, VkBuffer buffer, size_t bytes, qkrt_buffer **out);
/* The VkBuffer behind buf (for the caller's barriers and copies); NULL buf: VK_NULL_HANDLE. */
VkBuffer qkrt_buffer_handle(const qkrt_buffer *buf);
/* Destroys buf (a buffer of ctx; NULL: no-op). Precondition: no pending GPU
 * work uses it. */
void qkrt_buffer_destroy(qkrt_context *ctx, qkrt_buffer *buf);
/* The size asked for at creation or wrapping; NULL: 0. */
size_t qkrt_buffer_size(const qkrt_buffer *buf);
/* The convenience transfers: copy bytes between host memory and the buffer
 * at offset through a staging buffer, submitting on the context's queue and
 * waiting (QKRT_ERROR_ARGUMENT without a queue, or for a range outside the
 * buffer). Ordered after every earlier submission of the context. */
qkrt_result qkrt_buffer_upload(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, const void *data,
                               size_t bytes);
qkrt_result qkrt_buffer_download(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, void *data,
                                 size_t bytes);
/* Fills the whole buffer with a 32-bit pattern (0x7fc00000 poisons f32 with
 * NaN), submitting and waiting as the transfers above. */
qkrt_result qkrt_buffer_fill(qkrt_context *ctx, qkrt_buffer *buf, uint32_t pattern);

/* ---- bundles: manifest.json + .spv files ---- */

/* The manifest's names as enums, for switches; each *_OTHER stands for a
 * name this runtime does not know (a newer bundle): the string field beside
 * the enum always has the manifest's name. */
typedef enum qkrt_role {
    QKRT_ROLE_OTHER = 0,
    QKRT_ROLE_WEIGHTS,        /* quantized weights ("weights" of the manifest) */
    QKRT_ROLE_ACTIVATIONS,    /* rows of K, f32 or f16 (the kernel's activation) */
    QKRT_ROLE_ACTIVATIONS_Q8, /* q8 rows written by the quantize kernel */
    QKRT_ROLE_OUTPUT,
    QKRT_ROLE_IDS,             /* MoE expert ids */
    QKRT_ROLE_TPE,             /* MoE tokens per expert */
    QKRT_ROLE_SCRATCH,         /* working memory sized by qkrt_binding_info.size */
    QKRT_ROLE_INDIRECT,        /* vkCmdDispatchIndirect arguments */
    QKRT_ROLE_ROUTING_WEIGHTS, /* MoE routing weights */
    QKRT_ROLE_TOPK,            /* MoE top-k selections */
    QKRT_ROLE_LOGITS,          /* the router's logits [T, E] (router_topk, ranked gate/up) */
    QKRT_ROLE_SLOTS,           /* the experts' outputs [T, top_k, N] (moe_combine) */
    QKRT_ROLE_GATE,            /* the gate product (swiglu) */
    QKRT_ROLE_UP,              /* the up product (swiglu) */
    QKRT_ROLE_RESIDUAL,        /* the residual stream (fusions residual, residual_rmsnorm) */
    QKRT_ROLE_NORM_WEIGHT,     /* RMSNorm's weights [N] */
    QKRT_ROLE_NORMED,          /* RMSNorm's output */
} qkrt_role;

typedef enum qkrt_scalar {
    QKRT_SCALAR_OTHER = 0,
    QKRT_SCALAR_U8,
    QKRT_SCALAR_I8,
    QKRT_SCALAR_U16,
    QKRT_SCALAR_I16,
    QKRT_SCALAR_F16,
    QKRT_SCALAR_BF16,
    QKRT_SCALAR_U32,
    QKRT_SCALAR_I32,
    QKRT_SCALAR_F32,
} qkrt_scalar;

typedef enum qkrt_family {
    QKRT_FAMILY_OTHER = 0,
    QKRT_FAMILY_MATVEC,
    QKRT_FAMILY_MATVEC_ID,
    QKRT_FAMILY_MATVEC_ID_SEP,
    QKRT_FAMILY_MATMUL,
    QKRT_FAMILY_MATMUL_ID,
    QKRT_FAMILY_QUANTIZE,
    QKRT_FAMILY_COPY,
    QKRT_FAMILY_EMBED,
    QKRT_FAMILY_SWIGLU,
    QKRT_FAMILY_MOE_ROUTE,
    QKRT_FAMILY_MOE_COMBINE,
    QKRT_FAMILY_ROUTER_TOPK,
    QKRT_FAMILY_MATVEC_ID_RANKED,
    QKRT_FAMILY_DEQUANT,    /* weights to f16w blocks: the two-pass prefill's pass 1 */
    QKRT_FAMILY_DEQUANT_ID, /* the same for the experts the routing touches */
} qkrt_family;

typedef struct qkrt_binding_info {
    uint32_t set, binding, count; /* count > 1: an array of buffers, bound in order */
    const char *name;             /* e.g. "w", "x", "y" */
    const char *role;             /* "weights", "activations", "output", ... */
    const char *type;             /* element type: "u32", "f32", ... */
    bool writable;
    const char *size;    /* "" or the bytes to allocate: an expression over the
                            shape (qkrt_eval), for scratch buffers */
    qkrt_role role_id;   /* role as an enum */
    qkrt_scalar type_id; /* type as an enum */
} qkrt_binding_info;

typedef struct qkrt_push_info {
    const char *name;    /* value taken from the shape variable of the same name */
    uint32_t offset;     /* bytes */
    const char *type;    /* "u32" or "i32" or "f32" */
    qkrt_scalar type_id; /* type as an enum */
} qkrt_push_info;

/* A plane of a planar weight format (MLX: codes, scales, biases). */
typedef struct qkrt_plane_info {
    const char *name, *type;
    uint32_t per_group;
} qkrt_plane_info;

/* A SPIR-V specialization constant the kernel's pipeline is created with
 * (the manifest's "specialization_constants": tile sizes such as WG, NR1). */
typedef struct qkrt_specialization_info {
    uint32_t id;      /* SPIR-V SpecId */
    const char *name; /* "WG", "NR1", ... */
    const char *type; /* "u32", "i32", "f32" or "bool" */
    uint32_t data;    /* the 4 bytes given to VkSpecializationInfo (a bool: 0 or 1) */
} qkrt_specialization_info;

typedef struct qkrt_kernel_info {
    const char *name, *family, *format, *activation;
    /* the .spv file inside the bundle; kernels that share one share its
     * VkShaderModule and differ in their specialization constants */
    const char *spv;
    /* what the device must have enabled, as the manifest lists it: the
     * Vulkan version ("1.2"), feature names (docs/manifest.md: "float16",
     * "subgroup_arithmetic", ...) and device extensions */
    const char *vulkan_version;
    uint32_t feature_count;
    const char *const *features;
    uint32_t extension_count;
    const char *const *extensions;
    uint32_t specialization_count;
    const qkrt_specialization_info *specialization;
    uint32_t nr0, nr1, nk;
    uint32_t workgroup_size[3];
    uint32_t required_subgroup_size; /* 0: any */
    uint32_t min_subgroup_size;      /* 0: any */
    uint32_t shared_memory_bytes;
    uint32_t binding_count;
    const qkrt_binding_info *bindings; /* binding_count of them, owned by the bundle */
    uint32_t push_count, push_size;
    const qkrt_push_info *push; /* push_count of them */
    const char *grid[3];        /* integer expressions over the shape variables */
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
    const qkrt_plane_info *planes; /* plane_count of them */
    qkrt_family family_id;         /* family as an enum */
    /* what the kernel rounds activations to on the way (the manifest's
     * "precision"): "f32", "f16" (staged as f16) or "q8" (8-bit codes);
     * "f32" where the manifest does not say */
    const char *precision;
    /* "" or the family of the kernel that must run first on the same
     * activations (the manifest's "prepass": "quantize" for the kernels that
     * read q8 rows; qkrt_ops.h's plans add it) */
    const char *prepass;
} qkrt_kernel_info;

/* What a bundle's kernels ask of a device, read from dir/manifest.json
 * before any device exists, so that an engine creates its device with
 * exactly that (what the device offers of it): the highest Vulkan version a
 * kernel needs, and the union of the feature names (docs/manifest.md) and
 * device extensions of all kernels. A kernel whose needs the device lacks
 * is refused at qkrt_kernel_check; the others run. */
typedef struct qkrt_requirements {
    char vulkan_version[16]; /* "1.2" */
    uint32_t feature_count;
    const char *const *features;
    uint32_t extension_count;
    const char *const *extensions;
    uint32_t kernel_count; /* the bundle's kernels */
} qkrt_requirements;
/* *out (freed with qkrt_requirements_free) or NULL with the reason in
 * qkrt_last_error(NULL): the manifest's and modules' checks are
 * qkrt_bundle_load's. */
qkrt_result qkrt_bundle_requirements(const char *dir, qkrt_requirements **out);
void qkrt_requirements_free(qkrt_requirements *req);

/* Loads dir/manifest.json and the .spv files it names (each once, however
 * many kernels specialize it); checks the schema version and every hash.
 * Creates no Vulkan object: pipelines come on first use. Returns QKRT_OK and
 * *out, else QKRT_ERROR_IO / QKRT_ERROR_MANIFEST (file:line:col in the
 * message) / QKRT_ERROR_MEMORY with *out NULL. */
qkrt_result qkrt_bundle_load(qkrt_context *ctx, const char *dir, qkrt_bundle **out);
/* Destroys the bundle's pipelines, layouts and shader modules (NULL: no-op).
 * Precondition: no pending GPU work uses them. */
void qkrt_bundle_destroy(qkrt_context *ctx, qkrt_bundle *bundle);
/* Number of kernels; NULL: 0. */
uint32_t qkrt_bundle_kernel_count(const qkrt_bundle *bundle);
/* The kernel's manifest entry (valid while the bundle lives), or NULL for an
 * index out of range. */
const qkrt_kernel_info *qkrt_bundle_kernel(const qkrt_bundle *bundle, uint32_t index);
/* Index of the kernel called name, or -1. */
int qkrt_bundle_find(const qkrt_bundle *bundle, const char *name);
/* QKRT_OK if the context runs the kernel: its Vulkan version, features and
 * extensions are enabled on the device (for an embedded context, as the
 * caller's VkDeviceCreateInfo says), its limits and subgroup sizes fit.
 * Else QKRT_ERROR_UNSUPPORTED with a message naming what is missing, or
 * QKRT_ERROR_MANIFEST when the entry itself is incomplete: its module
 * declares a SPIR-V capability whose feature the entry does not list (an
 * engine enabling what the manifest says would fail). Creates nothing. */
qkrt_result qkrt_kernel_check(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index);
/* Creates the pipelines of the kernels indices[0 .. n) that the device runs
 * and that have none yet, on `threads` threads at once (0: one a core), so
 * that a driver's compiles overlap; kernels are otherwise built on first use.
 * Returns how many of them have a pipeline now. A kernel the device cannot
 * run, or whose pipeline fails, is left as it was: its first use reports why.
 * No other call may use the context while it runs. */
uint32_t qkrt_kernels_prepare(qkrt_context *ctx, const qkrt_bundle *bundle, const uint32_t *indices,
                              uint32_t n, uint32_t threads);
/* ---- shapes: named integer variables (M, K, T, ...) ---- */
typedef struct qkrt_shape {
    uint32_t count;
    const char *const *names; /* count names, each looked up by exact match */
    const int64_t *values;    /* their values */
} qkrt_shape;

/* Evaluates an integer expression (+ - * / % and parentheses, / rounding
 * down, names looked up in shape). Also: unary minus, decimal literals; %
 * matches the floor division (a / b * b + a % b == a). Unknown names, division
 * by zero, int64 overflow and syntax errors return QKRT_ERROR_ARGUMENT with a
 * message in error (may be NULL; also in qkrt_last_error(NULL)), e.g.
 * "unknown variable 'Q' in expression '(Q+1)/2' (column 2)". */
qkrt_result qkrt_eval(const char *expr, const qkrt_shape *shape, int64_t *value, char *error,
                      size_t error_size);
/* Evaluates a manifest constraint: a comparison (== != <= >= < >) of two
 * expressions, e.g. "K % 32 == 0", or such comparisons joined by && || and !.
 * The evaluator is qkgen's own (common/qk_expr.c), so engines and the
 * generator agree on every value. */
qkrt_result qkrt_eval_bool(const char *expr, const qkrt_shape *shape, bool *value, char *error,
                           size_t error_size);

/* Whether a SPIR-V module of `words` 32-bit words declares a GLCompute
 * entry point called `entry`: the check qkrt_bundle_load makes of every
 * kernel, for a tool that embeds modules without loading them (qkgen
 * export). False for a module too short or malformed to say. */
bool qkrt_module_has_entry(const uint32_t *code, size_t words, const char *entry);

/* ---- dispatch ---- */
typedef struct qkrt_dispatch {
    const qkrt_bundle *bundle;
    uint32_t kernel; /* index in the bundle */
    /* one buffer per descriptor, in binding order (an array binding of count
     * n takes n): buffer_count is the sum of the kernel's binding counts */
    uint32_t buffer_count;
    qkrt_buffer *const *buffers;
    qkrt_shape shape;      /* push constants and the grid come from here */
    uint32_t groups[3];    /* all zero: evaluate the manifest's grid rule */
    qkrt_buffer *indirect; /* non-NULL: vkCmdDispatchIndirect from here */
    size_t indirect_offset;
    bool depends; /* reads what the dispatch before it wrote: a barrier before
                     it even without QKRT_BARRIER_BETWEEN */
    /* QKRT_DESCRIPTORS_POOL only: a set the caller allocated with the
     * kernel's set layout (qkrt_kernel_layout) and wrote; buffers are then
     * not read. VK_NULL_HANDLE: libqkrt writes a set from buffers. */
    VkDescriptorSet set;
} qkrt_dispatch;

/* Barriers qkrt_cmd_dispatch records: global memory barriers from compute
 * shader writes to compute shader reads and writes and indirect reads. */
enum {
    QKRT_BARRIER_NONE = 0,
    QKRT_BARRIER_BEFORE = 1u << 0,  /* before the first dispatch */
    QKRT_BARRIER_BETWEEN = 1u << 1, /* between consecutive dispatches */
    QKRT_BARRIER_AFTER = 1u << 2,   /* after the last dispatch */
};

/* Records the n dispatches, in order, into the caller's command buffer cmd
 * (in the recording state, of the context's queue family, outside a render
 * pass), with the barriers `barriers` asks for (QKRT_BARRIER_*) and one before
 * each dispatch marked `depends`. Nothing is submitted or waited for; the
 * buffers must stay alive until cmd completes. Leaves cmd's compute pipeline,
 * descriptor set 0 and push constants bound: the caller rebinds its own.
 * Checks each dispatch first (kernel runnable here, buffers, shape against the
 * constraints, grid within the device's limits) and records nothing of a
 * dispatch that fails, but the ones before it stay recorded. Pipelines are
 * created on first use (qkrt_kernels_prepare makes them ahead). Returns
 * QKRT_OK, or the first failure with its message in qkrt_last_error. */
qkrt_result qkrt_cmd_dispatch(qkrt_context *ctx, VkCommandBuffer cmd, const qkrt_dispatch *d,
                              uint32_t n, uint32_t barriers);

/* QKRT_DESCRIPTORS_POOL: returns every set qkrt_cmd_dispatch allocated to its
 * pools. Precondition: every command buffer recorded with them has completed
 * or been reset. With push descriptors: no-op. */
qkrt_result qkrt_descriptors_reset(qkrt_context *ctx);

/* The kernel's descriptor-set and pipeline layouts (created if they were not
 * yet; owned by the bundle), for callers that write sets of their own
 * (qkrt_dispatch.set) or push constants around qkrt's. Either pointer may be NULL. */
qkrt_result qkrt_kernel_layout(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index,
                               VkDescriptorSetLayout *set_layout, VkPipelineLayout *layout);

/* The convenience path: records the n dispatches into the context's own
 * command buffer with a barrier between consecutive ones (as qkrt_cmd_dispatch
 * with every barrier), submits it on the context's queue and waits. Needs a
 * queue (qkrt_create, or qkrt_vulkan_desc.queue). */
qkrt_result qkrt_run(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n);

/* ---- tuned selection (runtime/select.c): the manifest's "select" table,
 * written by `qkgen build --tuned` (docs/manifest.md, "Selection") ---- */

/* What a tuning database and a select table know a device by. */
typedef struct qkrt_device_identity {
    uint32_t vendor_id, device_id, driver_version;
    uint8_t pipeline_cache_uuid[16];
    char name[256];
} qkrt_device_identity;

qkrt_result qkrt_device_identify(const qkrt_context *ctx, qkrt_device_identity *out);

/* Whether the bundle's manifest has a "select" table. */
bool qkrt_bundle_has_select(const qkrt_bundle *bundle);

/* The kernel the bundle's select table names for operation op (a kernel
 * family: "matvec", "matvec_id", "matmul", "matmul_id") on f32 activations
 * (the rules that name none; a rule whose kernel reads others is skipped),
 * format ("q4_0"; "mlx4_g64/bf16" names the format option too, "mlx4_g64"
 * takes any) and shape (M, K and T at least) on this context's device, by
 * the rule of docs/manifest.md: the rules tuned on this device, then those
 * of a sibling of its family, then those of another device of its vendor,
 * then the default ones; the first whose op and format match, whose ranges
 * hold M, K and T, and whose kernel the bundle has, the device runs and the
 * shape's constraints allow. *kernel receives its index.
 * QKRT_ERROR_UNSUPPORTED when the bundle has no select table or no rule
 * answers (the message says which levels it read); QKRT_ERROR_MANIFEST for a
 * malformed table. */
qkrt_result qkrt_select(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                        const char *format, const qkrt_shape *shape, uint32_t *kernel);
/* qkrt_select for activations of a type: "f32" (what qkrt_select asks) or
 * "f16" (an engine's f16 hidden state: the prefill matmuls' f16-activation
 * kernels, tuned with `qkgen tune --activations f16`). A rule answers only
 * for its own activations (absent: f32) and only with a kernel whose
 * manifest `activation` is that type. */
qkrt_result qkrt_select_activations(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                                    const char *format, const char *activations,
                                    const qkrt_shape *shape, uint32_t *kernel);

/* The level of a select table whose rule answered, nearest first
 * (docs/manifest.md, "Selection"): rules tuned on this device (vendor and
 * device id equal), on a sibling of its family (the same vendor, the device
 * ids equal under the entry's family_mask: those that differ in their low 8
 * bits, as `qkgen build --tuned` writes it), on another device of its
 * vendor, or the portable default rules. */
typedef enum qkrt_select_level {
    QKRT_SELECT_DEVICE = 0,
    QKRT_SELECT_FAMILY = 1,
    QKRT_SELECT_VENDOR = 2,
    QKRT_SELECT_DEFAULT = 3,
} qkrt_select_level;

/* "device", "family", "vendor" or "default"; "unknown" for another value. */
const char *qkrt_select_level_name(qkrt_select_level level);

/* What qkrt_select_ex answers. */
typedef struct qkrt_selection {
    uint32_t kernel;         /* the kernel's index in the bundle */
    qkrt_select_level level; /* the level whose rule answered */
    const char *tuned_on;    /* that level's device entry's name ("" for the default rules
                                or an entry without one); valid while the bundle is */
    bool two_pass;           /* the rule names a first pass (select version 3): kernel
                                first_pass turns the weights into what `kernel` reads */
    uint32_t first_pass;     /* its index in the bundle, where two_pass */
} qkrt_selection;

/* qkrt_select_activations (activations NULL: "f32") that also says where
 * the answer came from, and also answers with the rules that run in two
 * passes (select version 3: selection.two_pass, the first pass's index in
 * selection.first_pass; qkrt_op_chain records both), which qkrt_select and
 * qkrt_select_activations pass over (their callers would run the second
 * pass on weights it does not read); else the same kernel for the same
 * query. */
qkrt_result qkrt_select_ex(qkrt_context *ctx, const qkrt_bundle *bundle, const char *op,
                           const char *format, const char *activations, const qkrt_shape *shape,
                           qkrt_selection *out);

#ifdef __cplusplus
}
#endif
#endif
