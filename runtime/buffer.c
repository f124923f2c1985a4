/* Device-local storage buffers and the host-visible staging buffer that every
 * upload and download goes through, grown on demand and reused. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* Bigger transfers go in chunks: the staging buffer stays a bounded size. */
enum { STAGING_MAX = 64u << 20 };

qkrt_result qkrt_memory_alloc(qkrt_context *ctx, VkBuffer buffer, VkMemoryPropertyFlags required,
                              VkMemoryPropertyFlags preferred, VkDeviceMemory *out) {
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(ctx->device, buffer, &req);
    const VkPhysicalDeviceMemoryProperties *mem = &ctx->memory;
    int64_t chosen = -1;
    for (int pass = 0; pass < 2 && chosen < 0; pass++) {
        VkMemoryPropertyFlags want = pass == 0 ? required | preferred : required;
        for (uint32_t i = 0; i < mem->memoryTypeCount; i++) {
            if ((req.memoryTypeBits & (1u << i)) &&
                (mem->memoryTypes[i].propertyFlags & want) == want) {
                chosen = i;
                break;
            }
        }
    }
    if (chosen < 0)
        return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "no memory type with flags 0x%x for a buffer",
                         (unsigned)required);
    VkMemoryAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
        .allocationSize = req.size,
        .memoryTypeIndex = (uint32_t)chosen,
    };
    VkResult vr = vkAllocateMemory(ctx->device, &info, ctx->alloc, out);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "vkAllocateMemory (%llu bytes)", (unsigned long long)req.size);
    vr = vkBindBufferMemory(ctx->device, buffer, *out, 0);
    if (vr != VK_SUCCESS) {
        vkFreeMemory(ctx->device, *out, ctx->alloc);
        *out = VK_NULL_HANDLE;
        return qkrt_vk_fail(ctx, vr, "vkBindBufferMemory");
    }
    return QKRT_OK;
}

static qkrt_result make_buffer(qkrt_context *ctx, VkDeviceSize size, VkBufferUsageFlags usage,
                               VkBuffer *out) {
    VkBufferCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
        .size = size,
        .usage = usage,
        .sharingMode = VK_SHARING_MODE_EXCLUSIVE,
    };
    VkResult vr = vkCreateBuffer(ctx->device, &info, ctx->alloc, out);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "vkCreateBuffer (%llu bytes)", (unsigned long long)size);
    return QKRT_OK;
}

void qkrt_staging_release(qkrt_context *ctx) {
    if (ctx->staging) vkDestroyBuffer(ctx->device, ctx->staging, ctx->alloc);
    if (ctx->staging_memory) vkFreeMemory(ctx->device, ctx->staging_memory, ctx->alloc);
    ctx->staging = VK_NULL_HANDLE;
    ctx->staging_memory = VK_NULL_HANDLE;
    ctx->staging_map = NULL;
    ctx->staging_size = 0;
}

static qkrt_result staging_reserve(qkrt_context *ctx, VkDeviceSize size) {
    if (ctx->staging_size >= size) return QKRT_OK;
    qkrt_staging_release(ctx);
    VkDeviceSize grown = 1u << 20;
    while (grown < size)
        grown *= 2;
    qkrt_result r =
        make_buffer(ctx, grown, VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
                    &ctx->staging);
    /* cached memory makes downloads read at host speed */
    if (r == QKRT_OK)
        r = qkrt_memory_alloc(ctx, ctx->staging,
                              VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                              VK_MEMORY_PROPERTY_HOST_CACHED_BIT, &ctx->staging_memory);
    if (r == QKRT_OK) {
        VkResult vr =
            vkMapMemory(ctx->device, ctx->staging_memory, 0, VK_WHOLE_SIZE, 0, &ctx->staging_map);
        if (vr != VK_SUCCESS) r = qkrt_vk_fail(ctx, vr, "vkMapMemory (staging)");
    }
    if (r != QKRT_OK) {
        qkrt_staging_release(ctx);
        return r;
    }
    ctx->staging_size = grown;
    return QKRT_OK;
}

qkrt_result qkrt_buffer_create(qkrt_context *ctx, size_t bytes, qkrt_buffer **out) {
    if (!out) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_buffer_create: out is NULL");
    *out = NULL;
    qkrt_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "qkrt_buffer_create: out of memory");
    buf->ctx = ctx;
    buf->size = bytes;
    /* kernels may bind a buffer they never touch: never size 0; fills want whole words */
    buf->allocated = bytes < 16 ? 16 : ((VkDeviceSize)bytes + 3) & ~(VkDeviceSize)3;
    qkrt_result r =
        make_buffer(ctx, buf->allocated,
                    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                        VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_INDIRECT_BUFFER_BIT,
                    &buf->buffer);
    if (r == QKRT_OK)
        r = qkrt_memory_alloc(ctx, buf->buffer, VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0,
                              &buf->memory);
    if (r != QKRT_OK) {
        char detail[sizeof ctx->error];
        memcpy(detail, ctx->error, sizeof detail);
        qkrt_buffer_destroy(ctx, buf);
        return qkrt_fail(ctx, r, "qkrt_buffer_create (%zu bytes): %s", bytes, detail);
    }
    *out = buf;
    return QKRT_OK;
}

