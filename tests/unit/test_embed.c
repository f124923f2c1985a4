/* libqkrt inside a program that owns its Vulkan objects: this test creates the
 * instance (validation layer, a messenger that fails on any error), device,
 * queue and command buffers; records a q4_0 mat-vec with qkrt_cmd_dispatch
 * into its own command buffer, submits and waits itself, and checks it against
 * the CPU reference on fresh random data (seed printed, output poisoned), with
 * pushed descriptors, libqkrt's pools and a set of its own. Then the
 * refusals: a kernel listing a feature the device was not created with, and a
 * manifest entry that omits a feature its SPIR-V needs. Last, the
 * convenience path (qkrt_create) with exactly the features the entry lists.
 * usage: test_embed BUNDLE (a bundle of q4_0 mat-vec kernels) */
#define _POSIX_C_SOURCE 200809L
#include "ops.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int g_fail;
static uint32_t g_validation_errors;

static double rnd_unit(uint64_t *rng) { /* [-1, 1) */
    *rng = *rng * 6364136223846793005ull + 1442695040888963407ull;
    return (double)(*rng >> 11) / 9007199254740992.0 * 2 - 1;
}

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

static VKAPI_ATTR VkBool32 VKAPI_CALL on_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT types,
                                                 const VkDebugUtilsMessengerCallbackDataEXT *data,
                                                 void *user) {
    (void)types, (void)user;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        g_validation_errors++;
        printf("validation error: %s\n", data && data->pMessage ? data->pMessage : "?");
    }
    return VK_FALSE;
}

/* What an engine has: its instance, device, queue and command buffer. */
typedef struct engine {
    VkInstance instance;
    VkDebugUtilsMessengerEXT messenger;
    uint32_t api;
    VkPhysicalDevice physical;
    uint32_t family;
    VkDevice device;
    VkDeviceCreateInfo device_info; /* as the device was created */
    const char *extensions[1];
    bool push; /* VK_KHR_push_descriptor enabled */
    VkQueue queue;
    VkCommandPool pool;
    VkCommandBuffer cmd;
    VkFence fence;
    VkPhysicalDeviceMemoryProperties memory;
} engine;

#define VK(call)                                                                                   \
    do {                                                                                           \
        VkResult vr_ = (call);                                                                     \
        if (vr_ != VK_SUCCESS) {                                                                   \
            printf("FAIL %s:%d: %s returned %d\n", __FILE__, __LINE__, #call, (int)vr_);           \
            return false;                                                                          \
        }                                                                                          \
    } while (0)

static bool has_device_extension(VkPhysicalDevice p, const char *name) {
    uint32_t n = 0;
    vkEnumerateDeviceExtensionProperties(p, NULL, &n, NULL);
    VkExtensionProperties *e = calloc(n ? n : 1, sizeof *e);
    vkEnumerateDeviceExtensionProperties(p, NULL, &n, e);
    bool found = false;
    for (uint32_t i = 0; i < n && !found; i++)
        found = strcmp(e[i].extensionName, name) == 0;
    free(e);
    return found;
}

/* The instance with the validation layer, the first device with a compute
 * family, and a device with no optional feature: the q4_0 mat-vec needs none. */
static bool engine_open(engine *g) {
    memset(g, 0, sizeof *g);
    g->api = VK_API_VERSION_1_2;
    const char *layer = "VK_LAYER_KHRONOS_validation", *ext = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .pApplicationName = "test_embed",
                             .apiVersion = g->api};
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT,
        .pfnUserCallback = on_message,
    };
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        .pNext = &messenger,
        .pApplicationInfo = &app,
        .enabledLayerCount = 1,
        .ppEnabledLayerNames = &layer,
        .enabledExtensionCount = 1,
        .ppEnabledExtensionNames = &ext,
    };
    VK(vkCreateInstance(&info, NULL, &g->instance));
    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(g->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create) return false;
    VK(create(g->instance, &messenger, NULL, &g->messenger));

    uint32_t n = 8;
    VkPhysicalDevice devices[8];
    VkResult vr = vkEnumeratePhysicalDevices(g->instance, &n, devices);
    if (vr != VK_SUCCESS && vr != VK_INCOMPLETE) return false;
    /* QKGEN_DEVICE picks as qkrt_create does; else the first with compute */
    uint32_t want = getenv("QKGEN_DEVICE") ? (uint32_t)atoi(getenv("QKGEN_DEVICE")) : 0;
    for (uint32_t d = want; d < n && !g->physical; d++) {
        uint32_t nf = 0;
        vkGetPhysicalDeviceQueueFamilyProperties(devices[d], &nf, NULL);
        VkQueueFamilyProperties f[16];
        nf = nf < 16 ? nf : 16;
        vkGetPhysicalDeviceQueueFamilyProperties(devices[d], &nf, f);
        for (uint32_t i = 0; i < nf && !g->physical; i++)
            if (f[i].queueFlags & VK_QUEUE_COMPUTE_BIT) g->physical = devices[d], g->family = i;
    }
    if (!g->physical) {
        printf("FAIL: no device with a compute queue\n");
        return false;
    }
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(g->physical, &props);
    printf("device: %s (the test's own VkDevice)\n", props.deviceName);
    g->push = has_device_extension(g->physical, VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME);
    g->extensions[0] = VK_KHR_PUSH_DESCRIPTOR_EXTENSION_NAME;
    static const float priority = 1.0f;
    static VkDeviceQueueCreateInfo queue = {
        .sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
        .queueCount = 1,
        .pQueuePriorities = &priority,
    };
    queue.queueFamilyIndex = g->family;
    g->device_info = (VkDeviceCreateInfo){
        .sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
        .queueCreateInfoCount = 1,
        .pQueueCreateInfos = &queue,
        .enabledExtensionCount = g->push ? 1 : 0,
        .ppEnabledExtensionNames = g->extensions,
    };
    VK(vkCreateDevice(g->physical, &g->device_info, NULL, &g->device));
    vkGetDeviceQueue(g->device, g->family, 0, &g->queue);
    vkGetPhysicalDeviceMemoryProperties(g->physical, &g->memory);
    VkCommandPoolCreateInfo pool = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                    .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                    .queueFamilyIndex = g->family};
    VK(vkCreateCommandPool(g->device, &pool, NULL, &g->pool));
    VkCommandBufferAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                         .commandPool = g->pool,
                                         .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                         .commandBufferCount = 1};
    VK(vkAllocateCommandBuffers(g->device, &alloc, &g->cmd));
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    VK(vkCreateFence(g->device, &fence, NULL, &g->fence));
    return true;
}

