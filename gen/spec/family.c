/* Family specs: one algorithm whose kernels differ along declared axes. The
 * loader expands every combination of axis values into a kernel spec. */
#include "yamlw.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The keys a mapping sets in place of the family's. Where several set one
 * for a point the last wins: the family's, then each axis value's in axis
 * order, then each matching case's in file order. */
typedef enum {
    K_TEMPLATE,
    K_FORMATS,
    K_ACTIVATIONS,
    K_NR0,
    K_NR1,
    K_NK,
    K_WG,
    K_TPR,
    K_SK,
    K_WEIGHTS,
    K_MIN_SG,
    K_STAGED,
    K_MMA,
    K_FUSIONS,
    K_OPERATION,
    K_GRID_X,
    K_GRID_Y,
    K_GRID_Z,
    K_SHARED_MEMORY,
    K_COUNT
} key_id;

/* What one mapping (the family, an axis value or a case) contributes. */
typedef struct contrib {
    char where[256]; /* its key path: "axes.routing.values.ids", "cases[2]" */
    qk_mark mark;
    int axis, value;            /* an axis value's; -1 for the family and the cases */
    uint32_t when[QK_MAX_AXES]; /* a case's: bit v for each matching value (0: any) */
    bool sets[K_COUNT];
    qk_kernel_spec k; /* the kernel keys it sets */
    char operation[QK_MAX_NAME];
    char grid[3][128];
    /* bindings in order; slot_axis[i] >= 0: the bindings of that axis's value go there */
    uint32_t slot_count;
    int slot_axis[QK_MAX_BINDINGS];
    qk_binding_spec slots[QK_MAX_BINDINGS];
    qk_mark slot_marks[QK_MAX_BINDINGS];
    uint32_t rule_count;
    qk_rule_spec rules[QK_MAX_KERNEL_RULES];
    uint32_t rule_when[QK_MAX_KERNEL_RULES][QK_MAX_AXES];
    char shared_add[256]; /* shared_memory: { add: TERM }: bytes on top of the rest */
} contrib;

/* bounds for hostile input: 6 axes of 8 values would be 262,144 kernels */
enum { MAX_CASES = 48, MAX_POINTS = 256 };

typedef struct exclusion {
    uint32_t when[QK_MAX_AXES];
    char reason[256];
} exclusion;

typedef struct family_reader {
    yw *w;
    qk_family_spec *f;
    uint32_t contrib_count;
    contrib *contribs; /* [0]: the family; then each axis value; then the cases */
    uint32_t exclusion_count;
    exclusion exclusions[32];
} family_reader;

/* Axis and value names: letters and digits (values: lower case), so that a
 * variant name splits on '-' and '_' without a table. */
static bool word_ok(const char *s, bool lower) {
    if (!isalpha((unsigned char)s[0])) return false;
    for (; *s; s++)
        if (!(islower((unsigned char)*s) || isdigit((unsigned char)*s) ||
              (!lower && (isupper((unsigned char)*s) || *s == '_'))))
            return false;
    return true;
}

static bool word_field(yw *w, ynode *n, const char *where, char *out, size_t size, bool lower) {
    if (!yw_str(w, n, where, out, size)) return false;
    if (!word_ok(out, lower))
        return yw_fail(w, n, where,
                       lower
                           ? "'%s' is not a value name (lower-case letters and digits, starting "
                             "with a letter)"
                           : "'%s' is not a name (letters, digits and '_', starting with a letter)",
                       out);
    return true;
}

static int find_axis(const qk_family_spec *f, const char *name) {
    for (uint32_t i = 0; i < f->axis_count; i++)
        if (!strcmp(f->axes[i].name, name)) return (int)i;
    return -1;
}

/* when: { axis: value, other: [value, value] } */
static bool load_when(family_reader *r, ynode *n, const char *where, uint32_t when[QK_MAX_AXES]) {
    return qk_spec_when(r->w, n, where, r->f, when);
}

