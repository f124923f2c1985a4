/* Private declarations shared by the files of libqkrt: the context, buffer,
 * bundle and kernel structs, error and command helpers, SHA-256, expressions. */
#ifndef QKRT_INTERNAL_H
#define QKRT_INTERNAL_H

#include "qkrt.h"
#include "qkrt_bench.h"

#include <stdarg.h>
#include <vulkan/vulkan.h>

#if defined(__GNUC__) || defined(__clang__)
#define QKRT_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define QKRT_PRINTF(f, a)
#endif

/* Descriptors of one kernel (the sum of its binding counts): dispatches
 * write them from arrays on the stack. */
enum { QKRT_MAX_BINDINGS = 32 };

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
    QKRT_FEATURE_INT16 = 1u << 9,
    QKRT_FEATURE_VULKAN_MEMORY_MODEL = 1u << 10,
    QKRT_FEATURE_COOPERATIVE_MATRIX_KHR = 1u << 11,
    QKRT_FEATURE_COOPERATIVE_MATRIX2_NV = 1u << 12,
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
    bool push_descriptor; /* VK_KHR_push_descriptor (offered; enabled once masked) */
} qkrt_device_caps;

struct qkrt_buffer {
    qkrt_context *ctx;
    VkBuffer buffer;
    VkDeviceMemory memory;
    bool wrapped;           /* the caller's (qkrt_buffer_wrap): never destroyed here */
    size_t size;            /* as requested */
    VkDeviceSize allocated; /* at least 16 bytes, a multiple of 4 */
};

/* A buffer the entry point uses, as its SPIR-V declares it (reflect.c). */
typedef struct qkrt_reflected_binding {
    uint32_t set, binding;
    bool has_set, has_binding; /* DescriptorSet / Binding decorations present */
    bool storage;              /* a storage buffer (else a uniform buffer or other) */
    bool runtime_array;        /* an array of buffers without a length */
    uint32_t count;            /* buffers: 1, or the array's length at its default */
    int32_t count_spec;        /* the SpecId that sets the length, or -1 */
} qkrt_reflected_binding;

/* A member of the entry point's push-constant block. */
typedef struct qkrt_reflected_push {
    uint32_t offset;
    bool has_offset;
    char type[8];  /* "u32", "i32", "f32", or "other" for anything else */
    char name[32]; /* OpMemberName's, "" where the module carries no names */
} qkrt_reflected_push;

enum { QKRT_REFLECT_MAX_PUSH = 64 };

/* What a module's SPIR-V says of one entry point (reflect.c). */
typedef struct qkrt_reflection {
    uint32_t features;       /* QKRT_FEATURE_* its capabilities need */
    uint32_t capability[32]; /* per feature bit: a capability that needs it */
    bool entry_found;        /* the module has the GLCompute entry point */
    bool size_known;         /* the entry point and its workgroup size were found */
    uint32_t size[3];        /* the workgroup size, spec constants at their defaults */
    int32_t size_spec[3];    /* the SpecId that sets each dimension, or -1 */
    /* the buffers and push constants the entry point uses; more than fit
     * (a manifest allows no more) set too_many */
    uint32_t binding_count;
    qkrt_reflected_binding bindings[QKRT_MAX_BINDINGS];
    bool has_push;
    uint32_t push_count;
    qkrt_reflected_push push[QKRT_REFLECT_MAX_PUSH];
    bool too_many;
} qkrt_reflection;

/* Reads capabilities, the workgroup size, the buffers and the push-constant
 * block of the GLCompute entry point called entry from a module; what it
 * cannot find stays zero. */
void qkrt_reflect(const uint32_t *code, size_t words, const char *entry, qkrt_reflection *out);
/* Whether the module declares a GLCompute entry point called entry (read
 * from its first instructions only: cheap enough for every kernel a load). */
bool qkrt_spirv_has_entry(const uint32_t *code, size_t words, const char *entry);
/* "Float16" for 9, ...; "?" for a capability reflect.c does not map. */
const char *qkrt_capability_name(uint32_t capability);