static void engine_close(engine *g) {
    if (g->device) {
        vkDeviceWaitIdle(g->device);
        vkDestroyFence(g->device, g->fence, NULL);
        vkDestroyCommandPool(g->device, g->pool, NULL);
        vkDestroyDevice(g->device, NULL);
    }
    PFN_vkDestroyDebugUtilsMessengerEXT destroy = (PFN_vkDestroyDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(g->instance, "vkDestroyDebugUtilsMessengerEXT");
    if (destroy && g->messenger) destroy(g->instance, g->messenger, NULL);
    if (g->instance) vkDestroyInstance(g->instance, NULL);
}

/* A host-visible storage buffer of the engine's, mapped. */
typedef struct host_buffer {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *map;
    size_t bytes;
} host_buffer;

static bool buffer_make(engine *g, size_t bytes, host_buffer *b) {
    memset(b, 0, sizeof *b);
    b->bytes = bytes;
    VkBufferCreateInfo info = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                               .size = bytes,
                               .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                        VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                               .sharingMode = VK_SHARING_MODE_EXCLUSIVE};
    VK(vkCreateBuffer(g->device, &info, NULL, &b->buffer));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(g->device, b->buffer, &req);
    VkMemoryPropertyFlags want =
        VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
    uint32_t type = UINT32_MAX;
    for (uint32_t i = 0; i < g->memory.memoryTypeCount && type == UINT32_MAX; i++)
        if ((req.memoryTypeBits & (1u << i)) &&
            (g->memory.memoryTypes[i].propertyFlags & want) == want)
            type = i;
    if (type == UINT32_MAX) return false;
    VkMemoryAllocateInfo alloc = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                  .allocationSize = req.size,
                                  .memoryTypeIndex = type};
    VK(vkAllocateMemory(g->device, &alloc, NULL, &b->memory));
    VK(vkBindBufferMemory(g->device, b->buffer, b->memory, 0));
    VK(vkMapMemory(g->device, b->memory, 0, VK_WHOLE_SIZE, 0, &b->map));
    return true;
}

static void buffer_free(engine *g, host_buffer *b) {
    if (b->buffer) vkDestroyBuffer(g->device, b->buffer, NULL);
    if (b->memory) vkFreeMemory(g->device, b->memory, NULL);
}

static void barrier(VkCommandBuffer cmd, VkPipelineStageFlags src, VkAccessFlags src_access,
                    VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    VkMemoryBarrier b = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                         .srcAccessMask = src_access,
                         .dstAccessMask = dst_access};
    vkCmdPipelineBarrier(cmd, src, dst, 0, 1, &b, 0, NULL, 0, NULL);
}

/* The first plain q4_0 mat-vec of the bundle (weights, activations, output
 * only) the context runs, or -1. */
