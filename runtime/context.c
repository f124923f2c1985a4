/* The convenience context (qkrt_create): instance, validation messenger, device
 * choice, the command buffer its calls submit and wait on; errors and logging. */
#define _POSIX_C_SOURCE 200809L
#include "internal.h"
#include "qk_util.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static _Thread_local char create_error[2048];

static const char *VALIDATION_LAYER = "VK_LAYER_KHRONOS_validation";

/* ---- errors and logging ---- */

qkrt_result qkrt_fail(qkrt_context *ctx, qkrt_result result, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    /* without a context: the thread's message, qkrt_last_error(NULL) */
    if (ctx)
        vsnprintf(ctx->error, sizeof ctx->error, fmt, ap);
    else
        vsnprintf(create_error, sizeof create_error, fmt, ap);
    va_end(ap);
    return result;
}

void qkrt_set_thread_error(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(create_error, sizeof create_error, fmt, ap);
    va_end(ap);
}

const char *qkrt_vk_result_name(VkResult vr) {
    switch (vr) {
#define NAME(x)                                                                                    \
    case x:                                                                                        \
        return #x;
        NAME(VK_SUCCESS)
        NAME(VK_NOT_READY)
        NAME(VK_TIMEOUT)
        NAME(VK_INCOMPLETE)
        NAME(VK_ERROR_OUT_OF_HOST_MEMORY)
        NAME(VK_ERROR_OUT_OF_DEVICE_MEMORY)
        NAME(VK_ERROR_INITIALIZATION_FAILED)
        NAME(VK_ERROR_DEVICE_LOST)
        NAME(VK_ERROR_MEMORY_MAP_FAILED)
        NAME(VK_ERROR_LAYER_NOT_PRESENT)
        NAME(VK_ERROR_EXTENSION_NOT_PRESENT)
        NAME(VK_ERROR_FEATURE_NOT_PRESENT)
        NAME(VK_ERROR_INCOMPATIBLE_DRIVER)
        NAME(VK_ERROR_TOO_MANY_OBJECTS)
        NAME(VK_ERROR_FORMAT_NOT_SUPPORTED)
        NAME(VK_ERROR_FRAGMENTED_POOL)
        NAME(VK_ERROR_UNKNOWN)
        NAME(VK_ERROR_OUT_OF_POOL_MEMORY)
        NAME(VK_ERROR_INVALID_EXTERNAL_HANDLE)
        NAME(VK_ERROR_FRAGMENTATION)
        NAME(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
        NAME(VK_PIPELINE_COMPILE_REQUIRED)
        NAME(VK_ERROR_INVALID_SHADER_NV)
#undef NAME
    default:
        return "VK_ERROR_(unnamed)";
    }
}

qkrt_result qkrt_vk_fail(qkrt_context *ctx, VkResult vr, const char *call_fmt, ...) {
    va_list ap;
    va_start(ap, call_fmt);
    int n = vsnprintf(ctx->error, sizeof ctx->error, call_fmt, ap);
    va_end(ap);
    if (n >= 0 && (size_t)n < sizeof ctx->error)
        snprintf(ctx->error + n, sizeof ctx->error - (size_t)n, " failed: %s (%d)",
                 qkrt_vk_result_name(vr), (int)vr);
    bool oom = vr == VK_ERROR_OUT_OF_HOST_MEMORY || vr == VK_ERROR_OUT_OF_DEVICE_MEMORY ||
               vr == VK_ERROR_OUT_OF_POOL_MEMORY;
    return oom ? QKRT_ERROR_MEMORY : QKRT_ERROR_VULKAN;
}

void qkrt_log(qkrt_context *ctx, int level, const char *fmt, ...) {
    if (!ctx->log) return;
    char message[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(message, sizeof message, fmt, ap);
    va_end(ap);
    ctx->log(ctx->log_user, level, message);
}

static VKAPI_ATTR VkBool32 VKAPI_CALL on_validation(
    VkDebugUtilsMessageSeverityFlagBitsEXT severity, VkDebugUtilsMessageTypeFlagsEXT types,
    const VkDebugUtilsMessengerCallbackDataEXT *data, void *user) {
    (void)types;
    qkrt_context *ctx = user;
    int level = QKRT_LOG_WARN;
    if (severity & VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT) {
        ctx->validation_errors++;
        level = QKRT_LOG_ERROR;
    }
    qkrt_log(ctx, level, "validation: %s", data && data->pMessage ? data->pMessage : "(none)");
    return VK_FALSE;
}

/* ---- the command buffer ---- */

void qkrt_cmd_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_INDIRECT_COMMAND_READ_BIT | VK_ACCESS_TRANSFER_READ_BIT |
                         VK_ACCESS_TRANSFER_WRITE_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT |
                             VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                         0, 1, &barrier, 0, NULL, 0, NULL);
}

