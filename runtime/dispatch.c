/* Running kernels: pipelines per (module, specialization) made on first use,
 * dispatches recorded into the caller's command buffer or the context's own. */
#include "internal.h"
#include "qk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_SETS = 1024, POOL_DESCRIPTORS = 8192 };

void qkrt_kernel_release(qkrt_context *ctx, qkrt_kernel *k) {
    if (k->pipeline) vkDestroyPipeline(ctx->device, k->pipeline, ctx->alloc);
    if (k->layout) vkDestroyPipelineLayout(ctx->device, k->layout, ctx->alloc);
    if (k->set_layout) vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, ctx->alloc);
    k->pipeline = VK_NULL_HANDLE;
    k->layout = VK_NULL_HANDLE;
    k->set_layout = VK_NULL_HANDLE;
}

static void pools_release(qkrt_context *ctx, qkrt_set_pools *p) {
    for (uint32_t i = 0; i < p->count; i++)
        vkDestroyDescriptorPool(ctx->device, p->pools[i], ctx->alloc);
    free(p->pools);
    *p = (qkrt_set_pools){0};
}

void qkrt_dispatch_release(qkrt_context *ctx) {
    pools_release(ctx, &ctx->run_sets);
    pools_release(ctx, &ctx->cmd_sets);
    if (ctx->query_pool) vkDestroyQueryPool(ctx->device, ctx->query_pool, ctx->alloc);
    ctx->query_pool = VK_NULL_HANDLE;
    free(ctx->query_results);
    ctx->query_results = NULL;
    ctx->query_capacity = 0;
}

/* ---- pipelines ---- */

/* The kernel whose pipeline and layouts kernel index uses (qkrt_kernel.pipe). */
static qkrt_kernel *pipe_of(const qkrt_bundle *bundle, uint32_t index) {
    return &bundle->kernels[bundle->kernels[index].pipe];
}

static qkrt_result create_layouts(qkrt_context *ctx, qkrt_kernel *k) {
    VkDescriptorSetLayoutBinding bindings[QKRT_MAX_BINDINGS];
    for (uint32_t i = 0; i < k->info.binding_count; i++) {
        bindings[i] = (VkDescriptorSetLayoutBinding){
            .binding = k->info.bindings[i].binding,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .descriptorCount = k->info.bindings[i].count,
            .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        };
    }
    VkDescriptorSetLayoutCreateInfo set_info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags =
            ctx->push_descriptors ? VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR : 0,
        .bindingCount = k->info.binding_count,
        .pBindings = bindings,
    };
    VkResult vr = vkCreateDescriptorSetLayout(ctx->device, &set_info, ctx->alloc, &k->set_layout);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "kernel %s: vkCreateDescriptorSetLayout", k->info.name);
    VkPushConstantRange push = {
        .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT,
        .size = k->info.push_size,
    };
    VkPipelineLayoutCreateInfo layout_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
        .setLayoutCount = 1,
        .pSetLayouts = &k->set_layout,
        .pushConstantRangeCount = k->info.push_size ? 1 : 0,
        .pPushConstantRanges = &push,
    };
    vr = vkCreatePipelineLayout(ctx->device, &layout_info, ctx->alloc, &k->layout);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "kernel %s: vkCreatePipelineLayout", k->info.name);
    return QKRT_OK;
}

/* The pipeline of k (its layouts and module made), into k->pipeline; touches
 * nothing else of ctx, so threads may build different kernels' pipelines at
 * once (the pipeline cache synchronizes itself). On failure *what names the call. */