bool qk_spec_when(yw *w, ynode *n, const char *where, const qk_family_spec *f,
                  uint32_t when[QK_MAX_AXES]) {
    memset(when, 0, sizeof(uint32_t) * QK_MAX_AXES);
    if (!yw_is_map(n) || yw_map_len(n) == 0)
        return yw_fail(w, n, where, "expected a mapping of axes to values");
    for (size_t i = 0; i < yw_map_len(n); i++) {
        char axis[QK_MAX_NAME];
        ynode *kn = yw_map_key(w, n, i), *vn = yw_map_value(w, n, i);
        if (!yw_str(w, kn, where, axis, sizeof axis)) return false;
        int a = find_axis(f, axis);
        if (a < 0) return yw_fail(w, kn, where, "'%s' is not an axis of this family", axis);
        if (when[a]) return yw_fail(w, kn, where, "axis '%s' is named twice", axis);
        char values[QK_MAX_AXIS_VALUES][QK_MAX_NAME];
        uint32_t count;
        char wv[200];
        snprintf(wv, sizeof wv, "%s.%s", where, axis);
        if (!yw_str_list(w, vn, wv, values[0], sizeof values[0], QK_MAX_AXIS_VALUES, &count))
            return false;
        const qk_axis_spec *ax = &f->axes[a];
        for (uint32_t j = 0; j < count; j++) {
            uint32_t v = 0;
            while (v < ax->value_count && strcmp(ax->values[v].name, values[j]))
                v++;
            if (v == ax->value_count)
                return yw_fail(w, yw_list_item(w, vn, j), wv, "'%s' is not a value of axis '%s'",
                               values[j], axis);
            when[a] |= 1u << v;
        }
    }
    return true;
}

bool qk_spec_when_matches(const uint32_t when[QK_MAX_AXES], const uint8_t *point, uint32_t axes) {
    for (uint32_t a = 0; a < axes; a++)
        if (when[a] && !(when[a] & (1u << point[a]))) return false;
    return true;
}

/* bindings: a list of bindings; in the family's list, { axis: NAME } marks
 * where that axis's value puts its own. */
static bool load_slots(family_reader *r, contrib *c, ynode *seq, bool family) {
    yw *w = r->w;
    char where[300];
    snprintf(where, sizeof where, "%s%sbindings", c->where, c->where[0] ? "." : "");
    if (!yw_is_seq(seq)) return yw_fail(w, seq, where, "expected a list of bindings");
    if (yw_seq_len(seq) > QK_MAX_BINDINGS - 8)
        return yw_fail(w, seq, where, "more than %d bindings", QK_MAX_BINDINGS - 8);
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char wi[340];
        snprintf(wi, sizeof wi, "%s[%zu]", where, i);
        uint32_t s = c->slot_count++;
        c->slot_marks[s] = yw_mark(m);
        c->slot_axis[s] = -1;
        ynode *an = yw_is_map(m) ? yw_get(w, m, "axis") : NULL;
        if (an) {
            static const char *const keys[] = {"axis", NULL};
            char axis[QK_MAX_NAME];
            if (!yw_check_map(w, m, wi, keys, keys) || !yw_str(w, an, wi, axis, sizeof axis))
                return false;
            if (!family) return yw_fail(w, m, wi, "only the family's own bindings place an axis's");
            int a = find_axis(r->f, axis);
            if (a < 0) return yw_fail(w, an, wi, "'%s' is not an axis of this family", axis);
            for (uint32_t j = 0; j < s; j++)
                if (c->slot_axis[j] == a)
                    return yw_fail(w, an, wi, "axis '%s' is placed twice", axis);
            c->slot_axis[s] = a;
            continue;
        }
        if (!qk_spec_binding(w, m, wi, &c->slots[s])) return false;
    }
    return true;
}

/* rules: each { check, reason } with an optional when */
static bool load_family_rules(family_reader *r, contrib *c, ynode *seq) {
    yw *w = r->w;
    char where[300];
    snprintf(where, sizeof where, "%s%srules", c->where, c->where[0] ? "." : "");
    if (!yw_is_seq(seq)) return yw_fail(w, seq, where, "expected a list of rules");
    if (yw_seq_len(seq) > QK_MAX_KERNEL_RULES) return yw_fail(w, seq, where, "too many rules");
    static const char *const keys[] = {"check", "reason", "when", NULL};
    static const char *const req[] = {"check", "reason", NULL};
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char wi[340], ww[360];
        snprintf(wi, sizeof wi, "%s[%zu]", where, i);
        snprintf(ww, sizeof ww, "%s.when", wi);
        uint32_t n = c->rule_count++;
        if (!yw_check_map(w, m, wi, keys, req) || !qk_spec_rule(w, m, wi, &c->rules[n]))
            return false;
        ynode *wn = yw_get(w, m, "when");
        if (wn && !load_when(r, wn, ww, c->rule_when[n])) return false;
    }
    return true;
}

