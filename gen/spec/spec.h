/* spec: YAML specs (through libyaml) to typed structs. Every error names
 * file:line:col and the key path, like libyaml's problem marks. Knows nothing
 * of GLSL or Vulkan. */
#ifndef QK_SPEC_H
#define QK_SPEC_H

#include "../../common/qk_util.h"

enum {
    QK_MAX_NAME = 64,
    QK_MAX_PATH = 512,
    QK_MAX_LIST = 32,
    QK_MAX_PICK = 64, /* formats a kernel set names (every format and MLX configuration) */
    QK_MAX_FIELDS = 32,
    QK_MAX_PARAMS = 8,
    QK_MAX_BINDINGS = 24,
    QK_MAX_RULES = 16,
    QK_MAX_KERNEL_RULES = 32, /* rules of one kernel (a family point gathers several lists) */
    QK_MAX_AXES = 6,
    QK_MAX_AXIS_VALUES = 8,
    QK_MAX_LITERALS = 16,      /* a kernel's `literals:`, helpers included */
    QK_MAX_LITERAL_VALUES = 4, /* of them compiled in (not starting with _) */
    QK_MAX_INSTANCES = 8,      /* copies of a template's instance region in one module */
};

/* The tile parameters, in the order of their specialization-constant ids
 * (WG is id 0, which is also the workgroup's local_size_x_id). */
typedef enum qk_tile_param {
    QK_TILE_WG,
    QK_TILE_NR0,
    QK_TILE_NR1,
    QK_TILE_NK,
    QK_TILE_TPR,
    QK_TILE_SK,
    QK_TILE_COUNT,
    /* not a tile parameter: the specialization constant that picks a
     * module's copy of its template's instance region (kernel key literals) */
    QK_SPEC_INSTANCE = QK_TILE_COUNT,
    QK_SPEC_COUNT
} qk_tile_param;

/* "WG", "NR0", ..., "INSTANCE"; and the tile parameter of a name
 * (QK_TILE_COUNT: none). */
const char *qk_tile_param_name(qk_tile_param p);
qk_tile_param qk_tile_param_parse(const char *s);

/* Where a template stages chunks of weights (spec key staged). */
/* How the format hooks' byte readers (templates/include/bytes.glsl) reach a
 * block: the weight bindings, a staged chunk in registers or shared memory, or
 * a buffer reference to the block (QK_BLOCK_REF). */
typedef enum {
    QK_STAGED_NONE,
    QK_STAGED_REGISTERS,
    QK_STAGED_SHARED,
    QK_STAGED_REFERENCE
} qk_staging;

/* Scalar element types of block fields, planes and bindings. */
typedef enum qk_type {
    QK_TYPE_NONE = 0,
    QK_TYPE_U8,
    QK_TYPE_I8,
    QK_TYPE_U16,
    QK_TYPE_I16,
    QK_TYPE_F16,
    QK_TYPE_BF16,
    QK_TYPE_U32,
    QK_TYPE_I32,
    QK_TYPE_F32,
} qk_type;

const char *qk_type_name(qk_type t);
uint32_t qk_type_size(qk_type t);
qk_type qk_type_parse(const char *s);

/* A value written in a spec with where it was written, for later messages. */
typedef struct qk_mark {
    int line, col; /* 1-based */
} qk_mark;

/* An integer, or an expression over the format's parameters ("group * bits / 32"). */
typedef struct qk_intexpr {
    char text[128];
    qk_mark mark;
} qk_intexpr;

/* The range random test data takes for a field or plane (`random: [lo, hi]`,
 * or a list of such ranges, one picked at random for each element): raw
 * integers for integer types, values for float types. */
enum { QK_MAX_RANDOM_RANGES = 4 };
typedef struct qk_random_hint {
    uint32_t count; /* ranges; 0: no hint */
    double lo[QK_MAX_RANDOM_RANGES], hi[QK_MAX_RANDOM_RANGES];
} qk_random_hint;

typedef struct qk_field_spec {
    char name[QK_MAX_NAME];
    qk_type type;
    uint32_t count;
    qk_mark mark;
    qk_random_hint random;
} qk_field_spec;

/* A parameter of a format family: its values are integers or type names. */
typedef struct qk_param_spec {
    char name[QK_MAX_NAME];
    uint32_t count;
    char values[QK_MAX_LIST][16];
} qk_param_spec;

