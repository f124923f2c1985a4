/* What libqkrt reads from a module's SPIR-V to hold its manifest entry to it:
 * the capabilities (and so the features) it declares, and its workgroup size. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* SPIR-V opcodes, execution modes and decorations read here (SPIR-V 1.6 spec). */
enum {
    OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16,
    OP_CAPABILITY = 17,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_FUNCTION = 54,
    OP_DECORATE = 71,
    OP_EXECUTION_MODE_ID = 331,
    MODEL_GL_COMPUTE = 5,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
    DECORATION_SPEC_ID = 1,
    DECORATION_BUILT_IN = 11,
    BUILT_IN_WORKGROUP_SIZE = 25,
};

/* The manifest feature each capability needs (those core in Vulkan 1.2 need none). */
static const struct {
    uint32_t capability;
    const char *name;
    uint32_t bit;
} CAPABILITIES[] = {
    {9, "Float16", QKRT_FEATURE_FLOAT16},
    {11, "Int64", QKRT_FEATURE_INT64},
    {22, "Int16", QKRT_FEATURE_INT16},
    {30, "StorageBufferArrayDynamicIndexing", QKRT_FEATURE_DYNAMIC_INDEXING},
    {39, "Int8", QKRT_FEATURE_INT8},
    {63, "GroupNonUniformArithmetic", QKRT_FEATURE_SUBGROUP_ARITHMETIC},
    {4433, "StorageBuffer16BitAccess", QKRT_FEATURE_STORAGE_16BIT},
    {4434, "UniformAndStorageBuffer16BitAccess", QKRT_FEATURE_STORAGE_16BIT},
    {4448, "StorageBuffer8BitAccess", QKRT_FEATURE_STORAGE_8BIT},
    {4449, "UniformAndStorageBuffer8BitAccess", QKRT_FEATURE_STORAGE_8BIT},
    {5345, "VulkanMemoryModel", QKRT_FEATURE_VULKAN_MEMORY_MODEL},
    {5346, "VulkanMemoryModelDeviceScope", QKRT_FEATURE_VULKAN_MEMORY_MODEL},
    {5357, "CooperativeMatrixNV", QKRT_FEATURE_COOPERATIVE_MATRIX_NV},
    {6016, "DotProductInputAll", QKRT_FEATURE_INTEGER_DOT_PRODUCT},
    {6017, "DotProductInput4x8Bit", QKRT_FEATURE_INTEGER_DOT_PRODUCT},
    {6018, "DotProductInput4x8BitPacked", QKRT_FEATURE_INTEGER_DOT_PRODUCT},
    {6019, "DotProduct", QKRT_FEATURE_INTEGER_DOT_PRODUCT},
    {6022, "CooperativeMatrixKHR", QKRT_FEATURE_COOPERATIVE_MATRIX_KHR},
};

const char *qkrt_capability_name(uint32_t capability) {
    for (size_t i = 0; i < sizeof CAPABILITIES / sizeof CAPABILITIES[0]; i++)
        if (CAPABILITIES[i].capability == capability) return CAPABILITIES[i].name;
    return "?";
}

static void add_capability(qkrt_reflection *r, uint32_t capability) {
    for (size_t i = 0; i < sizeof CAPABILITIES / sizeof CAPABILITIES[0]; i++) {
        uint32_t bit = CAPABILITIES[i].bit;
        if (CAPABILITIES[i].capability != capability || (r->features & bit)) continue;
        r->features |= bit;
        for (int b = 0; b < 32; b++)
            if (bit == 1u << b) r->capability[b] = capability;
    }
}

/* Whether the literal string at words[0 ..) (at most n words) is name. */
static bool string_is(const uint32_t *words, size_t n, const char *name) {
    size_t len = strlen(name);
    return (len + 4) / 4 <= n && memcmp(words, name, len + 1) == 0;
}

void qkrt_reflect(const uint32_t *code, size_t words, const char *entry, qkrt_reflection *out) {
    memset(out, 0, sizeof *out);
    for (int d = 0; d < 3; d++)
        out->size_spec[d] = -1;
    /* ids are below the header's bound, which may exceed the module's words
     * (optimizers leave gaps); past 2^22 ids it is refused as a lie */
    uint32_t bound = words > 5 ? code[3] : 0;
    if (bound > (1u << 22)) bound = 0;
    uint32_t *value = calloc(bound ? bound : 1, sizeof *value);
    int32_t *spec = malloc((bound ? bound : 1) * sizeof *spec);
    if (!value || !spec) {
        free(value), free(spec);
        return;
    }
    for (uint32_t i = 0; i < bound; i++)
        spec[i] = -1;
    uint32_t entry_id = 0, builtin = 0, ids[3] = {0, 0, 0};
    bool have_ids = false;
    for (size_t at = 5; at < words;) {
        uint32_t count = code[at] >> 16, op = code[at] & 0xffff;
        const uint32_t *w = code + at;
        if (count == 0 || at + count > words || op == OP_FUNCTION) break;
        at += count;
        if (op == OP_CAPABILITY && count == 2) {
            add_capability(out, w[1]);
        } else if (op == OP_ENTRY_POINT && count >= 4 && w[1] == MODEL_GL_COMPUTE && !entry_id &&
                   string_is(w + 3, count - 3, entry)) {
            entry_id = w[2];
        } else if (op == OP_EXECUTION_MODE && count == 6 && entry_id && w[1] == entry_id &&
                   w[2] == MODE_LOCAL_SIZE) {
            memcpy(out->size, w + 3, sizeof out->size);
            out->size_known = true;
        } else if (op == OP_EXECUTION_MODE_ID && count == 6 && entry_id && w[1] == entry_id &&
                   w[2] == MODE_LOCAL_SIZE_ID && !builtin) {
            memcpy(ids, w + 3, sizeof ids);
            have_ids = true;
        } else if (op == OP_DECORATE && count == 4 && w[1] < bound) {
            if (w[2] == DECORATION_SPEC_ID) spec[w[1]] = (int32_t)w[3];
            if (w[2] == DECORATION_BUILT_IN && w[3] == BUILT_IN_WORKGROUP_SIZE) builtin = w[1];
        } else if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT) && count >= 4 && w[2] < bound) {
            value[w[2]] = w[3];
        } else if ((op == OP_CONSTANT_COMPOSITE || op == OP_SPEC_CONSTANT_COMPOSITE) &&
                   count == 6 && builtin && w[2] == builtin) {
            /* the WorkgroupSize built-in overrides any LocalSize */
            memcpy(ids, w + 3, sizeof ids);
            have_ids = true;
        }
    }
    if (have_ids) {
        bool ok = true;
        for (int d = 0; d < 3; d++)
            ok = ok && ids[d] < bound;
        for (int d = 0; d < 3 && ok; d++) {
            out->size[d] = value[ids[d]];
            out->size_spec[d] = spec[ids[d]];
        }
        out->size_known = ok;
    }
    free(value);
    free(spec);
}