/* grid: [x, y, z], or a mapping of the dimensions it sets ({ z: SK }) */
static bool load_grid(family_reader *r, contrib *c, ynode *n, bool family) {
    yw *w = r->w;
    char where[300];
    snprintf(where, sizeof where, "%s%sgrid", c->where, c->where[0] ? "." : "");
    static const char *const dims[] = {"x", "y", "z", NULL};
    if (yw_is_seq(n)) {
        if (yw_seq_len(n) != 3)
            return yw_fail(w, n, where, "expected a list of three expressions (x, y, z)");
        for (int i = 0; i < 3; i++) {
            if (!yw_expr(w, yw_seq_at(w, n, (size_t)i), where, QK_EXPR_VALUE, c->grid[i],
                         sizeof c->grid[i]))
                return false;
            c->sets[K_GRID_X + i] = true;
        }
        return true;
    }
    if (family) return yw_fail(w, n, where, "expected a list of three expressions (x, y, z)");
    if (!yw_check_map(w, n, where, dims, NULL)) return false;
    for (int i = 0; i < 3; i++) {
        ynode *d = yw_get(w, n, dims[i]);
        if (!d) continue;
        if (!yw_expr(w, d, where, QK_EXPR_VALUE, c->grid[i], sizeof c->grid[i])) return false;
        c->sets[K_GRID_X + i] = true;
    }
    return true;
}

/* shared_memory: bytes, an expression that replaces the family's, or
 * { add: TERM }, bytes added to whatever else the point has */
static bool load_shared(family_reader *r, contrib *c, ynode *n, bool family) {
    yw *w = r->w;
    char where[300];
    snprintf(where, sizeof where, "%s%sshared_memory", c->where, c->where[0] ? "." : "");
    if (!yw_is_map(n)) {
        c->sets[K_SHARED_MEMORY] = true;
        return yw_expr(w, n, where, QK_EXPR_VALUE, c->k.shared_memory, sizeof c->k.shared_memory);
    }
    static const char *const keys[] = {"add", NULL};
    if (family) return yw_fail(w, n, where, "the family's shared_memory is an expression");
    return yw_check_map(w, n, where, keys, keys) &&
           yw_expr(w, yw_get(w, n, "add"), where, QK_EXPR_VALUE, c->shared_add,
                   sizeof c->shared_add);
}

/* The keys of a mapping that are kernel keys: parsed into c. */
static bool load_contrib(family_reader *r, contrib *c, ynode *m, bool family) {
    yw *w = r->w;
    c->mark = yw_mark(m);
    /* the shared reader's messages name the key alone; the line and column
     * place it in the family */
    if (!qk_spec_kernel_keys(w, m, &c->k, true)) return false;
    static const char *const plain[] = {
        "template", "formats", "activations",       NULL,     NULL,  NULL,      NULL,       NULL,
        NULL,       "weights", "min_subgroup_size", "staged", "mma", "fusions", "operation"};
    for (int k = 0; k <= K_OPERATION; k++) {
        ynode *n = plain[k] ? yw_get(w, m, plain[k]) : NULL;
        if (!n) continue;
        c->sets[k] = true;
    }
    ynode *t = yw_get(w, m, "tile");
    if (t) {
        static const char *const params[] = {"NR0", "NR1", "NK", "WG", "TPR", "SK"};
        for (int i = 0; i < 6; i++) {
            ynode *n = yw_get(w, t, params[i]);
            if (!n) continue;
            c->sets[K_NR0 + i] = true;
        }
    }
    ynode *n;
    if ((n = yw_get(w, m, "operation")) &&
        !word_field(w, n, "operation", c->operation, sizeof c->operation, false))
        return false;
    if ((n = yw_get(w, m, "bindings")) && !load_slots(r, c, n, family)) return false;
    if ((n = yw_get(w, m, "rules")) && !load_family_rules(r, c, n)) return false;
    if ((n = yw_get(w, m, "grid")) && !load_grid(r, c, n, family)) return false;
    if ((n = yw_get(w, m, "shared_memory")) && !load_shared(r, c, n, family)) return false;
    return true;
}

#define CONTRIB_KEYS                                                                               \
    "template", "formats", "activations", "tile", "weights", "min_subgroup_size", "bindings",      \
        "push_constants", "grid", "shared_memory", "constraints", "rules", "features", "staged",   \
        "specialize", "literals", "mma", "fusions", "operation"

static contrib *new_contrib(family_reader *r) {
    r->contribs = qk_xrealloc(r->contribs, sizeof *r->contribs * (r->contrib_count + 1));
    contrib *c = &r->contribs[r->contrib_count++];
    memset(c, 0, sizeof *c);
    c->axis = c->value = -1;
    return c;
}