static int find_matvec(qkrt_context *ctx, const qkrt_bundle *b) {
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        bool plain = k->binding_count == 3 && k->bindings[0].role_id == QKRT_ROLE_WEIGHTS &&
                     k->bindings[1].role_id == QKRT_ROLE_ACTIVATIONS &&
                     k->bindings[2].role_id == QKRT_ROLE_OUTPUT &&
                     k->bindings[2].type_id == QKRT_SCALAR_F32;
        if (k->family_id == QKRT_FAMILY_MATVEC && !strcmp(k->format, "q4_0") &&
            !strcmp(k->fusion, "none") && plain && qkrt_kernel_check(ctx, b, i) == QKRT_OK)
            return (int)i;
    }
    return -1;
}

/* Another kernel of k's .spv with other specialization constants (its own
 * pipeline from the same VkShaderModule), that the context runs; or -1. */
static int find_sibling(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki) {
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, ki);
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *s = qkrt_bundle_kernel(b, i);
        bool other = i != ki && !strcmp(s->spv, k->spv) && !strcmp(s->fusion, "none") &&
                     s->specialization_count == k->specialization_count && s->binding_count == 3;
        for (uint32_t c = 0; other && c < s->specialization_count; c++)
            if (s->specialization[c].data != k->specialization[c].data) {
                if (qkrt_kernel_check(ctx, b, i) == QKRT_OK) return (int)i;
                break;
            }
    }
    return -1;
}

enum { MODE_PUSH, MODE_POOL, MODE_OWN_SET };
static const char *const MODE_NAME[] = {"pushed descriptors", "libqkrt's pools",
                                        "the engine's own set"};

/* One mat-vec recorded into the engine's command buffer on a context of the
 * given descriptor mode; checked against the reference. */
