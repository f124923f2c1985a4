/* format: the quant-format model. Expands a format spec's parameters into
 * concrete formats, lays out block fields, and generates from that one source
 * both the GLSL accessors the dequant code uses and the manifest's description
 * of the weights. Knows nothing of kernels. */
#ifndef QK_FORMAT_H
#define QK_FORMAT_H

#include "../spec/spec.h"
#include "qk_decode.h"

typedef struct qk_field {
    char name[QK_MAX_NAME];
    qk_type type;
    uint32_t count, offset; /* offset in bytes from the block start */
} qk_field;

typedef struct qk_plane {
    char name[QK_MAX_NAME];
    qk_type type;
    uint32_t per_group;
} qk_plane;

/* One concrete format: a spec with every parameter fixed. */
typedef struct qk_format {
    const qk_format_spec *spec;
    char name[QK_MAX_NAME];    /* "q4_0", "mlx4_g64" */
    char variant[QK_MAX_NAME]; /* parameters not in the name, for variant names: "bf16" */
    uint32_t param_count;
    char param_names[QK_MAX_PARAMS][QK_MAX_NAME];
    char param_values[QK_MAX_PARAMS][16];
    qk_layout_kind layout;
    uint32_t elements;     /* per block or group */
    uint32_t block_bytes;  /* block layout */
    uint32_t sub_elements; /* per call of the dequant hook */
    bool full_search;      /* takes every kernel's whole search space (spec's full_search) */
    uint32_t field_count;
    qk_field fields[QK_MAX_FIELDS];
    uint32_t plane_count;
    qk_plane planes[4];
} qk_format;

/* Expands every parameter combination of spec; *out is malloc'd. */
bool qk_format_expand(const qk_format_spec *spec, qk_format **out, uint32_t *count, qk_error *e);

/* Compiles f's declared reference (`reference:` and `tables:`, evaluated on
 * the CPU by common/qk_decode.c): *out is NULL when f declares none. False
 * with "file:line:col: reference.value: message" in e (the column of the
 * token inside the expression). qk_format_expand compiles each once to
 * check it; callers that evaluate free theirs with qk_decode_free. */
bool qk_format_decode(const qk_format *f, qk_decode **out, qk_error *e);

/* Bytes of one row of k elements (planar: all planes together). */
uint64_t qk_format_row_bytes(const qk_format *f, uint64_t k);

/* Appends the GLSL that describes f to a kernel: QK_* defines, the weight
 * buffer declarations (nw matrices, bindings from first_binding on) and typed
 * accessors for each field or plane. Returns the number of bindings used. */
uint32_t qk_format_emit_glsl(const qk_format *f, uint32_t nw, uint32_t first_binding, qk_str *out);

/* Appends the manifest's "weights" object (JSON) for f. */
void qk_format_emit_json(const qk_format *f, qk_str *out);

/* Checks f's block layout against its spec's C struct, when it names one
 * (libclang). header_dir resolves a relative header path. */
bool qk_format_check_c(const qk_format *f, qk_error *e);

#endif
