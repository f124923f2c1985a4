/* The example engine's own view of a kernel: what it needs from a qkgen bundle,
 * filled from manifest.json (bundle_folder.c) or from an exported header (bundle_header.c). */
#ifndef ENGINE_H
#define ENGINE_H

#include <stddef.h>
#include <stdint.h>

enum { ENG_MAX = 32, ENG_NAME = 64 };

typedef struct eng_shape {
    uint32_t count;
    const char *names[ENG_MAX];
    int64_t values[ENG_MAX];
} eng_shape;

typedef struct eng_binding {
    uint32_t binding, count;
    char name[ENG_NAME], role[ENG_NAME], type[16];
    int writable, sized; /* sized: the manifest gives its bytes as an expression */
} eng_binding;

typedef struct eng_kernel eng_kernel;
struct eng_kernel {
    char name[256], family[ENG_NAME], format[ENG_NAME], activation[16], mma[16];
    char fusion[ENG_NAME], precision[ENG_NAME];
    char prepass[ENG_NAME]; /* "" or the family that runs first ("quantize") */
    const uint32_t *code;
    size_t code_bytes;
    uint32_t workgroup_size[3], required_subgroup_size, min_subgroup_size, shared_memory_bytes;
    uint32_t api_version; /* VK_MAKE_API_VERSION form */
    uint32_t feature_count, extension_count;
    char features[ENG_MAX][ENG_NAME], extensions[ENG_MAX][ENG_NAME];
    uint32_t binding_count;
    eng_binding bindings[ENG_MAX];
    uint32_t push_count, push_size;
    char push_names[ENG_MAX][ENG_NAME];
    uint32_t push_offsets[ENG_MAX];
    int push_signed[ENG_MAX];
    uint32_t spec_count;
    uint32_t spec_ids[ENG_MAX], spec_data[ENG_MAX];
    /* the dispatch rule: 0, or -1 with a message in err */
    int (*grid)(const eng_kernel *k, const eng_shape *s, uint32_t groups[3], char *err, size_t n);
    /* -1 when every constraint holds, else the index of the first that fails (or errs) */
    int (*check)(const eng_kernel *k, const eng_shape *s, char *err, size_t n);
    /* bytes of binding i (one with a size expression, `sized`): 0, or -1 */
    int (*size)(const eng_kernel *k, uint32_t i, const eng_shape *s, int64_t *bytes, char *err,
                size_t n);
    const void *source; /* the manifest entry or the header's kernel */
};

/* The device a select table is asked for: VkPhysicalDeviceProperties' ids. */
typedef struct eng_device {
    uint32_t vendor_id, device_id, driver_version;
} eng_device;

typedef struct eng_bundle eng_bundle;
struct eng_bundle {
    uint32_t count;
    eng_kernel *kernels;
    void *owned;    /* what the loader keeps alive (a parsed manifest, code) */
    int has_select; /* a tuned bundle: a select table */
    /* The select table's answer (docs/manifest.md, "Selection") for f32
     * activations: the kernel's index, or -1 where no rule answers; *level
     * 0 device, 1 family, 2 vendor, 3 default. can_run: the device's check. */
    int (*select)(const eng_bundle *b, const eng_device *d, const char *op, const char *format,
                  const eng_shape *s, int (*can_run)(const eng_kernel *k, void *user), void *user,
                  int *level);
};

/* Loads the bundle this build of the engine reads: a folder given as argv[1]
 * (bundle_folder.c), or the one compiled in (bundle_header.c). 0, or -1 with
 * a message in err. */
int eng_bundle_open(int argc, char **argv, eng_bundle *b, char *err, size_t n);
void eng_bundle_close(eng_bundle *b);
const char *eng_bundle_source(void);

/* The manifest's expression grammar (docs/manifest.md), evaluated by the
 * engine itself: 0, or -1 with a message in err. */
int eng_eval(const char *expr, const eng_shape *s, int condition, int64_t *out, char *err,
             size_t n);

/* The MoE decode layer from the select table alone (layer.c). layer_plan
 * chooses every kernel for T = 1 and 3 tokens and adds them to kernels[*n]
 * (the device enables what they list); layer_run runs and checks both: 0
 * pass, 1 wrong, 2 could not run. */
typedef struct eng_vk eng_vk;
typedef struct layer_plan layer_plan;
int layer_plan_create(const eng_bundle *b, eng_vk *v, layer_plan **out, const eng_kernel **kernels,
                      uint32_t *n, uint32_t cap);
int layer_run(eng_vk *v, const eng_bundle *b, layer_plan *p, uint64_t seed);
void layer_plan_free(layer_plan *p);

#endif