static VkResult build_pipeline(const qkrt_context *ctx, VkShaderModule module, qkrt_kernel *k,
                               const char **what) {
    uint32_t required = k->info.required_subgroup_size;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo size_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = required,
    };
    VkPipelineShaderStageCreateFlags flags = 0;
    /* a kernel that names its subgroup size counts on every subgroup being full */
    if (required && ctx->caps.full_subgroups && k->info.workgroup_size[0] % required == 0)
        flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
    VkSpecializationInfo spec = {
        .mapEntryCount = k->info.specialization_count,
        .pMapEntries = k->spec_map,
        .dataSize = 4 * (size_t)k->info.specialization_count,
        .pData = k->spec_data,
    };
    VkComputePipelineCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage =
            {
                .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                .pNext = required ? &size_info : NULL,
                .flags = flags,
                .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                .module = module,
                .pName = k->entry,
                .pSpecializationInfo = k->info.specialization_count ? &spec : NULL,
            },
        .layout = k->layout,
        .flags = ctx->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
    };
    VkResult vr = vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &info, ctx->alloc,
                                           &k->pipeline);
    if (vr != VK_SUCCESS) {
        k->pipeline = VK_NULL_HANDLE;
        *what = "vkCreateComputePipelines";
    }
    return vr;
}

/* ---- pipelines of many kernels at once (qkrt_kernels_prepare) ---- */

typedef struct build_job {
    const qkrt_context *ctx;
    const qkrt_bundle *bundle;
    qkrt_kernel **kernels;
    uint32_t count;
    uint32_t next; /* the next kernel to take (atomic) */
} build_job;

/* A thread's share (qk_parallel): the next kernel not yet taken, until none
 * is left, so that long compiles do not hold up a fixed share. */
static void build_share(void *arg, uint32_t t, uint32_t n) {
    (void)t, (void)n;
    build_job *j = arg;
    for (uint32_t i; (i = __atomic_fetch_add(&j->next, 1u, __ATOMIC_RELAXED)) < j->count;) {
        const char *what = "";
        qkrt_kernel *k = j->kernels[i];
        /* a failure is reported at first use */
        build_pipeline(j->ctx, j->bundle->modules[k->module].handle, k, &what);
    }
}

/* What a pipeline needs first: the device's check of kernel index, its
 * pipeline's layouts and the shader module (made once for all its kernels). */
static qkrt_result kernel_layouts(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index) {
    qkrt_kernel *k = &bundle->kernels[index], *p = pipe_of(bundle, index);
    qkrt_result r = QKRT_OK;
    if (!k->checked) r = qkrt_kernel_check(ctx, bundle, index);
    if (r != QKRT_OK) return r;
    k->checked = true;
    if (!p->set_layout) r = create_layouts(ctx, p);
    qkrt_module *mod = &bundle->modules[p->module];
    if (r == QKRT_OK && !mod->handle) {
        VkShaderModuleCreateInfo info = {
            .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
            .codeSize = mod->code_size,
            .pCode = mod->code,
        };
        VkResult vr = vkCreateShaderModule(ctx->device, &info, ctx->alloc, &mod->handle);
        if (vr != VK_SUCCESS) {
            mod->handle = VK_NULL_HANDLE;
            r = qkrt_vk_fail(ctx, vr, "kernel %s: vkCreateShaderModule (%s)", k->info.name,
                             mod->spv);
        }
    }
    return r;
}

static qkrt_result kernel_prepare(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index) {
    qkrt_kernel *p = pipe_of(bundle, index);
    if (p->pipeline && bundle->kernels[index].checked) return QKRT_OK;
    qkrt_result r = kernel_layouts(ctx, bundle, index);
    if (r != QKRT_OK || p->pipeline) return r;
    const char *what = "";
    VkResult vr = build_pipeline(ctx, bundle->modules[p->module].handle, p, &what);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "kernel %s: %s", bundle->kernels[index].info.name, what);
    ctx->cache_dirty = true;
    return QKRT_OK;
}

