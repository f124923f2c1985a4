/* The bundle compiled in: the header 'qkgen export BUNDLE --c qkb_bundle.h' writes,
 * whose dispatch rules and constraints are C functions of the shape. */
#define QKB_IMPLEMENTATION
#include "qkb_bundle.h"

#include "engine.h"

#include <stdio.h>
#include <string.h>

/* The engine's shape (names and values) as the header's struct. */
static int to_shape(const eng_shape *s, qkb_shape *out, char *err, size_t n) {
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < s->count; i++)
        if (qkb_shape_set(out, s->names[i], s->values[i]))
            return snprintf(err, n, "the bundle has no shape variable %s", s->names[i]), -1;
    return 0;
}

static int grid(const eng_kernel *k, const eng_shape *s, uint32_t groups[3], char *err, size_t n) {
    const qkb_kernel *q = (const qkb_kernel *)k->source;
    qkb_shape shape;
    if (to_shape(s, &shape, err, n)) return -1;
    if (q->dispatch(&shape, groups))
        return snprintf(err, n, "%s: the grid overflows for this shape", k->name), -1;
    return 0;
}

static int check(const eng_kernel *k, const eng_shape *s, char *err, size_t n) {
    const qkb_kernel *q = (const qkb_kernel *)k->source;
    qkb_shape shape;
    if (to_shape(s, &shape, err, n)) return 0;
    return q->check(&shape);
}

static int size(const eng_kernel *k, uint32_t i, const eng_shape *s, int64_t *bytes, char *err,
                size_t n) {
    const qkb_kernel *q = (const qkb_kernel *)k->source;
    qkb_shape shape;
    uint64_t u;
    if (to_shape(s, &shape, err, n)) return -1;
    if (!q->bindings[i].size_bytes || q->bindings[i].size_bytes(&shape, &u) || u > INT64_MAX)
        return snprintf(err, n, "%s: binding %u has no size for this shape", k->name, i), -1;
    *bytes = (int64_t)u;
    return 0;
}

#ifdef QKB_HAS_SELECT
typedef struct can_run_ctx {
    const eng_bundle *b;
    int (*can_run)(const eng_kernel *k, void *user);
    void *user;
} can_run_ctx;

/* the header's callback on its kernel, as the engine's on its own */
static int header_can_run(const qkb_kernel *q, void *user) {
    const can_run_ctx *c = user;
    return !c->can_run || c->can_run(&c->b->kernels[q - qkb_kernels], c->user);
}

/* The header's evaluator of its select table (qkb_select_level). */
static int select_rule(const eng_bundle *b, const eng_device *d, const char *op, const char *format,
                       const eng_shape *s, int (*can_run)(const eng_kernel *k, void *user),
                       void *user, int *level) {
    qkb_shape shape;
    memset(&shape, 0, sizeof shape);
    for (uint32_t i = 0; i < s->count; i++) /* (variables no kernel of the bundle has: none) */
        qkb_shape_set(&shape, s->names[i], s->values[i]);
    can_run_ctx c = {b, can_run, user};
    return qkb_select_level(d->vendor_id, d->device_id, d->driver_version, op, format, NULL, "f32",
                            &shape, header_can_run, &c, level);
}
#endif

static void copy(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src ? src : "");
}

int eng_bundle_open(int argc, char **argv, eng_bundle *b, char *err, size_t n) {
    static eng_kernel kernels[QKB_KERNEL_COUNT];
    (void)argc;
    (void)argv;
    (void)err;
    (void)n;
    b->count = QKB_KERNEL_COUNT;
    b->kernels = kernels;
    b->owned = NULL;
    for (uint32_t i = 0; i < QKB_KERNEL_COUNT; i++) {
        const qkb_kernel *q = &qkb_kernels[i];
        eng_kernel *k = &kernels[i];
        memset(k, 0, sizeof *k);
        k->source = q;
        copy(k->name, sizeof k->name, q->name);
        copy(k->family, sizeof k->family, q->family);
        copy(k->format, sizeof k->format, q->format);
        copy(k->activation, sizeof k->activation, q->activation);
        copy(k->mma, sizeof k->mma, q->mma);
        copy(k->fusion, sizeof k->fusion, q->fusion);
        copy(k->precision, sizeof k->precision, q->precision);
        copy(k->prepass, sizeof k->prepass, q->prepass);
        k->code = q->code;
        k->code_bytes = q->code_words * 4;
        memcpy(k->workgroup_size, q->workgroup_size, sizeof k->workgroup_size);
        k->required_subgroup_size = q->required_subgroup_size;
        k->min_subgroup_size = q->min_subgroup_size;
        k->shared_memory_bytes = q->shared_memory_bytes;
        k->api_version = q->api_version;
        for (uint32_t j = 0; j < q->feature_count && j < ENG_MAX; j++)
            copy(k->features[k->feature_count++], ENG_NAME, q->features[j]);
        for (uint32_t j = 0; j < q->extension_count && j < ENG_MAX; j++)
            copy(k->extensions[k->extension_count++], ENG_NAME, q->extensions[j]);
        for (uint32_t j = 0; j < q->binding_count && j < ENG_MAX; j++) {
            const qkb_binding *qb = &q->bindings[j];
            eng_binding *eb = &k->bindings[k->binding_count++];
            eb->binding = qb->binding;
            eb->count = qb->count;
            copy(eb->name, sizeof eb->name, qb->name);
            copy(eb->role, sizeof eb->role, qb->role);
            copy(eb->type, sizeof eb->type, qb->type);
            eb->writable = qb->writable;
            eb->sized = qb->size != NULL;
        }
        for (uint32_t j = 0; j < q->push_constant_count && j < ENG_MAX; j++) {
            copy(k->push_names[j], ENG_NAME, q->push_constants[j].name);
            k->push_offsets[j] = q->push_constants[j].offset;
            k->push_signed[j] = !strcmp(q->push_constants[j].type, "i32");
            k->push_count++;
        }
        k->push_size = q->push_constant_size;
        for (uint32_t j = 0; j < q->specialization_count && j < ENG_MAX; j++) {
            k->spec_ids[j] = q->specialization[j].id;
            k->spec_data[j] = q->specialization[j].data;
            k->spec_count++;
        }
        k->grid = grid;
        k->check = check;
        k->size = size;
    }
#ifdef QKB_HAS_SELECT
    b->has_select = 1;
    b->select = select_rule;
#else
    b->has_select = 0;
    b->select = NULL;
#endif
    return 0;
}

void eng_bundle_close(eng_bundle *b) {
    memset(b, 0, sizeof *b);
}

const char *eng_bundle_source(void) {
    return "qkb_bundle.h (" QKB_SCHEMA ", compiled in)";
}
