/* The engine's Vulkan side: a device that enables exactly the features and
 * extensions its kernels' manifest entries list, and one dispatch at a time. */
#include "vk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct eng_vk {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    VkPhysicalDevice pd;
    VkDevice device;
    VkQueue queue;
    uint32_t family, api;
    VkPhysicalDeviceProperties props;
    VkPhysicalDeviceSubgroupProperties subgroup;
    VkPhysicalDeviceMemoryProperties memory;
    /* what the device offers, and what this engine enables */
    VkPhysicalDeviceFeatures2 f;
    VkPhysicalDeviceVulkan11Features f11;
    VkPhysicalDeviceVulkan12Features f12;
    VkPhysicalDeviceShaderIntegerDotProductFeatures dot;
    VkPhysicalDeviceCooperativeMatrixFeaturesNV coop;
    uint32_t extension_count;
    VkExtensionProperties *extensions;
    VkCommandPool pool;
    int validation;
    uint32_t errors;
};

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT type,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user) {
    (void)type;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        ((eng_vk *)user)->errors++;
        fprintf(stderr, "validation error: %s\n", data->pMessage);
    }
    return VK_FALSE;
}

static int failed(VkResult r, const char *call, char *err, size_t n) {
    if (r == VK_SUCCESS) return 0;
    snprintf(err, n, "%s failed: VkResult %d", call, (int)r);
    return -1;
}

static int has_layer(const char *name) {
    uint32_t n = 0;
    vkEnumerateInstanceLayerProperties(&n, NULL);
    VkLayerProperties *l = calloc(n ? n : 1, sizeof *l);
    vkEnumerateInstanceLayerProperties(&n, l);
    int found = 0;
    for (uint32_t i = 0; i < n; i++)
        found |= !strcmp(l[i].layerName, name);
    free(l);
    return found;
}

static int has_extension(const eng_vk *v, const char *name) {
    for (uint32_t i = 0; i < v->extension_count; i++)
        if (!strcmp(v->extensions[i].extensionName, name)) return 1;
    return 0;
}

/* Chains the feature structs this engine knows into v->f. */
static void chain(eng_vk *v) {
    v->coop = (VkPhysicalDeviceCooperativeMatrixFeaturesNV){
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV, NULL, 0, 0};
    v->dot = (VkPhysicalDeviceShaderIntegerDotProductFeatures){
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_INTEGER_DOT_PRODUCT_FEATURES, NULL, 0};
    int dot = v->api >= VK_API_VERSION_1_3 || has_extension(v, "VK_KHR_shader_integer_dot_product");
    int coop = has_extension(v, "VK_NV_cooperative_matrix");
    if (coop) v->dot.pNext = &v->coop;
    memset(&v->f12, 0, sizeof v->f12);
    v->f12.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES;
    v->f12.pNext = dot ? (void *)&v->dot : coop ? (void *)&v->coop : NULL;
    memset(&v->f11, 0, sizeof v->f11);
    v->f11.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES;
    v->f11.pNext = &v->f12;
    memset(&v->f, 0, sizeof v->f);
    v->f.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2;
    v->f.pNext = &v->f11;
}

