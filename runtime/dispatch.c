/* Running kernels: pipelines created on first use (through the persisted cache),
 * dispatches recorded into one command buffer with barriers and timestamps. */
#include "internal.h"
#include "qk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { POOL_SETS = 1024, POOL_DESCRIPTORS = 8192 };

void qkrt_kernel_release(qkrt_context *ctx, qkrt_kernel *k) {
    if (k->pipeline) vkDestroyPipeline(ctx->device, k->pipeline, NULL);
    if (k->layout) vkDestroyPipelineLayout(ctx->device, k->layout, NULL);
    if (k->set_layout) vkDestroyDescriptorSetLayout(ctx->device, k->set_layout, NULL);
    k->pipeline = VK_NULL_HANDLE;
    k->layout = VK_NULL_HANDLE;
    k->set_layout = VK_NULL_HANDLE;
}

void qkrt_dispatch_release(qkrt_context *ctx) {
    for (uint32_t i = 0; i < ctx->pool_count; i++)
        vkDestroyDescriptorPool(ctx->device, ctx->pools[i], NULL);
    free(ctx->pools);
    ctx->pools = NULL;
    ctx->pool_count = ctx->pool_used = 0;
    if (ctx->query_pool) vkDestroyQueryPool(ctx->device, ctx->query_pool, NULL);
    ctx->query_pool = VK_NULL_HANDLE;
    free(ctx->query_results);
    ctx->query_results = NULL;
    ctx->query_capacity = 0;
}

/* ---- pipelines ---- */

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
        .bindingCount = k->info.binding_count,
        .pBindings = bindings,
    };
    VkResult vr = vkCreateDescriptorSetLayout(ctx->device, &set_info, NULL, &k->set_layout);
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
    vr = vkCreatePipelineLayout(ctx->device, &layout_info, NULL, &k->layout);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "kernel %s: vkCreatePipelineLayout", k->info.name);
    return QKRT_OK;
}

/* The pipeline of k (its layouts made), into k->pipeline; touches nothing
 * else of ctx, so threads may build different kernels' pipelines at once
 * (the pipeline cache synchronizes itself). On failure *what names the call. */
static VkResult build_pipeline(const qkrt_context *ctx, qkrt_kernel *k, const char **what) {
    VkShaderModuleCreateInfo module_info = {
        .sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
        .codeSize = k->code_size,
        .pCode = k->code,
    };
    VkShaderModule module;
    VkResult vr = vkCreateShaderModule(ctx->device, &module_info, NULL, &module);
    if (vr != VK_SUCCESS) {
        *what = "vkCreateShaderModule";
        return vr;
    }
    uint32_t required = k->info.required_subgroup_size;
    VkPipelineShaderStageRequiredSubgroupSizeCreateInfo size_info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO,
        .requiredSubgroupSize = required,
    };
    VkPipelineShaderStageCreateFlags flags = 0;
    /* a kernel that names its subgroup size counts on every subgroup being full */
    if (required && ctx->caps.full_subgroups && k->info.workgroup_size[0] % required == 0)
        flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
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
            },
        .layout = k->layout,
        .flags = ctx->pipeline_stats ? VK_PIPELINE_CREATE_CAPTURE_STATISTICS_BIT_KHR : 0,
    };
    vr = vkCreateComputePipelines(ctx->device, ctx->pipeline_cache, 1, &info, NULL, &k->pipeline);
    vkDestroyShaderModule(ctx->device, module, NULL);
    if (vr != VK_SUCCESS) {
        k->pipeline = VK_NULL_HANDLE;
        *what = "vkCreateComputePipelines";
    }
    return vr;
}

static qkrt_result create_pipeline(qkrt_context *ctx, qkrt_kernel *k) {
    const char *what = "";
    VkResult vr = build_pipeline(ctx, k, &what);
    if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "kernel %s: %s", k->info.name, what);
    ctx->cache_dirty = true;
    return QKRT_OK;
}

/* ---- pipelines of many kernels at once (qkrt_kernels_prepare) ---- */

typedef struct build_job {
    const qkrt_context *ctx;
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
        build_pipeline(j->ctx, j->kernels[i], &what); /* a failure is reported at first use */
    }
}

/* What a pipeline needs first: the device's check and the layouts. */
static qkrt_result kernel_layouts(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index) {
    qkrt_kernel *k = &bundle->kernels[index];
    qkrt_result r = QKRT_OK;
    if (!k->checked) r = qkrt_kernel_check(ctx, bundle, index);
    if (r != QKRT_OK) return r;
    k->checked = true;
    if (!k->set_layout) r = create_layouts(ctx, k);
    return r;
}

static qkrt_result kernel_prepare(qkrt_context *ctx, const qkrt_bundle *bundle, uint32_t index) {
    qkrt_kernel *k = &bundle->kernels[index];
    if (k->pipeline) return QKRT_OK;
    qkrt_result r = kernel_layouts(ctx, bundle, index);
    if (r == QKRT_OK) r = create_pipeline(ctx, k);
    return r;
}

