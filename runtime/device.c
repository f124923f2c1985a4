/* Physical devices: what each offers kernels (subgroups, 8/16-bit storage,
 * cooperative matrices, limits) and the logical device with those features on. */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VK_KHR_cooperative_matrix
/* Debian 12's Vulkan headers (1.3.239) predate VK_KHR_cooperative_matrix
 * (1.3.255); the declarations used here, as the Vulkan registry defines them.
 * The component types and scopes share their values with the NV extension. */
#define VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR                          \
    ((VkStructureType)1000506000)
#define VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR ((VkStructureType)1000506001)
typedef struct VkCooperativeMatrixPropertiesKHR {
    VkStructureType sType;
    void *pNext;
    uint32_t MSize, NSize, KSize;
    VkComponentTypeNV AType, BType, CType, ResultType;
    VkBool32 saturatingAccumulation;
    VkScopeNV scope;
} VkCooperativeMatrixPropertiesKHR;
typedef struct VkPhysicalDeviceCooperativeMatrixFeaturesKHR {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrix;
    VkBool32 cooperativeMatrixRobustBufferAccess;
} VkPhysicalDeviceCooperativeMatrixFeaturesKHR;
typedef VkResult(VKAPI_PTR *PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(
    VkPhysicalDevice, uint32_t *, VkCooperativeMatrixPropertiesKHR *);
#define VK_COMPONENT_TYPE_FLOAT16_KHR VK_COMPONENT_TYPE_FLOAT16_NV
#define VK_COMPONENT_TYPE_FLOAT32_KHR VK_COMPONENT_TYPE_FLOAT32_NV
#define VK_SCOPE_SUBGROUP_KHR         VK_SCOPE_SUBGROUP_NV
#endif

/* VK_NV_cooperative_matrix2 (Vulkan headers 1.3.296) is newer than every
 * Vulkan header Debian 12 has; its features struct as the registry defines it. */
#define QKRT_STRUCTURE_TYPE_COOPMAT2_FEATURES_NV ((VkStructureType)1000593000)
typedef struct qkrt_coopmat2_features {
    VkStructureType sType;
    void *pNext;
    VkBool32 cooperativeMatrixWorkgroupScope;
    VkBool32 cooperativeMatrixFlexibleDimensions;
    VkBool32 cooperativeMatrixReductions;
    VkBool32 cooperativeMatrixConversions;
    VkBool32 cooperativeMatrixPerElementOperations;
    VkBool32 cooperativeMatrixTensorAddressing;
    VkBool32 cooperativeMatrixBlockLoads;
} qkrt_coopmat2_features;

static uint32_t major_minor(uint32_t version) {
    return VK_MAKE_API_VERSION(0, VK_API_VERSION_MAJOR(version), VK_API_VERSION_MINOR(version), 0);
}

uint32_t qkrt_instance_api(void) {
    uint32_t loader = VK_API_VERSION_1_0;
    PFN_vkEnumerateInstanceVersion enumerate = (PFN_vkEnumerateInstanceVersion)(void (*)(
        void))vkGetInstanceProcAddr(NULL, "vkEnumerateInstanceVersion");
    if (enumerate) enumerate(&loader);
    /* 1.3 lets the 1.3-core structs (subgroup size control, maintenance4) be
     * used without their extensions; 1.2 is the floor qkrt needs */
    return major_minor(loader) >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
}

static bool has_extension(const VkExtensionProperties *exts, uint32_t count, const char *name) {
    for (uint32_t i = 0; i < count; i++)
        if (strcmp(exts[i].extensionName, name) == 0) return true;
    return false;
}

static const char *type_name(VkPhysicalDeviceType type) {
    switch (type) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU:
        return "discrete";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU:
        return "integrated";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU:
        return "virtual";
    case VK_PHYSICAL_DEVICE_TYPE_CPU:
        return "cpu";
    default:
        return "other";
    }
}