uint32_t qkrt_kernels_prepare(qkrt_context *ctx, const qkrt_bundle *bundle, const uint32_t *indices,
                              uint32_t n, uint32_t threads) {
    qkrt_kernel **todo = malloc(sizeof *todo * (n ? n : 1));
    uint32_t *of = malloc(sizeof *of * (n ? n : 1)); /* each index's place in todo, or -1 */
    uint32_t count = 0, ready = 0;
    if (!todo || !of) {
        free(todo), free(of);
        return 0;
    }
    /* the checks, layouts and modules here, in order (they report through ctx) */
    for (uint32_t i = 0; i < n; i++) {
        of[i] = UINT32_MAX;
        if (!bundle || indices[i] >= bundle->count) continue;
        qkrt_kernel *p = pipe_of(bundle, indices[i]);
        if (kernel_layouts(ctx, bundle, indices[i]) != QKRT_OK) continue;
        uint32_t j = 0; /* a pipeline named twice is built once */
        while (j < count && todo[j] != p)
            j++;
        if (j == count && !p->pipeline) todo[count++] = p;
        of[i] = j < count ? j : UINT32_MAX - 1; /* UINT32_MAX - 1: had a pipeline already */
    }
    if (!threads) threads = qk_cores();
    build_job job = {ctx, bundle, todo, count, 0};
    if (count) qk_parallel(threads < count ? threads : count, build_share, &job);
    for (uint32_t i = 0; i < count; i++)
        if (todo[i]->pipeline) ctx->cache_dirty = true;
    for (uint32_t i = 0; i < n; i++)
        ready += of[i] == UINT32_MAX - 1 || (of[i] < count && todo[of[i]]->pipeline);
    free(todo);
    free(of);
    return ready;
}

qkrt_result qkrt_kernel_layout(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index,
                               VkDescriptorSetLayout *set_layout, VkPipelineLayout *layout) {
    if (!bundle || bundle->ctx != ctx || index >= bundle->count)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_kernel_layout: no kernel %u in %s", index,
                         !bundle ? "a NULL bundle" : "the bundle");
    qkrt_result r = kernel_layouts(ctx, bundle, index);
    if (r != QKRT_OK) return r;
    if (set_layout) *set_layout = pipe_of(bundle, index)->set_layout;
    if (layout) *layout = pipe_of(bundle, index)->layout;
    return QKRT_OK;
}

qkrt_result qkrt_kernel_stats(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index,
                              char *out, size_t size) {
    if (size) out[0] = '\0';
    if (!ctx->pipeline_stats)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "pipeline statistics: not requested, or the device lacks "
                         "VK_KHR_pipeline_executable_properties");
    if (index >= bundle->count)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "kernel index %u of %u", index, bundle->count);
    qkrt_result r = kernel_prepare(ctx, bundle, index);
    if (r != QKRT_OK) return r;
    PFN_vkGetPipelineExecutableStatisticsKHR get_stats =
        (PFN_vkGetPipelineExecutableStatisticsKHR)(void (*)(void))vkGetDeviceProcAddr(
            ctx->device, "vkGetPipelineExecutableStatisticsKHR");
    if (!get_stats)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "vkGetPipelineExecutableStatisticsKHR missing");
    VkPipelineExecutableInfoKHR exe = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_INFO_KHR,
        .pipeline = pipe_of(bundle, index)->pipeline,
        .executableIndex = 0, /* a compute pipeline has one */
    };
    VkPipelineExecutableStatisticKHR st[32];
    uint32_t n = 32;
    for (uint32_t i = 0; i < n; i++)
        st[i] = (VkPipelineExecutableStatisticKHR){
            .sType = VK_STRUCTURE_TYPE_PIPELINE_EXECUTABLE_STATISTIC_KHR};
    VkResult vr = get_stats(ctx->device, &exe, &n, st);
    if (vr != VK_SUCCESS && vr != VK_INCOMPLETE)
        return qkrt_vk_fail(ctx, vr, "kernel %s: vkGetPipelineExecutableStatisticsKHR",
                            bundle->kernels[index].info.name);
    size_t used = 0;
    for (uint32_t i = 0; i < n && used < size; i++) {
        const VkPipelineExecutableStatisticKHR *s = &st[i];
        int w = 0;
        const char *sep = i ? "; " : "";
        switch (s->format) {
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_BOOL32_KHR:
            w = snprintf(out + used, size - used, "%s%s=%s", sep, s->name,
                         s->value.b32 ? "true" : "false");
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_INT64_KHR:
            w = snprintf(out + used, size - used, "%s%s=%lld", sep, s->name,
                         (long long)s->value.i64);
            break;
        case VK_PIPELINE_EXECUTABLE_STATISTIC_FORMAT_UINT64_KHR:
            w = snprintf(out + used, size - used, "%s%s=%llu", sep, s->name,
                         (unsigned long long)s->value.u64);
            break;
        default:
            w = snprintf(out + used, size - used, "%s%s=%g", sep, s->name, s->value.f64);
        }
        used += w > 0 ? (size_t)w : 0;
    }
    return QKRT_OK;
}