uint32_t qkrt_kernels_prepare(qkrt_context *ctx, const qkrt_bundle *bundle, const uint32_t *indices,
                              uint32_t n, uint32_t threads) {
    qkrt_kernel **todo = malloc(sizeof *todo * (n ? n : 1));
    uint32_t count = 0, ready = 0;
    /* the checks and layouts here, in order (they report through ctx) */
    for (uint32_t i = 0; i < n; i++) {
        if (indices[i] >= bundle->count) continue;
        qkrt_kernel *k = &bundle->kernels[indices[i]];
        if (k->pipeline) {
            ready++;
            continue;
        }
        if (kernel_layouts(ctx, bundle, indices[i]) != QKRT_OK) continue;
        bool dup = false; /* an index named twice is built once */
        for (uint32_t j = 0; j < count && !dup; j++)
            dup = todo[j] == k;
        if (!dup) todo[count++] = k;
    }
    if (!threads) threads = qk_cores();
    build_job job = {ctx, todo, count, 0};
    if (count) qk_parallel(threads < count ? threads : count, build_share, &job);
    for (uint32_t i = 0; i < count; i++)
        if (todo[i]->pipeline) {
            ready++;
            ctx->cache_dirty = true;
        }
    free(todo);
    return ready;
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
        .pipeline = bundle->kernels[index].pipeline,
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

static qkrt_result alloc_set(qkrt_context *ctx, const qkrt_kernel *k, VkDescriptorSet *set) {
    if (ctx->pool_count == 0 || ctx->sets_left == 0 ||
        ctx->descriptors_left < k->descriptor_count) {
        if (ctx->pool_count) ctx->pool_used++;
        if (ctx->pool_used >= ctx->pool_count) {
            VkDescriptorPool *pools = realloc(ctx->pools, (ctx->pool_count + 1) * sizeof *pools);
            if (!pools) return qkrt_fail(ctx, QKRT_ERROR_MEMORY, "qkrt_run: out of memory");
            ctx->pools = pools;
            VkDescriptorPoolSize size = {VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, POOL_DESCRIPTORS};
            VkDescriptorPoolCreateInfo info = {
                .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                .maxSets = POOL_SETS,
                .poolSizeCount = 1,
                .pPoolSizes = &size,
            };
            VkResult vr = vkCreateDescriptorPool(ctx->device, &info, NULL, &pools[ctx->pool_count]);
            if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkCreateDescriptorPool");
            ctx->pool_used = ctx->pool_count++;
        }
        ctx->sets_left = POOL_SETS;
        ctx->descriptors_left = POOL_DESCRIPTORS;
    }
    VkDescriptorSetAllocateInfo info = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
        .descriptorPool = ctx->pools[ctx->pool_used],
        .descriptorSetCount = 1,
        .pSetLayouts = &k->set_layout,
    };
    VkResult vr = vkAllocateDescriptorSets(ctx->device, &info, set);
    if (vr != VK_SUCCESS)
        return qkrt_vk_fail(ctx, vr, "kernel %s: vkAllocateDescriptorSets", k->info.name);
    ctx->sets_left--;
    ctx->descriptors_left -= k->descriptor_count;
    return QKRT_OK;
}

