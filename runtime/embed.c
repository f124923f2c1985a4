/* A context on a device: the caller's (qkrt_create_from_vulkan) or libqkrt's
 * own (qkrt_create); what the device's create info enabled bounds what runs. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The optional features of a VkDeviceCreateInfo, from pEnabledFeatures and
 * every feature struct of its pNext chain libqkrt knows. */
typedef struct enabled {
    VkPhysicalDeviceFeatures core;
    bool storage_16bit, storage_16bit_uniform, storage_8bit, storage_8bit_uniform;
    bool float16, int8, memory_model, memory_model_device_scope, subgroup_extended_types;
    bool size_control, full_subgroups, maintenance4, integer_dot, coopmat_nv, executable;
    bool buffer_device_address;
} enabled;

static void read_chain(const VkDeviceCreateInfo *info, enabled *e) {
    if (info->pEnabledFeatures) e->core = *info->pEnabledFeatures;
    for (const VkBaseInStructure *s = info->pNext; s; s = s->pNext) {
        switch (s->sType) {
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2:
            e->core = ((const VkPhysicalDeviceFeatures2 *)s)->features;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES: {
            const VkPhysicalDeviceVulkan11Features *f = (const void *)s;
            e->storage_16bit |= f->storageBuffer16BitAccess;
            e->storage_16bit_uniform |= f->uniformAndStorageBuffer16BitAccess;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES: {
            const VkPhysicalDeviceVulkan12Features *f = (const void *)s;
            e->storage_8bit |= f->storageBuffer8BitAccess;
            e->storage_8bit_uniform |= f->uniformAndStorageBuffer8BitAccess;
            e->float16 |= f->shaderFloat16;
            e->int8 |= f->shaderInt8;
            e->memory_model |= f->vulkanMemoryModel;
            e->memory_model_device_scope |= f->vulkanMemoryModelDeviceScope;
            e->subgroup_extended_types |= f->shaderSubgroupExtendedTypes;
            e->buffer_device_address |= f->bufferDeviceAddress;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES: {
            const VkPhysicalDeviceVulkan13Features *f = (const void *)s;
            e->size_control |= f->subgroupSizeControl;
            e->full_subgroups |= f->computeFullSubgroups;
            e->maintenance4 |= f->maintenance4;
            e->integer_dot |= f->shaderIntegerDotProduct;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_16BIT_STORAGE_FEATURES: {
            const VkPhysicalDevice16BitStorageFeatures *f = (const void *)s;
            e->storage_16bit |= f->storageBuffer16BitAccess;
            e->storage_16bit_uniform |= f->uniformAndStorageBuffer16BitAccess;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_8BIT_STORAGE_FEATURES: {
            const VkPhysicalDevice8BitStorageFeatures *f = (const void *)s;
            e->storage_8bit |= f->storageBuffer8BitAccess;
            e->storage_8bit_uniform |= f->uniformAndStorageBuffer8BitAccess;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_FLOAT16_INT8_FEATURES: {
            const VkPhysicalDeviceShaderFloat16Int8Features *f = (const void *)s;
            e->float16 |= f->shaderFloat16;
            e->int8 |= f->shaderInt8;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_MEMORY_MODEL_FEATURES: {
            const VkPhysicalDeviceVulkanMemoryModelFeatures *f = (const void *)s;
            e->memory_model |= f->vulkanMemoryModel;
            e->memory_model_device_scope |= f->vulkanMemoryModelDeviceScope;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SUBGROUP_EXTENDED_TYPES_FEATURES:
            e->subgroup_extended_types |=
                ((const VkPhysicalDeviceShaderSubgroupExtendedTypesFeatures *)(const void *)s)
                    ->shaderSubgroupExtendedTypes;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES: {
            const VkPhysicalDeviceSubgroupSizeControlFeatures *f = (const void *)s;
            e->size_control |= f->subgroupSizeControl;
            e->full_subgroups |= f->computeFullSubgroups;
            break;
        }
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES:
            e->maintenance4 |=
                ((const VkPhysicalDeviceMaintenance4Features *)(const void *)s)->maintenance4;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES:
            e->integer_dot |=
                ((const VkPhysicalDeviceShaderIntegerDotProductFeatures *)(const void *)s)
                    ->shaderIntegerDotProduct;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV:
            e->coopmat_nv |= ((const VkPhysicalDeviceCooperativeMatrixFeaturesNV *)(const void *)s)
                                 ->cooperativeMatrix;
            break;
        case VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR:
            e->executable |=
                ((const VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR *)(const void *)s)
                    ->pipelineExecutableInfo;
            break;
        default:
            break;
        }
    }
}

bool qkrt_extension_enabled(const qkrt_context *ctx, const char *name) {
    for (uint32_t i = 0; i < ctx->extension_count; i++)
        if (strcmp(ctx->extensions[i], name) == 0) return true;
    return false;
}

/* ctx->caps keeps what the device offers and info enabled; an extension's
 * feature counts where the extension is enabled or core in the device's version. */
static void mask_caps(qkrt_context *ctx, const enabled *e) {
    qkrt_device_caps *c = &ctx->caps;
    qkrt_device_info *d = &c->info;
    bool v13 = c->api >= VK_API_VERSION_1_3;
    bool size_ext = v13 || qkrt_extension_enabled(ctx, "VK_EXT_subgroup_size_control");
    bool m4_ext = v13 || qkrt_extension_enabled(ctx, "VK_KHR_maintenance4");
    bool dot_ext = v13 || qkrt_extension_enabled(ctx, "VK_KHR_shader_integer_dot_product");
    d->storage_16bit &= e->storage_16bit;
    c->storage_16bit_uniform &= e->storage_16bit_uniform;
    d->storage_8bit &= e->storage_8bit;
    c->storage_8bit_uniform &= e->storage_8bit_uniform;
    d->float16 &= e->float16;
    d->int8 &= e->int8;
    d->int64 &= e->core.shaderInt64 != 0;
    c->int16 &= e->core.shaderInt16 != 0;
    c->dynamic_indexing &= e->core.shaderStorageBufferArrayDynamicIndexing != 0;
    c->memory_model &= e->memory_model;
    c->memory_model_device_scope &= e->memory_model_device_scope;
    c->subgroup_extended_types &= e->subgroup_extended_types;
    c->size_control &= e->size_control && size_ext;
    c->full_subgroups &= e->full_subgroups && size_ext;
    c->maintenance4 &= e->maintenance4 && m4_ext;
    d->integer_dot_product &= e->integer_dot && dot_ext;
    d->cooperative_matrix_nv &=
        e->coopmat_nv && qkrt_extension_enabled(ctx, "VK_NV_cooperative_matrix");
    d->cooperative_matrix_khr &= qkrt_extension_enabled(ctx, "VK_KHR_cooperative_matrix");
    /* the caller enabled the extension, and with it (we trust) the features
     * qkrt_device_open turns on for it; buffer addresses are checked */
    d->cooperative_matrix2_nv &= d->cooperative_matrix_khr && e->buffer_device_address &&
                                 qkrt_extension_enabled(ctx, "VK_NV_cooperative_matrix2");
    c->executable_info &=
        e->executable && qkrt_extension_enabled(ctx, "VK_KHR_pipeline_executable_properties");
    c->push_descriptor &= qkrt_extension_enabled(ctx, "VK_KHR_push_descriptor");
    if (!c->size_control) d->min_subgroup_size = d->max_subgroup_size = d->subgroup_size;
    if (!d->cooperative_matrix_nv) d->coopmat_m = d->coopmat_n = d->coopmat_k = 0;
}

void qkrt_caps_restrict(qkrt_device_caps *c, uint32_t features) {
    qkrt_device_info *d = &c->info;
    bool on[] = {features & QKRT_FEATURE_STORAGE_8BIT,
                 features & QKRT_FEATURE_STORAGE_16BIT,
                 features & QKRT_FEATURE_FLOAT16,
                 features & QKRT_FEATURE_INT8,
                 features & QKRT_FEATURE_INT16,
                 features & QKRT_FEATURE_INT64,
                 features & QKRT_FEATURE_DYNAMIC_INDEXING,
                 features & QKRT_FEATURE_INTEGER_DOT_PRODUCT,
                 features & QKRT_FEATURE_COOPERATIVE_MATRIX_NV,
                 features & QKRT_FEATURE_VULKAN_MEMORY_MODEL,
                 features & QKRT_FEATURE_COOPERATIVE_MATRIX_KHR,
                 features & QKRT_FEATURE_COOPERATIVE_MATRIX2_NV};
    d->storage_8bit &= on[0], c->storage_8bit_uniform &= on[0];
    d->storage_16bit &= on[1], c->storage_16bit_uniform &= on[1];
    d->float16 &= on[2];
    d->int8 &= on[3];
    c->int16 &= on[4];
    d->int64 &= on[5];
    c->dynamic_indexing &= on[6];
    d->integer_dot_product &= on[7], c->integer_dot_ext &= on[7];
    d->cooperative_matrix_nv &= on[8], c->coopmat_nv_ext &= on[8];
    c->memory_model &= on[9], c->memory_model_device_scope &= on[9];
    d->cooperative_matrix_khr &= on[10];
    d->cooperative_matrix2_nv &= on[11] && d->cooperative_matrix_khr;
    /* subgroup operations on 8- and 16-bit values come with those types */
    c->subgroup_extended_types &= on[2] || on[3] || on[4];
}

qkrt_result qkrt_context_attach(qkrt_context *ctx, const VkDeviceCreateInfo *info, VkQueue queue) {
    uint32_t n = info->enabledExtensionCount;
    ctx->extensions = calloc(n ? n : 1, sizeof *ctx->extensions);
    if (!ctx->extensions) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "out of memory");
    for (uint32_t i = 0; i < n; i++) {
        const char *name = info->ppEnabledExtensionNames ? info->ppEnabledExtensionNames[i] : NULL;
        if (!name) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "device extension %u is NULL", i);
        if (!(ctx->extensions[i] = strdup(name)))
            return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "out of memory");
        ctx->extension_count = i + 1;
    }
    enabled e = {0};
    read_chain(info, &e);
    mask_caps(ctx, &e);
    ctx->queue = queue;
    ctx->pipeline_stats = ctx->pipeline_stats && ctx->caps.executable_info;
    vkGetPhysicalDeviceMemoryProperties(ctx->caps.physical, &ctx->memory);
    bool push = ctx->caps.push_descriptor;
    if (ctx->descriptor_mode == QKRT_DESCRIPTORS_PUSH && !push)
        return qkrt_fail(
            ctx, QKRT_ERROR_UNSUPPORTED,
            "QKRT_DESCRIPTORS_PUSH: VK_KHR_push_descriptor is not enabled on the device");
    ctx->push_descriptors = push && ctx->descriptor_mode != QKRT_DESCRIPTORS_POOL;
    if (ctx->push_descriptors) {
        ctx->push_descriptor_set = (PFN_vkCmdPushDescriptorSetKHR)(void (*)(
            void))vkGetDeviceProcAddr(ctx->device, "vkCmdPushDescriptorSetKHR");
        if (!ctx->push_descriptor_set)
            return qkrt_fail(ctx, QKRT_ERROR_VULKAN, "vkCmdPushDescriptorSetKHR not found");
    }
    qkrt_log(ctx, QKRT_LOG_DEBUG, "descriptors: %s", ctx->push_descriptors ? "pushed" : "pools");
    return QKRT_OK;
}

qkrt_result qkrt_create_from_vulkan(const qkrt_vulkan_desc *desc, qkrt_context **out) {
    static const char *const required = "instance, physical_device, device and device_info";
    qkrt_context *ctx = NULL;
    qkrt_result r = QKRT_OK;
    if (!out || !desc || !desc->instance || !desc->physical_device || !desc->device ||
        !desc->device_info)
        r = QKRT_ERROR_ARGUMENT;
    else if (!(ctx = calloc(1, sizeof *ctx)))
        r = QKRT_ERROR_MEMORY;
    if (out) *out = NULL;
    if (r != QKRT_OK) {
        qkrt_set_thread_error(r == QKRT_ERROR_MEMORY ? "qkrt_create_from_vulkan: out of memory"
                                                     : "qkrt_create_from_vulkan: needs out, "
                                                       "and a desc with %s",
                              required);
        return r;
    }
    ctx->log = desc->log;
    ctx->log_user = desc->log_user;
    ctx->instance = desc->instance;
    ctx->device = desc->device;
    ctx->alloc = desc->allocator;
    ctx->pipeline_cache = desc->pipeline_cache;
    ctx->descriptor_mode = desc->descriptors;
    uint32_t api = desc->api_version ? desc->api_version : VK_API_VERSION_1_2;
    api = VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(api), VK_API_VERSION_MINOR(api), 0);
    qkrt_device_query(desc->instance, api, desc->physical_device, 0, &ctx->caps);
    uint32_t families = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(desc->physical_device, &families, NULL);
    VkQueueFamilyProperties *props = calloc(families ? families : 1, sizeof *props);
    if (props) vkGetPhysicalDeviceQueueFamilyProperties(desc->physical_device, &families, props);
    if (ctx->caps.api < VK_API_VERSION_1_2)
        r = qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                      "qkrt_create_from_vulkan: '%s' with api_version %u.%u: libqkrt needs "
                      "Vulkan 1.2",
                      ctx->caps.info.name, VK_API_VERSION_MAJOR(ctx->caps.api),
                      VK_API_VERSION_MINOR(ctx->caps.api));
    else if (!props)
        r = qkrt_fail(ctx, QKRT_ERROR_MEMORY, "out of memory");
    else if (desc->queue_family >= families ||
             !(props[desc->queue_family].queueFlags & VK_QUEUE_COMPUTE_BIT))
        r = qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                      "qkrt_create_from_vulkan: queue family %u of '%s' %s", desc->queue_family,
                      ctx->caps.info.name,
                      desc->queue_family >= families ? "does not exist" : "has no compute");
    if (r == QKRT_OK) {
        /* timestamps as the caller's family has them (qkrt_run_timed) */
        ctx->caps.queue_family = desc->queue_family;
        ctx->caps.timestamp_bits = props[desc->queue_family].timestampValidBits;
        ctx->caps.info.timestamp_period_ns =
            ctx->caps.timestamp_bits ? ctx->caps.limits.timestampPeriod : 0.0;
        r = qkrt_context_attach(ctx, desc->device_info, desc->queue);
    }
    free(props);
    if (r != QKRT_OK) {
        qkrt_set_thread_error("%s", ctx->error);
        qkrt_destroy(ctx);
        return r;
    }
    *out = ctx;
    return QKRT_OK;
}
