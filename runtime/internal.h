/* Private declarations shared by the files of libqkrt: the context, buffer,
 * bundle and kernel structs, error and command helpers, SHA-256, expressions. */
#ifndef QKRT_INTERNAL_H
#define QKRT_INTERNAL_H

#include "qkrt.h"

#include <stdarg.h>
#include <vulkan/vulkan.h>

#if defined(__GNUC__) || defined(__clang__)
#define QKRT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define QKRT_PRINTF(f, a)
#endif

/* Features a manifest may name ("features": [...]); bits of qkrt_kernel.features. */
enum {
    QKRT_FEATURE_SUBGROUP_ARITHMETIC = 1u << 0,
    QKRT_FEATURE_STORAGE_8BIT = 1u << 1,
    QKRT_FEATURE_STORAGE_16BIT = 1u << 2,
    QKRT_FEATURE_FLOAT16 = 1u << 3,
    QKRT_FEATURE_INT8 = 1u << 4,
    QKRT_FEATURE_COOPERATIVE_MATRIX_NV = 1u << 5,
    QKRT_FEATURE_DYNAMIC_INDEXING = 1u << 6,
    QKRT_FEATURE_INT64 = 1u << 7,
    QKRT_FEATURE_INTEGER_DOT_PRODUCT = 1u << 8,
};

/* Everything learnt about one physical device; shared by enumeration and creation. */
typedef struct qkrt_device_caps {
    qkrt_device_info info;
    VkPhysicalDevice physical;
    uint32_t api;            /* min(instance, device) version, patch dropped */
    uint32_t queue_family;   /* UINT32_MAX: no compute queue */
    uint32_t timestamp_bits; /* timestampValidBits of that family */
    VkPhysicalDeviceLimits limits;
    uint8_t cache_uuid[VK_UUID_SIZE];
    bool dynamic_indexing, int16;
    bool storage_16bit_uniform, storage_8bit_uniform;
    bool memory_model, memory_model_device_scope, subgroup_extended_types;
    bool size_control, full_subgroups; /* features, 1.3 core or the EXT */
    bool size_control_ext;             /* enable VK_EXT_subgroup_size_control */
    uint32_t required_size_stages, max_workgroup_subgroups;
    bool maintenance4, maintenance4_ext;
    bool coopmat_nv_ext;
    bool integer_dot_ext; /* VK_KHR_shader_integer_dot_product to enable (before Vulkan 1.3) */
    bool executable_info; /* VK_KHR_pipeline_executable_properties with pipelineExecutableInfo */
} qkrt_device_caps;

struct qkrt_buffer {
    qkrt_context *ctx;
    VkBuffer buffer;
    VkDeviceMemory memory;
    size_t size;            /* as requested */
    VkDeviceSize allocated; /* at least 16 bytes, a multiple of 4 */
};

typedef struct qkrt_kernel {
    qkrt_kernel_info info;
    const char *spv, *sha256, *entry, *vulkan_version;
    uint32_t features;
    const char *unknown_feature; /* a feature name this runtime does not know */
    const char **extensions;
    uint32_t extension_count;
    uint32_t *code;
    size_t code_size;
    uint32_t descriptor_count; /* sum of binding counts: slots of qkrt_dispatch.buffers */
    bool checked;              /* qkrt_kernel_check passed once */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
} qkrt_kernel;

struct qkrt_bundle {
    qkrt_context *ctx;
    struct qkrt_json *doc; /* keeps the strings that qkrt_kernel_info points to */
    qkrt_kernel *kernels;
    uint32_t count;
};

struct qkrt_context {
    void (*log)(void *user, int level, const char *message);
    void *log_user;
    char error[2048];
    uint32_t validation_errors;

    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    qkrt_device_caps caps;
    VkDevice device;
    VkQueue queue;
    VkPhysicalDeviceMemoryProperties memory;
    const char *extensions[8]; /* enabled device extensions */
    uint32_t extension_count;
    bool pipeline_stats; /* pipelines capture the driver's statistics (qkrt_kernel_stats) */

    VkCommandPool command_pool;
    VkCommandBuffer cmd;
    VkFence fence;

    VkBuffer staging;
    VkDeviceMemory staging_memory;
    void *staging_map;
    VkDeviceSize staging_size;

    VkPipelineCache pipeline_cache;
    char *cache_path; /* NULL: not persisted */
    bool cache_dirty;

    /* descriptor sets come from a list of pools, all reset once a run is done;
     * what is left in pools[pool_used] is counted so allocation never fails */
    VkDescriptorPool *pools;
    uint32_t pool_count, pool_used;
    uint32_t sets_left, descriptors_left;
    VkQueryPool query_pool;
    uint32_t query_capacity;
    uint64_t *query_results; /* query_capacity entries */
};

/* ---- errors and logging (context.c) ---- */
qkrt_result qkrt_fail(qkrt_context *ctx, qkrt_result result, const char *fmt, ...)
    QKRT_PRINTF(3, 4);
/* "<call> failed: VK_ERROR_...", QKRT_ERROR_MEMORY for out-of-memory results. */
qkrt_result qkrt_vk_fail(qkrt_context *ctx, VkResult vr, const char *call_fmt, ...)
    QKRT_PRINTF(3, 4);
void qkrt_log(qkrt_context *ctx, int level, const char *fmt, ...) QKRT_PRINTF(3, 4);
const char *qkrt_vk_result_name(VkResult vr);

/* ---- one-shot command buffer (context.c) ---- */
/* Begins ctx->cmd with a barrier ordering it after all earlier submissions. */
qkrt_result qkrt_cmd_begin(qkrt_context *ctx);
/* Makes the writes visible to the host, submits and waits for completion. */
qkrt_result qkrt_cmd_submit(qkrt_context *ctx);
/* A global barrier: compute and transfer writes before any later read or write. */
void qkrt_cmd_barrier(qkrt_context *ctx);

/* ---- devices (device.c) ---- */
/* Lists the devices of instance with their capabilities; *caps is malloc'ed. */
qkrt_result qkrt_devices_query(VkInstance instance, uint32_t instance_api, qkrt_device_caps **caps,
                               uint32_t *count, char *error, size_t error_size);
/* Creates ctx->device and ctx->queue on ctx->caps, with every useful feature. */
qkrt_result qkrt_device_open(qkrt_context *ctx);
/* The instance version to ask for: 1.3 where the loader has it, else 1.2. */
uint32_t qkrt_instance_api(void);

/* ---- memory (buffer.c) ---- */
qkrt_result qkrt_memory_alloc(qkrt_context *ctx, VkBuffer buffer, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred, VkDeviceMemory *out);
void qkrt_staging_release(qkrt_context *ctx);

/* ---- dispatch (dispatch.c) ---- */
void qkrt_kernel_release(qkrt_context *ctx, qkrt_kernel *kernel);
void qkrt_dispatch_release(qkrt_context *ctx);

/* SHA-256 of the .spv files: qk_sha256_hex of common/qk_util.h, as the generator. */

/* ---- expressions over a shape (bundle.c), by common/qk_expr.c ---- */
/* A qk_lookup_fn over a const qkrt_shape *. */
bool qkrt_shape_lookup(void *shape, const char *name, size_t len, int64_t *value);
/* qkrt_eval with "what" naming the expression in messages ("grid expression"). */
qkrt_result qkrt_eval_named(const char *expr, const char *what, const qkrt_shape *shape,
                            int64_t *value, char *error, size_t error_size);

#endif