/* The previous run has completed (every submission is waited for), so its sets are free. */
static qkrt_result reset_pools(qkrt_context *ctx) {
    for (uint32_t i = 0; i < ctx->pool_count && i <= ctx->pool_used; i++) {
        VkResult vr = vkResetDescriptorPool(ctx->device, ctx->pools[i], 0);
        if (vr != VK_SUCCESS) return qkrt_vk_fail(ctx, vr, "vkResetDescriptorPool");
    }
    ctx->pool_used = 0;
    ctx->sets_left = ctx->pool_count ? POOL_SETS : 0;
    ctx->descriptors_left = ctx->pool_count ? POOL_DESCRIPTORS : 0;
    return QKRT_OK;
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
    if (ctx->query_pool) vkDestroyQueryPool(ctx->device, ctx->query_pool, NULL);
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
    VkResult vr = vkCreateQueryPool(ctx->device, &info, NULL, &ctx->query_pool);
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

static void write_timestamp(qkrt_context *ctx, uint32_t query) {
    /* bottom of pipe: after everything recorded before has finished */
    vkCmdWriteTimestamp(ctx->cmd, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, ctx->query_pool, query);
}

/* ---- one dispatch ---- */

static qkrt_result fail_at(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k, const char *fmt,
                           ...) QKRT_PRINTF(4, 5);

static qkrt_result fail_at(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k, const char *fmt,
                           ...) {
    int n = snprintf(ctx->error, sizeof ctx->error, "qkrt_run: dispatch %u (kernel %s): ", i,
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

static qkrt_result bind_buffers(qkrt_context *ctx, uint32_t i, const qkrt_kernel *k,
                                const qkrt_dispatch *d, VkDescriptorSet set) {
    VkDescriptorBufferInfo infos[QKRT_MAX_BINDINGS];
    VkWriteDescriptorSet writes[QKRT_MAX_BINDINGS];
    uint32_t slot = 0;
    for (uint32_t b = 0; b < k->info.binding_count; b++) {
        const qkrt_binding_info *bi = &k->info.bindings[b];
        writes[b] = (VkWriteDescriptorSet){
            .sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
            .dstSet = set,
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
    vkUpdateDescriptorSets(ctx->device, k->info.binding_count, writes, 0, NULL);
    return QKRT_OK;
}

static qkrt_result record(qkrt_context *ctx, uint32_t i, const qkrt_dispatch *d, bool timed,
                          bool barrier, VkPipeline *bound, bool *empty_out) {
    const qkrt_bundle *bundle = d->bundle;
    if (!bundle || bundle->ctx != ctx || d->kernel >= bundle->count)
        return fail_at(ctx, i, NULL, "no kernel %u in %s", d->kernel,
                       !bundle              ? "a NULL bundle"
                       : bundle->ctx != ctx ? "a bundle of another context"
                                            : "the bundle");
    const qkrt_kernel *k = &bundle->kernels[d->kernel];
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
    VkDescriptorSet set = VK_NULL_HANDLE;
    if (r == QKRT_OK) r = alloc_set(ctx, k, &set);
    if (r == QKRT_OK) r = bind_buffers(ctx, i, k, d, set);
    if (r != QKRT_OK) return r;

    if (i > 0 && barrier) qkrt_cmd_barrier(ctx);
    if (timed) write_timestamp(ctx, 2 * i);
    bool empty = !d->indirect && (!groups[0] || !groups[1] || !groups[2]);
    *empty_out = empty;
    if (!empty) {
        if (*bound != k->pipeline) {
            vkCmdBindPipeline(ctx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->pipeline);
            *bound = k->pipeline;
        }
        vkCmdBindDescriptorSets(ctx->cmd, VK_PIPELINE_BIND_POINT_COMPUTE, k->layout, 0, 1, &set, 0,
                                NULL);
        if (k->info.push_size)
            vkCmdPushConstants(ctx->cmd, k->layout, VK_SHADER_STAGE_COMPUTE_BIT, 0,
                               k->info.push_size, push);
        if (d->indirect)
            vkCmdDispatchIndirect(ctx->cmd, d->indirect->buffer, d->indirect_offset);
        else
            vkCmdDispatch(ctx->cmd, groups[0], groups[1], groups[2]);
    }
    if (timed) write_timestamp(ctx, 2 * i + 1);
    return QKRT_OK;
}

/* Records the n dispatches in one command buffer and submits it: with ns,
 * barriers between them and each one's time; with span, back to back without
 * barriers and one time around them all. */
static qkrt_result run_dispatches(qkrt_context *ctx, const char *what, const qkrt_dispatch *d,
                                  uint32_t n, double *ns, double *span) {
    uint32_t queries = ns ? 2 * n : span ? 2 : 0;
    qkrt_result r = queries ? reserve_queries(ctx, what, queries) : QKRT_OK;
    if (r == QKRT_OK) r = reset_pools(ctx);
    if (r == QKRT_OK) r = qkrt_cmd_begin(ctx);
    if (r != QKRT_OK) return r;
    if (queries) vkCmdResetQueryPool(ctx->cmd, ctx->query_pool, 0, queries);
    if (span) write_timestamp(ctx, 0);
    VkPipeline bound = VK_NULL_HANDLE;
    for (uint32_t i = 0; i < n && r == QKRT_OK; i++) {
        bool empty = false;
        r = record(ctx, i, &d[i], ns != NULL, span == NULL || d[i].depends, &bound, &empty);
        if (ns) ns[i] = empty ? -1.0 : 0.0;
    }
    if (span) {
        write_timestamp(ctx, 1);
        *span = 0;
    }
    /* an abandoned recording is reset by the next qkrt_cmd_begin */
    if (r == QKRT_OK) r = qkrt_cmd_submit(ctx);
    if (r == QKRT_OK && queries) r = read_times(ctx, ns ? n : 1, ns ? ns : span);
    return r;
}

qkrt_result qkrt_run(qkrt_context *ctx, const qkrt_dispatch *d, uint32_t n, double *ns) {
    if (n == 0) return QKRT_OK;
    if (!d) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_run: %u dispatches but d is NULL", n);
    if (n > UINT32_MAX / 2) return qkrt_fail(ctx, QKRT_ERROR_ARGUMENT, "qkrt_run: n too large");
    return run_dispatches(ctx, "qkrt_run", d, n, ns, NULL);
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
        if (i > 0) qkrt_cmd_barrier(ctx);
        if (ns) write_timestamp(ctx, 2 * i);
        vkCmdCopyBuffer(ctx->cmd, src->buffer, dst->buffer, 1, &region);
        if (ns) write_timestamp(ctx, 2 * i + 1);
        if (ns) ns[i] = 0;
    }
    r = qkrt_cmd_submit(ctx);
    if (r == QKRT_OK && ns) r = read_times(ctx, n, ns);
    return r;
}