static bool load_axes(family_reader *r, ynode *axes) {
    yw *w = r->w;
    qk_family_spec *f = r->f;
    if (!yw_is_map(axes) || yw_map_len(axes) == 0)
        return yw_fail(w, axes, "axes", "expected a mapping of axes");
    if (yw_map_len(axes) > QK_MAX_AXES)
        return yw_fail(w, axes, "axes", "more than %d axes", QK_MAX_AXES);
    /* names first, so that a value's bindings may be placed by name */
    for (size_t i = 0; i < yw_map_len(axes); i++) {
        qk_axis_spec *a = &f->axes[f->axis_count++];
        a->spelled = true;
        if (!word_field(w, yw_map_key(w, axes, i), "axes", a->name, sizeof a->name, false))
            return false;
        for (uint32_t j = 0; j + 1 < f->axis_count; j++)
            if (!strcmp(f->axes[j].name, a->name))
                return yw_fail(w, yw_map_key(w, axes, i), "axes", "duplicate axis '%s'", a->name);
    }
    for (size_t i = 0; i < yw_map_len(axes); i++) {
        qk_axis_spec *a = &f->axes[i];
        ynode *am = yw_map_value(w, axes, i), *n;
        char where[128];
        snprintf(where, sizeof where, "axes.%s", a->name);
        static const char *const keys[] = {"meaning", "values", "spelled", NULL};
        static const char *const req[] = {"meaning", "values", NULL};
        if (!yw_check_map(w, am, where, keys, req) ||
            !yw_str(w, yw_get(w, am, "meaning"), where, a->meaning, sizeof a->meaning))
            return false;
        if ((n = yw_get(w, am, "spelled")) && !yw_bool(w, n, where, &a->spelled)) return false;
        ynode *vals = yw_get(w, am, "values");
        char wv[160];
        snprintf(wv, sizeof wv, "%s.values", where);
        if (!yw_is_map(vals) || yw_map_len(vals) < 2)
            return yw_fail(w, vals, wv, "expected a mapping of two or more values");
        if (yw_map_len(vals) > QK_MAX_AXIS_VALUES)
            return yw_fail(w, vals, wv, "more than %d values", QK_MAX_AXIS_VALUES);
        for (size_t j = 0; j < yw_map_len(vals); j++) {
            qk_axis_value_spec *v = &a->values[a->value_count++];
            ynode *vk = yw_map_key(w, vals, j), *vm = yw_map_value(w, vals, j);
            if (!word_field(w, vk, wv, v->name, sizeof v->name, true)) return false;
            for (uint32_t k = 0; k + 1 < a->value_count; k++)
                if (!strcmp(a->values[k].name, v->name))
                    return yw_fail(w, vk, wv, "duplicate value '%s'", v->name);
            v->mark = yw_mark(vk);
            contrib *c = new_contrib(r);
            snprintf(c->where, sizeof c->where, "%s.%s", wv, v->name);
            c->axis = (int)i;
            c->value = (int)j;
            static const char *const vkeys[] = {"meaning", CONTRIB_KEYS, NULL};
            static const char *const vreq[] = {"meaning", NULL};
            if (!yw_check_map(w, vm, c->where, vkeys, vreq) ||
                !yw_str(w, yw_get(w, vm, "meaning"), c->where, v->meaning, sizeof v->meaning) ||
                !load_contrib(r, c, vm, false))
                return false;
        }
    }
    return true;
}

static bool load_cases(family_reader *r, ynode *seq) {
    yw *w = r->w;
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "cases", "expected a list of cases");
    if (yw_seq_len(seq) > MAX_CASES)
        return yw_fail(w, seq, "cases", "more than %d cases", MAX_CASES);
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        contrib *c = new_contrib(r);
        snprintf(c->where, sizeof c->where, "cases[%zu]", i);
        static const char *const keys[] = {"when", CONTRIB_KEYS, NULL};
        static const char *const req[] = {"when", NULL};
        char ww[300];
        snprintf(ww, sizeof ww, "%s.when", c->where);
        if (!yw_check_map(w, m, c->where, keys, req) ||
            !load_when(r, yw_get(w, m, "when"), ww, c->when) || !load_contrib(r, c, m, false))
            return false;
    }
    return true;
}