/* The first subgroup-scope f16 x f16 + f32 -> f32 shape of VK_NV_cooperative_matrix. */
static void query_coopmat_nv(VkInstance instance, qkrt_device_caps *c) {
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV)(void (*)(void))vkGetInstanceProcAddr(
            instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV");
    uint32_t count = 0;
    if (!get || get(c->physical, &count, NULL) != VK_SUCCESS || count == 0) return;
    VkCooperativeMatrixPropertiesNV *props = calloc(count, sizeof *props);
    if (!props) return;
    for (uint32_t i = 0; i < count; i++)
        props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV;
    if (get(c->physical, &count, props) == VK_SUCCESS) {
        for (uint32_t i = 0; i < count; i++) {
            const VkCooperativeMatrixPropertiesNV *p = &props[i];
            if (p->AType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                p->BType == VK_COMPONENT_TYPE_FLOAT16_NV &&
                p->CType == VK_COMPONENT_TYPE_FLOAT32_NV &&
                p->DType == VK_COMPONENT_TYPE_FLOAT32_NV && p->scope == VK_SCOPE_SUBGROUP_NV) {
                c->info.coopmat_m = p->MSize;
                c->info.coopmat_n = p->NSize;
                c->info.coopmat_k = p->KSize;
                break;
            }
        }
    }
    free(props);
}

/* Whether VK_KHR_cooperative_matrix offers the shape the templates' KHR path
 * uses (include/coopmat.glsl): subgroup scope, 16 x 16 x 16, f16 x f16 + f32. */
static bool query_coopmat_khr(VkInstance instance, VkPhysicalDevice physical) {
    PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR get =
        (PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR)(void (*)(void))
            vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesKHR");
    uint32_t count = 0;
    if (!get || get(physical, &count, NULL) != VK_SUCCESS || count == 0) return false;
    VkCooperativeMatrixPropertiesKHR *props = calloc(count, sizeof *props);
    if (!props) return false;
    for (uint32_t i = 0; i < count; i++)
        props[i].sType = VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_KHR;
    bool found = false;
    if (get(physical, &count, props) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++) {
            const VkCooperativeMatrixPropertiesKHR *p = &props[i];
            found = p->MSize == 16 && p->NSize == 16 && p->KSize == 16 &&
                    p->AType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                    p->BType == VK_COMPONENT_TYPE_FLOAT16_KHR &&
                    p->CType == VK_COMPONENT_TYPE_FLOAT32_KHR &&
                    p->ResultType == VK_COMPONENT_TYPE_FLOAT32_KHR && !p->saturatingAccumulation &&
                    p->scope == VK_SCOPE_SUBGROUP_KHR;
        }
    free(props);
    return found;
}

static void query_queue(qkrt_device_caps *c) {
    uint32_t count = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(c->physical, &count, NULL);
    VkQueueFamilyProperties *families = calloc(count ? count : 1, sizeof *families);
    c->queue_family = UINT32_MAX;
    if (!families) return;
    vkGetPhysicalDeviceQueueFamilyProperties(c->physical, &count, families);
    /* a compute family with timestamps first, so benchmarks can time it */
    for (int pass = 0; pass < 2 && c->queue_family == UINT32_MAX; pass++) {
        for (uint32_t i = 0; i < count; i++) {
            if (!(families[i].queueFlags & VK_QUEUE_COMPUTE_BIT)) continue;
            if (pass == 0 && families[i].timestampValidBits == 0) continue;
            c->queue_family = i;
            c->timestamp_bits = families[i].timestampValidBits;
            break;
        }
    }
    free(families);
}

static void query_memory(qkrt_device_caps *c) {
    VkPhysicalDeviceMemoryProperties mem;
    vkGetPhysicalDeviceMemoryProperties(c->physical, &mem);
    for (uint32_t i = 0; i < mem.memoryHeapCount; i++)
        if ((mem.memoryHeaps[i].flags & VK_MEMORY_HEAP_DEVICE_LOCAL_BIT) &&
            mem.memoryHeaps[i].size > c->info.device_local_bytes)
            c->info.device_local_bytes = mem.memoryHeaps[i].size;
}

