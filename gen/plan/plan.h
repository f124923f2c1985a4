/* plan: expands kernel specs x formats x the tile search space into named
 * variants, and drops illegal points with a stated reason. Knows nothing of
 * GLSL text or Vulkan. */
#ifndef QK_PLAN_H
#define QK_PLAN_H

#include "../format/format.h"

/* Legality limits the plan applies to every variant, with their reasons. */
enum { QK_PLAN_MAX_SHARED = 49152, QK_PLAN_MAX_WG = 1024 };
/* Points (variants and dropped) a plan may have in all: the default specs
 * have about 24,000, and each point costs some 1.5 KiB while planning. */
#define QK_PLAN_MAX_POINTS (1u << 20)

typedef struct qk_variant {
    char name[256];
    /* the SPIR-V module it runs: the name itself, or, where the kernel
     * specializes tile parameters, the name without them (variants that
     * differ only in those share the module) */
    char module[256];
    uint32_t module_first; /* index in the plan of the module's first variant */
    const qk_kernel_spec *kernel;
    const qk_format *format;
    char activation[8];
    uint32_t nr0, nr1, nk, wg;
    uint32_t tpr;                 /* invocations per row (1 when the kernel has no TPR axis) */
    uint32_t sk;                  /* workgroups splitting K (1 when the kernel has no SK axis) */
    char mma[16];                 /* "" when the kernel has no mma axis */
    const qk_fusion_spec *fusion; /* NULL: not fused */
    uint32_t weights;             /* weight matrices bound */
    uint32_t shared_memory;       /* bytes */
    char grid[3][256];            /* in shape variables only: tile constants substituted */
    uint32_t constraint_count;
    char constraints[QK_MAX_RULES][256];
    /* the kernel's literals (those not starting with _, in spec order): this
     * variant's values; its module's distinct sets of them, one copy of the
     * template's instance region each; and the one that serves it (the
     * value of the specialization constant INSTANCE where there are several) */
    uint32_t literal[QK_MAX_LITERAL_VALUES];
    uint32_t instance_count, instance;
    uint32_t instances[QK_MAX_INSTANCES][QK_MAX_LITERAL_VALUES];
} qk_variant;

typedef struct qk_dropped {
    char name[256];
    char reason[320];
} qk_dropped;

typedef struct qk_plan {
    uint32_t format_count;
    qk_format *formats; /* every concrete format of the spec set */
    uint32_t variant_count, dropped_count;
    qk_variant *variants;
    qk_dropped *dropped;
} qk_plan;

/* A path of the plan: an operation (the kernel's family: matvec,
 * matvec_id, matmul, ...) on a math path (mma: dot8, coopmat, ...), fused
 * (fusion: its name) or not (""). */
typedef struct qk_path {
    char operation[64];
    char mma[16];
    char fusion[64];
} qk_path;

/* The distinct paths of the plan's quantized products (variants with a math
 * path and a format), in plan order: fills up to cap, returns how many. */
uint32_t qk_plan_paths(const qk_plan *p, qk_path *out, uint32_t cap);

/* Whether `format` has a variant on `path`; if not, why in `why`: the
 * reason that dropped most of its points of the path's kernels, or that no
 * kernel of the path lists it. */
bool qk_plan_format_path(const qk_plan *p, const char *format, const qk_path *path, char *why,
                         size_t why_size);

/* Builds the plan of a loaded spec set. Errors (a kernel naming an unknown
 * format, a rule that does not evaluate) carry the spec's file:line:col. */
bool qk_plan_build(const qk_spec_set *specs, qk_plan *out, qk_error *e);
/* The same, with the kernels expanded only on the formats that `only` names
 * (n of them; a name or a name and option, as a kernel set picks them) and
 * format "none" (the auxiliary kernels: the quantizer of q8pre candidates):
 * the variants of those formats are the full plan's, found without
 * expanding the others (the autotuner's few formats). Every format stays in
 * out->formats. */
bool qk_plan_build_only(const qk_spec_set *specs, const char *const *only, uint32_t n, qk_plan *out,
                        qk_error *e);