/* One .spv file of a bundle, read once however many kernels specialize it. */
typedef struct qkrt_module {
    const char *spv, *sha256;
    uint32_t *code;
    size_t code_size;
    VkShaderModule handle;      /* made before the first pipeline of its kernels */
    const char *reflected;      /* the entry point reflection is of, or NULL */
    const char *entry_checked;  /* an entry point the loader found in it, or NULL */
    qkrt_reflection reflection; /* made at the first check of one of its kernels */
} qkrt_module;

typedef struct qkrt_kernel {
    qkrt_kernel_info info;
    const char *spv, *sha256, *entry, *vulkan_version;
    uint32_t module; /* index in qkrt_bundle.modules */
    uint32_t pipe;   /* the kernel whose pipeline and layouts this one uses: its
                        own index, or an earlier kernel's of the same module,
                        specialization, entry and layout (pipelines are keyed
                        by module and values) */
    qkrt_specialization_info *specialization; /* info.specialization, owned */
    VkSpecializationMapEntry *spec_map;
    uint32_t *spec_data;
    uint32_t features;
    const char *unknown_feature; /* a feature name this runtime does not know */
    const char **extensions;
    uint32_t extension_count;
    const char **feature_names; /* info.features, owned */
    uint32_t descriptor_count;  /* sum of binding counts: slots of qkrt_dispatch.buffers */
    bool checked;               /* qkrt_kernel_check passed once */
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
} qkrt_kernel;

struct qkrt_bundle {
    qkrt_context *ctx;
    struct qkrt_json *doc; /* keeps the strings that qkrt_kernel_info points to */
    qkrt_kernel *kernels;
    uint32_t count;
    qkrt_module *modules;
    uint32_t module_count;
};

/* Descriptor sets from a list of pools, all reset at once; what is left in
 * pools[used] is counted so that allocation never fails. */
typedef struct qkrt_set_pools {
    VkDescriptorPool *pools;
    uint32_t count, used;
    uint32_t sets_left, descriptors_left;
} qkrt_set_pools;

struct qkrt_context {
    void (*log)(void *user, int level, const char *message);
    void *log_user;
    char error[2048];
    uint32_t validation_errors;

    /* the caller's (qkrt_create_from_vulkan) or, with owns_device, libqkrt's
     * own (qkrt_create), which it destroys */
    bool owns_device;
    bool features_listed; /* qkrt_desc.features chose the device's features */
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    qkrt_device_caps caps; /* what the device offers AND its creator enabled */
    VkDevice device;
    VkQueue queue; /* VK_NULL_HANDLE: no convenience calls (transfers, qkrt_run) */
    const VkAllocationCallbacks *alloc;
    VkPhysicalDeviceMemoryProperties memory;
    char **extensions; /* enabled device extensions, copied */
    uint32_t extension_count;
    bool pipeline_stats; /* pipelines capture the driver's statistics (qkrt_kernel_stats) */
    qkrt_descriptor_mode descriptor_mode; /* as asked */
    bool push_descriptors; /* sets pushed (VK_KHR_push_descriptor), else from pools */
    PFN_vkCmdPushDescriptorSetKHR push_descriptor_set;

    /* the convenience calls' command buffer, made on first use */
    VkCommandPool command_pool;
    VkCommandBuffer cmd;
    VkFence fence;

    VkBuffer staging;
    VkDeviceMemory staging_memory;
    void *staging_map;
    VkDeviceSize staging_size;

    VkPipelineCache pipeline_cache;
    bool owns_cache;
    char *cache_path; /* NULL: not persisted */
    bool cache_dirty;

    /* run_sets serve qkrt_run, reset by each run (it waits); cmd_sets serve
     * qkrt_cmd_dispatch, reset by qkrt_descriptors_reset */
    qkrt_set_pools run_sets, cmd_sets;
    VkQueryPool query_pool;
    uint32_t query_capacity;
    uint64_t *query_results; /* query_capacity entries */
};

/* ---- errors and logging (context.c) ---- */
/* Sets the message qkrt_last_error(NULL) returns on this thread: that of
 * the last failed call without a context. */
void qkrt_set_thread_error(const char *fmt, ...) QKRT_PRINTF(1, 2);
qkrt_result qkrt_fail(qkrt_context *ctx, qkrt_result result, const char *fmt, ...)
    QKRT_PRINTF(3, 4);