static void run_mode(engine *g, const char *dir, int mode, uint64_t *rng) {
    qkrt_vulkan_desc desc = {
        .instance = g->instance,
        .api_version = g->api,
        .physical_device = g->physical,
        .device = g->device,
        .device_info = &g->device_info,
        .queue_family = g->family,
        /* no queue: every submit is the engine's; the pool mode's context
         * gets one to show the convenience calls work there too */
        .queue = mode == MODE_POOL ? g->queue : VK_NULL_HANDLE,
        .descriptors = mode == MODE_PUSH ? QKRT_DESCRIPTORS_PUSH : QKRT_DESCRIPTORS_POOL,
    };
    qkrt_context *ctx = NULL;
    qkrt_bundle *b = NULL;
    if (qkrt_create_from_vulkan(&desc, &ctx) != QKRT_OK) {
        CHECK(0, "%s: qkrt_create_from_vulkan: %s", MODE_NAME[mode], qkrt_last_error(NULL));
        return;
    }
    /* the device has f16 on lavapipe, but the engine did not enable it */
    CHECK(!qkrt_device(ctx)->float16 && !qkrt_device(ctx)->storage_8bit,
          "%s: the context claims features the device was not created with", MODE_NAME[mode]);
    if (qkrt_bundle_load(ctx, dir, &b) != QKRT_OK) {
        CHECK(0, "%s: %s", MODE_NAME[mode], qkrt_last_error(ctx));
        qkrt_destroy(ctx);
        return;
    }
    int ki = find_matvec(ctx, b);
    CHECK(ki >= 0, "no q4_0 mat-vec in %s runs on this context: %s", dir, qkrt_last_error(ctx));
    if (ki < 0) goto done;
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)ki);
    const uint32_t M = 33, K = 1024, T = 2; /* M not a multiple of any tile */
    qk_weights w;
    CHECK(qk_random_weights("q4_0", "", M, K, rng, &w), "q4_0 weights");
    host_buffer hw, hx, hy, hy2;
    bool ok = buffer_make(g, w.bytes[0], &hw) && buffer_make(g, 4 * (size_t)T * K, &hx) &&
              buffer_make(g, 4 * (size_t)T * M, &hy) && buffer_make(g, 4 * (size_t)T * M, &hy2);
    CHECK(ok, "engine buffers");
    double *xd = malloc(sizeof *xd * T * K), *ref = malloc(sizeof *ref * T * M);
    float *x = hx.map, *y = hy.map;
    memcpy(hw.map, w.plane[0], w.bytes[0]);
    for (size_t i = 0; i < (size_t)T * K; i++)
        xd[i] = x[i] = (float)rnd_unit(rng);
    qkrt_buffer *bw = NULL, *bx = NULL, *by = NULL, *by2 = NULL;
    qkrt_result r = qkrt_buffer_wrap(ctx, hw.buffer, hw.bytes, &bw);
    if (r == QKRT_OK) r = qkrt_buffer_wrap(ctx, hx.buffer, hx.bytes, &bx);
    if (r == QKRT_OK) r = qkrt_buffer_wrap(ctx, hy.buffer, hy.bytes, &by);
    if (r == QKRT_OK) r = qkrt_buffer_wrap(ctx, hy2.buffer, hy2.bytes, &by2);
    static const char *const names[] = {"M", "K", "T"};
    const int64_t values[] = {M, K, T}, bad_values[] = {M, K + 1, T}; /* K % 32 != 0 */
    qkrt_buffer *bufs[] = {bw, bx, by}, *bufs2[] = {bw, bx, by2};
    qkrt_dispatch d = {.bundle = b,
                       .kernel = (uint32_t)ki,
                       .buffer_count = 3,
                       .buffers = bufs,
                       .shape = {3, names, values}};
    /* a second kernel of the same module into a second output, no barrier
     * between the two (they only read the same inputs) */
    int k2 = mode == MODE_OWN_SET ? -1 : find_sibling(ctx, b, (uint32_t)ki);
    CHECK(mode == MODE_OWN_SET || k2 >= 0, "no other kernel of %s with other constants", k->spv);
    qkrt_dispatch d2 = d;
    d2.kernel = (uint32_t)(k2 >= 0 ? k2 : ki);
    d2.buffers = bufs2;
    VkDescriptorPool own_pool = VK_NULL_HANDLE;
    if (r == QKRT_OK && mode == MODE_OWN_SET) {
        /* the engine allocates and writes the set itself */
        VkDescriptorSetLayout set_layout;
        r = qkrt_kernel_layout(ctx, b, (uint32_t)ki, &set_layout, NULL);
        VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 3};
        VkDescriptorPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                         .maxSets = 1,
                                         .poolSizeCount = 1,
                                         .pPoolSizes = &size};
        if (r == QKRT_OK && vkCreateDescriptorPool(g->device, &pi, NULL, &own_pool) == VK_SUCCESS) {
            VkDescriptorSetAllocateInfo ai = {.sType =
                                                  VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                              .descriptorPool = own_pool,
                                              .descriptorSetCount = 1,
                                              .pSetLayouts = &set_layout};
            vkAllocateDescriptorSets(g->device, &ai, &d.set);
            VkDescriptorBufferInfo bi[3] = {{hw.buffer, 0, VK_WHOLE_SIZE},
                                            {hx.buffer, 0, VK_WHOLE_SIZE},
                                            {hy.buffer, 0, VK_WHOLE_SIZE}};
            VkWriteDescriptorSet wr[3];
            for (int i = 0; i < 3; i++)
                wr[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                               .dstSet = d.set,
                                               .dstBinding = k->bindings[i].binding,
                                               .descriptorCount = 1,
                                               .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                               .pBufferInfo = &bi[i]};
            vkUpdateDescriptorSets(g->device, 3, wr, 0, NULL);
            d.buffers = NULL, d.buffer_count = 0; /* not read with a set */
        }
    }
    CHECK(r == QKRT_OK, "%s: set-up: %s", MODE_NAME[mode], qkrt_last_error(ctx));

    /* a dispatch that fails its checks records nothing and says why */
    qkrt_dispatch bad = d;
    bad.shape.values = bad_values;
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(g->cmd, &begin);
    qkrt_result rb = qkrt_cmd_dispatch(ctx, g->cmd, &bad, 1, QKRT_BARRIER_BEFORE);
    CHECK(rb == QKRT_ERROR_ARGUMENT && strstr(qkrt_last_error(ctx), "constraint"),
          "%s: a shape breaking a constraint gave %d: %s", MODE_NAME[mode], (int)rb,
          qkrt_last_error(ctx));
    /* the engine's own work first: poison the output with NaN */
    vkCmdFillBuffer(g->cmd, hy.buffer, 0, VK_WHOLE_SIZE, 0x7fc00000u);
    vkCmdFillBuffer(g->cmd, hy2.buffer, 0, VK_WHOLE_SIZE, 0x7fc00000u);
    barrier(g->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
    qkrt_dispatch both[2] = {d, d2};
    if (r == QKRT_OK) r = qkrt_cmd_dispatch(ctx, g->cmd, both, k2 >= 0 ? 2 : 1, QKRT_BARRIER_AFTER);
    CHECK(r == QKRT_OK, "%s: qkrt_cmd_dispatch: %s", MODE_NAME[mode], qkrt_last_error(ctx));
    barrier(g->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    vkEndCommandBuffer(g->cmd);
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &g->cmd};
    CHECK(vkQueueSubmit(g->queue, 1, &submit, g->fence) == VK_SUCCESS, "vkQueueSubmit");
    vkWaitForFences(g->device, 1, &g->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(g->device, 1, &g->fence);
    vkResetCommandBuffer(g->cmd, 0);
    CHECK(qkrt_descriptors_reset(ctx) == QKRT_OK, "qkrt_descriptors_reset: %s",
          qkrt_last_error(ctx));
    if (r == QKRT_OK) {
        qk_ref_matvec(&w, xd, M, K, T, ref);
        for (int j = 0; j < (k2 >= 0 ? 2 : 1); j++) {
            const qkrt_kernel_info *kj = qkrt_bundle_kernel(b, both[j].kernel);
            float *out = j ? hy2.map : y;
            double nmse = qk_nmse(out, ref, (size_t)T * M), bound = qk_nmse_bound(kj);
            CHECK(nmse <= bound, "%s: %s NMSE %.3g over %.3g", MODE_NAME[mode], kj->name, nmse,
                  bound);
            printf("%s %s (%s, %u constants) with %s: M=%u K=%u T=%u NMSE %.3g\n",
                   nmse <= bound ? "ok  " : "FAIL", kj->name, kj->spv, kj->specialization_count,
                   MODE_NAME[mode], M, K, T, nmse);
        }
    }
    /* the convenience calls submit: only with a queue */
    qkrt_result rr = qkrt_run(ctx, &d, 1);
    if (mode == MODE_POOL)
        CHECK(rr == QKRT_OK, "qkrt_run on the engine's queue: %s", qkrt_last_error(ctx));
    else
        CHECK(rr == QKRT_ERROR_ARGUMENT && strstr(qkrt_last_error(ctx), "queue"),
              "qkrt_run without a queue gave %d: %s", (int)rr, qkrt_last_error(ctx));

    qkrt_buffer_destroy(ctx, bw), qkrt_buffer_destroy(ctx, bx), qkrt_buffer_destroy(ctx, by);
    qkrt_buffer_destroy(ctx, by2);
    if (own_pool) vkDestroyDescriptorPool(g->device, own_pool, NULL);
    buffer_free(g, &hw), buffer_free(g, &hx), buffer_free(g, &hy), buffer_free(g, &hy2);
    free(xd), free(ref);
    qk_free_weights(&w);
done:
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
}

/* Two mat-vecs where the second reads what the first wrote (y2 = W2 (W1 x)),
 * recorded in one qkrt_cmd_dispatch with QKRT_BARRIER_BETWEEN: the barrier
 * libqkrt puts between them is all that orders them. */
static void chain(engine *g, const char *dir, uint64_t *rng) {
    qkrt_vulkan_desc desc = {.instance = g->instance,
                             .api_version = g->api,
                             .physical_device = g->physical,
                             .device = g->device,
                             .device_info = &g->device_info,
                             .queue_family = g->family};
    qkrt_context *ctx = NULL;
    qkrt_bundle *b = NULL;
    if (qkrt_create_from_vulkan(&desc, &ctx) != QKRT_OK ||
        qkrt_bundle_load(ctx, dir, &b) != QKRT_OK) {
        CHECK(0, "chain: %s", ctx ? qkrt_last_error(ctx) : qkrt_last_error(NULL));
        qkrt_destroy(ctx);
        return;
    }
    int ki = find_matvec(ctx, b);
    const uint32_t M1 = 64, K1 = 256, M2 = 33, T = 2; /* the second's K is the first's M */
    qk_weights w1 = {0}, w2 = {0};
    bool ok = ki >= 0 && qk_random_weights("q4_0", "", M1, K1, rng, &w1) &&
              qk_random_weights("q4_0", "", M2, M1, rng, &w2);
    host_buffer h[5]; /* w1, w2, x, y1, y2 */
    size_t bytes[5] = {w1.bytes[0], w2.bytes[0], 4 * (size_t)T * K1, 4 * (size_t)T * M1,
                       4 * (size_t)T * M2};
    for (int i = 0; i < 5 && ok; i++)
        ok = buffer_make(g, bytes[i], &h[i]);
    CHECK(ok, "chain: set-up");
    if (!ok) {
        qk_free_weights(&w1), qk_free_weights(&w2);
        qkrt_bundle_destroy(ctx, b);
        qkrt_destroy(ctx);
        return;
    }
    memcpy(h[0].map, w1.plane[0], bytes[0]);
    memcpy(h[1].map, w2.plane[0], bytes[1]);
    float *x = h[2].map, *y1 = h[3].map, *y2 = h[4].map;
    double *xd = malloc(sizeof *xd * T * K1), *r1 = malloc(sizeof *r1 * T * M1);
    double *y1d = malloc(sizeof *y1d * T * M1), *r2 = malloc(sizeof *r2 * T * M2);
    for (size_t i = 0; i < (size_t)T * K1; i++)
        xd[i] = x[i] = (float)rnd_unit(rng);
    qkrt_buffer *q[5] = {0};
    qkrt_result r = QKRT_OK;
    for (int i = 0; i < 5 && r == QKRT_OK; i++)
        r = qkrt_buffer_wrap(ctx, h[i].buffer, bytes[i], &q[i]);
    static const char *const names[] = {"M", "K", "T"};
    const int64_t v1[] = {M1, K1, T}, v2[] = {M2, M1, T};
    qkrt_buffer *b1[] = {q[0], q[2], q[3]}, *b2[] = {q[1], q[3], q[4]};
    qkrt_dispatch d[2] = {
        {.bundle = b,
         .kernel = (uint32_t)ki,
         .buffer_count = 3,
         .buffers = b1,
         .shape = {3, names, v1}},
        {.bundle = b,
         .kernel = (uint32_t)ki,
         .buffer_count = 3,
         .buffers = b2,
         .shape = {3, names, v2}},
    };
    VkCommandBufferBeginInfo begin = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                      .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    vkBeginCommandBuffer(g->cmd, &begin);
    vkCmdFillBuffer(g->cmd, h[3].buffer, 0, VK_WHOLE_SIZE, 0x7fc00000u);
    vkCmdFillBuffer(g->cmd, h[4].buffer, 0, VK_WHOLE_SIZE, 0x7fc00000u);
    barrier(g->cmd, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT,
            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT);
    if (r == QKRT_OK)
        r = qkrt_cmd_dispatch(ctx, g->cmd, d, 2, QKRT_BARRIER_BETWEEN | QKRT_BARRIER_AFTER);
    CHECK(r == QKRT_OK, "chain: qkrt_cmd_dispatch: %s", qkrt_last_error(ctx));
    barrier(g->cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_ACCESS_SHADER_WRITE_BIT,
            VK_PIPELINE_STAGE_HOST_BIT, VK_ACCESS_HOST_READ_BIT);
    vkEndCommandBuffer(g->cmd);
    VkSubmitInfo submit = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                           .commandBufferCount = 1,
                           .pCommandBuffers = &g->cmd};
    CHECK(vkQueueSubmit(g->queue, 1, &submit, g->fence) == VK_SUCCESS, "vkQueueSubmit");
    vkWaitForFences(g->device, 1, &g->fence, VK_TRUE, UINT64_MAX);
    vkResetFences(g->device, 1, &g->fence);
    vkResetCommandBuffer(g->cmd, 0);
    if (r == QKRT_OK) {
        /* the second product against the first's device result, so each is
         * held to its own bound */
        qk_ref_matvec(&w1, xd, M1, K1, T, r1);
        for (size_t i = 0; i < (size_t)T * M1; i++)
            y1d[i] = y1[i];
        qk_ref_matvec(&w2, y1d, M2, M1, T, r2);
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)ki);
        double e1 = qk_nmse(y1, r1, (size_t)T * M1), e2 = qk_nmse(y2, r2, (size_t)T * M2);
        bool good = e1 <= qk_nmse_bound(k) && e2 <= qk_nmse_bound(k);
        CHECK(good, "chain: NMSE %.3g then %.3g", e1, e2);
        printf("%s %s twice, the second on the first's output (QKRT_BARRIER_BETWEEN): NMSE %.3g, "
               "%.3g\n",
               good ? "ok  " : "FAIL", k->name, e1, e2);
    }
    for (int i = 0; i < 5; i++) {
        qkrt_buffer_destroy(ctx, q[i]);
        buffer_free(g, &h[i]);
    }
    free(xd), free(r1), free(y1d), free(r2);
    qk_free_weights(&w1), qk_free_weights(&w2);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
}