int vk_open(eng_vk **out, char *err, size_t n) {
    eng_vk *v = calloc(1, sizeof *v);
    *out = v;
    const char *layer = "VK_LAYER_KHRONOS_validation";
    const char *env = getenv("ENGINE_VALIDATION");
    v->validation = has_layer(layer) && !(env && !strcmp(env, "0"));
    if (env && !strcmp(env, "1") && !v->validation)
        return snprintf(err, n, "ENGINE_VALIDATION=1 but %s is not installed", layer), -1;
    const char *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo app = {VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             NULL,
                             "qkgen example engine",
                             1,
                             NULL,
                             0,
                             VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                NULL,
                                0,
                                &app,
                                (uint32_t)v->validation,
                                &layer,
                                (uint32_t)v->validation,
                                &ext};
    if (failed(vkCreateInstance(&ici, NULL, &v->instance), "vkCreateInstance", err, n)) return -1;
    if (v->validation) {
        VkDebugUtilsMessengerCreateInfoEXT mci = {
            VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
            NULL,
            0,
            VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
            VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
            on_message,
            v};
        PFN_vkCreateDebugUtilsMessengerEXT create =
            (PFN_vkCreateDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                v->instance, "vkCreateDebugUtilsMessengerEXT");
        if (!create || failed(create(v->instance, &mci, NULL, &v->messenger), "messenger", err, n))
            return -1;
    }
    uint32_t count = 0;
    vkEnumeratePhysicalDevices(v->instance, &count, NULL);
    if (!count) return snprintf(err, n, "no Vulkan device"), -1;
    VkPhysicalDevice *pds = calloc(count, sizeof *pds);
    vkEnumeratePhysicalDevices(v->instance, &count, pds);
    const char *pick = getenv("ENGINE_DEVICE");
    uint32_t index = pick ? (uint32_t)atoi(pick) : 0;
    v->pd = pds[index < count ? index : 0];
    free(pds);
    v->subgroup.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SUBGROUP_PROPERTIES;
    VkPhysicalDeviceProperties2 p2 = {
        VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2, &v->subgroup, {0}};
    vkGetPhysicalDeviceProperties2(v->pd, &p2);
    v->props = p2.properties;
    v->api = v->props.apiVersion;
    if (v->api < VK_API_VERSION_1_2)
        return snprintf(err, n, "%s: Vulkan 1.2 needed", v->props.deviceName), -1;
    vkGetPhysicalDeviceMemoryProperties(v->pd, &v->memory);
    vkEnumerateDeviceExtensionProperties(v->pd, NULL, &v->extension_count, NULL);
    v->extensions = calloc(v->extension_count + 1, sizeof *v->extensions);
    vkEnumerateDeviceExtensionProperties(v->pd, NULL, &v->extension_count, v->extensions);
    chain(v);
    vkGetPhysicalDeviceFeatures2(v->pd, &v->f);
    uint32_t nq = 0;
    vkGetPhysicalDeviceQueueFamilyProperties(v->pd, &nq, NULL);
    VkQueueFamilyProperties *q = calloc(nq, sizeof *q);
    vkGetPhysicalDeviceQueueFamilyProperties(v->pd, &nq, q);
    v->family = UINT32_MAX;
    for (uint32_t i = 0; i < nq && v->family == UINT32_MAX; i++)
        if (q[i].queueFlags & VK_QUEUE_COMPUTE_BIT) v->family = i;
    free(q);
    if (v->family == UINT32_MAX) return snprintf(err, n, "no compute queue"), -1;
    printf("device: %s (Vulkan %u.%u), validation layer %s\n", v->props.deviceName,
           VK_API_VERSION_MAJOR(v->api), VK_API_VERSION_MINOR(v->api),
           v->validation ? "on" : "off");
    return 0;
}

/* A feature name of docs/manifest.md: is it offered (enable: switch it on in
 * *on, a copy of the zeroed chain)? -1: a name this engine does not know. */
static int feature(eng_vk *v, const char *name, int enable) {
    VkPhysicalDeviceVulkan12Features *f12 = &v->f12;
    VkPhysicalDeviceVulkan11Features *f11 = &v->f11;
    VkPhysicalDeviceFeatures *f = &v->f.features;
#define FEATURE(str, field)                                                                        \
    if (!strcmp(name, str)) return enable ? (field = VK_TRUE) : (field == VK_TRUE)
    FEATURE("storage_8bit", f12->storageBuffer8BitAccess);
    FEATURE("storage_16bit", f11->storageBuffer16BitAccess);
    FEATURE("float16", f12->shaderFloat16);
    FEATURE("int8", f12->shaderInt8);
    FEATURE("int64", f->shaderInt64);
    FEATURE("dynamic_indexing", f->shaderStorageBufferArrayDynamicIndexing);
    FEATURE("vulkan_memory_model", f12->vulkanMemoryModel);
    FEATURE("integer_dot_product", v->dot.shaderIntegerDotProduct);
    FEATURE("cooperative_matrix_nv", v->coop.cooperativeMatrix);
#undef FEATURE
    if (!strcmp(name, "subgroup_arithmetic")) /* a property: nothing to enable */
        return (v->subgroup.supportedOperations & VK_SUBGROUP_FEATURE_ARITHMETIC_BIT) &&
               (v->subgroup.supportedStages & VK_SHADER_STAGE_COMPUTE_BIT);
    return -1;
}

/* An extension is there when the device lists it, or when the device's
 * version has it as core (the promotions a manifest may rely on). */