typedef enum qk_layout_kind { QK_LAYOUT_BLOCK, QK_LAYOUT_PLANAR } qk_layout_kind;

/* A plane of a planar format: one buffer per matrix. type may be a parameter name. */
typedef struct qk_plane_spec {
    char name[QK_MAX_NAME];
    char type[QK_MAX_NAME];
    qk_intexpr per_group; /* elements of this plane per group of the format */
    qk_random_hint random;
} qk_plane_spec;

/* The declared reference (docs/new-format.md): `tables:` and `reference:`. */
enum {
    QK_MAX_TABLES = 8,
    QK_MAX_TABLE_VALUES = 4096, /* all tables of a format together */
    QK_MAX_LETS = 32,
    QK_MAX_REF_TEXT = 512,
};

/* A constant table: its values are table_values[first .. first + count) of
 * the format spec (integers; an f32 table's values as double bit patterns). */
typedef struct qk_table_spec {
    char name[QK_MAX_NAME];
    char type[8]; /* u8, i8, u16, i16, u32, i32, u64, f32 */
    uint32_t count, first;
    qk_mark mark;
} qk_table_spec;

/* An expression of the reference and where its text starts in the YAML (the
 * column of its first character, inside any quotes). */
typedef struct qk_ref_expr {
    char name[QK_MAX_NAME]; /* a let's name; "value" for the value */
    char text[QK_MAX_REF_TEXT];
    qk_mark mark;
} qk_ref_expr;

typedef struct qk_format_spec {
    char path[QK_MAX_PATH];
    char name[QK_MAX_NAME]; /* a name, or a pattern with {param} for families */
    qk_layout_kind layout;
    qk_intexpr elements; /* elements per block (group for planar) */
    qk_intexpr bytes;    /* block bytes (block layout) */
    uint32_t field_count;
    qk_field_spec fields[QK_MAX_FIELDS];
    uint32_t plane_count;
    qk_plane_spec planes[4];
    uint32_t param_count;
    qk_param_spec params[QK_MAX_PARAMS];
    qk_intexpr sub_elements;     /* elements one call of the dequant hook yields */
    uint32_t sub_run;            /* y[] comes in runs of this many consecutive elements */
    char dequant[QK_MAX_PATH];   /* resolved path of the GLSL dequant code */
    uint32_t shared_memory;      /* bytes of shared memory the dequant code declares */
    uint32_t shared_memory_dot8; /* and the bytes it adds in the int8-dot kernels (mma dot8) */
    bool int8_dot;  /* the dequant code has the int8-dot hooks (qk_codes8, qk_affine8) */
    uint32_t parts; /* a staged chunk may be 1/2 .. 1/parts of a block (qk_stage_part, 1: no) */
    /* whether the format (for a family: which members) takes every kernel's
     * whole search space: an expression over the params, or 0 / 1 ("": 1);
     * kernel rules read it as QK_FULL_SEARCH, so that formats of little
     * use, or a family of many members, do not multiply the bundle */
    qk_intexpr full_search;
    char c_header[QK_MAX_PATH]; /* optional layout check; resolved path */
    char c_struct[QK_MAX_NAME];
    qk_mark c_struct_mark;
    char description[256];
    uint32_t table_count;
    qk_table_spec tables[QK_MAX_TABLES];
    uint32_t table_value_count;
    int64_t table_values[QK_MAX_TABLE_VALUES];
    bool has_reference;
    qk_mark reference_mark;
    uint32_t let_count;
    qk_ref_expr lets[QK_MAX_LETS];
    qk_ref_expr value;
} qk_format_spec;

typedef struct qk_binding_spec {
    char name[QK_MAX_NAME];
    char role[QK_MAX_NAME];
    char type[16]; /* a qk_type name, or "act" for the activation type */
    bool writable;
    uint32_t count;
    char size[256]; /* optional: bytes an engine allocates, over shape and tile variables */
} qk_binding_spec;

typedef struct qk_rule_spec {
    char check[256];
    char reason[256];
    qk_mark mark;
} qk_rule_spec;

/* One of a kernel's `literals:`: a value over the tile that the template's
 * instance region takes as a literal (a name starting with _ only serves
 * the values after it). */
typedef struct qk_literal_spec {
    char name[32];
    char value[256];
    qk_mark mark;
} qk_literal_spec;