/* A copy of bundle dir in a temporary folder (its .spv linked) whose
 * manifest has the features list of kernel `name` replaced by `features`. */
static bool edited_bundle(const char *dir, const char *name, const char *features, char *out,
                          size_t out_size) {
    char path[4096];
    snprintf(path, sizeof path, "%s/manifest.json", dir);
    FILE *f = fopen(path, "rb");
    if (!f) return false;
    char *text = calloc(1, 64 << 20);
    size_t n = fread(text, 1, (64 << 20) - 1, f);
    fclose(f);
    char key[512];
    snprintf(key, sizeof key, "\"name\": \"%s\"", name);
    char *at = strstr(text, key), *list = at ? strstr(at, "\"features\": [") : NULL;
    char *end = list ? strchr(list, ']') : NULL;
    snprintf(out, out_size, "/tmp/qkrt_embed_XXXXXX");
    if (!end || !mkdtemp(out)) {
        free(text);
        return false;
    }
    snprintf(path, sizeof path, "%s/manifest.json", out);
    f = fopen(path, "wb");
    fwrite(text, 1, (size_t)(list - text), f);
    fprintf(f, "\"features\": [%s]", features);
    fwrite(end + 1, 1, n - (size_t)(end + 1 - text), f);
    fclose(f);
    /* every .spv the manifest names, linked */
    for (char *s = text; (s = strstr(s, "\"spv\": \"")); s++) {
        char file[512];
        if (sscanf(s + 8, "%511[^\"]", file) != 1) continue;
        char from[4096], to[4096];
        snprintf(from, sizeof from, "%s/%s", dir, file);
        snprintf(to, sizeof to, "%s/%s", out, file);
        if (from[0] != '/') {
            char cwd[2048];
            if (getcwd(cwd, sizeof cwd)) snprintf(from, sizeof from, "%s/%s/%s", cwd, dir, file);
        }
        symlink(from, to); /* EEXIST for a module named twice */
    }
    free(text);
    return true;
}

