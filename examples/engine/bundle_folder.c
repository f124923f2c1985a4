/* Reads a qkgen bundle folder through its manifest.json (cJSON) and .spv files,
 * as any engine could from docs/manifest.md; the dispatch rule goes to expr.c. */
#include "engine.h"

#include <cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct owned {
    cJSON *root;
    uint32_t count;
    void **code;
} owned;

static char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    char *data = NULL;
    long len = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    if (len >= 0 && fseek(f, 0, SEEK_SET) == 0 && (data = malloc((size_t)len + 1)) &&
        fread(data, 1, (size_t)len, f) == (size_t)len) {
        data[len] = '\0';
        *size = (size_t)len;
    } else {
        free(data);
        data = NULL;
    }
    fclose(f);
    return data;
}

static const char *text(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsString(v) ? v->valuestring : "";
}

static uint32_t number(const cJSON *o, const char *key) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    return cJSON_IsNumber(v) && v->valuedouble >= 0 ? (uint32_t)v->valuedouble : 0;
}

static void copy(char *dst, size_t size, const char *src) {
    snprintf(dst, size, "%s", src);
}

static int grid(const eng_kernel *k, const eng_shape *s, uint32_t groups[3], char *err, size_t n) {
    const cJSON *g = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive((const cJSON *)k->source, "dispatch"), "grid");
    for (int i = 0; i < 3; i++) {
        int64_t v;
        const cJSON *e = cJSON_GetArrayItem(g, i);
        if (!cJSON_IsString(e))
            return snprintf(err, n, "%s: no grid expression %d", k->name, i), -1;
        if (eng_eval(e->valuestring, s, 0, &v, err, n)) return -1;
        if (v < 0 || v > UINT32_MAX)
            return snprintf(err, n, "%s: grid[%d] = %lld", k->name, i, (long long)v), -1;
        groups[i] = (uint32_t)v;
    }
    return 0;
}

static int check(const eng_kernel *k, const eng_shape *s, char *err, size_t n) {
    const cJSON *c = cJSON_GetObjectItemCaseSensitive((const cJSON *)k->source, "constraints");
    int i = 0;
    const cJSON *e;
    cJSON_ArrayForEach(e, c) {
        int64_t v = 0;
        if (!cJSON_IsString(e) || eng_eval(e->valuestring, s, 1, &v, err, n) || !v) return i;
        i++;
    }
    return -1;
}

static int size(const eng_kernel *k, uint32_t i, const eng_shape *s, int64_t *bytes, char *err,
                size_t n) {
    const cJSON *b = cJSON_GetArrayItem(
        cJSON_GetObjectItemCaseSensitive((const cJSON *)k->source, "bindings"), (int)i);
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(b, "size");
    if (!cJSON_IsString(e)) return snprintf(err, n, "%s: binding %u has no size", k->name, i), -1;
    return eng_eval(e->valuestring, s, 0, bytes, err, n);
}

int eng_select_json(const cJSON *table, const eng_bundle *b, const eng_device *d, const char *op,
                    const char *format, const eng_shape *s,
                    int (*can_run)(const eng_kernel *k, void *user), void *user, int *level);

static int select_rule(const eng_bundle *b, const eng_device *d, const char *op, const char *format,
                       const eng_shape *s, int (*can_run)(const eng_kernel *k, void *user),
                       void *user, int *level) {
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(((owned *)b->owned)->root, "select");
    return eng_select_json(t, b, d, op, format, s, can_run, user, level);
}