/* ---- descriptor sets and queries ---- */

static qkrt_result alloc_set(qkrt_context *ctx, qkrt_set_pools *p, const qkrt_kernel *k,
                             VkDescriptorSet *set) {
    if (p->count == 0 || p->sets_left == 0 || p->descriptors_left < k->descriptor_count) {
        if (p->count) p->used++;
        if (p->used >= p->count) {
            VkDescriptorPool *pools = realloc(p->pools, (p->count + 1) * sizeof *pools);
            if (!pools) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "descriptor pools: out of memory");
            p->pools = pools;
            VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, POOL_DESCRIPTORS};
            VkDescriptorPoolCreateInfo info = {
                .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                .maxSets = POOL_SETS,
                .poolSizeCount = 1,
                .pPoolSizes = &size,
            };
            VkResult vr = vkCreateDescriptorPool(ctx->device, &info, ctx->alloc, &pools[p->count]);
            if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateDescriptorPool");
            p->used = p->count++;
        }
        p->sets_left = POOL_SETS;
        p->descriptors_left = POOL_DESCRIPTORS;
    }
    VkDescriptorSetAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = p->pools[p->used],
        .descriptorSetCount = 1,
        .pSetLayouts = &k->set_layout,
    };
    VkResult vr = vkAllocateDescriptorSets(ctx->device, &info, set);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "kernel %s: vkAllocateDescriptorSets", k->info.name);
    p->sets_left--;
    p->descriptors_left -= k->descriptor_count;
    return QKRT_OK;
}

/* Every set of p is free again: the command buffers that used them completed. */
static qkrt_result reset_pools(qkrt_context *ctx, qkrt_set_pools *p) {
    for (uint32_t i = 0; i < p->count && i <= p->used; i++) {
        VkResult vr = vkResetDescriptorPool(ctx->device, p->pools[i], 0);
        if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkResetDescriptorPool");
    }
    p->used = 0;
    p->sets_left = p->count ? POOL_SETS : 0;
    p->descriptors_left = p->count ? POOL_DESCRIPTORS : 0;
    return QKRT_OK;
}

qkrt_result qkrt_descriptors_reset(qkrt_context *ctx) {
    return reset_pools(ctx, &ctx->cmd_sets);
}

static qkrt_result reserve_queries(qkrt_context *ctx, const char *what, uint32_t count) {
    if (!ctx->caps.timestamp_bits)
        return qkrt_fail(ctx, QKRT_ERROR_UNSUPPORTED,
                         "%s: the compute queue of '%s' has no timestamps", what,
                         ctx->caps.info.name);
    if (count <= ctx->query_capacity) return QKRT_OK;
    uint32_t capacity = 256;
    while (capacity < count)
        capacity *= 2;
    if (ctx->query_pool) vkDestroyQueryPool(ctx->device, ctx->query_pool, ctx->alloc);
    ctx->query_pool = VK_NULL_HANDLE;
    ctx->query_capacity = 0;
    free(ctx->query_results);
    ctx->query_results = malloc(capacity * sizeof *ctx->query_results);
    if (!ctx->query_results) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "%s: out of memory", what);
    VkQueryPoolCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
        .queryType = VK_QUERY_TYPE_TIMESTAMP,
        .queryCount = capacity,
    };
    VkResult vr = vkCreateQueryPool(ctx->device, &info, ctx->alloc, &ctx->query_pool);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateQueryPool");
    ctx->query_capacity = capacity;
    return QKRT_OK;
}