static bool load_exclusions(family_reader *r, ynode *seq) {
    yw *w = r->w;
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "exclude", "expected a list of exclusions");
    if (yw_seq_len(seq) > sizeof r->exclusions / sizeof r->exclusions[0])
        return yw_fail(w, seq, "exclude", "too many exclusions");
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        exclusion *x = &r->exclusions[r->exclusion_count++];
        char where[64], ww[80];
        snprintf(where, sizeof where, "exclude[%zu]", i);
        snprintf(ww, sizeof ww, "%s.when", where);
        static const char *const keys[] = {"when", "reason", NULL};
        if (!yw_check_map(w, m, where, keys, keys) ||
            !load_when(r, yw_get(w, m, "when"), ww, x->when) ||
            !yw_str(w, yw_get(w, m, "reason"), where, x->reason, sizeof x->reason))
            return false;
    }
    return true;
}

/* ------------------------------------------------------------- expansion */

/* Copies key id of c into k. */
static void apply_key(qk_kernel_spec *k, char *operation, const contrib *c, key_id id) {
    const qk_kernel_spec *s = &c->k;
    switch (id) {
    case K_TEMPLATE:
        memcpy(k->template_name, s->template_name, sizeof k->template_name);
        k->template_mark = s->template_mark;
        break;
    case K_FORMATS:
        memcpy(k->formats, s->formats, sizeof k->formats);
        k->format_count = s->format_count;
        k->formats_mark = s->formats_mark;
        break;
    case K_ACTIVATIONS:
        memcpy(k->activations, s->activations, sizeof k->activations);
        k->activation_count = s->activation_count;
        break;
    case K_NR0:
        memcpy(k->nr0, s->nr0, sizeof k->nr0);
        k->nr0_count = s->nr0_count;
        break;
    case K_NR1:
        memcpy(k->nr1, s->nr1, sizeof k->nr1);
        k->nr1_count = s->nr1_count;
        break;
    case K_NK:
        memcpy(k->nk, s->nk, sizeof k->nk);
        k->nk_count = s->nk_count;
        break;
    case K_WG:
        memcpy(k->wg, s->wg, sizeof k->wg);
        k->wg_count = s->wg_count;
        break;
    case K_TPR:
        memcpy(k->tpr, s->tpr, sizeof k->tpr);
        k->tpr_count = s->tpr_count;
        break;
    case K_SK:
        memcpy(k->sk, s->sk, sizeof k->sk);
        k->sk_count = s->sk_count;
        break;
    case K_WEIGHTS:
        k->weights = s->weights;
        break;
    case K_MIN_SG:
        k->min_subgroup_size = s->min_subgroup_size;
        break;
    case K_STAGED:
        k->staged = s->staged;
        break;
    case K_MMA:
        memcpy(k->mma, s->mma, sizeof k->mma);
        k->mma_count = s->mma_count;
        break;
    case K_FUSIONS:
        memcpy(k->fusions, s->fusions, sizeof k->fusions);
        k->fusion_count = s->fusion_count;
        k->fusions_mark = s->fusions_mark;
        break;
    case K_OPERATION:
        snprintf(operation, QK_MAX_NAME, "%s", c->operation);
        break;
    case K_GRID_X:
    case K_GRID_Y:
    case K_GRID_Z:
        memcpy(k->grid[id - K_GRID_X], c->grid[id - K_GRID_X], sizeof k->grid[0]);
        break;
    case K_SHARED_MEMORY:
        memcpy(k->shared_memory, s->shared_memory, sizeof k->shared_memory);
        break;
    default:
        break;
    }
}

static bool fail_at(family_reader *r, qk_mark m, const char *where, const char *fmt, ...)
    QK_PRINTF(4, 5);