typedef struct qk_kernel_spec {
    char path[QK_MAX_PATH];
    char name[QK_MAX_NAME];
    char family[QK_MAX_NAME];
    char template_name[QK_MAX_PATH]; /* relative to the templates folder */
    qk_mark template_mark, tile_mark;
    uint32_t format_count;
    char formats[QK_MAX_LIST][QK_MAX_NAME];
    qk_mark formats_mark;
    uint32_t activation_count;
    char activations[4][8];
    /* the search space: NR0 weight rows, NR1 token columns, NK depth per step,
     * WG invocations per workgroup */
    uint32_t nr0_count, nr1_count, nk_count, wg_count;
    uint32_t nr0[QK_MAX_LIST], nr1[QK_MAX_LIST], nk[QK_MAX_LIST], wg[QK_MAX_LIST];
    /* optional: invocations that share one row (TPR); 0 values: no such axis */
    uint32_t tpr_count;
    uint32_t tpr[QK_MAX_LIST];
    /* optional: workgroups that split K (SK), meeting in a scratch binding */
    uint32_t sk_count;
    uint32_t sk[QK_MAX_LIST];
    /* tile parameters that are SPIR-V specialization constants (bits of
     * qk_tile_param): one module serves every value, set at pipeline creation */
    uint32_t specialize;
    /* values over the tile that must be literals in the template's instance
     * region (`#pragma qkgen instance begin` .. `end`): a module compiles
     * that region once per distinct set among its variants, and the
     * specialization constant INSTANCE picks the copy (docs/specs.md) */
    uint32_t literal_count;
    qk_literal_spec literals[QK_MAX_LITERALS];
    /* the template reads whole chunks of NK elements of weights with aligned
     * vector loads (QK_STAGED), into registers or, staged: shared, into a
     * shared-memory tile (QK_STAGE_SHARED), then dequantizes from there */
    qk_staging staged;
    uint32_t weights;           /* weight matrices bound (array count) */
    uint32_t min_subgroup_size; /* the smallest subgroup the reduction is sized for */
    uint32_t binding_count;
    qk_binding_spec bindings[QK_MAX_BINDINGS];
    uint32_t push_count;
    char push[QK_MAX_LIST][QK_MAX_NAME];
    char grid[3][128];
    char shared_memory[256]; /* bytes, an expression over the tile */
    uint32_t constraint_count;
    char constraints[QK_MAX_RULES][128];
    uint32_t rule_count;
    qk_rule_spec rules[QK_MAX_KERNEL_RULES];
    uint32_t feature_count;
    char features[8][32];
    uint32_t mma_count; /* math paths: "scalar", "coopmat"; 0: the axis is absent */
    char mma[4][16];
    uint32_t fusion_count; /* fusions: "none" or the name of a fusion spec */
    char fusions[8][QK_MAX_NAME];
    qk_mark fusions_mark;
    char description[256];
    /* a point of a family spec: the family's name and the point's axis
     * values ("activation=q8 routing=ids weights=registers split=none");
     * both "" for a kernel spec */
    char origin[QK_MAX_NAME];
    char axes[256];
} qk_kernel_spec;

/* A fusion: a GLSL stage written once, composed into the kernels that list
 * it, with the weights, bindings and push constants it adds. */
typedef struct qk_fusion_spec {
    char path[QK_MAX_PATH];
    char name[QK_MAX_NAME];
    char stage[QK_MAX_PATH]; /* GLSL, next to the YAML or in the templates folder */
    uint32_t weights;        /* weight matrices the fused kernel binds (0: as the kernel) */
    uint32_t binding_count;
    qk_binding_spec bindings[8];
    uint32_t push_count;
    char push[8][QK_MAX_NAME];
    uint32_t feature_count;
    char features[8][32];
    /* conditions on the shape it adds to the kernel's (over its push
     * constants: the router's group counts) */
    uint32_t constraint_count;
    char constraints[8][128];
    char description[256];
} qk_fusion_spec;

/* A family spec (a kernels YAML file with `family:` and `axes:`): one
 * algorithm whose variants differ along declared axes. Each axis value (and
 * each case, a set of values together) contributes the keys of a kernel spec;
 * the loader expands every combination into a qk_kernel_spec, so plan, emit
 * and bundle see kernel specs only. docs/ARCHITECTURE.md has the language. */
typedef struct qk_axis_value_spec {
    char name[QK_MAX_NAME]; /* letters and digits: the word in variant names */
    char meaning[256];
    qk_mark mark;
} qk_axis_value_spec;