/* ns[i] from the timestamp pair (2i, 2i+1), where ns[i] is not negative (a
 * dispatch that recorded no work: 0); counters wrap at timestampValidBits. */
static qkrt_result read_times(qkrt_context *ctx, uint32_t n, double *ns) {
    VkResult vr = vkGetQueryPoolResults(
        ctx->device, ctx->query_pool, 0, 2 * n, 2 * (size_t)n * sizeof(uint64_t),
        ctx->query_results, sizeof(uint64_t), VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkGetQueryPoolResults");
    uint32_t bits = ctx->caps.timestamp_bits;
    uint64_t mask = bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
    double period = ctx->caps.info.timestamp_period_ns;
    for (uint32_t i = 0; i < n; i++) {
        if (ns[i] < 0) {
            ns[i] = 0;
            continue;
        }
        uint64_t ticks = (ctx->query_results[2 * i + 1] - ctx->query_results[2 * i]) & mask;
        ns[i] = (double)ticks * period;
    }
    return QKRT_OK;
}

static void write_timestamp(qkrt_context *ctx, VkCommandBuffer cmd, uint32_t query) {
    /* bottom of pipe: after everything recorded before has finished */
    vkCmdWriteTimestamp(cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->query_pool, query);
}

/* Compute writes before later compute reads and writes and indirect reads. */
static void compute_barrier(VkCommandBuffer cmd) {
    VkMemoryBarrier barrier = {
        .sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
        .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
        .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                         VK_ACCESS_INDIRECT_COMMAND_READ_BIT,
    };
    vkCmdPipelineBarrier(cmd, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_DRAW_INDIRECT_BIT,
                         0, 1, &barrier, 0, NULL, 0, NULL);
}

/* ---- one dispatch ---- */

static qkrt_result fail_at(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k, const char *fmt,
                           ...) QKRT_PRINTF(4, 5);

static qkrt_result fail_at(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k, const char *fmt,
                           ...) {
    int n = snprintf(ctx->error, sizeof ctx->error, "dispatch %u (kernel %s): ", i,
                     k ? k->info.name : "?");
    if (n >= 0 && (size_t)n < sizeof ctx->error) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ctx->error + n, sizeof ctx->error - (size_t)n, fmt, ap);
        va_end(ap);
    }
    return QKRT_ERROR_ARGUMENT;
}

static qkrt_result push_bytes(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k,
                              const qkrt_shape *shape, uint8_t *bytes) {
    memset(bytes, 0, k->info.push_size);
    for (uint32_t p = 0; p < k->info.push_count; p++) {
        const qkrt_push_info *pi = &k->info.push[p];
        int64_t v;
        if (!qkrt_shape_lookup((void *)shape, pi->name, strlen(pi->name), &v))
            return fail_at(ctx, i, k, "push constant '%s' has no shape variable of that name",
                           pi->name);
        uint32_t word;
        if (pi->type[0] == 'f') {
            float f = (float)v;
            memcpy(&word, &f, 4);
        } else {
            bool u = pi->type[0] == 'u';
            if (u ? (v < 0 || v > UINT32_MAX) : (v < INT32_MIN || v > INT32_MAX))
                return fail_at(ctx, i, k, "push constant '%s' = %lld does not fit %s", pi->name,
                               (long long)v, pi->type);
            word = u ? (uint32_t)v : (uint32_t)(int32_t)v;
        }
        memcpy(bytes + pi->offset, &word, 4);
    }
    return QKRT_OK;
}

