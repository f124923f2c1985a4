/* The engine's Vulkan side (vk.c): one device, host-visible buffers, and a
 * dispatch of one kernel at a time that waits for it. */
#ifndef ENGINE_VK_H
#define ENGINE_VK_H

#include "engine.h"

#include <vulkan/vulkan.h>

typedef struct eng_vk eng_vk;

typedef struct eng_buf {
    VkBuffer buffer;
    VkDeviceMemory memory;
    void *map;
    size_t size;
} eng_buf;

/* Instance (with the Khronos validation layer when installed, unless
 * ENGINE_VALIDATION=0; ENGINE_VALIDATION=1 requires it) and physical device
 * (ENGINE_DEVICE=N, else the first). */
int vk_open(eng_vk **out, char *err, size_t n);
/* 1 when the device offers everything k's entry lists, else 0 with the reason. */
int vk_can_run(eng_vk *v, const eng_kernel *k, char *why, size_t n);
/* The logical device, enabling exactly the features and extensions the kernels list. */
int vk_create_device(eng_vk *v, const eng_kernel *const *kernels, uint32_t count, char *err,
                     size_t n);
int vk_buffer(eng_vk *v, size_t size, eng_buf *b, char *err, size_t n);
void vk_buffer_free(eng_vk *v, eng_buf *b);
/* Runs k once: bufs holds a buffer per descriptor (bindings in order, an
 * array binding's buffers in turn), push its push_size bytes. */
int vk_dispatch(eng_vk *v, const eng_kernel *k, eng_buf *const *bufs, const void *push,
                const uint32_t groups[3], char *err, size_t n);
/* One dispatch of a chain: its kernel, a buffer per descriptor (as
 * vk_dispatch), push_size bytes of push constants, the workgroup counts, and
 * whether a barrier (compute writes before compute reads and writes) goes
 * before it. */
typedef struct eng_step {
    const eng_kernel *k;
    eng_buf *bufs[ENG_MAX * 2];
    uint8_t push[256];
    uint32_t groups[3];
    int barrier;
} eng_step;
/* Records steps[count] into one command buffer, submits it and waits. */
int vk_chain(eng_vk *v, const eng_step *steps, uint32_t count, char *err, size_t n);
/* The device's vendor and device ids and driver version, for a select table. */
eng_device vk_device(const eng_vk *v);
/* Validation errors reported so far. */
uint32_t vk_errors(const eng_vk *v);
void vk_close(eng_vk *v);

#endif