/* Loads the specs of spec_dir, applies the kernel set at set_path (NULL:
 * none) and plans them (on the formats `only` names, as
 * qk_plan_build_only; NULL: all); with compiled_in, no tile parameter is a
 * specialization constant, so that each variant is a module of its own.
 * False with the error in *e, nothing left allocated. */
bool qk_plan_load(const char *spec_dir, const char *set_path, const char *const *only, uint32_t n,
                  bool compiled_in, qk_spec_set *specs, qk_plan *out, qk_error *e);
void qk_plan_free(qk_plan *p);
const qk_format *qk_plan_find_format(const qk_plan *p, const char *name);

/* The variants a build or a listing takes, as indices into p->variants in plan
 * order: those whose name contains filter (NULL: all); with representative,
 * of those only the first of each path, that is of each kernel spec x format
 * (with its option: MLX's scale type) x activation x math path (mma) x
 * fusion, so that one tile stands for all of that path's (the set-up's quick
 * verification; the test suite checks every variant). out holds
 * p->variant_count entries; returns how many were written. */
uint32_t qk_plan_select(const qk_plan *p, const char *filter, bool representative, uint32_t *out);

/* The format of kernels that take no quantized weights ("formats: [none]"). */
extern const qk_format qk_format_none;

/* Looks a tile or format variable (NR0, NR1, NK, WG, MIN_SG, QK, QK_SUB_N,
 * QK_BYTES, format parameters) up for v; for expressions. */
bool qk_variant_lookup(void *variant, const char *name, size_t len, int64_t *value);

/* The variant's interface, derived once here for both the GLSL declarations
 * and the manifest: weights first (one binding, or one per plane), then the
 * kernel's own bindings in spec order. */
typedef struct qk_binding_info {
    char name[QK_MAX_NAME], role[QK_MAX_NAME];
    char type[16];     /* element type an engine stores: "u32", "bf16", "f32", ... */
    qk_type glsl_type; /* what the shader declares */
    bool writable;
    uint32_t binding, count;
    char size[256]; /* bytes an engine allocates, in shape variables; "" unsaid */
} qk_binding_info;

uint32_t qk_variant_bindings(const qk_variant *v, qk_binding_info *out, uint32_t cap);

/* Features the variant needs from the device (names of docs/manifest.md). */
uint32_t qk_variant_features(const qk_variant *v, const char **out, uint32_t cap);

/* Parts of a block a staged chunk of NK elements is one of (QK_PART_N: the
 * format stages it, qk_stage_part); 0 where the chunk is whole blocks. */
uint32_t qk_variant_parts(const qk_variant *v);

/* Widest aligned load, in 32-bit words (4, 2 or 1), for a staged chunk of NK
 * elements: whole blocks, or a part's block; 0 if the chunk is not whole
 * words. */
uint32_t qk_variant_stage_vec(const qk_variant *v);

/* The precision class of docs/manifest.md, the one rule behind the
 * manifest's "precision", the tuner's --precision and the CLI's error
 * bounds: "q8" (activations quantized to 8 bits: the int8 dot products),
 * "f16" (staged as f16: cooperative matrices, the tiled matmul's tiles) or
 * "f32" (f32 throughout). */
const char *qk_variant_precision(const qk_variant *v);

/* The value of a tile parameter of v, or of QK_SPEC_INSTANCE. */
uint32_t qk_variant_tile(const qk_variant *v, qk_tile_param p);

/* The specialization constants v sets at pipeline creation, in id order:
 * the tile parameters its kernel specializes, then INSTANCE where its
 * module holds several instances; returns the count; ids[i] is the
 * specialization-constant id of values[i]. */
uint32_t qk_variant_specialization(const qk_variant *v, uint32_t ids[QK_SPEC_COUNT],
                                   uint32_t values[QK_SPEC_COUNT]);

/* The names of the kernel's literals that are compiled in (not starting
 * with _), in the order of qk_variant.literal; returns the count. */
uint32_t qk_kernel_literal_names(const qk_kernel_spec *k, const char *out[QK_MAX_LITERAL_VALUES]);

/* Push-constant names in order: the kernel's, then the fusion's. */
uint32_t qk_variant_push(const qk_variant *v, const char **out, uint32_t cap);

#endif