static bool fail_at(family_reader *r, qk_mark m, const char *where, const char *fmt, ...) {
    char msg[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    qk_error_set(r->w->e, "%s:%d:%d: %s%s%s", r->w->path, m.line, m.col, where,
                 where[0] ? ": " : "", msg);
    return false;
}

/* The contributions of point p, in order: the family, its axis values (in
 * axis order), the cases that match. */
static uint32_t point_contribs(const family_reader *r, const uint8_t *p, const contrib **out) {
    uint32_t n = 0;
    out[n++] = &r->contribs[0];
    for (uint32_t a = 0; a < r->f->axis_count; a++)
        for (uint32_t i = 1; i < r->contrib_count; i++)
            if (r->contribs[i].axis == (int)a && r->contribs[i].value == p[a])
                out[n++] = &r->contribs[i];
    for (uint32_t i = 1; i < r->contrib_count; i++)
        if (r->contribs[i].axis < 0 &&
            qk_spec_when_matches(r->contribs[i].when, p, r->f->axis_count))
            out[n++] = &r->contribs[i];
    return n;
}

static bool add_binding(family_reader *r, qk_kernel_spec *k, const contrib *c, uint32_t s) {
    for (uint32_t i = 0; i < k->binding_count; i++)
        if (!strcmp(k->bindings[i].name, c->slots[s].name))
            return fail_at(r, c->slot_marks[s], c->where,
                           "binding '%s' is already bound at this point (%s)", c->slots[s].name,
                           k->name);
    if (k->binding_count == QK_MAX_BINDINGS - 8)
        return fail_at(r, c->slot_marks[s], c->where, "more than %d bindings at %s",
                       QK_MAX_BINDINGS - 8, k->name);
    k->bindings[k->binding_count++] = c->slots[s];
    return true;
}

/* The bindings of c that are not axis slots. */
static bool add_bindings(family_reader *r, qk_kernel_spec *k, const contrib *c) {
    for (uint32_t s = 0; s < c->slot_count; s++)
        if (c->slot_axis[s] < 0 && !add_binding(r, k, c, s)) return false;
    return true;
}

static bool merge_lists(family_reader *r, qk_kernel_spec *k, const contrib *c, const uint8_t *p) {
    const qk_kernel_spec *s = &c->k;
    for (uint32_t i = 0; i < s->push_count; i++) {
        for (uint32_t j = 0; j < k->push_count; j++)
            if (!strcmp(k->push[j], s->push[i]))
                return fail_at(r, c->mark, c->where, "push constant '%s' is already declared (%s)",
                               s->push[i], k->name);
        if (k->push_count == QK_MAX_LIST)
            return fail_at(r, c->mark, c->where, "too many push constants at %s", k->name);
        memcpy(k->push[k->push_count++], s->push[i], sizeof k->push[0]);
    }
    for (uint32_t i = 0; i < s->constraint_count; i++) {
        if (k->constraint_count == QK_MAX_RULES)
            return fail_at(r, c->mark, c->where, "more than %d constraints at %s", QK_MAX_RULES,
                           k->name);
        memcpy(k->constraints[k->constraint_count++], s->constraints[i], sizeof k->constraints[0]);
    }
    for (uint32_t i = 0; i < c->rule_count; i++) {
        if (!qk_spec_when_matches(c->rule_when[i], p, r->f->axis_count)) continue;
        if (k->rule_count == QK_MAX_KERNEL_RULES)
            return fail_at(r, c->rules[i].mark, c->where, "more than %d rules at %s",
                           QK_MAX_KERNEL_RULES, k->name);
        k->rules[k->rule_count++] = c->rules[i];
    }
    for (uint32_t i = 0; i < s->feature_count; i++) {
        bool seen = false;
        for (uint32_t j = 0; j < k->feature_count; j++)
            seen |= !strcmp(k->features[j], s->features[i]);
        if (seen) continue;
        if (k->feature_count == 8)
            return fail_at(r, c->mark, c->where, "more than 8 features at %s", k->name);
        memcpy(k->features[k->feature_count++], s->features[i], sizeof k->features[0]);
    }
    k->specialize |= s->specialize;
    if (s->literal_count) {
        if (k->literal_count)
            return fail_at(r, s->literals[0].mark, c->where,
                           "literals are declared twice at %s (one list per point)", k->name);
        k->literal_count = s->literal_count;
        memcpy(k->literals, s->literals, sizeof k->literals);
    }
    return true;
}

/* Adds the terms of { add: TERM } to the point's shared memory. */
static bool add_shared(family_reader *r, qk_kernel_spec *k, const contrib *c) {
    if (!c->shared_add[0]) return true;
    char sum[sizeof k->shared_memory];
    int len = !strcmp(k->shared_memory, "0")
                  ? snprintf(sum, sizeof sum, "%s", c->shared_add)
                  : snprintf(sum, sizeof sum, "%s + %s", k->shared_memory, c->shared_add);
    if (len >= (int)sizeof sum)
        return fail_at(r, c->mark, c->where, "the shared_memory sum is too long at %s", k->name);
    memcpy(k->shared_memory, sum, sizeof sum);
    return true;
}

/* The kernel name of point p: the family, then the value of each spelled
 * axis that is not at its first (default) value; and its axes text. */
void qk_family_point_axes(const qk_family_spec *f, const uint8_t *p, qk_str *out) {
    for (uint32_t a = 0; a < f->axis_count; a++)
        qk_str_addf(out, "%s%s=%s", a ? " " : "", f->axes[a].name, f->axes[a].values[p[a]].name);
}

static bool point_name(family_reader *r, const uint8_t *p, qk_kernel_spec *k) {
    const qk_family_spec *f = r->f;
    qk_str name = {0}, axes = {0};
    qk_str_add(&name, f->name);
    for (uint32_t a = 0; a < f->axis_count; a++)
        if (f->axes[a].spelled && p[a]) qk_str_addf(&name, "-%s", f->axes[a].values[p[a]].name);
    qk_family_point_axes(f, p, &axes);
    bool fits = name.len < sizeof k->name;
    snprintf(k->name, sizeof k->name, "%s", name.s);
    snprintf(k->axes, sizeof k->axes, "%s", axes.s);
    qk_str_free(&name);
    qk_str_free(&axes);
    if (!fits)
        return fail_at(r, r->contribs[0].mark, "family", "the name %s... is too long", k->name);
    return true;
}

/* Builds the kernel of point p. */
static bool expand_point(family_reader *r, const uint8_t *p, qk_kernel_spec *k) {
    const qk_family_spec *f = r->f;
    const contrib *cs[1 + QK_MAX_AXES + MAX_CASES];
    uint32_t n = point_contribs(r, p, cs);
    memset(k, 0, sizeof *k);
    snprintf(k->path, sizeof k->path, "%s", f->path);
    snprintf(k->origin, sizeof k->origin, "%s", f->name);
    if (!point_name(r, p, k)) return false;
    /* the manifest's line on what the kernel does: the family's, and the point */
    qk_str d = {0};
    qk_str_addf(&d, "%s%s(%s)", f->description, f->description[0] ? " " : "", k->axes);
    snprintf(k->description, sizeof k->description, "%s", d.s);
    qk_str_free(&d);

    /* keys set in place: the last setter wins */
    char operation[QK_MAX_NAME] = "";
    snprintf(k->shared_memory, sizeof k->shared_memory, "0");
    k->weights = 1;
    k->min_subgroup_size = 1;
    for (uint32_t i = 0; i < n; i++)
        for (int id = 0; id < K_COUNT; id++) {
            if (!cs[i]->sets[id]) continue;
            apply_key(k, operation, cs[i], (key_id)id);
            if (id >= K_NR0 && id <= K_SK) k->tile_mark = cs[i]->k.tile_mark;
        }
    /* bindings: the family's in order, each axis slot filled by its value's;
     * then the values' without a slot, then the cases' */
    const contrib *fam = &r->contribs[0];
    bool placed[QK_MAX_AXES] = {0};
    for (uint32_t s = 0; s < fam->slot_count; s++) {
        int a = fam->slot_axis[s];
        if (a < 0) {
            if (!add_binding(r, k, fam, s)) return false;
            continue;
        }
        placed[a] = true;
        for (uint32_t i = 1; i < n; i++)
            if (cs[i]->axis == a && !add_bindings(r, k, cs[i])) return false;
    }
    for (uint32_t i = 1; i < n; i++)
        if ((cs[i]->axis < 0 || !placed[cs[i]->axis]) && !add_bindings(r, k, cs[i])) return false;
    for (uint32_t i = 0; i < n; i++)
        if (!merge_lists(r, k, cs[i], p) || !add_shared(r, k, cs[i])) return false;
    snprintf(k->family, sizeof k->family, "%s", operation);

    /* what a kernel spec requires, now that every contribution is in */
    const char *missing = !k->template_name[0]   ? "template"
                          : !operation[0]        ? "operation"
                          : !k->format_count     ? "formats"
                          : !k->activation_count ? "activations"
                          : !k->nr0_count        ? "tile.NR0"
                          : !k->nr1_count        ? "tile.NR1"
                          : !k->nk_count         ? "tile.NK"
                          : !k->wg_count         ? "tile.WG"
                          : !k->grid[0][0]       ? "grid.x"
                          : !k->grid[1][0]       ? "grid.y"
                          : !k->grid[2][0]       ? "grid.z"
                          : !k->binding_count    ? "bindings"
                                                 : NULL;
    if (missing)
        return fail_at(r, fam->mark, "family",
                       "%s has no %s: the family, one of its axis values or a case must set it",
                       k->name, missing);
    if (((k->specialize >> QK_TILE_TPR) & 1) && !k->tpr_count)
        return fail_at(r, fam->mark, "specialize", "%s specializes TPR but has no tile.TPR",
                       k->name);
    if (((k->specialize >> QK_TILE_SK) & 1) && !k->sk_count)
        return fail_at(r, fam->mark, "specialize", "%s specializes SK but has no tile.SK", k->name);
    if (((k->specialize >> QK_TILE_NK) & 1) && k->staged && k->staged != QK_STAGED_REFERENCE)
        return fail_at(r, fam->mark, "specialize",
                       "%s is staged, whose chunk of words NK sizes: NK cannot be a "
                       "specialization constant",
                       k->name);
    return true;
}

/* Every combination, first axis slowest: a kernel or the exclusion's reason. */
static bool expand(family_reader *r, qk_kernel_spec **kernels, uint32_t *kernel_count) {
    qk_family_spec *f = r->f;
    uint32_t total = 1;
    for (uint32_t a = 0; a < f->axis_count; a++)
        total *= f->axes[a].value_count;
    if (total > MAX_POINTS)
        return fail_at(r, r->contribs[0].mark, "axes",
                       "%u combinations of axis values, more than the %d a family may have", total,
                       MAX_POINTS);
    f->points = qk_xcalloc(total, sizeof *f->points);
    uint32_t made = 0;
    for (uint32_t i = 0; i < total; i++) {
        qk_family_point *pt = &f->points[f->point_count++];
        uint32_t rest = i;
        for (uint32_t a = f->axis_count; a-- > 0;) {
            pt->value[a] = (uint8_t)(rest % f->axes[a].value_count);
            rest /= f->axes[a].value_count;
        }
        for (uint32_t x = 0; x < r->exclusion_count && !pt->excluded[0]; x++)
            if (qk_spec_when_matches(r->exclusions[x].when, pt->value, f->axis_count))
                snprintf(pt->excluded, sizeof pt->excluded, "%s", r->exclusions[x].reason);
        made += !pt->excluded[0];
    }
    if (!made)
        return fail_at(r, r->contribs[0].mark, "exclude",
                       "every combination of the axes is excluded");
    *kernels = qk_xrealloc(*kernels, sizeof **kernels * (*kernel_count + made));
    qk_kernel_spec *k = qk_xcalloc(1, sizeof *k);
    bool ok = true;
    for (uint32_t i = 0; ok && i < f->point_count; i++) {
        qk_family_point *pt = &f->points[i];
        ok = pt->excluded[0] ? point_name(r, pt->value, k) : expand_point(r, pt->value, k);
        snprintf(pt->kernel, sizeof pt->kernel, "%s", k->name);
        if (ok && !pt->excluded[0]) (*kernels)[(*kernel_count)++] = *k;
    }
    free(k);
    return ok;
}

static bool load_family(yw *w, qk_family_spec *f, qk_kernel_spec **kernels,
                        uint32_t *kernel_count) {
    family_reader r = {.w = w, .f = f};
    ynode *root = yw_root(w), *n;
    static const char *const keys[] = {"family",  "description", "axes", "cases",
                                       "exclude", CONTRIB_KEYS,  NULL};
    static const char *const req[] = {"family", "axes", NULL};
    bool ok = yw_check_map(w, root, "", keys, req) &&
              word_field(w, yw_get(w, root, "family"), "family", f->name, sizeof f->name, false);
    if (ok && (n = yw_get(w, root, "description")))
        ok = yw_str(w, n, "description", f->description, sizeof f->description);
    if (ok) {
        new_contrib(&r);
        ok = load_axes(&r, yw_get(w, root, "axes"));
        /* new_contrib moved the array: the family is element 0 */
        ok = ok && load_contrib(&r, &r.contribs[0], root, true);
    }
    if (ok && (n = yw_get(w, root, "cases"))) ok = load_cases(&r, n);
    if (ok && (n = yw_get(w, root, "exclude"))) ok = load_exclusions(&r, n);
    if (ok) {
        /* the family's own keys apply first, unconditionally */
        r.contribs[0].mark = yw_mark(yw_get(w, root, "family"));
        snprintf(r.contribs[0].where, sizeof r.contribs[0].where, "%s", "");
        ok = expand(&r, kernels, kernel_count);
    }
    free(r.contribs);
    return ok;
}

bool qk_family_spec_load(const char *path, qk_family_spec *out, qk_kernel_spec **kernels,
                         uint32_t *kernel_count, qk_error *e) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    yw w;
    if (!yw_open(&w, path, e)) return false;
    bool ok = load_family(&w, out, kernels, kernel_count);
    yw_close(&w);
    return ok;
}

void qk_family_spec_free(qk_family_spec *f) {
    free(f->points);
    memset(f, 0, sizeof *f);
}

bool qk_is_family_file(const char *path) {
    yw w;
    qk_error e = {0};
    if (!yw_open(&w, path, &e)) return false; /* the kernel reader reports it */
    ynode *root = yw_root(&w);
    bool family = root && yw_is_map(root) && yw_get(&w, root, "axes") != NULL;
    yw_close(&w);
    return family;
}
