/* A strict reader over libyaml's document tree: typed getters that report
 * file:line:col and the key path of every problem (private to spec). */
#ifndef QK_YAMLW_H
#define QK_YAMLW_H

#include "spec.h"

#include <yaml.h>

/* Nesting of collections a spec may have (specs use 4): bounds libyaml's
 * quadratic scanner on hostile input. */
#define QK_SPEC_MAX_DEPTH 32

typedef struct yw {
    const char *path;
    yaml_document_t doc;
    qk_error *e;
} yw;

typedef yaml_node_t ynode;

bool yw_open(yw *w, const char *path, qk_error *e);
void yw_close(yw *w);
ynode *yw_root(yw *w);
qk_mark yw_mark(const ynode *n);
/* Sets the error at node n: "file:line:col: where: message". */
bool yw_fail(yw *w, const ynode *n, const char *where, const char *fmt, ...) QK_PRINTF(4, 5);

bool yw_is_map(const ynode *n);
bool yw_is_seq(const ynode *n);
/* Fails unless n is a mapping whose keys are all in allowed (NULL-terminated)
 * and which has every key in required. */
bool yw_check_map(yw *w, ynode *n, const char *where, const char *const *allowed,
                  const char *const *required);
ynode *yw_get(yw *w, ynode *map, const char *key);
/* The key node itself, for messages about the key rather than its value. */
ynode *yw_get_key(yw *w, ynode *map, const char *key);
/* Item i of a list read with yw_*_list (n itself when it was a scalar). */
ynode *yw_list_item(yw *w, ynode *n, size_t i);
/* Items of a sequence: count and the i-th. */
size_t yw_seq_len(const ynode *n);
ynode *yw_seq_at(yw *w, ynode *n, size_t i);
/* i-th pair of a mapping */
size_t yw_map_len(const ynode *n);
ynode *yw_map_key(yw *w, ynode *n, size_t i);
ynode *yw_map_value(yw *w, ynode *n, size_t i);

bool yw_str(yw *w, ynode *n, const char *where, char *out, size_t size);
/* yw_str of an expression whose syntax is checked (qk_expr_check). */
bool yw_expr(yw *w, ynode *n, const char *where, qk_expr_kind kind, char *out, size_t size);
bool yw_uint(yw *w, ynode *n, const char *where, uint32_t min, uint32_t max, uint32_t *out);
bool yw_bool(yw *w, ynode *n, const char *where, bool *out);
/* A scalar or a sequence of scalars; a value listed twice is an error. */
bool yw_uint_list(yw *w, ynode *n, const char *where, uint32_t min, uint32_t max, uint32_t *out,
                  uint32_t cap, uint32_t *count);
bool yw_str_list(yw *w, ynode *n, const char *where, char *out, size_t stride, uint32_t cap,
                 uint32_t *count);
/* An integer or an expression string (checked later against parameters). */
bool yw_intexpr(yw *w, ynode *n, const char *where, qk_intexpr *out);

/* Kernel keys, shared by kernel specs (spec.c) and family specs (family.c). */
bool qk_spec_binding(yw *w, ynode *m, const char *where, qk_binding_spec *b);
/* A rule's check and reason (the caller checks the mapping's keys). */
bool qk_spec_rule(yw *w, ynode *m, const char *where, qk_rule_spec *r);
/* Every kernel key present in map; partial: none required, and bindings,
 * grid, rules and shared_memory left to the caller. */
bool qk_spec_kernel_keys(yw *w, ynode *map, qk_kernel_spec *k, bool partial);

/* A family's when: { axis: value, other: [value, value] } (family specs'
 * cases, rules and exclusions, kernel sets' exclusions): when[a] gets bit v
 * for each value v of axis a named (0: any value). */
bool qk_spec_when(yw *w, ynode *n, const char *where, const qk_family_spec *f,
                  uint32_t when[QK_MAX_AXES]);
/* Whether the point (each axis's value index) is one when names. */
bool qk_spec_when_matches(const uint32_t when[QK_MAX_AXES], const uint8_t *point, uint32_t axes);
/* A point's axes as its kernel spec's axes text ("routing=ids split=none"):
 * what tells apart points whose names are one (an axis not spelled). */
void qk_family_point_axes(const qk_family_spec *f, const uint8_t *point, qk_str *out);

#endif