qkrt_result qkrt_buffer_wrap(qkrt_context *ctx, VkBuffer buffer, size_t bytes, qkrt_buffer **out) {
    if (!out || !buffer)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_buffer_wrap: %s is NULL",
                         out ? "buffer" : "out");
    *out = NULL;
    qkrt_buffer *buf = calloc(1, sizeof *buf);
    if (!buf) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "qkrt_buffer_wrap: out of memory");
    buf->ctx = ctx;
    buf->buffer = buffer;
    buf->size = bytes;
    buf->allocated = bytes;
    buf->wrapped = true;
    *out = buf;
    return QKRT_OK;
}

VkBuffer qkrt_buffer_handle(const qkrt_buffer *buf) {
    return buf ? buf->buffer : VK_NULL_HANDLE;
}

void qkrt_buffer_destroy(qkrt_context *ctx, qkrt_buffer *buf) {
    if (!buf) return;
    if (!buf->wrapped && buf->buffer) vkDestroyBuffer(ctx->device, buf->buffer, ctx->alloc);
    if (buf->memory) vkFreeMemory(ctx->device, buf->memory, ctx->alloc);
    free(buf);
}

size_t qkrt_buffer_size(const qkrt_buffer *buf) {
    return buf ? buf->size : 0;
}

static qkrt_result check_range(qkrt_context *ctx, const char *what, const qkrt_buffer *buf,
                               size_t offset, const void *data, size_t bytes) {
    if (!buf || buf->ctx != ctx)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "%s: buffer is NULL or of another context",
                         what);
    if (bytes && !data) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "%s: data is NULL", what);
    if (offset > buf->size || bytes > buf->size - offset)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                         "%s: %zu bytes at offset %zu do not fit in a buffer of %zu bytes", what,
                         bytes, offset, buf->size);
    return QKRT_OK;
}

/* One staged copy: to_device copies staging -> buf, else buf -> staging. */
static qkrt_result staged_copy(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, size_t bytes,
                               bool to_device) {
    qkrt_result r = qkrt_cmd_begin(ctx);
    if (r != QKRT_OK) return r;
    VkBufferCopy region = {
        .srcOffset = to_device ? 0 : offset,
        .dstOffset = to_device ? offset : 0,
        .size = bytes,
    };
    vkCmdCopyBuffer(ctx->cmd, to_device ? ctx->staging : buf->buffer,
                    to_device ? buf->buffer : ctx->staging, 1, &region);
    return qkrt_cmd_submit(ctx);
}

qkrt_result qkrt_buffer_upload(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, const void *data,
                               size_t bytes) {
    qkrt_result r = check_range(ctx, "qkrt_buffer_upload", buf, offset, data, bytes);
    if (r == QKRT_OK && bytes) r = staging_reserve(ctx, bytes < STAGING_MAX ? bytes : STAGING_MAX);
    for (size_t done = 0; r == QKRT_OK && done < bytes;) {
        size_t chunk = bytes - done < ctx->staging_size ? bytes - done : ctx->staging_size;
        memcpy(ctx->staging_map, (const char *)data + done, chunk);
        r = staged_copy(ctx, buf, offset + done, chunk, true);
        done += chunk;
    }
    return r;
}

qkrt_result qkrt_buffer_download(qkrt_context *ctx, qkrt_buffer *buf, size_t offset, void *data,
                                 size_t bytes) {
    qkrt_result r = check_range(ctx, "qkrt_buffer_download", buf, offset, data, bytes);
    if (r == QKRT_OK && bytes) r = staging_reserve(ctx, bytes < STAGING_MAX ? bytes : STAGING_MAX);
    for (size_t done = 0; r == QKRT_OK && done < bytes;) {
        size_t chunk = bytes - done < ctx->staging_size ? bytes - done : ctx->staging_size;
        r = staged_copy(ctx, buf, offset + done, chunk, false);
        if (r == QKRT_OK) memcpy((char *)data + done, ctx->staging_map, chunk);
        done += chunk;
    }
    return r;
}

qkrt_result qkrt_buffer_fill(qkrt_context *ctx, qkrt_buffer *buf, uint32_t pattern) {
    qkrt_result r = check_range(ctx, "qkrt_buffer_fill", buf, 0, NULL, 0);
    if (r == QKRT_OK) r = qkrt_cmd_begin(ctx);
    if (r != QKRT_OK) return r;
    vkCmdFillBuffer(ctx->cmd, buf->buffer, 0, VK_WHOLE_SIZE, pattern);
    return qkrt_cmd_submit(ctx);
}
