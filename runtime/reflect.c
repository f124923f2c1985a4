/* What libqkrt reads from a module's SPIR-V to hold its manifest entry to it:
 * the capabilities (and so the features) it declares, its workgroup size, and
 * the buffers and push constants its entry point uses. */
#include "internal.h"

#include <stdlib.h>
#include <string.h>

/* SPIR-V opcodes, execution modes and decorations read here (SPIR-V 1.6 spec). */
enum {
    OP_NOP = 0,
    OP_SOURCE_CONTINUED = 2,
    OP_SOURCE = 3,
    OP_SOURCE_EXTENSION = 4,
    OP_MEMBER_NAME = 6,
    OP_STRING = 7,
    OP_EXTENSION = 10,
    OP_EXT_INST_IMPORT = 11,
    OP_MEMORY_MODEL = 14,
    OP_ENTRY_POINT = 15,
    OP_EXECUTION_MODE = 16,
    OP_CAPABILITY = 17,
    OP_TYPE_VOID = 19,
    OP_TYPE_INT = 21,
    OP_TYPE_FLOAT = 22,
    OP_TYPE_ARRAY = 28,
    OP_TYPE_RUNTIME_ARRAY = 29,
    OP_TYPE_STRUCT = 30,
    OP_TYPE_POINTER = 32,
    OP_TYPE_FORWARD_POINTER = 39,
    OP_CONSTANT = 43,
    OP_CONSTANT_COMPOSITE = 44,
    OP_SPEC_CONSTANT = 50,
    OP_SPEC_CONSTANT_COMPOSITE = 51,
    OP_FUNCTION = 54,
    OP_VARIABLE = 59,
    OP_DECORATE = 71,
    OP_MEMBER_DECORATE = 72,
    OP_EXECUTION_MODE_ID = 331,
    MODEL_GL_COMPUTE = 5,
    MODE_LOCAL_SIZE = 17,
    MODE_LOCAL_SIZE_ID = 38,
    DECORATION_SPEC_ID = 1,
    DECORATION_BLOCK = 2,
    DECORATION_BUFFER_BLOCK = 3,
    DECORATION_BUILT_IN = 11,
    DECORATION_BINDING = 33,
    DECORATION_DESCRIPTOR_SET = 34,
    DECORATION_OFFSET = 35,
    BUILT_IN_WORKGROUP_SIZE = 25,
    STORAGE_UNIFORM = 2,
    STORAGE_PUSH_CONSTANT = 9,
    STORAGE_STORAGE_BUFFER = 12,
    /* from SPIR-V 1.4 an entry point lists every global it uses */
    VERSION_1_4 = 0x00010400,
};

/* Variables of buffer or push-constant storage that one pass collects; a
 * module with more than this is refused as too_many. */
enum { MAX_VARIABLES = QKRT_MAX_BINDINGS + 8 };

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
    {5347, "PhysicalStorageBufferAddresses", QKRT_FEATURE_COOPERATIVE_MATRIX2_NV},
    {5357, "CooperativeMatrixNV", QKRT_FEATURE_COOPERATIVE_MATRIX_NV},
    {5432, "CooperativeMatrixPerElementOperationsNV", QKRT_FEATURE_COOPERATIVE_MATRIX2_NV},
    {5433, "CooperativeMatrixTensorAddressingNV", QKRT_FEATURE_COOPERATIVE_MATRIX2_NV},
    {5434, "CooperativeMatrixBlockLoadsNV", QKRT_FEATURE_COOPERATIVE_MATRIX2_NV},
    {5439, "TensorAddressingNV", QKRT_FEATURE_COOPERATIVE_MATRIX2_NV},
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

/* The buffers and push-constant block of the entry point, read once the
 * first pass has found every definition: def[id] is the offset of the
 * instruction that defines id (a type, a constant, a variable), 0 if none. */
typedef struct globals {
    const uint32_t *code;
    size_t words;
    uint32_t bound;
    const uint32_t *def, *value;
    const int32_t *spec;
    const uint32_t *iface; /* the entry point's interface ids */
    uint32_t iface_count;
    uint32_t vars[MAX_VARIABLES], var_count;
} globals;

/* The instruction defining id if it is op, else NULL. */
static const uint32_t *defined_as(const globals *g, uint32_t id, uint32_t op, uint32_t min_count) {
    if (id >= g->bound || !g->def[id]) return NULL;
    const uint32_t *w = g->code + g->def[id];
    return (w[0] & 0xffff) == op && (w[0] >> 16) >= min_count ? w : NULL;
}