static void remove_bundle(const char *dir) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (strncmp(dir, "/tmp/qkrt_embed_", 16) == 0 && system(cmd) != 0)
        printf("note: could not remove %s\n", dir);
}

/* The refusals: a kernel whose entry lists float16 on this device made
 * without it; a kernel whose entry leaves out the subgroup_arithmetic its
 * SPIR-V declares. Neither may reach a pipeline. */
static void refusals(engine *g, const char *dir) {
    qkrt_vulkan_desc desc = {.instance = g->instance,
                             .api_version = g->api,
                             .physical_device = g->physical,
                             .device = g->device,
                             .device_info = &g->device_info,
                             .queue_family = g->family};
    qkrt_context *ctx = NULL;
    qkrt_bundle *b = NULL;
    if (qkrt_create_from_vulkan(&desc, &ctx) != QKRT_OK ||
        qkrt_bundle_load(ctx, dir, &b) != QKRT_OK) {
        CHECK(0, "refusals: %s", ctx ? qkrt_last_error(ctx) : qkrt_last_error(NULL));
        qkrt_destroy(ctx);
        return;
    }
    /* every entry agrees with its module (capabilities, workgroup size under
     * its specialization constants): refusals for this device are fine */
    uint32_t disagree = 0, n = qkrt_bundle_kernel_count(b);
    for (uint32_t i = 0; i < n; i++)
        if (qkrt_kernel_check(ctx, b, i) == QKRT_ERROR_MANIFEST && disagree++ < 3)
            printf("FAIL %s\n", qkrt_last_error(ctx));
    CHECK(disagree == 0, "%u of %u manifest entries disagree with their modules", disagree, n);
    const char *arith = NULL;
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b) && !arith; i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        bool only = k->feature_count == 1 && !strcmp(k->features[0], "subgroup_arithmetic");
        if (only && qkrt_kernel_check(ctx, b, i) == QKRT_OK) arith = k->name;
    }
    CHECK(arith, "the bundle needs a kernel that lists only subgroup_arithmetic");
    struct {
        const char *features, *expect;
        qkrt_result result;
    } cases[] = {
        {"\"subgroup_arithmetic\", \"float16\"", "did not enable", QKRT_ERROR_UNSUPPORTED},
        {"", "GroupNonUniformArithmetic", QKRT_ERROR_MANIFEST},
    };
    for (int c = 0; c < 2 && arith; c++) {
        char tmp[64];
        qkrt_bundle *e = NULL;
        if (!edited_bundle(dir, arith, cases[c].features, tmp, sizeof tmp) ||
            qkrt_bundle_load(ctx, tmp, &e) != QKRT_OK) {
            CHECK(0, "edited bundle: %s", qkrt_last_error(ctx));
            continue;
        }
        int ki = qkrt_bundle_find(e, arith);
        qkrt_result r = qkrt_kernel_check(ctx, e, (uint32_t)ki);
        bool ok = r == cases[c].result && strstr(qkrt_last_error(ctx), cases[c].expect);
        CHECK(ok, "features [%s] for %s: %d %s", cases[c].features, arith, (int)r,
              qkrt_last_error(ctx));
        VkPipelineLayout layout = VK_NULL_HANDLE;
        CHECK(qkrt_kernel_layout(ctx, e, (uint32_t)ki, NULL, &layout) != QKRT_OK && !layout,
              "a refused kernel got a layout");
        printf("%s refused as it should: %s\n", ok ? "ok  " : "FAIL", qkrt_last_error(ctx));
        qkrt_bundle_destroy(ctx, e);
        remove_bundle(tmp);
    }
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
}