/* One kernel entry into k; 0, or -1 with a message. */
static int kernel(const cJSON *o, const char *dir, eng_kernel *k, void **code, char *err,
                  size_t n) {
    memset(k, 0, sizeof *k);
    k->source = o;
    copy(k->name, sizeof k->name, text(o, "name"));
    copy(k->family, sizeof k->family, text(o, "family"));
    copy(k->format, sizeof k->format, text(o, "format"));
    copy(k->activation, sizeof k->activation, text(o, "activation"));
    copy(k->mma, sizeof k->mma, text(o, "mma"));
    copy(k->fusion, sizeof k->fusion, text(o, "fusion"));
    copy(k->precision, sizeof k->precision, text(o, "precision"));
    copy(k->prepass, sizeof k->prepass, text(o, "prepass"));
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, text(o, "spv"));
    *code = read_all(path, &k->code_bytes);
    if (!*code || k->code_bytes % 4)
        return snprintf(err, n, "%s: cannot read %s as SPIR-V", k->name, path), -1;
    k->code = *code;
    const cJSON *wg = cJSON_GetObjectItemCaseSensitive(o, "workgroup_size");
    for (int i = 0; i < 3; i++)
        k->workgroup_size[i] = (uint32_t)cJSON_GetArrayItem(wg, i)->valuedouble;
    k->required_subgroup_size = number(o, "required_subgroup_size");
    k->min_subgroup_size = number(o, "min_subgroup_size");
    k->shared_memory_bytes = number(o, "shared_memory_bytes");
    unsigned major = 0, minor = 0;
    if (sscanf(text(o, "vulkan_version"), "%u.%u", &major, &minor) != 2)
        return snprintf(err, n, "%s: vulkan_version is not M.m", k->name), -1;
    k->api_version = major << 22 | minor << 12;
    const cJSON *e;
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "features")) {
        if (k->feature_count == ENG_MAX) return snprintf(err, n, "too many features"), -1;
        copy(k->features[k->feature_count++], ENG_NAME, e->valuestring);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "extensions")) {
        if (k->extension_count == ENG_MAX) return snprintf(err, n, "too many extensions"), -1;
        copy(k->extensions[k->extension_count++], ENG_NAME, e->valuestring);
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "bindings")) {
        if (k->binding_count == ENG_MAX) return snprintf(err, n, "too many bindings"), -1;
        eng_binding *b = &k->bindings[k->binding_count++];
        b->binding = number(e, "binding");
        b->count = number(e, "count");
        copy(b->name, sizeof b->name, text(e, "name"));
        copy(b->role, sizeof b->role, text(e, "role"));
        copy(b->type, sizeof b->type, text(e, "type"));
        b->writable = !strcmp(text(e, "access"), "write");
        b->sized = cJSON_IsString(cJSON_GetObjectItemCaseSensitive(e, "size"));
        if (number(e, "set") != 0) return snprintf(err, n, "%s: a binding in set 1", k->name), -1;
    }
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "push_constants")) {
        if (k->push_count == ENG_MAX) return snprintf(err, n, "too many push constants"), -1;
        copy(k->push_names[k->push_count], ENG_NAME, text(e, "name"));
        k->push_offsets[k->push_count] = number(e, "offset");
        k->push_signed[k->push_count++] = !strcmp(text(e, "type"), "i32");
    }
    k->push_size = number(o, "push_constant_size");
    cJSON_ArrayForEach(e, cJSON_GetObjectItemCaseSensitive(o, "specialization_constants")) {
        if (k->spec_count == ENG_MAX) return snprintf(err, n, "too many constants"), -1;
        const char *type = text(e, "type");
        double v = cJSON_GetObjectItemCaseSensitive(e, "value")->valuedouble;
        uint32_t data = (uint32_t)(int64_t)v;
        if (!strcmp(type, "f32")) {
            float f = (float)v;
            memcpy(&data, &f, 4);
        }
        k->spec_ids[k->spec_count] = number(e, "id");
        k->spec_data[k->spec_count++] = data;
    }
    k->grid = grid;
    k->check = check;
    k->size = size;
    return 0;
}

/* Gives kernel entry k the fields of its module's entry (docs/manifest.md,
 * "Kernels and modules"): every member of the module but its name and
 * specialization constants. 0, or -1 with a message. */
static int inherit(cJSON *k, const cJSON *modules, char *err, size_t n) {
    const char *name = text(k, "module");
    const cJSON *m;
    cJSON_ArrayForEach(m, modules) {
        if (strcmp(text(m, "name"), name)) continue;
        const cJSON *f;
        cJSON_ArrayForEach(f, m) {
            if (!strcmp(f->string, "name") || !strcmp(f->string, "specialization_constants"))
                continue;
            if (cJSON_GetObjectItemCaseSensitive(k, f->string))
                return snprintf(err, n, "%s: \"%s\" both in the kernel and its module",
                                text(k, "name"), f->string),
                       -1;
            cJSON_AddItemToObject(k, f->string, cJSON_Duplicate(f, 1));
        }
        return 0;
    }
    return snprintf(err, n, "%s: module '%s' is not in the manifest", text(k, "name"), name), -1;
}

int eng_bundle_open(int argc, char **argv, eng_bundle *b, char *err, size_t n) {
    memset(b, 0, sizeof *b);
    if (argc < 2) return snprintf(err, n, "usage: %s BUNDLE_FOLDER", argv[0]), -1;
    char path[4096];
    size_t size;
    snprintf(path, sizeof path, "%s/manifest.json", argv[1]);
    char *json = read_all(path, &size);
    if (!json) return snprintf(err, n, "cannot read %s", path), -1;
    owned *o = calloc(1, sizeof *o);
    b->owned = o;
    o->root = cJSON_Parse(json);
    free(json);
    const cJSON *kernels = cJSON_GetObjectItemCaseSensitive(o->root, "kernels");
    const cJSON *modules = cJSON_GetObjectItemCaseSensitive(o->root, "modules");
    /* the versions this engine was written for: qkgen-bundle/3, and 4 (3 with
     * select rules for f16 activations, which this engine never asks for) */
    const char *schema = text(o->root, "schema");
    if ((strcmp(schema, "qkgen-bundle/3") && strcmp(schema, "qkgen-bundle/4")) ||
        !cJSON_IsArray(kernels) || !cJSON_IsArray(modules))
        return snprintf(err, n, "%s: not a qkgen-bundle/3 or /4 manifest", path), -1;
    b->has_select = cJSON_IsObject(cJSON_GetObjectItemCaseSensitive(o->root, "select"));
    b->select = select_rule;
    o->count = (uint32_t)cJSON_GetArraySize(kernels);
    o->code = calloc(o->count, sizeof *o->code);
    b->kernels = calloc(o->count, sizeof *b->kernels);
    cJSON *k;
    cJSON_ArrayForEach(k, kernels) {
        if (inherit(k, modules, err, n)) return -1;
        if (kernel(k, argv[1], &b->kernels[b->count], &o->code[b->count], err, n)) return -1;
        b->count++;
    }
    return 0;
}

void eng_bundle_close(eng_bundle *b) {
    owned *o = b->owned;
    if (o) {
        for (uint32_t i = 0; i < o->count; i++)
            free(o->code[i]);
        free(o->code);
        cJSON_Delete(o->root);
        free(o);
    }
    free(b->kernels);
    memset(b, 0, sizeof *b);
}

const char *eng_bundle_source(void) {
    return "manifest.json";
}