static qkrt_result create_commands(qkrt_context *ctx) {
    VkCommandPoolCreateInfo pool = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
        .flags = VK_COMMAND_POOL_CREATE_TRANSIENT_BIT,
        .queueFamilyIndex = ctx->caps.queue_family,
    };
    VkResult vr = vkCreateCommandPool(ctx->device, &pool, ctx->alloc, &ctx->command_pool);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateCommandPool");
    VkCommandBufferAllocateInfo alloc = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
        .commandPool = ctx->command_pool,
        .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
        .commandBufferCount = 1,
    };
    vr = vkAllocateCommandBuffers(ctx->device, &alloc, &ctx->cmd);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkAllocateCommandBuffers");
    VkFenceCreateInfo fence = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    vr = vkCreateFence(ctx->device, &fence, ctx->alloc, &ctx->fence);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateFence");
    return QKRT_OK;
}

qkrt_result qkrt_cmd_begin(qkrt_context *ctx) {
    if (!ctx->queue)
        return qkrt_fail(
            ctx, QKRT_ERROR_ARGUMENT,
            "this call submits work: the context needs a queue (qkrt_vulkan_desc.queue)");
    if (!ctx->cmd) {
        qkrt_result r = create_commands(ctx);
        if (r != QKRT_OK) return r;
    }
    VkResult vr = vkResetCommandPool(ctx->device, ctx->command_pool, 0);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkResetCommandPool");
    VkCommandBufferBeginInfo begin = {
        .sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
        .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT,
    };
    vr = vkBeginCommandBuffer(ctx->cmd, &begin);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkBeginCommandBuffer");
    /* submissions on one queue are not ordered in memory without a barrier */
    qkrt_cmd_barrier(ctx->cmd);
    return QKRT_OK;
}

qkrt_result qkrt_cmd_submit(qkrt_context *ctx) {
    VkMemoryBarrier to_host = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_HOST_READ_BIT,
    };
    vkCmdPipelineBarrier(ctx->cmd,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, NULL, 0, NULL);
    VkResult vr = vkEndCommandBuffer(ctx->cmd);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkEndCommandBuffer");
    VkSubmitInfo submit = {
        .sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
        .commandBufferCount = 1,
        .pCommandBuffers = &ctx->cmd,
    };
    vr = vkQueueSubmit(ctx->queue, 1, &submit, ctx->fence);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkQueueSubmit");
    vr = vkWaitForFences(ctx->device, 1, &ctx->fence, VK_TRUE, UINT64_MAX);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkWaitForFences");
    vr = vkResetFences(ctx->device, 1, &ctx->fence);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkResetFences");
    return QKRT_OK;
}

/* ---- pipeline cache on disk ---- */

static char *cache_folder(const qkrt_desc *desc) {
    const char *dir = desc->pipeline_cache_dir;
    if (dir) return dir[0] ? strdup(dir) : NULL;
    const char *env = getenv("QKGEN_CACHE_DIR");
    if (env) return env[0] ? strdup(env) : NULL;
    const char *base = getenv("XDG_CACHE_HOME");
    const char *suffix = "/qkgen";
    if (!base || !base[0]) {
        base = getenv("HOME");
        suffix = "/.cache/qkgen";
    }
    if (!base || !base[0]) return NULL;
    char *path = malloc(strlen(base) + strlen(suffix) + 1);
    if (path) sprintf(path, "%s%s", base, suffix);
    return path;
}

/* Pipeline caches of thousands of pipelines run to tens of megabytes; a
 * larger file is not one qkrt wrote. */
#define CACHE_FILE_MAX ((size_t)1 << 30)

/* Reads the cache file if its header names this very device and driver. A
 * file that is not there is the first run's case; anything else unusable (a
 * FIFO or device that would block or never end, a folder, a file too large,
 * truncated or of another device) is ignored with a warning, and the cache
 * is rebuilt and saved over it. */