/* groups from the dispatch or the manifest's grid; *skip when any is 0 */
static qkrt_result grid(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k, const qkrt_dispatch *d,
                        uint32_t groups[3]) {
    if (d->groups[0] || d->groups[1] || d->groups[2]) {
        memcpy(groups, d->groups, sizeof d->groups);
    } else {
        for (int g = 0; g < 3; g++) {
            int64_t v;
            char error[512];
            if (qkrt_eval_named(k->info.grid[g], "grid expression", &d->shape, &v, error,
                                sizeof error) != QKRT_OK)
                return fail_at(ctx, i, k, "%s", error);
            if (v < 0 || v > UINT32_MAX)
                return fail_at(ctx, i, k, "grid[%d] '%s' = %lld", g, k->info.grid[g], (long long)v);
            groups[g] = (uint32_t)v;
        }
    }
    for (int g = 0; g < 3; g++)
        if (groups[g] > ctx->caps.limits.maxComputeWorkGroupCount[g])
            return fail_at(ctx, i, k, "%u workgroups in dimension %d exceed the device's %u",
                           groups[g], g, ctx->caps.limits.maxComputeWorkGroupCount[g]);
    return QKRT_OK;
}

/* The descriptor writes of d's buffers for k (dstSet left for the caller). */
static qkrt_result buffer_writes(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k,
                                 const qkrt_dispatch *d, VkWriteDescriptorSet *writes,
                                 VkDescriptorBufferInfo *infos) {
    if (d->buffer_count != k->descriptor_count || !d->buffers)
        return fail_at(ctx, i, k, "%u buffers for its %u descriptors%s", d->buffer_count,
                       k->descriptor_count, d->buffers ? "" : " (buffers is NULL)");
    uint32_t slot = 0;
    for (uint32_t b = 0; b < k->info.binding_count; b++) {
        const qkrt_binding_info *bi = &k->info.bindings[b];
        writes[b] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstBinding = bi->binding,
            .descriptorCount = bi->count,
            .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
            .pBufferInfo = &infos[slot],
        };
        for (uint32_t e = 0; e < bi->count; e++, slot++) {
            const qkrt_buffer *buf = d->buffers[slot];
            if (!buf || buf->ctx != ctx)
                return fail_at(ctx, i, k, "buffers[%u] for binding '%s'[%u] is %s", slot, bi->name,
                               e, buf ? "of another context" : "NULL");
            if (buf->allocated > ctx->caps.limits.maxStorageBufferRange)
                return fail_at(
                    ctx, i, k,
                    "buffer for binding '%s' has %zu bytes, over maxStorageBufferRange %u",
                    bi->name, buf->size, ctx->caps.limits.maxStorageBufferRange);
            infos[slot] = (VkDescriptorBufferInfo){buf->buffer, 0, VK_WHOLE_SIZE};
        }
    }
    return QKRT_OK;
}

/* How a recording goes: into which command buffer, with which pools, timed how. */
typedef struct recording {
    VkCommandBuffer cmd;
    qkrt_set_pools *sets;
    bool timed;        /* timestamps 2i, 2i + 1 around dispatch i */
    uint32_t barriers; /* QKRT_BARRIER_* */
    VkPipeline bound;  /* the pipeline bound last */
} recording;

