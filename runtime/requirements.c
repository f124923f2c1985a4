/* qkrt_bundle_requirements: what a bundle's kernels ask of a device, read
 * before the device exists (the loader's checks, with no Vulkan object). */
#include "internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The strings of a requirement list: one block of pointers and text. */
typedef struct str_set {
    const char **items;
    uint32_t count, cap;
} str_set;

static bool set_add(str_set *s, const char *v) {
    for (uint32_t i = 0; i < s->count; i++)
        if (!strcmp(s->items[i], v)) return true;
    if (s->count == s->cap) {
        const uint32_t cap = s->cap ? 2 * s->cap : 16;
        const char **items = realloc(s->items, cap * sizeof *items);
        if (!items) return false;
        s->items = items, s->cap = cap;
    }
    s->items[s->count++] = v;
    return true;
}

/* "1.3" > "1.2": major, then minor */
static bool version_above(const char *a, const char *b) {
    unsigned am = 0, an = 0, bm = 0, bn = 0;
    sscanf(a, "%u.%u", &am, &an);
    sscanf(b, "%u.%u", &bm, &bn);
    return am != bm ? am > bm : an > bn;
}

/* Copies the set's strings into one allocation after the pointers. */
static const char *const *set_copy(const str_set *s) {
    size_t bytes = s->count * sizeof(char *);
    for (uint32_t i = 0; i < s->count; i++)
        bytes += strlen(s->items[i]) + 1;
    char **out = malloc(bytes ? bytes : 1);
    if (!out) return NULL;
    char *text = (char *)(out + s->count);
    for (uint32_t i = 0; i < s->count; i++) {
        const size_t n = strlen(s->items[i]) + 1;
        memcpy(text, s->items[i], n);
        out[i] = text;
        text += n;
    }
    return (const char *const *)out;
}

qkrt_result qkrt_bundle_requirements(const char *dir, qkrt_requirements **out) {
    if (!out) {
        qkrt_set_thread_error("qkrt_bundle_requirements: out needed");
        return QKRT_ERROR_ARGUMENT;
    }
    *out = NULL;
    /* the loader reports through a context; without a device it needs only
     * its message buffer (it creates no Vulkan object) */
    qkrt_context *ctx = calloc(1, sizeof *ctx);
    qkrt_requirements *req = calloc(1, sizeof *req);
    if (!ctx || !req) {
        free(ctx), free(req);
        qkrt_set_thread_error("qkrt_bundle_requirements: out of memory");
        return QKRT_ERROR_MEMORY;
    }
    qkrt_bundle *b = NULL;
    qkrt_result r = qkrt_bundle_load(ctx, dir, &b);
    str_set features = {0}, extensions = {0};
    snprintf(req->vulkan_version, sizeof req->vulkan_version, "1.0");
    for (uint32_t i = 0; r == QKRT_OK && i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (version_above(k->vulkan_version, req->vulkan_version))
            snprintf(req->vulkan_version, sizeof req->vulkan_version, "%s", k->vulkan_version);
        for (uint32_t f = 0; f < k->feature_count && r == QKRT_OK; f++)
            if (!set_add(&features, k->features[f])) r = QKRT_ERROR_MEMORY;
        for (uint32_t e = 0; e < k->extension_count && r == QKRT_OK; e++)
            if (!set_add(&extensions, k->extensions[e])) r = QKRT_ERROR_MEMORY;
    }
    if (r == QKRT_OK) {
        req->kernel_count = qkrt_bundle_kernel_count(b);
        req->feature_count = features.count, req->extension_count = extensions.count;
        req->features = set_copy(&features);
        req->extensions = set_copy(&extensions);
        if (!req->features || !req->extensions) r = QKRT_ERROR_MEMORY;
    }
    if (r == QKRT_ERROR_MEMORY) snprintf(ctx->error, sizeof ctx->error, "out of memory");
    if (r != QKRT_OK) qkrt_set_thread_error("%s", ctx->error);
    free(features.items), free(extensions.items);
    qkrt_bundle_destroy(ctx, b);
    free(ctx);
    if (r != QKRT_OK) {
        qkrt_requirements_free(req);
        return r;
    }
    *out = req;
    return QKRT_OK;
}

void qkrt_requirements_free(qkrt_requirements *req) {
    if (!req) return;
    free((void *)req->features), free((void *)req->extensions);
    free(req);
}