/* "<call> failed: VK_ERROR_...", QKRT_ERROR_MEMORY for out-of-memory results. */
qkrt_result qkrt_vk_fail(qkrt_context *ctx, VkResult vr, const char *call_fmt, ...)
    QKRT_PRINTF(3, 4);
void qkrt_log(qkrt_context *ctx, int level, const char *fmt, ...) QKRT_PRINTF(3, 4);
const char *qkrt_vk_result_name(VkResult vr);

/* ---- one-shot command buffer (context.c) ---- */
/* Begins ctx->cmd (made on first use; QKRT_ERROR_ARGUMENT without a queue)
 * with a barrier ordering it after all earlier submissions. */
qkrt_result qkrt_cmd_begin(qkrt_context *ctx);
/* Makes the writes visible to the host, submits and waits for completion. */
qkrt_result qkrt_cmd_submit(qkrt_context *ctx);
/* A global barrier: compute and transfer writes before any later read or write. */
void qkrt_cmd_barrier(VkCommandBuffer cmd);

/* ---- devices (device.c) ---- */
/* Lists the devices of instance with their capabilities; *caps is malloc'ed. */
qkrt_result qkrt_devices_query(VkInstance instance, uint32_t instance_api, qkrt_device_caps **caps,
                               uint32_t *count, char *error, size_t error_size);
/* The capabilities of one physical device (index: its place in the instance's list). */
void qkrt_device_query(VkInstance instance, uint32_t instance_api, VkPhysicalDevice physical,
                       uint32_t index, qkrt_device_caps *caps);
/* Creates ctx->device on ctx->caps with every useful feature, then
 * qkrt_context_attach. */
qkrt_result qkrt_device_open(qkrt_context *ctx);

/* ---- a context on a device (embed.c) ---- */
/* With ctx->device and ctx->caps set: masks ctx->caps to what info enabled,
 * copies its extensions, takes queue (may be VK_NULL_HANDLE), the memory
 * properties and the descriptor mode. Both qkrt_create and
 * qkrt_create_from_vulkan end here. */
qkrt_result qkrt_context_attach(qkrt_context *ctx, const VkDeviceCreateInfo *info, VkQueue queue);
/* Keeps of c's optional features those of the QKRT_FEATURE_* bits in
 * features (qkrt_desc.features), before the device is made from c. */
void qkrt_caps_restrict(qkrt_device_caps *c, uint32_t features);
/* The QKRT_FEATURE_* bit of a manifest feature name, or 0 (bundle.c). */
uint32_t qkrt_feature_bit(const char *name);
/* Whether extension name was enabled on the device. */
bool qkrt_extension_enabled(const qkrt_context *ctx, const char *name);
/* The instance version to ask for: 1.3 where the loader has it, else 1.2. */
uint32_t qkrt_instance_api(void);

/* ---- memory (buffer.c) ---- */
qkrt_result qkrt_memory_alloc(qkrt_context *ctx, VkBuffer buffer, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred, VkDeviceMemory *out);
void qkrt_staging_release(qkrt_context *ctx);

/* ---- dispatch (dispatch.c) ---- */
void qkrt_kernel_release(qkrt_context *ctx, qkrt_kernel *kernel);
/* The bundle's select table, where it has one, by qkrt_select_check (json.h)
 * against its kernels; QKRT_ERROR_MANIFEST with "path:line:col: ..." (select.c). */
qkrt_result qkrt_select_load_check(qkrt_context *ctx, const qkrt_bundle *b, const char *path);
void qkrt_dispatch_release(qkrt_context *ctx);

/* SHA-256 of the .spv files: qk_sha256_hex of common/qk_util.h, as the generator. */

/* ---- expressions over a shape (bundle.c), by common/qk_expr.c ---- */
/* A qk_lookup_fn over a const qkrt_shape *. */
bool qkrt_shape_lookup(void *shape, const char *name, size_t len, int64_t *value);
/* qkrt_eval with "what" naming the expression in messages ("grid expression"). */
qkrt_result qkrt_eval_named(const char *expr, const char *what, const qkrt_shape *shape,
                            int64_t *value, char *error, size_t error_size);

#endif