/* Properties and features of a device of Vulkan 1.2 or later. */
static void query_v12(VkInstance instance, qkrt_device_caps *c, const VkExtensionProperties *exts,
                      uint32_t ext_count) {
    bool v13 = c->api >= VK_API_VERSION_1_3;
    bool size_control = v13 || has_extension(exts, ext_count, "VK_EXT_subgroup_size_control");
    bool maintenance4 = v13 || has_extension(exts, ext_count, "VK_KHR_maintenance4");
    c->coopmat_nv_ext = has_extension(exts, ext_count, "VK_NV_cooperative_matrix");
    bool dot_ext = has_extension(exts, ext_count, "VK_KHR_shader_integer_dot_product");
    bool coopmat_khr_ext = has_extension(exts, ext_count, "VK_KHR_cooperative_matrix");
    bool coopmat2_ext = v13 && has_extension(exts, ext_count, "VK_NV_cooperative_matrix2");

    VkPhysicalDeviceSubgroupSizeControlProperties size_props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_PROPERTIES,
    };
    VkPhysicalDeviceDriverProperties driver = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_DRIVER_PROPERTIES,
        .pNext = size_control ? &size_props : NULL,
    };
    VkPhysicalDeviceSubgroupProperties subgroup = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES,
        .pNext = &driver,
    };
    VkPhysicalDeviceProperties2 props = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2,
        .pNext = &subgroup,
    };
    vkGetPhysicalDeviceProperties2(c->physical, &props);

    qkrt_coopmat2_features coopmat2 = {.sType = QKRT_STRUCTURE_TYPE_COOPMAT2_FEATURES_NV};
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat_khr = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
        .pNext = coopmat2_ext ? &coopmat2 : NULL,
    };
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .pNext = coopmat_khr_ext ? &coopmat_khr : NULL,
    };
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = c->coopmat_nv_ext ? &coopmat : coopmat.pNext,
    };
    void *chain = v13 || dot_ext ? (void *)&dot : dot.pNext;
    VkPhysicalDeviceMaintenance4Features m4 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
        .pNext = chain,
    };
    VkPhysicalDeviceSubgroupSizeControlFeatures size_features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
        .pNext = maintenance4 ? (void *)&m4 : chain,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
    };
    v12.pNext = size_control ? &size_features : size_features.pNext;
    VkPhysicalDeviceVulkan11Features v11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &v12,
    };
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = &v11,
    };
    bool executable_ext = has_extension(exts, ext_count, "VK_KHR_pipeline_executable_properties");
    VkPhysicalDeviceFeatures2 features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = executable_ext ? (void *)&executable : &v11,
    };
    vkGetPhysicalDeviceFeatures2(c->physical, &features);
    c->executable_info = executable_ext && executable.pipelineExecutableInfo;
    c->push_descriptor = has_extension(exts, ext_count, "VK_KHR_push_descriptor");

    qkrt_device_info *info = &c->info;
    snprintf(info->driver, sizeof info->driver, "%.127s %.127s", driver.driverName,
             driver.driverInfo);
    info->subgroup_size = subgroup.subgroupSize;
    info->min_subgroup_size = info->max_subgroup_size = subgroup.subgroupSize;
    if (size_control && size_props.minSubgroupSize) {
        info->min_subgroup_size = size_props.minSubgroupSize;
        info->max_subgroup_size = size_props.maxSubgroupSize;
        c->required_size_stages = size_props.requiredSubgroupSizeStages;
        c->max_workgroup_subgroups = size_props.maxComputeWorkgroupSubgroups;
    }
    info->subgroup_arithmetic = (subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                                (subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT);
    info->storage_16bit = v11.storageBuffer16BitAccess;
    info->storage_8bit = v12.storageBuffer8BitAccess;
    info->float16 = v12.shaderFloat16;
    info->int8 = v12.shaderInt8;
    c->storage_16bit_uniform = v11.uniformAndStorageBuffer16BitAccess;
    c->storage_8bit_uniform = v12.uniformAndStorageBuffer8BitAccess;
    c->memory_model = v12.vulkanMemoryModel;
    c->memory_model_device_scope = v12.vulkanMemoryModelDeviceScope;
    c->subgroup_extended_types = v12.shaderSubgroupExtendedTypes;
    if (size_control) {
        c->size_control = size_features.subgroupSizeControl;
        c->full_subgroups = size_features.computeFullSubgroups;
        c->size_control_ext = !v13 && c->size_control;
    }
    if (maintenance4) {
        c->maintenance4 = m4.maintenance4;
        c->maintenance4_ext = !v13 && c->maintenance4;
    }
    if (v13 || dot_ext) {
        info->integer_dot_product = dot.shaderIntegerDotProduct;
        c->integer_dot_ext = !v13 && info->integer_dot_product;
    }
    if (c->coopmat_nv_ext && coopmat.cooperativeMatrix) {
        query_coopmat_nv(instance, c);
        info->cooperative_matrix_nv = info->coopmat_m != 0;
    }
    if (!info->cooperative_matrix_nv) c->coopmat_nv_ext = false;
    info->cooperative_matrix_khr = coopmat_khr_ext && coopmat_khr.cooperativeMatrix &&
                                   query_coopmat_khr(instance, c->physical);
    /* what matmul_tensor.comp uses: workgroup-scope matrices of any tile,
     * tensor-addressed loads with decode callbacks (block loads), per-element
     * operations; the callbacks' block references need buffer device
     * addresses */
    info->cooperative_matrix2_nv = coopmat_khr_ext && info->cooperative_matrix_khr &&
                                   coopmat2_ext && coopmat2.cooperativeMatrixWorkgroupScope &&
                                   coopmat2.cooperativeMatrixFlexibleDimensions &&
                                   coopmat2.cooperativeMatrixPerElementOperations &&
                                   coopmat2.cooperativeMatrixTensorAddressing &&
                                   coopmat2.cooperativeMatrixBlockLoads && v12.bufferDeviceAddress;
}