static void *cache_read(qkrt_context *ctx, size_t *size) {
    struct stat st;
    if (stat(ctx->cache_path, &st) != 0 && errno == ENOENT) return NULL;
    qk_error e = {0};
    size_t len = 0;
    char *data = qk_read_file_max(ctx->cache_path, CACHE_FILE_MAX, &len, &e);
    if (!data) {
        qkrt_log(ctx, QKRT_LOG_WARN, "ignoring pipeline cache: %s", e.msg);
        return NULL;
    }
    uint32_t head[4] = {0};
    if (len >= 32) memcpy(head, data, sizeof head);
    bool match = len >= 32 && head[0] >= 32 && head[0] <= len &&
                 head[1] == VK_PIPELINE_CACHE_HEADER_VERSION_ONE &&
                 head[2] == ctx->caps.info.vendor_id && head[3] == ctx->caps.info.device_id &&
                 memcmp(data + 16, ctx->caps.cache_uuid, VK_UUID_SIZE) == 0;
    if (match) {
        *size = len;
        return data;
    }
    qkrt_log(ctx, QKRT_LOG_WARN,
             "ignoring pipeline cache %s: %zu bytes, truncated or of another device",
             ctx->cache_path, len);
    free(data);
    return NULL;
}

static qkrt_result cache_open(qkrt_context *ctx, const qkrt_desc *desc) {
    char *folder = cache_folder(desc);
    if (folder) {
        /* mkdir -p; failure only costs persistence */
        for (char *p = folder + 1;; p++) {
            if (*p == '/' || *p == '\0') {
                char c = *p;
                *p = '\0';
                mkdir(folder, 0755);
                *p = c;
                if (!c) break;
            }
        }
        char name[128];
        int n = snprintf(name, sizeof name, "/pipelines_%04x_%04x_", ctx->caps.info.vendor_id,
                         ctx->caps.info.device_id);
        for (unsigned i = 0; i < VK_UUID_SIZE; i++)
            n += snprintf(name + n, sizeof name - (size_t)n, "%02x", ctx->caps.cache_uuid[i]);
        snprintf(name + n, sizeof name - (size_t)n, ".bin");
        ctx->cache_path = malloc(strlen(folder) + strlen(name) + 1);
        if (ctx->cache_path) sprintf(ctx->cache_path, "%s%s", folder, name);
        free(folder);
    }
    size_t size = 0;
    void *data = ctx->cache_path ? cache_read(ctx, &size) : NULL;
    VkPipelineCacheCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = size,
        .pInitialData = data,
    };
    VkResult vr = vkCreatePipelineCache(ctx->device, &info, ctx->alloc, &ctx->pipeline_cache);
    free(data);
    ctx->owns_cache = vr == VK_SUCCESS;
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreatePipelineCache");
    if (data)
        qkrt_log(ctx, QKRT_LOG_DEBUG, "pipeline cache: %zu bytes from %s", size, ctx->cache_path);
    return QKRT_OK;
}

/* Writes the cache through a temporary file and a rename, so a crash or a
 * concurrent process never leaves a torn file behind. */
static void cache_save(qkrt_context *ctx) {
    if (!ctx->cache_path || !ctx->cache_dirty || !ctx->pipeline_cache) return;
    size_t size = 0;
    if (vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, NULL) != VK_SUCCESS) return;
    void *data = malloc(size ? size : 1);
    char *tmp = malloc(strlen(ctx->cache_path) + 32);
    if (data && tmp &&
        vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size, data) == VK_SUCCESS) {
        sprintf(tmp, "%s.%ld.tmp", ctx->cache_path, (long)getpid());
        FILE *f = fopen(tmp, "wb");
        bool ok = f && fwrite(data, 1, size, f) == size;
        if (f && fclose(f) != 0) ok = false;
        if (ok && rename(tmp, ctx->cache_path) == 0) {
            qkrt_log(ctx, QKRT_LOG_DEBUG, "pipeline cache: %zu bytes to %s", size, ctx->cache_path);
        } else {
            remove(tmp);
            qkrt_log(ctx, QKRT_LOG_WARN, "could not write pipeline cache %s", ctx->cache_path);
        }
    }
    free(tmp);
    free(data);
}

/* ---- instance and device choice ---- */

static bool env_true(const char *name) {
    const char *v = getenv(name);
    return v && v[0] && strcmp(v, "0") != 0;
}

static bool layer_present(const char *name) {
    uint32_t count = 0;
    if (vkEnumerateInstanceLayerProperties(&count, NULL) != VK_SUCCESS) return false;
    VkLayerProperties *layers = malloc((count ? count : 1) * sizeof *layers);
    bool found = false;
    if (layers && vkEnumerateInstanceLayerProperties(&count, layers) == VK_SUCCESS)
        for (uint32_t i = 0; i < count && !found; i++)
            found = strcmp(layers[i].layerName, name) == 0;
    free(layers);
    return found;
}