static qkrt_result record(qkrt_context *ctx, recording *rec, uint32_t i, const qkrt_dispatch *d,
                          bool *empty_out) {
    const qkrt_bundle *bundle = d->bundle;
    if (!bundle || bundle->ctx != ctx || d->kernel >= bundle->count)
        return fail_at(ctx, i, NULL, "no kernel %u in %s", d->kernel,
                       !bundle              ? "a NULL bundle"
                       : bundle->ctx != ctx ? "a bundle of another context"
                                            : "the bundle");
    const qkrt_kernel *k = &bundle->kernels[d->kernel], *p = pipe_of(bundle, d->kernel);
    qkrt_result r = kernel_prepare(ctx, bundle, d->kernel);
    if (r != QKRT_OK) return r;
    uint32_t groups[3] = {0, 0, 0};
    if (d->indirect) {
        if (d->indirect->ctx != ctx || d->indirect_offset % 4 ||
            d->indirect_offset > d->indirect->size || d->indirect->size - d->indirect_offset < 12)
            return fail_at(ctx, i, k, "indirect offset %zu: 12 bytes, 4-aligned, must fit in %zu",
                           d->indirect_offset, d->indirect->size);
    } else {
        r = grid(ctx, i, k, d, groups);
        if (r != QKRT_OK) return r;
    }
    uint8_t push[256];
    r = push_bytes(ctx, i, k, &d->shape, push);
    if (r != QKRT_OK) return r;
    /* after the push constants, whose message for a missing variable is clearer */
    for (uint32_t c = 0; c < k->info.constraint_count; c++) {
        bool holds = false;
        char error[512];
        if (qkrt_eval_bool(k->info.constraints[c], &d->shape, &holds, error, sizeof error) !=
            QKRT_OK)
            return fail_at(ctx, i, k, "%s", error);
        if (!holds)
            return fail_at(ctx, i, k, "the shape breaks constraint '%s'", k->info.constraints[c]);
    }
    VkDescriptorBufferInfo infos[QKRT_MAX_BINDINGS];
    VkWriteDescriptorSet writes[QKRT_MAX_BINDINGS];
    VkDescriptorSet set = d->set;
    if (set && ctx->push_descriptors)
        return fail_at(ctx, i, k, "a descriptor set of the caller's needs QKRT_DESCRIPTORS_POOL");
    if (!set) r = buffer_writes(ctx, i, k, d, writes, infos);
    if (r == QKRT_OK && !set && !ctx->push_descriptors) {
        r = alloc_set(ctx, rec->sets, p, &set);
        for (uint32_t b = 0; b < k->info.binding_count; b++)
            writes[b].dstSet = set;
        if (r == QKRT_OK)
            vkUpdateDescriptorSets(ctx->device, k->info.binding_count, writes, 0, NULL);
    }
    if (r != QKRT_OK) return r;

    bool first = i == 0;
    if (first ? rec->barriers & QKRT_BARRIER_BEFORE
              : d->depends || (rec->barriers & QKRT_BARRIER_BETWEEN))
        compute_barrier(rec->cmd);
    if (rec->timed) write_timestamp(ctx, rec->cmd, 2 * i);
    bool empty = !d->indirect && (!groups[0] || !groups[1] || !groups[2]);
    *empty_out = empty;
    if (!empty) {
        if (rec->bound != p->pipeline) {
            vkCmdBindPipeline(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->pipeline);
            rec->bound = p->pipeline;
        }
        if (ctx->push_descriptors)
            ctx->push_descriptor_set(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0,
                                     k->info.binding_count, writes);
        else
            vkCmdBindDescriptorSets(rec->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, p->layout, 0, 1, &set,
                                    0, NULL);
        if (k->info.push_size)
            vkCmdPushConstants(rec->cmd, p->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               k->info.push_size, push);
        if (d->indirect)
            vkCmdDispatchIndirect(rec->cmd, d->indirect->buffer, d->indirect_offset);
        else
            vkCmdDispatch(rec->cmd, groups[0], groups[1], groups[2]);
    }
    if (rec->timed) write_timestamp(ctx, rec->cmd, 2 * i + 1);
    return QKRT_OK;
}

qkrt_result qkrt_cmd_dispatch(qkrt_context *ctx, VkCommandBuffer cmd, const qkrt_dispatch *d,
                              uint32_t n, uint32_t barriers) {
    if (!cmd || (n && !d))
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_cmd_dispatch: %s is NULL",
                         cmd ? "d" : "the command buffer");
    recording rec = {cmd, &ctx->cmd_sets, false, barriers, VK_NULL_HANDLE};
    qkrt_result r = QKRT_OK;
    for (uint32_t i = 0; i < n && r == QKRT_OK; i++) {
        bool empty = false;
        r = record(ctx, &rec, i, &d[i], &empty);
    }
    if (r == QKRT_OK && n && (barriers & QKRT_BARRIER_AFTER)) compute_barrier(cmd);
    return r;
}

/* Records the n dispatches in the context's command buffer and submits it:
 * with ns, barriers between them and each one's time; with span, back to
 * back without barriers (but before those marked depends) and one time
 * around them all. */