typedef struct qk_axis_spec {
    char name[QK_MAX_NAME];
    char meaning[256];
    bool spelled; /* false: the variant name spells it elsewhere (the math path) */
    uint32_t value_count;
    qk_axis_value_spec values[QK_MAX_AXIS_VALUES];
} qk_axis_spec;

/* One combination of axis values, in expansion order (first axis slowest). */
typedef struct qk_family_point {
    char kernel[QK_MAX_NAME];   /* the kernel name it expands to */
    uint8_t value[QK_MAX_AXES]; /* index of each axis's value */
    char excluded[320];         /* why no kernel exists ("" when expanded) */
} qk_family_point;

typedef struct qk_family_spec {
    char path[QK_MAX_PATH];
    char name[QK_MAX_NAME];
    char description[256];
    uint32_t axis_count;
    qk_axis_spec axes[QK_MAX_AXES];
    uint32_t point_count;
    qk_family_point *points;
} qk_family_spec;

/* Each returns false with "file:line:col: key.path: message" in e. */
bool qk_format_spec_load(const char *path, qk_format_spec *out, qk_error *e);
bool qk_kernel_spec_load(const char *path, qk_kernel_spec *out, qk_error *e);
bool qk_fusion_spec_load(const char *path, qk_fusion_spec *out, qk_error *e);
/* Loads a family spec and appends its kernels to *kernels (realloc'd;
 * *kernel_count updated). out->points is malloc'd: qk_family_spec_free. */
bool qk_family_spec_load(const char *path, qk_family_spec *out, qk_kernel_spec **kernels,
                         uint32_t *kernel_count, qk_error *e);
void qk_family_spec_free(qk_family_spec *f);
/* Whether the YAML file at path is a family spec (a top-level `axes:` key). */
bool qk_is_family_file(const char *path);

/* Formats a kernel set keeps (gen/spec/set.c): each a format's name (every
 * option of it: "mlx4_g64") or its name and option as variant names spell
 * them ("mlx4_g64_bf16"). The plan, which knows the concrete formats, checks
 * the names and applies them. */
typedef struct qk_format_pick {
    char kernel[QK_MAX_NAME]; /* the kernel it restricts; "" every kernel */
    char axes[256];           /* and its family point's axes (qk_kernel_spec.axes) */
    char where[48];           /* its key path in the set: "formats", "restrict[0].formats" */
    uint32_t count;
    char formats[QK_MAX_PICK][QK_MAX_NAME];
    qk_mark marks[QK_MAX_PICK];
} qk_format_pick;

/* Loads every *.yaml under dir/formats, dir/kernels (kernel and family
 * specs, a family expanded into its kernels) and dir/fusions (sorted by name). */
typedef struct qk_spec_set {
    uint32_t format_count, kernel_count, fusion_count, family_count;
    qk_format_spec *formats;
    qk_kernel_spec *kernels;
    qk_fusion_spec *fusions;
    qk_family_spec *families;
    /* the kernel set applied (qk_spec_set_apply), "" none, and its format picks */
    char set_path[QK_MAX_PATH];
    uint32_t pick_count;
    qk_format_pick *picks;
} qk_spec_set;

bool qk_spec_set_load(const char *dir, qk_spec_set *out, qk_error *e);
/* Only the format specs of dir/formats (*out malloc'd, sorted by name): what
 * the commands that run a bundle read for the formats' declared references. */
bool qk_format_specs_load(const char *dir, qk_format_spec **out, uint32_t *count, qk_error *e);
void qk_spec_set_free(qk_spec_set *s);

/* Applies the kernel set at set_path (specs/sets/NAME.yaml; docs/ARCHITECTURE.md,
 * "Kernel sets") to s, loaded from dir: keeps the kernels and families it
 * names, marks the family points it excludes as excluded (with its reason),
 * narrows fusions, and records its format picks for the plan. False with
 * "file:line:col: key.path: message" in e, and s freed. */
bool qk_spec_set_apply(qk_spec_set *s, const char *dir, const char *set_path, qk_error *e);
/* Whether the set's picks keep format name (with option, "" none) for k
 * (NULL: whether the set's formats hold it). */
bool qk_spec_set_keeps(const qk_spec_set *s, const qk_kernel_spec *k, const char *name,
                       const char *option);
/* Whether a pick's entry names format name with option. */
bool qk_format_pick_names(const char *entry, const char *name, const char *option);

#endif