static int extension(const eng_vk *v, const char *name) {
    if (!strcmp(name, "VK_KHR_shader_integer_dot_product") && v->api >= VK_API_VERSION_1_3)
        return 2;
    return has_extension(v, name);
}

int vk_can_run(eng_vk *v, const eng_kernel *k, char *why, size_t n) {
    if (k->api_version > v->api)
        return snprintf(why, n, "Vulkan %u.%u", VK_API_VERSION_MAJOR(k->api_version),
                        VK_API_VERSION_MINOR(k->api_version)),
               0;
    for (uint32_t i = 0; i < k->feature_count; i++) {
        int has = feature(v, k->features[i], 0);
        if (has < 0)
            return snprintf(why, n, "feature '%s', unknown to this engine", k->features[i]), 0;
        if (!has) return snprintf(why, n, "feature %s", k->features[i]), 0;
    }
    for (uint32_t i = 0; i < k->extension_count; i++)
        if (!extension(v, k->extensions[i])) return snprintf(why, n, "%s", k->extensions[i]), 0;
    if (k->required_subgroup_size)
        return snprintf(why, n, "a required subgroup size (this example sets none)"), 0;
    if (v->subgroup.subgroupSize < k->min_subgroup_size)
        return snprintf(why, n, "subgroups of %u", k->min_subgroup_size), 0;
    uint32_t inv = k->workgroup_size[0] * k->workgroup_size[1] * k->workgroup_size[2];
    if (inv > v->props.limits.maxComputeWorkGroupInvocations ||
        k->shared_memory_bytes > v->props.limits.maxComputeSharedMemorySize)
        return snprintf(why, n, "%u invocations and %u bytes of shared memory", inv,
                        k->shared_memory_bytes),
               0;
    return 1;
}

int vk_create_device(eng_vk *v, const eng_kernel *const *kernels, uint32_t count, char *err,
                     size_t n) {
    /* the offered features, then a zeroed chain with only what the kernels list */
    VkPhysicalDeviceSubgroupProperties sg = v->subgroup;
    chain(v);
    v->subgroup = sg;
    const char *exts[ENG_MAX * 4];
    uint32_t next = 0;
    for (uint32_t i = 0; i < count; i++) {
        for (uint32_t j = 0; j < kernels[i]->feature_count; j++)
            feature(v, kernels[i]->features[j], 1);
        for (uint32_t j = 0; j < kernels[i]->extension_count; j++) {
            const char *e = kernels[i]->extensions[j];
            int dup = extension(v, e) == 2; /* core: nothing to enable */
            for (uint32_t m = 0; m < next; m++)
                dup |= !strcmp(exts[m], e);
            if (!dup && next < sizeof exts / sizeof exts[0]) exts[next++] = e;
        }
    }
    float priority = 1;
    VkDeviceQueueCreateInfo qci = {
        VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO, NULL, 0, v->family, 1, &priority};
    VkDeviceCreateInfo dci = {
        VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, &v->f, 0, 1, &qci, 0, NULL, next, exts, NULL};
    if (failed(vkCreateDevice(v->pd, &dci, NULL, &v->device), "vkCreateDevice", err, n)) return -1;
    vkGetDeviceQueue(v->device, v->family, 0, &v->queue);
    VkCommandPoolCreateInfo pci = {VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO, NULL,
                                   VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, v->family};
    return failed(vkCreateCommandPool(v->device, &pci, NULL, &v->pool), "vkCreateCommandPool", err,
                  n);
}

int vk_buffer(eng_vk *v, size_t size, eng_buf *b, char *err, size_t n) {
    memset(b, 0, sizeof *b);
    b->size = size ? (size + 3) / 4 * 4 : 4; /* storage buffers are read as words */
    VkBufferCreateInfo bci = {VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              NULL,
                              0,
                              b->size,
                              VK_BUFFER_USAGE_STORAGE_BUFFER_BIT,
                              VK_SHARING_MODE_EXCLUSIVE,
                              0,
                              NULL};
    if (failed(vkCreateBuffer(v->device, &bci, NULL, &b->buffer), "vkCreateBuffer", err, n))
        return -1;
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(v->device, b->buffer, &req);
    /* host-visible and coherent, so the example maps instead of staging */
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < v->memory.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) &&
            (v->memory.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    if (type == UINT32_MAX) return snprintf(err, n, "no host-visible memory"), -1;
    VkMemoryAllocateInfo mai = {VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO, NULL, req.size, type};
    if (failed(vkAllocateMemory(v->device, &mai, NULL, &b->memory), "vkAllocateMemory", err, n) ||
        failed(vkBindBufferMemory(v->device, b->buffer, b->memory, 0), "vkBindBufferMemory", err,
               n) ||
        failed(vkMapMemory(v->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->map), "vkMapMemory", err,
               n))
        return -1;
    return 0;
}

