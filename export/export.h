/* The exporter's parts (exporter.c, export_expr.c, export_header.c): its
 * state and the helpers they share. Private to export/ (qk_export.h is its
 * entry point). */
#ifndef QK_EXPORT_H
#define QK_EXPORT_H

#include "qk_json.h"
#include "qk_util.h"

enum { QK_EXPORT_MAX_VARS = 64 };

typedef struct exporter {
    const char *manifest_path;
    const char *p; /* prefix of every name, e.g. "qkb" */
    char up[64];   /* the same in capitals, for macros */
    qk_error *e;
    /* every shape variable the bundle names, in order of first use */
    uint32_t var_count;
    char vars[QK_EXPORT_MAX_VARS][64];
    qk_str defs; /* the implementation part */
} exporter;

/* Sets x->e to "manifest:line:col: message" (node NULL: no position); false. */
bool qk_export_bad(exporter *x, const qkrt_json *node, const char *fmt, ...) QK_PRINTF(3, 4);
/* s as a C string literal (qk_c_string, "NULL" for NULL), then ", ". */
void qk_export_c_field(qk_str *o, const char *s);
/* Typed members of a manifest object; a missing required one, or one of
 * another type, sets the error. */
const qkrt_json *qk_export_field(exporter *x, const qkrt_json *obj, const char *key,
                                 qkrt_json_type type, bool required);
const char *qk_export_str(exporter *x, const qkrt_json *obj, const char *key, bool required);
bool qk_export_u32(exporter *x, const qkrt_json *obj, const char *key, bool required,
                   uint32_t *out);
const qkrt_json *qk_export_list(exporter *x, const qkrt_json *obj, const char *key, bool required);
/* Adds a shape variable (once); false when there are too many. */
bool qk_export_add_var(exporter *x, const char *name, size_t len);
/* Appends the expression node (a string) as a C expression over `s` (a
 * P_shape pointer) and `ok` (int *, cleared on overflow or division by zero);
 * condition: it must be a comparison, && || or !. */
bool qk_export_expr(exporter *x, const qkrt_json *node, bool condition, qk_str *out);
/* The header's types, its API declarations, the checked arithmetic the
 * generated functions call, and the API's definitions. */
void qk_export_types(exporter *x, qk_str *o);
void qk_export_api(exporter *x, qk_str *o);
void qk_export_helpers(exporter *x, qk_str *o);
void qk_export_api_defs(exporter *x, qk_str *o);
/* The select table: its declarations into decl, its data and P_select into
 * x->defs; true with nothing written when the manifest has none. */
bool qk_export_select(exporter *x, const qkrt_json *root, const qkrt_json *kernels, qk_str *decl);

#endif