static bool in_interface(const globals *g, uint32_t id) {
    for (uint32_t i = 0; i < g->iface_count; i++)
        if (g->iface[i] == id) return true;
    return false;
}

/* "u32", "i32" or "f32" for a 32-bit scalar type, else "other". */
static void scalar_name(const globals *g, uint32_t type, char out[8]) {
    const uint32_t *w;
    if ((w = defined_as(g, type, OP_TYPE_INT, 4)) && w[2] == 32)
        strcpy(out, w[3] ? "i32" : "u32");
    else if ((w = defined_as(g, type, OP_TYPE_FLOAT, 3)) && w[2] == 32)
        strcpy(out, "f32");
    else
        strcpy(out, "other");
}

static void reflect_globals(const globals *g, qkrt_reflection *out) {
    uint32_t block[QKRT_MAX_BINDINGS], var_of[QKRT_MAX_BINDINGS], push_struct = 0;
    bool uniform[QKRT_MAX_BINDINGS], buffer_block[QKRT_MAX_BINDINGS];
    for (uint32_t v = 0; v < g->var_count; v++) {
        const uint32_t *var = g->code + g->def[g->vars[v]];
        if (g->code[1] >= VERSION_1_4 && !in_interface(g, var[2])) continue;
        const uint32_t *ptr = defined_as(g, var[1], OP_TYPE_POINTER, 4);
        if (!ptr) continue;
        uint32_t pointee = ptr[3];
        if (var[3] == STORAGE_PUSH_CONSTANT) {
            const uint32_t *st = defined_as(g, pointee, OP_TYPE_STRUCT, 2);
            if (!st || out->has_push) continue; /* Vulkan allows one block per entry point */
            out->has_push = true;
            push_struct = pointee;
            uint32_t members = (st[0] >> 16) - 2;
            if (members > QKRT_REFLECT_MAX_PUSH) {
                out->too_many = true;
                members = QKRT_REFLECT_MAX_PUSH;
            }
            for (uint32_t m = 0; m < members; m++)
                scalar_name(g, st[2 + m], out->push[m].type);
            out->push_count = members;
            continue;
        }
        if (out->binding_count == QKRT_MAX_BINDINGS) {
            out->too_many = true;
            continue;
        }
        uint32_t i = out->binding_count++;
        qkrt_reflected_binding *b = &out->bindings[i];
        b->count = 1;
        b->count_spec = -1;
        const uint32_t *arr;
        if ((arr = defined_as(g, pointee, OP_TYPE_ARRAY, 4))) {
            pointee = arr[2];
            b->count = arr[3] < g->bound ? g->value[arr[3]] : 0;
            b->count_spec = arr[3] < g->bound ? g->spec[arr[3]] : -1;
        } else if ((arr = defined_as(g, pointee, OP_TYPE_RUNTIME_ARRAY, 3))) {
            pointee = arr[2];
            b->runtime_array = true;
            b->count = 0;
        }
        var_of[i] = var[2];
        block[i] = pointee;
        uniform[i] = var[3] == STORAGE_UNIFORM;
        buffer_block[i] = false;
        b->storage = var[3] == STORAGE_STORAGE_BUFFER;
    }
    /* decorations and member names, in one more pass over the annotations */
    for (size_t at = 5; at < g->words;) {
        uint32_t count = g->code[at] >> 16, op = g->code[at] & 0xffff;
        const uint32_t *w = g->code + at;
        if (count == 0 || at + count > g->words || op == OP_FUNCTION) break;
        at += count;
        if (op == OP_DECORATE && count >= 3) {
            for (uint32_t i = 0; i < out->binding_count; i++) {
                qkrt_reflected_binding *b = &out->bindings[i];
                if (w[1] == var_of[i] && count >= 4 && w[2] == DECORATION_DESCRIPTOR_SET)
                    b->set = w[3], b->has_set = true;
                if (w[1] == var_of[i] && count >= 4 && w[2] == DECORATION_BINDING)
                    b->binding = w[3], b->has_binding = true;
                if (w[1] == block[i] && w[2] == DECORATION_BUFFER_BLOCK) buffer_block[i] = true;
            }
        } else if (op == OP_MEMBER_DECORATE && count >= 5 && push_struct && w[1] == push_struct &&
                   w[2] < out->push_count && w[3] == DECORATION_OFFSET) {
            out->push[w[2]].offset = w[4];
            out->push[w[2]].has_offset = true;
        } else if (op == OP_MEMBER_NAME && count >= 4 && push_struct && w[1] == push_struct &&
                   w[2] < out->push_count) {
            size_t max = (count - 3) * 4, n = 0;
            const char *name = (const char *)(w + 3);
            while (n < max && name[n] && n + 1 < sizeof out->push[0].name)
                n++;
            memcpy(out->push[w[2]].name, name, n);
            out->push[w[2]].name[n] = 0;
        }
    }
    /* before SPIR-V 1.3, storage buffers are Uniform variables of BufferBlock structs */
    for (uint32_t i = 0; i < out->binding_count; i++)
        if (uniform[i] && buffer_block[i]) out->bindings[i].storage = true;
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
    uint32_t *def = calloc(bound ? bound : 1, sizeof *def);
    int32_t *spec = malloc((bound ? bound : 1) * sizeof *spec);
    if (!value || !spec || !def) {
        free(value), free(spec), free(def);
        return;
    }
    globals g = {
        .code = code, .words = words, .bound = bound, .def = def, .value = value, .spec = spec};
    for (uint32_t i = 0; i < bound; i++)
        spec[i] = -1;
    uint32_t entry_id = 0, builtin = 0, ids[3] = {0, 0, 0};
    bool have_ids = false;
    for (size_t at = 5; at < words;) {
        uint32_t count = code[at] >> 16, op = code[at] & 0xffff;
        const uint32_t *w = code + at;
        if (count == 0 || at + count > words || op == OP_FUNCTION) break;
        at += count;
        if (op >= OP_TYPE_VOID && op <= OP_TYPE_FORWARD_POINTER && count >= 2 && w[1] < bound)
            def[w[1]] = (uint32_t)(w - code);
        if ((op == OP_CONSTANT || op == OP_SPEC_CONSTANT || op == OP_VARIABLE) && count >= 3 &&
            w[2] < bound)
            def[w[2]] = (uint32_t)(w - code);
        if (op == OP_VARIABLE && count >= 4 && w[2] < bound &&
            (w[3] == STORAGE_UNIFORM || w[3] == STORAGE_PUSH_CONSTANT ||
             w[3] == STORAGE_STORAGE_BUFFER)) {
            if (g.var_count < MAX_VARIABLES)
                g.vars[g.var_count++] = w[2];
            else
                out->too_many = true;
        }
        if (op == OP_CAPABILITY && count == 2) {
            add_capability(out, w[1]);
        } else if (op == OP_ENTRY_POINT && count >= 4 && w[1] == MODEL_GL_COMPUTE && !entry_id &&
                   string_is(w + 3, count - 3, entry)) {
            entry_id = w[2];
            uint32_t name_words = (uint32_t)(strlen(entry) + 4) / 4;
            g.iface = w + 3 + name_words;
            g.iface_count = count - 3 - name_words;
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
    /* the WorkgroupSize built-in belongs to the module, not to an entry
     * point: without the named entry point the size is of nothing */
    if (have_ids && entry_id) {
        bool ok = true;
        for (int d = 0; d < 3; d++)
            ok = ok && ids[d] < bound;
        for (int d = 0; d < 3 && ok; d++) {
            out->size[d] = value[ids[d]];
            out->size_spec[d] = spec[ids[d]];
        }
        out->size_known = ok;
    }
    out->entry_found = entry_id != 0;
    if (!entry_id) out->size_known = false;
    if (entry_id) reflect_globals(&g, out);
    free(value);
    free(spec);
    free(def);
}

bool qkrt_module_has_entry(const uint32_t *code, size_t words, const char *entry) {
    return code && entry && qkrt_spirv_has_entry(code, words, entry);
}

bool qkrt_spirv_has_entry(const uint32_t *code, size_t words, const char *entry) {
    /* entry points come before the first instruction past the execution
     * modes (the module's logical layout): only its first words are read */
    for (size_t at = 5; at < words;) {
        uint32_t count = code[at] >> 16, op = code[at] & 0xffff;
        const uint32_t *w = code + at;
        if (count == 0 || at + count > words) break;
        at += count;
        if (op == OP_ENTRY_POINT && count >= 4 && w[1] == MODEL_GL_COMPUTE &&
            string_is(w + 3, count - 3, entry))
            return true;
        if (op != OP_ENTRY_POINT && op != OP_CAPABILITY && op != OP_EXTENSION &&
            op != OP_EXT_INST_IMPORT && op != OP_MEMORY_MODEL && op != OP_SOURCE_CONTINUED &&
            op != OP_SOURCE && op != OP_SOURCE_EXTENSION && op != OP_STRING && op != OP_NOP)
            break;
    }
    return false;
}