void vk_buffer_free(eng_vk *v, eng_buf *b) {
    if (b->memory) vkFreeMemory(v->device, b->memory, NULL);
    if (b->buffer) vkDestroyBuffer(v->device, b->buffer, NULL);
    memset(b, 0, sizeof *b);
}

/* Pipeline objects of one run, destroyed together. */
typedef struct run {
    VkShaderModule module;
    VkDescriptorSetLayout set_layout;
    VkPipelineLayout layout;
    VkPipeline pipeline;
    VkDescriptorPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
} run;

static void run_free(eng_vk *v, run *r) {
    if (r->fence) vkDestroyFence(v->device, r->fence, NULL);
    if (r->cmd) vkFreeCommandBuffers(v->device, v->pool, 1, &r->cmd);
    if (r->pool) vkDestroyDescriptorPool(v->device, r->pool, NULL);
    if (r->pipeline) vkDestroyPipeline(v->device, r->pipeline, NULL);
    if (r->layout) vkDestroyPipelineLayout(v->device, r->layout, NULL);
    if (r->set_layout) vkDestroyDescriptorSetLayout(v->device, r->set_layout, NULL);
    if (r->module) vkDestroyShaderModule(v->device, r->module, NULL);
}

static int pipeline(eng_vk *v, const eng_kernel *k, run *r, char *err, size_t n) {
    VkDescriptorSetLayoutBinding b[ENG_MAX];
    for (uint32_t i = 0; i < k->binding_count; i++)
        b[i] = (VkDescriptorSetLayoutBinding){
            k->bindings[i].binding, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, k->bindings[i].count,
            VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo sci = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           NULL, 0, k->binding_count, b};
    VkPushConstantRange range = {VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_size};
    VkPipelineLayoutCreateInfo lci = {VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      NULL,
                                      0,
                                      1,
                                      &r->set_layout,
                                      k->push_size ? 1u : 0u,
                                      &range};
    VkShaderModuleCreateInfo mci = {VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO, NULL, 0,
                                    k->code_bytes, k->code};
    VkSpecializationMapEntry map[ENG_MAX];
    for (uint32_t i = 0; i < k->spec_count; i++)
        map[i] = (VkSpecializationMapEntry){k->spec_ids[i], 4 * i, 4};
    VkSpecializationInfo spec = {k->spec_count, map, 4 * k->spec_count, k->spec_data};
    if (failed(vkCreateDescriptorSetLayout(v->device, &sci, NULL, &r->set_layout),
               "vkCreateDescriptorSetLayout", err, n) ||
        failed(vkCreatePipelineLayout(v->device, &lci, NULL, &r->layout), "vkCreatePipelineLayout",
               err, n) ||
        failed(vkCreateShaderModule(v->device, &mci, NULL, &r->module), "vkCreateShaderModule", err,
               n))
        return -1;
    VkComputePipelineCreateInfo pci = {VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
                                       NULL,
                                       0,
                                       {VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO, NULL,
                                        0, VK_SHADER_STAGE_COMPUTE_BIT, r->module, "main",
                                        k->spec_count ? &spec : NULL},
                                       r->layout,
                                       VK_NULL_HANDLE,
                                       -1};
    return failed(vkCreateComputePipelines(v->device, VK_NULL_HANDLE, 1, &pci, NULL, &r->pipeline),
                  "vkCreateComputePipelines", err, n);
}