static qkrt_result create_instance(qkrt_context *ctx, bool validation) {
    if (validation && !layer_present(VALIDATION_LAYER))
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "validation requested but %s is not installed "
                         "(Debian: vulkan-validationlayers)",
                         VALIDATION_LAYER);
    VkApplicationInfo app = {
        .sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
        .pApplicationName = "qkrt",
        .pEngineName = "qkgen",
        .apiVersion = qkrt_instance_api(),
    };
    VkDebugUtilsMessengerCreateInfoEXT messenger = {
        .sType = VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT,
        .messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT |
                           VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
        .messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT |
                       VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT,
        .pfnUserCallback = on_validation,
        .pUserData = ctx,
    };
    const char *extension = VK_EXT_DEBUG_UTILS_EXTENSION_NAME;
    VkInstanceCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
        /* chained, the messenger also hears about instance creation itself */
        .pNext = validation ? &messenger : NULL,
        .pApplicationInfo = &app,
        .enabledLayerCount = validation ? 1 : 0,
        .ppEnabledLayerNames = &VALIDATION_LAYER,
        .enabledExtensionCount = validation ? 1 : 0,
        .ppEnabledExtensionNames = &extension,
    };
    VkResult vr = vkCreateInstance(&info, NULL, &ctx->instance);
    if (vr == VK_ERROR_INCOMPATIBLE_DRIVER)
        return qkrt_fail(ctx, QKRT_ERROR_NO_DEVICE,
                         "vkCreateInstance failed: VK_ERROR_INCOMPATIBLE_DRIVER (no Vulkan driver "
                         "installed? Debian: mesa-vulkan-drivers)");
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateInstance");
    if (!validation) return QKRT_OK;
    PFN_vkCreateDebugUtilsMessengerEXT create = (PFN_vkCreateDebugUtilsMessengerEXT)(void (*)(
        void))vkGetInstanceProcAddr(ctx->instance, "vkCreateDebugUtilsMessengerEXT");
    if (!create)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "validation: no vkCreateDebugUtilsMessengerEXT");
    vr = create(ctx->instance, &messenger, NULL, &ctx->messenger);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateDebugUtilsMessengerEXT");
    return QKRT_OK;
}

static int type_rank(const char *type) {
    if (strcmp(type, "discrete") == 0) return 3;
    if (strcmp(type, "integrated") == 0 || strcmp(type, "virtual") == 0) return 2;
    return 1;
}

static qkrt_result choose_device(qkrt_context *ctx, const char *request) {
    qkrt_device_caps *all = NULL;
    uint32_t count = 0;
    qkrt_result r = qkrt_devices_query(ctx->instance, qkrt_instance_api(), &all, &count, ctx->error,
                                       sizeof ctx->error);
    if (r != QKRT_OK) return r;
    if (count == 0) {
        free(all);
        return qkrt_fail(ctx, QKRT_ERROR_NO_DEVICE, "no Vulkan device found");
    }
    uint32_t api12 = VK_MAKE_API_VERSION(0, 1, 2, 0);
    int64_t chosen = -1;
    if (request) {
        char *end = NULL;
        unsigned long index = strtoul(request, &end, 10);
        if (!request[0] || *end || index >= count) {
            int n = snprintf(ctx->error, sizeof ctx->error,
                             "device '%s' requested but the devices are:", request);
            for (uint32_t i = 0; i < count && n > 0 && (size_t)n < sizeof ctx->error; i++)
                n += snprintf(ctx->error + n, sizeof ctx->error - (size_t)n, "%s %u '%s'",
                              i ? "," : "", i, all[i].info.name);
            free(all);
            return QKRT_ERROR_NO_DEVICE;
        }
        chosen = (int64_t)index;
        const qkrt_device_caps *c = &all[index];
        if (c->api < api12 || c->queue_family == UINT32_MAX) {
            r = qkrt_fail(ctx, QKRT_ERROR_NO_DEVICE, "device %lu '%s' %s", index, c->info.name,
                          c->api < api12 ? "does not support Vulkan 1.2" : "has no compute queue");
            free(all);
            return r;
        }
    } else {
        int best = 0;
        for (uint32_t i = 0; i < count; i++) {
            if (all[i].api < api12 || all[i].queue_family == UINT32_MAX) continue;
            int rank = type_rank(all[i].info.type);
            if (rank > best) {
                best = rank;
                chosen = i;
            }
        }
        if (chosen < 0) {
            free(all);
            return qkrt_fail(ctx, QKRT_ERROR_NO_DEVICE,
                             "no device supports Vulkan 1.2 with a compute queue");
        }
    }
    ctx->caps = all[chosen];
    free(all);
    qkrt_log(ctx, QKRT_LOG_INFO, "device %u: %s (%s)", ctx->caps.info.index, ctx->caps.info.name,
             ctx->caps.info.driver);
    return QKRT_OK;
}