static qkrt_result run_dispatches(qkrt_context *ctx, const char *what, const qkrt_dispatch *d,
                                  uint32_t n, double *ns, double *span) {
    uint32_t queries = ns ? 2 * n : span ? 2 : 0;
    qkrt_result r = queries ? reserve_queries(ctx, what, queries) : QKRT_OK;
    /* every earlier run was waited for, so its sets are free */
    if (r == QKRT_OK) r = reset_pools(ctx, &ctx->run_sets);
    if (r == QKRT_OK) r = qkrt_cmd_begin(ctx);
    if (r != QKRT_OK) return r;
    if (queries) vkCmdResetQueryPool(ctx->cmd, ctx->query_pool, 0, queries);
    if (span) write_timestamp(ctx, ctx->cmd, 0);
    recording rec = {ctx->cmd, &ctx->run_sets, ns != NULL,
                     span ? QKRT_BARRIER_NONE : QKRT_BARRIER_BETWEEN, VK_NULL_HANDLE};
    for (uint32_t i = 0; i < n && r == QKRT_OK; i++) {
        bool empty = false;
        r = record(ctx, &rec, i, &d[i], &empty);
        if (ns) ns[i] = empty ? -1.0 : 0.0;
    }
    if (span) {
        write_timestamp(ctx, ctx->cmd, 1);
        *span = 0;
    }
    /* an abandoned recording is reset by the next qkrt_cmd_begin */
    if (r == QKRT_OK) r = qkrt_cmd_submit(ctx);
    if (r == QKRT_OK && queries) r = read_times(ctx, ns ? n : 1, ns ? ns : span);
    if (r != QKRT_OK && strncmp(ctx->error, "dispatch ", 9) == 0) {
        char detail[sizeof ctx->error];
        memcpy(detail, ctx->error, sizeof detail);
        snprintf(ctx->error, sizeof ctx->error, "%s: %.2000s", what, detail);
    }
    return r;
}

qkrt_result qkrt_run_timed(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *ns) {
    if (n == 0) return QKRT_OK;
    if (!d) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_run: %u dispatches but d is NULL", n);
    if (n > UINT32_MAX / 2) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_run: n too large");
    return run_dispatches(ctx, "qkrt_run", d, n, ns, NULL);
}

qkrt_result qkrt_run(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n) {
    return qkrt_run_timed(ctx, d, n, NULL);
}

qkrt_result qkrt_run_span(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *span_ns) {
    if (n == 0 || !d || !span_ns)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_run_span: needs dispatches and span_ns");
    return run_dispatches(ctx, "qkrt_run_span", d, n, NULL, span_ns);
}

qkrt_result qkrt_copy(qkrt_context *ctx, qkrt_buffer *dst, qkrt_buffer *src, size_t bytes,
                      uint32_t n, double *ns) {
    if (!dst || !src || dst->ctx != ctx || src->ctx != ctx)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_copy: buffers NULL or of another context");
    if (bytes == 0 || bytes > dst->size || bytes > src->size)
        return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT,
                         "qkrt_copy: %zu bytes: must be nonzero and fit src (%zu) and dst (%zu)",
                         bytes, src->size, dst->size);
    if (n == 0) return QKRT_OK;
    if (n > UINT32_MAX / 2) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_copy: n too large");
    qkrt_result r = ns ? reserve_queries(ctx, "qkrt_copy", 2 * n) : QKRT_OK;
    if (r == QKRT_OK) r = qkrt_cmd_begin(ctx);
    if (r != QKRT_OK) return r;
    if (ns) vkCmdResetQueryPool(ctx->cmd, ctx->query_pool, 0, 2 * n);
    VkBufferCopy region = {0, 0, bytes};
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0) qkrt_cmd_barrier(ctx->cmd);
        if (ns) write_timestamp(ctx, ctx->cmd, 2 * i);
        vkCmdCopyBuffer(ctx->cmd, src->buffer, dst->buffer, 1, &region);
        if (ns) write_timestamp(ctx, ctx->cmd, 2 * i + 1);
        if (ns) ns[i] = 0;
    }
    r = qkrt_cmd_submit(ctx);
    if (r == QKRT_OK && ns) r = read_times(ctx, n, ns);
    return r;
}