int vk_dispatch(eng_vk *v, const eng_kernel *k, eng_buf *const *bufs, const void *push,
                const uint32_t groups[3], char *err, size_t n) {
    run r = {0};
    int rc = pipeline(v, k, &r, err, n);
    uint32_t total = 0;
    VkDescriptorBufferInfo info[ENG_MAX * 4];
    VkWriteDescriptorSet w[ENG_MAX];
    for (uint32_t i = 0; i < k->binding_count; i++)
        total += k->bindings[i].count;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, total};
    VkDescriptorPoolCreateInfo dpi = {
        VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, 1, 1, &size};
    VkDescriptorSet set;
    VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL,
                                       VK_NULL_HANDLE, 1, &r.set_layout};
    if (!rc)
        rc = failed(vkCreateDescriptorPool(v->device, &dpi, NULL, &r.pool),
                    "vkCreateDescriptorPool", err, n);
    dai.descriptorPool = r.pool;
    if (!rc)
        rc = failed(vkAllocateDescriptorSets(v->device, &dai, &set), "vkAllocateDescriptorSets",
                    err, n);
    for (uint32_t i = 0, at = 0; !rc && i < k->binding_count; i++) {
        /* bufs holds one buffer per descriptor, bindings in order */
        for (uint32_t j = 0; j < k->bindings[i].count; j++, at++)
            info[at] = (VkDescriptorBufferInfo){bufs[at]->buffer, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      NULL,
                                      set,
                                      k->bindings[i].binding,
                                      0,
                                      k->bindings[i].count,
                                      VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      NULL,
                                      &info[at - k->bindings[i].count],
                                      NULL};
    }
    if (!rc) vkUpdateDescriptorSets(v->device, k->binding_count, w, 0, NULL);
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL,
                                       v->pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    if (!rc)
        rc = failed(vkAllocateCommandBuffers(v->device, &cai, &r.cmd), "vkAllocateCommandBuffers",
                    err, n);
    if (!rc) {
        VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                       VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
        vkBeginCommandBuffer(r.cmd, &bi);
        vkCmdBindPipeline(r.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r.pipeline);
        vkCmdBindDescriptorSets(r.cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r.layout, 0, 1, &set, 0,
                                NULL);
        if (k->push_size)
            vkCmdPushConstants(r.cmd, r.layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_size, push);
        vkCmdDispatch(r.cmd, groups[0], groups[1], groups[2]);
        /* the shader's writes made visible to the host's reads of the mapping */
        VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT,
                              VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(r.cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
        rc = failed(vkEndCommandBuffer(r.cmd), "vkEndCommandBuffer", err, n);
    }
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    if (!rc) rc = failed(vkCreateFence(v->device, &fci, NULL, &r.fence), "vkCreateFence", err, n);
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &r.cmd, 0, NULL};
    if (!rc) rc = failed(vkQueueSubmit(v->queue, 1, &si, r.fence), "vkQueueSubmit", err, n);
    if (!rc)
        rc = failed(vkWaitForFences(v->device, 1, &r.fence, VK_TRUE, UINT64_MAX), "vkWaitForFences",
                    err, n);
    run_free(v, &r);
    return rc;
}

/* The descriptor set of one step in r's own pool: 0, or -1. */
static int step_set(eng_vk *v, const eng_step *st, run *r, VkDescriptorSet *set, char *err,
                    size_t n) {
    const eng_kernel *k = st->k;
    uint32_t total = 0;
    for (uint32_t i = 0; i < k->binding_count; i++)
        total += k->bindings[i].count;
    if (total > ENG_MAX * 2) return snprintf(err, n, "%s: too many buffers", k->name), -1;
    VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, total};
    VkDescriptorPoolCreateInfo dpi = {
        VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO, NULL, 0, 1, 1, &size};
    if (failed(vkCreateDescriptorPool(v->device, &dpi, NULL, &r->pool), "vkCreateDescriptorPool",
               err, n))
        return -1;
    VkDescriptorSetAllocateInfo dai = {VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO, NULL,
                                       r->pool, 1, &r->set_layout};
    if (failed(vkAllocateDescriptorSets(v->device, &dai, set), "vkAllocateDescriptorSets", err, n))
        return -1;
    VkDescriptorBufferInfo info[ENG_MAX * 2];
    VkWriteDescriptorSet w[ENG_MAX];
    for (uint32_t i = 0, at = 0; i < k->binding_count; i++) {
        for (uint32_t j = 0; j < k->bindings[i].count; j++, at++)
            info[at] = (VkDescriptorBufferInfo){st->bufs[at]->buffer, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      NULL,
                                      *set,
                                      k->bindings[i].binding,
                                      0,
                                      k->bindings[i].count,
                                      VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      NULL,
                                      &info[at - k->bindings[i].count],
                                      NULL};
    }
    vkUpdateDescriptorSets(v->device, k->binding_count, w, 0, NULL);
    return 0;
}