static qkrt_result create_context(const qkrt_desc *desc, bool pipeline_stats, qkrt_context **out) {
    create_error[0] = '\0';
    if (!out) {
        snprintf(create_error, sizeof create_error, "qkrt_create: out is NULL");
        return QKRT_ERROR_ARGUMENT;
    }
    *out = NULL;
    qkrt_desc defaults = {0};
    if (!desc) desc = &defaults;
    qkrt_context *ctx = calloc(1, sizeof *ctx);
    if (!ctx) {
        snprintf(create_error, sizeof create_error, "qkrt_create: out of memory");
        return QKRT_ERROR_MEMORY;
    }
    ctx->log = desc->log;
    ctx->log_user = desc->log_user;
    ctx->pipeline_stats = pipeline_stats;
    ctx->owns_device = true;
    const char *request = desc->device;
    if (!request) {
        request = getenv("QKGEN_DEVICE");
        if (request && !request[0]) request = NULL;
    }
    /* the features asked for, as bits; NULL: all */
    uint32_t features = desc->features ? 0 : UINT32_MAX;
    qkrt_result r = QKRT_OK;
    for (uint32_t i = 0; desc->features && i < desc->feature_count && r == QKRT_OK; i++) {
        const char *name = desc->features[i];
        uint32_t bit = name ? qkrt_feature_bit(name) : 0;
        if (!bit)
            r = qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_desc.features[%u]: unknown feature '%s'",
                          i, name ? name : "(NULL)");
        features |= bit;
    }
    if (r == QKRT_OK) r = create_instance(ctx, desc->validation || env_true("QKGEN_VALIDATION"));
    if (r == QKRT_OK) r = choose_device(ctx, request);
    if (r == QKRT_OK) qkrt_caps_restrict(&ctx->caps, features);
    ctx->features_listed = desc->features != NULL;
    if (r == QKRT_OK) r = qkrt_device_open(ctx);
    if (r == QKRT_OK) r = cache_open(ctx, desc);
    if (r != QKRT_OK) {
        snprintf(create_error, sizeof create_error, "%s", ctx->error);
        qkrt_destroy(ctx);
        return r;
    }
    *out = ctx;
    return QKRT_OK;
}

qkrt_result qkrt_create(const qkrt_desc *desc, qkrt_context **out) {
    return create_context(desc, false, out);
}

qkrt_result qkrt_create_stats(const qkrt_desc *desc, qkrt_context **out) {
    return create_context(desc, true, out);
}

const char *qkrt_create_error(void) {
    return create_error;
}

void qkrt_destroy(qkrt_context *ctx) {
    if (!ctx) return;
    if (ctx->device) {
        /* the caller's device may be busy with work of its own; ours was
         * waited for by the call that submitted it */
        if (ctx->owns_device) vkDeviceWaitIdle(ctx->device);
        cache_save(ctx);
        qkrt_dispatch_release(ctx);
        qkrt_staging_release(ctx);
        if (ctx->pipeline_cache && ctx->owns_cache)
            vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, ctx->alloc);
        if (ctx->fence) vkDestroyFence(ctx->device, ctx->fence, ctx->alloc);
        if (ctx->command_pool) vkDestroyCommandPool(ctx->device, ctx->command_pool, ctx->alloc);
        if (ctx->owns_device) vkDestroyDevice(ctx->device, NULL);
    }
    if (ctx->owns_device && ctx->messenger) {
        PFN_vkDestroyDebugUtilsMessengerEXT destroy =
            (PFN_vkDestroyDebugUtilsMessengerEXT)(void (*)(void))vkGetInstanceProcAddr(
                ctx->instance, "vkDestroyDebugUtilsMessengerEXT");
        if (destroy) destroy(ctx->instance, ctx->messenger, NULL);
    }
    if (ctx->owns_device && ctx->instance) vkDestroyInstance(ctx->instance, NULL);
    for (uint32_t i = 0; i < ctx->extension_count; i++)
        free(ctx->extensions[i]);
    free(ctx->extensions);
    free(ctx->cache_path);
    free(ctx);
}

const char *qkrt_last_error(const qkrt_context *ctx) {
    return ctx ? ctx->error : create_error;
}

const qkrt_device_info *qkrt_device(const qkrt_context *ctx) {
    return ctx ? &ctx->caps.info : NULL;
}

uint32_t qkrt_validation_errors(const qkrt_context *ctx) {
    return ctx ? ctx->validation_errors : 0;
}