void qkrt_device_query(VkInstance instance, uint32_t instance_api, VkPhysicalDevice physical,
                       uint32_t index, qkrt_device_caps *c) {
    memset(c, 0, sizeof *c);
    c->physical = physical;
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(physical, &props);
    VkPhysicalDeviceFeatures core;
    vkGetPhysicalDeviceFeatures(physical, &core);
    qkrt_device_info *info = &c->info;
    info->index = index;
    snprintf(info->name, sizeof info->name, "%s", props.deviceName);
    snprintf(info->type, sizeof info->type, "%s", type_name(props.deviceType));
    info->device_type = props.deviceType;
    info->vendor_id = props.vendorID;
    info->device_id = props.deviceID;
    info->api_version = props.apiVersion;
    info->max_shared_memory = props.limits.maxComputeSharedMemorySize;
    info->max_workgroup_invocations = props.limits.maxComputeWorkGroupInvocations;
    memcpy(info->max_workgroup_count, props.limits.maxComputeWorkGroupCount,
           sizeof info->max_workgroup_count);
    info->max_storage_buffer_range = props.limits.maxStorageBufferRange;
    info->int64 = core.shaderInt64;
    c->int16 = core.shaderInt16;
    c->dynamic_indexing = core.shaderStorageBufferArrayDynamicIndexing;
    c->limits = props.limits;
    memcpy(c->cache_uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
    uint32_t api = major_minor(props.apiVersion);
    c->api = api < instance_api ? api : instance_api;

    query_queue(c);
    query_memory(c);
    info->timestamp_period_ns = c->timestamp_bits ? props.limits.timestampPeriod : 0.0;
    if (c->api < VK_API_VERSION_1_2) return;

    uint32_t ext_count = 0;
    vkEnumerateDeviceExtensionProperties(physical, NULL, &ext_count, NULL);
    VkExtensionProperties *exts = calloc(ext_count ? ext_count : 1, sizeof *exts);
    if (!exts) return;
    vkEnumerateDeviceExtensionProperties(physical, NULL, &ext_count, exts);
    query_v12(instance, c, exts, ext_count);
    free(exts);
}

qkrt_result qkrt_devices_query(VkInstance instance, uint32_t instance_api, qkrt_device_caps **caps,
                               uint32_t *count, char *error, size_t error_size) {
    *caps = NULL;
    *count = 0;
    uint32_t n = 0;
    VkResult vr = vkEnumeratePhysicalDevices(instance, &n, NULL);
    VkPhysicalDevice *physical = calloc(n ? n : 1, sizeof *physical);
    qkrt_device_caps *all = calloc(n ? n : 1, sizeof *all);
    if (!physical || !all) {
        free(physical);
        free(all);
        snprintf(error, error_size, "qkrt: out of memory listing devices");
        return QKRT_ERROR_MEMORY;
    }
    if (vr == VK_SUCCESS) vr = vkEnumeratePhysicalDevices(instance, &n, physical);
    if (vr != VK_SUCCESS && vr != VK_INCOMPLETE) {
        free(physical);
        free(all);
        snprintf(error, error_size, "vkEnumeratePhysicalDevices failed: %s (%d)",
                 qkrt_vk_result_name(vr), (int)vr);
        return QKRT_ERROR_VULKAN;
    }
    for (uint32_t i = 0; i < n; i++)
        qkrt_device_query(instance, instance_api, physical[i], i, &all[i]);
    free(physical);
    *caps = all;
    *count = n;
    return QKRT_OK;
}

qkrt_result qkrt_enumerate_devices(qkrt_device_info *infos, uint32_t *count, char *error,
                                   size_t error_size) {
    char own[512]; /* the message also goes to qkrt_last_error(NULL) */
    if (!error || !error_size) {
        error = own;
        error_size = sizeof own;
    }
    error[0] = '\0';
    if (!count) {
        snprintf(error, error_size, "qkrt_enumerate_devices: count is NULL");
        qkrt_set_thread_error("%s", error);
        return QKRT_ERROR_ARGUMENT;
    }
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "qkrt",
        .apiVersion = qkrt_instance_api(),
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pApplicationInfo = &app,
    };
    VkInstance instance;
    VkResult vr = vkCreateInstance(&info, NULL, &instance);
    if (vr != VK_SUCCESS) {
        snprintf(error, error_size, "vkCreateInstance failed: %s (%d)", qkrt_vk_result_name(vr),
                 (int)vr);
        qkrt_set_thread_error("%s", error);
        return vr == VK_ERROR_INCOMPATIBLE_DRIVER ? QKRT_ERROR_NO_DEVICE : QKRT_ERROR_VULKAN;
    }
    qkrt_device_caps *caps = NULL;
    uint32_t n = 0;
    qkrt_result r = qkrt_devices_query(instance, app.apiVersion, &caps, &n, error, error_size);
    if (r == QKRT_OK) {
        if (infos) {
            if (*count < n) n = *count;
            for (uint32_t i = 0; i < n; i++)
                infos[i] = caps[i].info;
        }
        *count = n;
    }
    free(caps);
    vkDestroyInstance(instance, NULL);
    if (r != QKRT_OK) qkrt_set_thread_error("%s", error);
    return r;
}