int vk_chain(eng_vk *v, const eng_step *steps, uint32_t count, char *err, size_t n) {
    run *r = calloc(count ? count : 1, sizeof *r);
    VkDescriptorSet sets[ENG_MAX];
    int rc = count > ENG_MAX ? (snprintf(err, n, "a chain of %u steps", count), -1) : 0;
    for (uint32_t i = 0; !rc && i < count; i++)
        rc = pipeline(v, steps[i].k, &r[i], err, n) ||
             step_set(v, &steps[i], &r[i], &sets[i], err, n);
    VkCommandBufferAllocateInfo cai = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO, NULL,
                                       v->pool, VK_COMMAND_BUFFER_LEVEL_PRIMARY, 1};
    if (!rc)
        rc = failed(vkAllocateCommandBuffers(v->device, &cai, &r[0].cmd),
                    "vkAllocateCommandBuffers", err, n);
    if (!rc) {
        VkCommandBuffer cmd = r[0].cmd;
        VkCommandBufferBeginInfo bi = {VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO, NULL,
                                       VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT, NULL};
        vkBeginCommandBuffer(cmd, &bi);
        for (uint32_t i = 0; i < count; i++) {
            const eng_kernel *k = steps[i].k;
            if (steps[i].barrier) { /* the writes before visible to this dispatch */
                VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL,
                                      VK_ACCESS_SHADER_WRITE_BIT,
                                      VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
                vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                                     VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0,
                                     NULL);
            }
            vkCmdBindPipeline(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r[i].pipeline);
            vkCmdBindDescriptorSets(cmd, VK_PIPELINE_BIND_POINT_COMPUTE, r[i].layout, 0, 1,
                                    &sets[i], 0, NULL);
            if (k->push_size)
                vkCmdPushConstants(cmd, r[i].layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, k->push_size,
                                   steps[i].push);
            vkCmdDispatch(cmd, steps[i].groups[0], steps[i].groups[1], steps[i].groups[2]);
        }
        VkMemoryBarrier mb = {VK_STRUCTURE_TYPE_MEMORY_BARRIER, NULL, VK_ACCESS_SHADER_WRITE_BIT,
                              VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_HOST_BIT,
                             0, 1, &mb, 0, NULL, 0, NULL);
        rc = failed(vkEndCommandBuffer(cmd), "vkEndCommandBuffer", err, n);
    }
    VkFenceCreateInfo fci = {VK_STRUCTURE_TYPE_FENCE_CREATE_INFO, NULL, 0};
    if (!rc)
        rc = failed(vkCreateFence(v->device, &fci, NULL, &r[0].fence), "vkCreateFence", err, n);
    VkSubmitInfo si = {VK_STRUCTURE_TYPE_SUBMIT_INFO, NULL, 0, NULL, NULL, 1, &r[0].cmd, 0, NULL};
    if (!rc) rc = failed(vkQueueSubmit(v->queue, 1, &si, r[0].fence), "vkQueueSubmit", err, n);
    if (!rc)
        rc = failed(vkWaitForFences(v->device, 1, &r[0].fence, VK_TRUE, UINT64_MAX),
                    "vkWaitForFences", err, n);
    for (uint32_t i = 0; i < count; i++)
        run_free(v, &r[i]);
    free(r);
    return rc;
}

eng_device vk_device(const eng_vk *v) {
    return (eng_device){v->props.vendorID, v->props.deviceID, v->props.driverVersion};
}

uint32_t vk_errors(const eng_vk *v) {
    return v->errors;
}

void vk_close(eng_vk *v) {
    if (!v) return;
    if (v->device) {
        vkDeviceWaitIdle(v->device);
        if (v->pool) vkDestroyCommandPool(v->device, v->pool, NULL);
        vkDestroyDevice(v->device, NULL);
    }
    if (v->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)vkGetInstanceProcAddr(
                v->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(v->instance, v->messenger, NULL);
    }
    if (v->instance) vkDestroyInstance(v->instance, NULL);
    free(v->extensions);
    free(v);
}