/* The convenience path on the same bundle: qkrt_create with exactly the
 * features the kernel's entry lists, under its own validation layer; the
 * kernel runs (qkrt_run submits and waits), and the edited entry that also
 * lists float16 is refused since the device was made without it. */
static void convenience(const char *dir, uint64_t *rng) {
    static const char *const listed[] = {"subgroup_arithmetic"};
    qkrt_desc desc = {.validation = true, .features = listed, .feature_count = 1};
    qkrt_context *ctx = NULL;
    qkrt_bundle *b = NULL;
    if (qkrt_create(&desc, &ctx) != QKRT_OK || qkrt_bundle_load(ctx, dir, &b) != QKRT_OK) {
        CHECK(0, "convenience: %s", qkrt_last_error(ctx));
        qkrt_destroy(ctx);
        return;
    }
    CHECK(!qkrt_device(ctx)->float16 && !qkrt_device(ctx)->storage_8bit,
          "qkrt_desc.features: the device got features that were not asked for");
    int ki = find_matvec(ctx, b);
    CHECK(ki >= 0, "convenience: no q4_0 mat-vec runs: %s", qkrt_last_error(ctx));
    if (ki >= 0) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)ki);
        CHECK(k->feature_count == 1 && !strcmp(k->features[0], listed[0]),
              "%s lists other features than the test enables", k->name);
        const uint32_t M = 7, K = 256, T = 3;
        qk_weights w;
        float *x = malloc(sizeof *x * T * K), *y = malloc(sizeof *y * T * M);
        double *xd = malloc(sizeof *xd * T * K), *ref = malloc(sizeof *ref * T * M);
        CHECK(qk_random_weights("q4_0", "", M, K, rng, &w), "q4_0 weights");
        for (size_t i = 0; i < (size_t)T * K; i++)
            xd[i] = x[i] = (float)rnd_unit(rng);
        char err[1024] = "";
        qkrt_result r =
            qk_run_matvec(ctx, b, (uint32_t)ki, &w, x, M, K, T, y, NULL, err, sizeof err);
        qk_ref_matvec(&w, xd, M, K, T, ref);
        double nmse = r == QKRT_OK ? qk_nmse(y, ref, (size_t)T * M) : INFINITY;
        CHECK(nmse <= qk_nmse_bound(k), "convenience %s: NMSE %.3g %s", k->name, nmse, err);
        printf("%s %s through qkrt_create with exactly [%s]: M=%u K=%u T=%u NMSE %.3g\n",
               nmse <= qk_nmse_bound(k) ? "ok  " : "FAIL", k->name, listed[0], M, K, T, nmse);
        qk_free_weights(&w);
        free(x), free(y), free(xd), free(ref);
        char tmp[64];
        qkrt_bundle *e = NULL;
        if (edited_bundle(dir, k->name, "\"subgroup_arithmetic\", \"float16\"", tmp, sizeof tmp) &&
            qkrt_bundle_load(ctx, tmp, &e) == QKRT_OK) {
            r = qkrt_kernel_check(ctx, e, (uint32_t)qkrt_bundle_find(e, k->name));
            CHECK(r == QKRT_ERROR_UNSUPPORTED && strstr(qkrt_last_error(ctx), "float16"),
                  "a kernel listing float16 on a device made without it: %d %s", (int)r,
                  qkrt_last_error(ctx));
            printf("%s refused as it should: %s\n", r == QKRT_ERROR_UNSUPPORTED ? "ok  " : "FAIL",
                   qkrt_last_error(ctx));
            qkrt_bundle_destroy(ctx, e);
            remove_bundle(tmp);
        } else {
            CHECK(0, "edited bundle: %s", qkrt_last_error(ctx));
        }
    }
    const char *bad[] = {"float16", "no_such_feature"};
    qkrt_context *none = NULL;
    qkrt_result r = qkrt_create(&(qkrt_desc){.features = bad, .feature_count = 2}, &none);
    CHECK(r == QKRT_ERROR_ARGUMENT && strstr(qkrt_last_error(NULL), "no_such_feature"),
          "an unknown feature name: %d %s", (int)r, qkrt_last_error(NULL));
    qkrt_destroy(none);
    CHECK(qkrt_validation_errors(ctx) == 0, "convenience: %u validation errors",
          qkrt_validation_errors(ctx));
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s BUNDLE\n", argv[0]);
        return 2;
    }
    setvbuf(stdout, NULL, _IOLBF, 0); /* lines in order with the layer's */
    uint64_t seed = getenv("QKGEN_SEED") ? strtoull(getenv("QKGEN_SEED"), NULL, 0)
                                         : (uint64_t)time(NULL) ^ ((uint64_t)clock() << 20);
    printf("seed %llu (QKGEN_SEED=%llu repeats this run)\n", (unsigned long long)seed,
           (unsigned long long)seed);
    uint64_t rng = seed;
    engine g;
    if (!engine_open(&g)) {
        engine_close(&g);
        printf("FAIL: the test's own Vulkan device\n");
        return 1;
    }
    for (int mode = 0; mode < 3; mode++) {
        if (mode == MODE_PUSH && !g.push) {
            printf("note: no VK_KHR_push_descriptor: pushed descriptors not tested\n");
            continue;
        }
        run_mode(&g, argv[1], mode, &rng);
    }
    chain(&g, argv[1], &rng);
    refusals(&g, argv[1]);
    engine_close(&g);
    convenience(argv[1], &rng);
    CHECK(g_validation_errors == 0, "%u validation errors", g_validation_errors);
    printf("%s: %d failure(s)\n", g_fail ? "FAIL" : "PASS", g_fail);
    return g_fail ? 1 : 0;
}