qkrt_result qkrt_device_open(qkrt_context *ctx) {
    const qkrt_device_caps *c = &ctx->caps;
    const qkrt_device_info *info = &c->info;
    const char *extensions[12];
    uint32_t extension_count = 0;
    if (c->size_control_ext) extensions[extension_count++] = "VK_EXT_subgroup_size_control";
    if (c->maintenance4_ext) extensions[extension_count++] = "VK_KHR_maintenance4";
    if (c->coopmat_nv_ext) extensions[extension_count++] = "VK_NV_cooperative_matrix";
    if (info->cooperative_matrix_khr) extensions[extension_count++] = "VK_KHR_cooperative_matrix";
    if (info->cooperative_matrix2_nv) extensions[extension_count++] = "VK_NV_cooperative_matrix2";
    if (c->integer_dot_ext) extensions[extension_count++] = "VK_KHR_shader_integer_dot_product";
    if (c->push_descriptor) extensions[extension_count++] = "VK_KHR_push_descriptor";
    ctx->pipeline_stats = ctx->pipeline_stats && c->executable_info;
    if (ctx->pipeline_stats)
        extensions[extension_count++] = "VK_KHR_pipeline_executable_properties";

    /* only what kernels use: robustBufferAccess and friends cost speed */
    qkrt_coopmat2_features coopmat2 = {
        .sType = QKRT_STRUCTURE_TYPE_COOPMAT2_FEATURES_NV,
        .cooperativeMatrixWorkgroupScope = VK_TRUE,
        .cooperativeMatrixFlexibleDimensions = VK_TRUE,
        .cooperativeMatrixPerElementOperations = VK_TRUE,
        .cooperativeMatrixTensorAddressing = VK_TRUE,
        .cooperativeMatrixBlockLoads = VK_TRUE,
    };
    VkPhysicalDeviceCooperativeMatrixFeaturesKHR coopmat_khr = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_KHR,
        .pNext = info->cooperative_matrix2_nv ? &coopmat2 : NULL,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coopmat = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV,
        .pNext = info->cooperative_matrix_khr ? &coopmat_khr : NULL,
        .cooperativeMatrix = VK_TRUE,
    };
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES,
        .pNext = c->coopmat_nv_ext ? &coopmat : coopmat.pNext,
        .shaderIntegerDotProduct = VK_TRUE,
    };
    VkPhysicalDeviceMaintenance4Features m4 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_MAINTENANCE_4_FEATURES,
        .pNext = info->integer_dot_product ? (void *)&dot : dot.pNext,
        .maintenance4 = VK_TRUE,
    };
    void *tail = c->maintenance4 ? (void *)&m4 : m4.pNext;
    VkPhysicalDeviceSubgroupSizeControlFeatures size_control = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_SIZE_CONTROL_FEATURES,
        .pNext = tail,
        .subgroupSizeControl = c->size_control,
        .computeFullSubgroups = c->full_subgroups,
    };
    VkPhysicalDeviceVulkan12Features v12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
        .pNext = c->size_control ? (void *)&size_control : tail,
        .storageBuffer8BitAccess = info->storage_8bit,
        .uniformAndStorageBuffer8BitAccess = c->storage_8bit_uniform,
        .shaderFloat16 = info->float16,
        .shaderInt8 = info->int8,
        .vulkanMemoryModel = c->memory_model,
        .vulkanMemoryModelDeviceScope = c->memory_model_device_scope,
        .shaderSubgroupExtendedTypes = c->subgroup_extended_types,
        .bufferDeviceAddress = info->cooperative_matrix2_nv,
    };
    VkPhysicalDeviceVulkan11Features v11 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES,
        .pNext = &v12,
        .storageBuffer16BitAccess = info->storage_16bit,
        .uniformAndStorageBuffer16BitAccess = c->storage_16bit_uniform,
    };
    VkPhysicalDevicePipelineExecutablePropertiesFeaturesKHR executable = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PIPELINE_EXECUTABLE_PROPERTIES_FEATURES_KHR,
        .pNext = &v11,
        .pipelineExecutableInfo = VK_TRUE,
    };
    VkPhysicalDeviceFeatures2 features = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
        .pNext = ctx->pipeline_stats ? (void *)&executable : &v11,
        .features =
            {
                .shaderInt64 = info->int64,
                .shaderInt16 = c->int16,
                .shaderStorageBufferArrayDynamicIndexing = c->dynamic_indexing,
            },
    };
    float priority = 1.0f;
    VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueFamilyIndex = c->queue_family,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    VkDeviceCreateInfo create = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .pNext = &features,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = extension_count,
        .ppEnabledExtensionNames = extensions,
    };
    VkResult vr = vkCreateDevice(c->physical, &create, NULL, &ctx->device);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateDevice ('%s')", info->name);
    VkQueue handle;
    vkGetDeviceQueue(ctx->device, c->queue_family, 0, &handle);
    /* from here on as for a device of the caller's (qkrt_create_from_vulkan) */
    return qkrt_context_attach(ctx, &create, handle);
}
