/* The schemas of format and kernel specs, read with the strict YAML reader.
 * Checks here are those a single file can answer; cross-file checks (a
 * kernel naming an unknown format) belong to plan. */
#include "yamlw.h"

#include <ctype.h>
#include <errno.h>
#include <dirent.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    qk_type t;
    const char *name;
    uint32_t size;
} types[] = {
    {QK_TYPE_U8, "u8", 1},   {QK_TYPE_I8, "i8", 1},   {QK_TYPE_U16, "u16", 2},
    {QK_TYPE_I16, "i16", 2}, {QK_TYPE_F16, "f16", 2}, {QK_TYPE_BF16, "bf16", 2},
    {QK_TYPE_U32, "u32", 4}, {QK_TYPE_I32, "i32", 4}, {QK_TYPE_F32, "f32", 4},
};

const char *qk_type_name(qk_type t) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].t == t) return types[i].name;
    return "none";
}

uint32_t qk_type_size(qk_type t) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (types[i].t == t) return types[i].size;
    return 0;
}

qk_type qk_type_parse(const char *s) {
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        if (!strcmp(types[i].name, s)) return types[i].t;
    return QK_TYPE_NONE;
}

/* Names that become parts of GLSL identifiers and file names. */
static bool ident_ok(const char *s, bool braces) {
    if (!s[0] || isdigit((unsigned char)s[0])) return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_' && !(braces && (*s == '{' || *s == '}')))
            return false;
    return true;
}

static bool name_field(yw *w, ynode *n, const char *where, char *out, size_t size, bool braces) {
    if (!yw_str(w, n, where, out, size)) return false;
    if (!ident_ok(out, braces))
        return yw_fail(w, n, where,
                       "'%s' is not a name (letters, digits and '_', not starting with a digit)",
                       out);
    if (braces) { /* a pattern: every { closes before the next opens */
        int depth = 0;
        for (const char *c = out; *c; c++) {
            depth += *c == '{' ? 1 : *c == '}' ? -1 : 0;
            if (depth < 0 || depth > 1)
                return yw_fail(w, n, where, "'%s': unbalanced braces in the name pattern", out);
        }
        if (depth) return yw_fail(w, n, where, "'%s': unbalanced braces in the name pattern", out);
    }
    return true;
}

static bool type_field(yw *w, ynode *n, const char *where, qk_type *out) {
    char s[16];
    if (!yw_str(w, n, where, s, sizeof s)) return false;
    *out = qk_type_parse(s);
    if (*out == QK_TYPE_NONE)
        return yw_fail(w, n, where,
                       "unknown type '%s' (u8, i8, u16, i16, f16, bf16, u32, i32, f32)", s);
    return true;
}

/* ---------------------------------------------------------------- formats */

/* ------------------------------------------------- the declared reference */

/* A number of a spec (decimal, 0x hex, or a real with '.' or an exponent),
 * optionally negative; *is_int tells which. */
static bool number_field(yw *w, ynode *n, const char *where, bool *is_int, int64_t *iv,
                         double *rv) {
    char s[64];
    if (!yw_str(w, n, where, s, sizeof s)) return false;
    const char *p = s;
    bool neg = *p == '-';
    if (neg || *p == '+') p++;
    char *end;
    errno = 0;
    if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
        unsigned long long v = strtoull(p + 2, &end, 16);
        if (end == p + 2 || *end || errno) return yw_fail(w, n, where, "'%s' is not a number", s);
        *is_int = true;
        *iv = neg ? (int64_t)(0 - v) : (int64_t)v;
        *rv = neg ? -(double)v : (double)v;
        return true;
    }
    if (strpbrk(p, ".eE") || !strcmp(p, "inf") || !strcmp(p, "nan")) {
        double v = strtod(s, &end);
        if (*end || errno || v != v || v - v != 0)
            return yw_fail(w, n, where, "'%s' is not a finite number", s);
        *is_int = false;
        *rv = v;
        *iv = 0;
        return true;
    }
    unsigned long long v = strtoull(p, &end, 10);
    if (end == p || *end || errno) return yw_fail(w, n, where, "'%s' is not a number", s);
    if (neg && v > (1ull << 63)) return yw_fail(w, n, where, "'%s' is out of range", s);
    *is_int = true;
    *iv = neg ? (int64_t)(0 - v) : (int64_t)v;
    *rv = neg ? -(double)v : (double)v;
    return true;
}

/* One [lo, hi] range of a random hint. */
static bool random_range(yw *w, ynode *n, const char *where, double *lo, double *hi) {
    if (!yw_is_seq(n) || yw_seq_len(n) != 2)
        return yw_fail(w, n, where,
                       "expected [lo, hi] or a list of them: the range random data takes");
    bool is_int;
    int64_t iv;
    if (!number_field(w, yw_seq_at(w, n, 0), where, &is_int, &iv, lo) ||
        !number_field(w, yw_seq_at(w, n, 1), where, &is_int, &iv, hi))
        return false;
    if (*lo > *hi) return yw_fail(w, n, where, "lo %g is above hi %g", *lo, *hi);
    return true;
}

/* random: [lo, hi], or [[lo, hi], [lo, hi], ...] (an element takes one of
 * the ranges at random), of a field or plane. */
static bool random_hint(yw *w, ynode *n, const char *where, qk_random_hint *h) {
    if (!yw_is_seq(n) || !yw_seq_len(n))
        return yw_fail(w, n, where,
                       "expected [lo, hi] or a list of them: the range random data takes");
    if (!yw_is_seq(yw_seq_at(w, n, 0))) {
        h->count = 1;
        return random_range(w, n, where, &h->lo[0], &h->hi[0]);
    }
    if (yw_seq_len(n) > QK_MAX_RANDOM_RANGES)
        return yw_fail(w, n, where, "more than %d ranges", QK_MAX_RANDOM_RANGES);
    for (size_t i = 0; i < yw_seq_len(n); i++)
        if (!random_range(w, yw_seq_at(w, n, i), where, &h->lo[i], &h->hi[i])) return false;
    h->count = (uint32_t)yw_seq_len(n);
    return true;
}

/* The column where a scalar's text starts: one past an opening quote. */
static qk_mark text_mark(const ynode *n) {
    qk_mark m = yw_mark(n);
    if (n->type == YAML_SCALAR_NODE && (n->data.scalar.style == YAML_SINGLE_QUOTED_SCALAR_STYLE ||
                                        n->data.scalar.style == YAML_DOUBLE_QUOTED_SCALAR_STYLE))
        m.col++;
    return m;
}

static const struct {
    const char *name;
    int64_t lo, hi; /* hi < lo: u64, any 64-bit pattern */
} table_types[] = {
    {"u8", 0, 255},         {"i8", -128, 127},      {"u16", 0, 65535},
    {"i16", -32768, 32767}, {"u32", 0, 4294967295}, {"i32", -2147483648, 2147483647},
    {"u64", 1, 0},          {"f32", 0, 0},
};

static bool load_tables(yw *w, ynode *m, qk_format_spec *f) {
    if (!yw_is_map(m)) return yw_fail(w, m, "tables", "expected a mapping of tables by name");
    if (yw_map_len(m) > QK_MAX_TABLES)
        return yw_fail(w, m, "tables", "more than %d tables", QK_MAX_TABLES);
    static const char *const keys[] = {"type", "values", NULL};
    for (size_t i = 0; i < yw_map_len(m); i++) {
        qk_table_spec *t = &f->tables[f->table_count++];
        ynode *key = yw_map_key(w, m, i), *v = yw_map_value(w, m, i);
        if (!name_field(w, key, "tables", t->name, sizeof t->name, false)) return false;
        for (uint32_t j = 0; j + 1 < f->table_count; j++)
            if (!strcmp(f->tables[j].name, t->name))
                return yw_fail(w, key, "tables", "duplicate table '%s'", t->name);
        t->mark = yw_mark(key);
        char where[96], wt[112], wv[160];
        snprintf(where, sizeof where, "tables.%s", t->name);
        snprintf(wt, sizeof wt, "%s.type", where);
        if (!yw_check_map(w, v, where, keys, keys) ||
            !yw_str(w, yw_get(w, v, "type"), wt, t->type, sizeof t->type))
            return false;
        int ty = -1;
        for (size_t k = 0; k < sizeof table_types / sizeof table_types[0]; k++)
            if (!strcmp(table_types[k].name, t->type)) ty = (int)k;
        if (ty < 0)
            return yw_fail(w, yw_get(w, v, "type"), wt,
                           "unknown table type '%s' (u8, i8, u16, i16, u32, i32, u64, f32)",
                           t->type);
        ynode *vals = yw_get(w, v, "values");
        if (!yw_is_seq(vals) || !yw_seq_len(vals))
            return yw_fail(w, vals, where, "values: expected a list of numbers");
        if (f->table_value_count + yw_seq_len(vals) > QK_MAX_TABLE_VALUES)
            return yw_fail(w, vals, where, "the tables hold more than %d values together",
                           QK_MAX_TABLE_VALUES);
        t->first = f->table_value_count;
        for (size_t k = 0; k < yw_seq_len(vals); k++) {
            ynode *item = yw_seq_at(w, vals, k);
            snprintf(wv, sizeof wv, "%s.values[%zu]", where, k);
            bool is_int;
            int64_t iv;
            double rv;
            if (!number_field(w, item, wv, &is_int, &iv, &rv)) return false;
            int64_t *dst = &f->table_values[f->table_value_count++];
            if (!strcmp(t->type, "f32")) {
                memcpy(dst, &rv, sizeof rv);
                continue;
            }
            if (!is_int) return yw_fail(w, item, wv, "a %s table holds integers", t->type);
            bool u64 = table_types[ty].hi < table_types[ty].lo;
            if (!u64 && (iv < table_types[ty].lo || iv > table_types[ty].hi))
                return yw_fail(w, item, wv, "%lld is out of range %lld..%lld for %s", (long long)iv,
                               (long long)table_types[ty].lo, (long long)table_types[ty].hi,
                               t->type);
            *dst = iv;
        }
        t->count = (uint32_t)yw_seq_len(vals);
    }
    return true;
}

static bool ref_text(yw *w, ynode *n, const char *where, qk_ref_expr *x) {
    x->mark = text_mark(n);
    return yw_str(w, n, where, x->text, sizeof x->text);
}

static bool load_reference(yw *w, ynode *m, qk_format_spec *f) {
    static const char *const keys[] = {"let", "value", NULL};
    static const char *const req[] = {"value", NULL};
    if (!yw_check_map(w, m, "reference", keys, req)) return false;
    f->has_reference = true;
    f->reference_mark = yw_mark(m);
    ynode *let = yw_get(w, m, "let");
    if (let) {
        if (!yw_is_map(let))
            return yw_fail(w, let, "reference.let",
                           "expected a mapping of names to expressions, evaluated in order");
        if (yw_map_len(let) > QK_MAX_LETS)
            return yw_fail(w, let, "reference.let", "more than %d lets", QK_MAX_LETS);
        for (size_t i = 0; i < yw_map_len(let); i++) {
            qk_ref_expr *x = &f->lets[f->let_count++];
            ynode *key = yw_map_key(w, let, i);
            if (!name_field(w, key, "reference.let", x->name, sizeof x->name, false)) return false;
            for (uint32_t j = 0; j + 1 < f->let_count; j++)
                if (!strcmp(f->lets[j].name, x->name))
                    return yw_fail(w, key, "reference.let", "duplicate let '%s'", x->name);
            char where[96];
            snprintf(where, sizeof where, "reference.let.%s", x->name);
            if (!ref_text(w, yw_map_value(w, let, i), where, x)) return false;
        }
    }
    snprintf(f->value.name, sizeof f->value.name, "value");
    return ref_text(w, yw_get(w, m, "value"), "reference.value", &f->value);
}

static bool load_fields(yw *w, ynode *seq, qk_format_spec *f) {
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "fields", "expected a list of fields");
    if (yw_seq_len(seq) == 0) return yw_fail(w, seq, "fields", "the list is empty");
    if (yw_seq_len(seq) > QK_MAX_FIELDS) return yw_fail(w, seq, "fields", "too many fields");
    static const char *const keys[] = {"name", "type", "count", "random", NULL};
    static const char *const req[] = {"name", "type", NULL};
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char where[64], wn[80], wt[80], wc[80];
        snprintf(where, sizeof where, "fields[%zu]", i);
        snprintf(wn, sizeof wn, "%s.name", where);
        snprintf(wt, sizeof wt, "%s.type", where);
        snprintf(wc, sizeof wc, "%s.count", where);
        qk_field_spec *fs = &f->fields[f->field_count++];
        fs->mark = yw_mark(m);
        fs->count = 1;
        if (!yw_check_map(w, m, where, keys, req)) return false;
        if (!name_field(w, yw_get(w, m, "name"), wn, fs->name, sizeof fs->name, false))
            return false;
        if (!type_field(w, yw_get(w, m, "type"), wt, &fs->type)) return false;
        ynode *c = yw_get(w, m, "count");
        if (c && !yw_uint(w, c, wc, 1, 4096, &fs->count)) return false;
        ynode *r = yw_get(w, m, "random");
        char wr[80];
        snprintf(wr, sizeof wr, "%s.random", where);
        if (r && !random_hint(w, r, wr, &fs->random)) return false;
        for (uint32_t j = 0; j + 1 < f->field_count; j++)
            if (!strcmp(f->fields[j].name, fs->name))
                return yw_fail(w, m, where, "duplicate field '%s'", fs->name);
    }
    return true;
}

static bool load_params(yw *w, ynode *m, qk_format_spec *f) {
    if (!yw_is_map(m)) return yw_fail(w, m, "params", "expected a mapping of parameter lists");
    if (yw_map_len(m) > QK_MAX_PARAMS) return yw_fail(w, m, "params", "too many parameters");
    for (size_t i = 0; i < yw_map_len(m); i++) {
        qk_param_spec *p = &f->params[f->param_count++];
        if (!name_field(w, yw_map_key(w, m, i), "params", p->name, sizeof p->name, false))
            return false;
        for (uint32_t j = 0; j + 1 < f->param_count; j++)
            if (!strcmp(f->params[j].name, p->name))
                return yw_fail(w, yw_map_key(w, m, i), "params", "duplicate parameter '%s'",
                               p->name);
        char where[96];
        snprintf(where, sizeof where, "params.%s", p->name);
        if (!yw_str_list(w, yw_map_value(w, m, i), where, p->values[0], sizeof p->values[0],
                         QK_MAX_LIST, &p->count))
            return false;
    }
    return true;
}

static bool load_planes(yw *w, ynode *seq, qk_format_spec *f) {
    if (!yw_is_seq(seq) || yw_seq_len(seq) == 0 || yw_seq_len(seq) > 4)
        return yw_fail(w, seq, "planes", "expected a list of 1 to 4 planes");
    static const char *const keys[] = {"name", "type", "per_group", "random", NULL};
    static const char *const req[] = {"name", "type", "per_group", NULL};
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char where[64], wr[80];
        snprintf(where, sizeof where, "planes[%zu]", i);
        snprintf(wr, sizeof wr, "%s.random", where);
        qk_plane_spec *p = &f->planes[f->plane_count++];
        if (!yw_check_map(w, m, where, keys, req)) return false;
        if (yw_get(w, m, "random") && !random_hint(w, yw_get(w, m, "random"), wr, &p->random))
            return false;
        if (!name_field(w, yw_get(w, m, "name"), where, p->name, sizeof p->name, false) ||
            !yw_str(w, yw_get(w, m, "type"), where, p->type, sizeof p->type) ||
            !yw_intexpr(w, yw_get(w, m, "per_group"), where, &p->per_group))
            return false;
        for (uint32_t j = 0; j + 1 < f->plane_count; j++)
            if (!strcmp(f->planes[j].name, p->name))
                return yw_fail(w, m, where, "duplicate plane '%s'", p->name);
        qk_type t = qk_type_parse(p->type);
        bool is_param = false;
        for (uint32_t j = 0; j < f->param_count; j++)
            is_param |= !strcmp(f->params[j].name, p->type);
        if (!is_param && t != QK_TYPE_U32 && t != QK_TYPE_F32 && t != QK_TYPE_F16 &&
            t != QK_TYPE_BF16 && t != QK_TYPE_U8)
            return yw_fail(w, yw_get(w, m, "type"), where,
                           "plane type '%s' must be u32, f32, f16, bf16, u8 or a parameter",
                           p->type);
    }
    return true;
}

static bool load_format(yw *w, qk_format_spec *f) {
    ynode *root = yw_root(w);
    static const char *const keys[] = {
        "format",   "description", "layout",      "params",   "block",         "fields",
        "planes",   "sub",         "dequant",     "c_struct", "shared_memory", "shared_memory_dot8",
        "int8_dot", "parts",       "full_search", "tables",   "reference",     NULL};
    static const char *const req[] = {"format", "block", "sub", "dequant", NULL};
    if (!yw_check_map(w, root, "", keys, req)) return false;
    ynode *n;
    if (!name_field(w, yw_get(w, root, "format"), "format", f->name, sizeof f->name, true))
        return false;
    if ((n = yw_get(w, root, "description")) &&
        !yw_str(w, n, "description", f->description, sizeof f->description))
        return false;
    f->layout = QK_LAYOUT_BLOCK;
    if ((n = yw_get(w, root, "layout"))) {
        char s[16];
        if (!yw_str(w, n, "layout", s, sizeof s)) return false;
        if (!strcmp(s, "planar"))
            f->layout = QK_LAYOUT_PLANAR;
        else if (strcmp(s, "block"))
            return yw_fail(w, n, "layout", "'%s' is not a layout (block or planar)", s);
    }
    if ((n = yw_get(w, root, "params")) && !load_params(w, n, f)) return false;
    if (strchr(f->name, '{') && !f->param_count)
        return yw_fail(w, yw_get(w, root, "format"), "format",
                       "the name is a pattern but the format has no params");
    for (const char *c = strchr(f->name, '{'); c; c = strchr(c + 1, '{')) {
        const char *end = strchr(c, '}');
        bool known = false;
        for (uint32_t i = 0; i < f->param_count && !known; i++)
            known = strlen(f->params[i].name) == (size_t)(end - c - 1) &&
                    !strncmp(f->params[i].name, c + 1, (size_t)(end - c - 1));
        if (!known)
            return yw_fail(w, yw_get(w, root, "format"), "format",
                           "the pattern uses {%.*s}, which is not a parameter", (int)(end - c - 1),
                           c + 1);
    }

    ynode *blk = yw_get(w, root, "block");
    static const char *const bkeys[] = {"elements", "bytes", NULL};
    static const char *const breq_block[] = {"elements", "bytes", NULL};
    static const char *const breq_planar[] = {"elements", NULL};
    if (!yw_check_map(w, blk, "block", bkeys,
                      f->layout == QK_LAYOUT_BLOCK ? breq_block : breq_planar))
        return false;
    if (!yw_intexpr(w, yw_get(w, blk, "elements"), "block.elements", &f->elements)) return false;
    if ((n = yw_get(w, blk, "bytes")) && !yw_intexpr(w, n, "block.bytes", &f->bytes)) return false;

    ynode *fields = yw_get(w, root, "fields"), *planes = yw_get(w, root, "planes");
    if (f->layout == QK_LAYOUT_BLOCK) {
        if (!fields) return yw_fail(w, root, "", "missing required key 'fields' (block layout)");
        if (planes)
            return yw_fail(w, yw_get_key(w, root, "planes"), "planes",
                           "only planar formats have planes");
        if (!load_fields(w, fields, f)) return false;
        uint32_t sum = 0;
        for (uint32_t i = 0; i < f->field_count; i++)
            sum += qk_type_size(f->fields[i].type) * f->fields[i].count;
        char *end;
        long bytes = strtol(f->bytes.text, &end, 10);
        if (!*end && bytes != (long)sum)
            return yw_fail(w, yw_get(w, blk, "bytes"), "block.bytes",
                           "%ld does not match the fields, which add up to %u bytes", bytes, sum);
    } else {
        if (!planes) return yw_fail(w, root, "", "missing required key 'planes' (planar layout)");
        if (fields)
            return yw_fail(w, yw_get_key(w, root, "fields"), "fields",
                           "planar formats have planes, not fields");
        if (yw_get(w, blk, "bytes"))
            return yw_fail(w, yw_get_key(w, blk, "bytes"), "block.bytes",
                           "planar formats have no block bytes (the planes give the sizes)");
        if (!load_planes(w, planes, f)) return false;
    }

    ynode *sub = yw_get(w, root, "sub");
    static const char *const skeys[] = {"elements", "runs", NULL};
    static const char *const sreq[] = {"elements", NULL};
    if (!yw_check_map(w, sub, "sub", skeys, sreq) ||
        !yw_intexpr(w, yw_get(w, sub, "elements"), "sub.elements", &f->sub_elements))
        return false;
    f->sub_run = 1;
    if ((n = yw_get(w, sub, "runs")) && !yw_uint(w, n, "sub.runs", 1, 64, &f->sub_run))
        return false;
    if (f->sub_run & (f->sub_run - 1))
        return yw_fail(w, n, "sub.runs", "%u is not a power of two", f->sub_run);
    if (!yw_str(w, yw_get(w, root, "dequant"), "dequant", f->dequant, sizeof f->dequant))
        return false;
    if ((n = yw_get(w, root, "shared_memory")) &&
        !yw_uint(w, n, "shared_memory", 0, 49152, &f->shared_memory))
        return false;
    if ((n = yw_get(w, root, "shared_memory_dot8")) &&
        !yw_uint(w, n, "shared_memory_dot8", 0, 49152, &f->shared_memory_dot8))
        return false;
    if ((n = yw_get(w, root, "int8_dot")) && !yw_bool(w, n, "int8_dot", &f->int8_dot)) return false;
    f->parts = 1;
    if ((n = yw_get(w, root, "parts"))) {
        if (!yw_uint(w, n, "parts", 1, 16, &f->parts)) return false;
        if (f->parts & (f->parts - 1))
            return yw_fail(w, n, "parts", "%u is not a power of two", f->parts);
        if (!f->int8_dot)
            return yw_fail(w, n, "parts",
                           "only the int8-dot kernels stage parts of a block: parts needs "
                           "int8_dot: true");
    }
    if ((n = yw_get(w, root, "full_search")) && !yw_intexpr(w, n, "full_search", &f->full_search))
        return false;
    if ((n = yw_get(w, root, "c_struct"))) {
        static const char *const ckeys[] = {"header", "name", NULL};
        if (!yw_check_map(w, n, "c_struct", ckeys, ckeys) ||
            !yw_str(w, yw_get(w, n, "header"), "c_struct.header", f->c_header,
                    sizeof f->c_header) ||
            !name_field(w, yw_get(w, n, "name"), "c_struct.name", f->c_struct, sizeof f->c_struct,
                        false))
            return false;
        f->c_struct_mark = yw_mark(n);
        if (f->layout != QK_LAYOUT_BLOCK)
            return yw_fail(w, n, "c_struct",
                           "only block formats can be checked against a C struct");
    }
    if ((n = yw_get(w, root, "tables")) && !load_tables(w, n, f)) return false;
    if ((n = yw_get(w, root, "reference")) && !load_reference(w, n, f)) return false;
    return true;
}

bool qk_format_spec_load(const char *path, qk_format_spec *out, qk_error *e) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    yw w;
    if (!yw_open(&w, path, e)) return false;
    bool ok = load_format(&w, out);
    yw_close(&w);
    return ok;
}

/* ---------------------------------------------------------------- kernels */

bool qk_spec_binding(yw *w, ynode *m, const char *where, qk_binding_spec *b) {
    static const char *const keys[] = {"name", "role", "type", "access", "count", "size", NULL};
    static const char *const req[] = {"name", "role", "type", "access", NULL};
    b->count = 1;
    if (!yw_check_map(w, m, where, keys, req)) return false;
    if (!name_field(w, yw_get(w, m, "name"), where, b->name, sizeof b->name, false) ||
        !name_field(w, yw_get(w, m, "role"), where, b->role, sizeof b->role, false) ||
        !yw_str(w, yw_get(w, m, "type"), where, b->type, sizeof b->type))
        return false;
    if (strcmp(b->type, "act") && qk_type_parse(b->type) != QK_TYPE_F32 &&
        qk_type_parse(b->type) != QK_TYPE_U32 && qk_type_parse(b->type) != QK_TYPE_I32)
        return yw_fail(w, yw_get(w, m, "type"), where,
                       "binding type '%s' must be act, f32, u32 or i32", b->type);
    char acc[16];
    ynode *a = yw_get(w, m, "access");
    if (!yw_str(w, a, where, acc, sizeof acc)) return false;
    if (!strcmp(acc, "read"))
        b->writable = false;
    else if (!strcmp(acc, "write") || !strcmp(acc, "readwrite"))
        b->writable = true;
    else
        return yw_fail(w, a, where, "access '%s' must be read, write or readwrite", acc);
    ynode *c = yw_get(w, m, "count");
    if (c && !yw_uint(w, c, where, 1, 8, &b->count)) return false;
    ynode *sz = yw_get(w, m, "size");
    if (sz && !yw_expr(w, sz, where, QK_EXPR_VALUE, b->size, sizeof b->size)) return false;
    return true;
}

static bool load_bindings(yw *w, ynode *seq, qk_binding_spec *out, uint32_t *count, uint32_t cap) {
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "bindings", "expected a list of bindings");
    if (yw_seq_len(seq) > cap) return yw_fail(w, seq, "bindings", "more than %u bindings", cap);
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char where[64];
        snprintf(where, sizeof where, "bindings[%zu]", i);
        qk_binding_spec *b = &out[(*count)++];
        if (!qk_spec_binding(w, m, where, b)) return false;
        for (uint32_t j = 0; j + 1 < *count; j++)
            if (!strcmp(out[j].name, b->name))
                return yw_fail(w, yw_get(w, m, "name"), where, "duplicate binding '%s'", b->name);
    }
    return true;
}

/* Features a spec may ask for: those docs/manifest.md defines. */
static bool load_features(yw *w, ynode *n, char (*out)[32], uint32_t *count) {
    static const char *const known[] = {"subgroup_arithmetic",
                                        "subgroup_shuffle",
                                        "storage_8bit",
                                        "storage_16bit",
                                        "float16",
                                        "int8",
                                        "int64",
                                        "cooperative_matrix_nv",
                                        "cooperative_matrix_khr",
                                        "dynamic_indexing",
                                        "integer_dot_product",
                                        NULL};
    if (!yw_str_list(w, n, "features", out[0], sizeof out[0], 8, count)) return false;
    for (uint32_t i = 0; i < *count; i++) {
        bool ok = false;
        for (const char *const *k = known; *k && !ok; k++)
            ok = !strcmp(*k, out[i]);
        if (!ok)
            return yw_fail(w, yw_list_item(w, n, i), "features",
                           "unknown feature '%s' (see docs/manifest.md)", out[i]);
    }
    return true;
}

/* staged: true (registers), false, shared or reference */
static bool load_staged(yw *w, ynode *n, qk_staging *out) {
    char s[16];
    if (!yw_str(w, n, "staged", s, sizeof s)) return false;
    if (!strcmp(s, "true") || !strcmp(s, "registers"))
        *out = QK_STAGED_REGISTERS;
    else if (!strcmp(s, "false"))
        *out = QK_STAGED_NONE;
    else if (!strcmp(s, "shared"))
        *out = QK_STAGED_SHARED;
    else if (!strcmp(s, "reference"))
        *out = QK_STAGED_REFERENCE;
    else
        return yw_fail(w, n, "staged",
                       "expected true, false, registers, shared or reference, got %s", s);
    return true;
}

bool qk_spec_rule(yw *w, ynode *m, const char *where, qk_rule_spec *r) {
    r->mark = yw_mark(m);
    return yw_expr(w, yw_get(w, m, "check"), where, QK_EXPR_VALUE, r->check, sizeof r->check) &&
           yw_str(w, yw_get(w, m, "reason"), where, r->reason, sizeof r->reason);
}

static bool load_rules(yw *w, ynode *seq, qk_kernel_spec *k) {
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "rules", "expected a list of rules");
    if (yw_seq_len(seq) > QK_MAX_KERNEL_RULES) return yw_fail(w, seq, "rules", "too many rules");
    static const char *const keys[] = {"check", "reason", NULL};
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char where[64];
        snprintf(where, sizeof where, "rules[%zu]", i);
        if (!yw_check_map(w, m, where, keys, keys) ||
            !qk_spec_rule(w, m, where, &k->rules[k->rule_count++]))
            return false;
    }
    return true;
}

/* partial (a family's axis value or case): any of the parameters */
static bool load_tile(yw *w, ynode *t, qk_kernel_spec *k, bool partial) {
    static const char *const keys[] = {"NR0", "NR1", "NK", "WG", "TPR", "SK", NULL};
    static const char *const req[] = {"NR0", "NR1", "NK", "WG", NULL};
    if (!yw_check_map(w, t, "tile", keys, partial ? NULL : req)) return false;
    static const struct {
        const char *key, *where;
        uint32_t max;
        size_t list, count;
    } params[] = {
        {"TPR", "tile.TPR", 1024, offsetof(qk_kernel_spec, tpr),
         offsetof(qk_kernel_spec, tpr_count)},
        {"SK", "tile.SK", 64, offsetof(qk_kernel_spec, sk), offsetof(qk_kernel_spec, sk_count)},
        {"NR0", "tile.NR0", 256, offsetof(qk_kernel_spec, nr0),
         offsetof(qk_kernel_spec, nr0_count)},
        {"NR1", "tile.NR1", 256, offsetof(qk_kernel_spec, nr1),
         offsetof(qk_kernel_spec, nr1_count)},
        {"NK", "tile.NK", 4096, offsetof(qk_kernel_spec, nk), offsetof(qk_kernel_spec, nk_count)},
        {"WG", "tile.WG", 1024, offsetof(qk_kernel_spec, wg), offsetof(qk_kernel_spec, wg_count)},
    };
    for (size_t i = 0; i < sizeof params / sizeof params[0]; i++) {
        ynode *n = yw_get(w, t, params[i].key);
        if (n && !yw_uint_list(w, n, params[i].where, 1, params[i].max,
                               (uint32_t *)((char *)k + params[i].list), QK_MAX_LIST,
                               (uint32_t *)((char *)k + params[i].count)))
            return false;
    }
    return true;
}

const char *qk_tile_param_name(qk_tile_param p) {
    static const char *const names[] = {"WG", "NR0", "NR1", "NK", "TPR", "SK", "INSTANCE"};
    return p < QK_SPEC_COUNT ? names[p] : "?";
}

qk_tile_param qk_tile_param_parse(const char *s) {
    for (int p = 0; p < QK_TILE_COUNT; p++)
        if (!strcmp(s, qk_tile_param_name((qk_tile_param)p))) return (qk_tile_param)p;
    return QK_TILE_COUNT;
}

/* specialize: [WG, NR1, ...]: which tile parameters one module leaves to
 * pipeline creation. TPR and SK must be axes of the kernel to be named. */
static bool load_specialize(yw *w, ynode *n, qk_kernel_spec *k, bool partial) {
    char names[QK_TILE_COUNT + 1][8];
    uint32_t count;
    if (!yw_str_list(w, n, "specialize", names[0], sizeof names[0], QK_TILE_COUNT, &count))
        return false;
    for (uint32_t i = 0; i < count; i++) {
        qk_tile_param p = qk_tile_param_parse(names[i]);
        ynode *item = yw_list_item(w, n, i);
        if (p == QK_TILE_COUNT)
            return yw_fail(w, item, "specialize",
                           "'%s' is not a tile parameter (WG, NR0, NR1, NK, TPR or SK)", names[i]);
        if (!partial && ((p == QK_TILE_TPR && !k->tpr_count) || (p == QK_TILE_SK && !k->sk_count)))
            return yw_fail(w, item, "specialize", "'%s' is not an axis of this kernel's tile",
                           names[i]);
        if (k->specialize & (1u << p))
            return yw_fail(w, item, "specialize", "'%s' is listed twice", names[i]);
        if (p == QK_TILE_NK && k->staged && k->staged != QK_STAGED_REFERENCE && !partial)
            return yw_fail(w, item, "specialize",
                           "NK sizes a staged kernel's chunk of words (QK_STAGE_WORDS), which the "
                           "generator computes: it cannot be a specialization constant");
        k->specialize |= 1u << p;
    }
    return true;
}

/* literals: { NAME: expression, ... }, in order: values over the tile that
 * the template's instance region takes as literals; each may use the ones
 * before it. */
static bool load_literals(yw *w, ynode *n, qk_kernel_spec *k) {
    if (!yw_is_map(n))
        return yw_fail(w, n, "literals", "expected a mapping of names to expressions");
    size_t count = yw_map_len(n);
    if (count > QK_MAX_LITERALS)
        return yw_fail(w, n, "literals", "more than %d values", QK_MAX_LITERALS);
    k->literal_count = 0;
    uint32_t values = 0;
    for (size_t i = 0; i < count; i++) {
        qk_literal_spec *l = &k->literals[k->literal_count];
        ynode *key = yw_map_key(w, n, i);
        if (!yw_str(w, key, "literals", l->name, sizeof l->name)) return false;
        if (!ident_ok(l->name, false))
            return yw_fail(w, key, "literals", "'%s' is not a name (it becomes a GLSL #define)",
                           l->name);
        for (uint32_t j = 0; j < k->literal_count; j++)
            if (!strcmp(k->literals[j].name, l->name))
                return yw_fail(w, key, "literals", "'%s' is listed twice", l->name);
        char where[64];
        snprintf(where, sizeof where, "literals.%s", l->name);
        if (!yw_expr(w, yw_map_value(w, n, i), where, QK_EXPR_VALUE, l->value, sizeof l->value))
            return false;
        l->mark = yw_mark(yw_map_value(w, n, i));
        k->literal_count++;
        if (l->name[0] != '_' && ++values > QK_MAX_LITERAL_VALUES)
            return yw_fail(w, key, "literals",
                           "more than %d values compiled in (names not starting with _)",
                           QK_MAX_LITERAL_VALUES);
    }
    return true;
}

/* The keys a kernel spec shares with a family's axis values and cases; with
 * partial every key is optional and bindings, grid, rules and shared_memory
 * are left to the family's reader (their forms differ there). */
bool qk_spec_kernel_keys(yw *w, ynode *root, qk_kernel_spec *k, bool partial) {
    ynode *n;
    if ((n = yw_get(w, root, "template"))) {
        if (!yw_str(w, n, "template", k->template_name, sizeof k->template_name)) return false;
        k->template_mark = yw_mark(n);
    }
    if ((n = yw_get(w, root, "formats"))) {
        k->formats_mark = yw_mark(n);
        k->format_count = 0;
        if (!yw_str_list(w, n, "formats", k->formats[0], sizeof k->formats[0], QK_MAX_LIST,
                         &k->format_count))
            return false;
    }
    if ((n = yw_get(w, root, "activations"))) {
        k->activation_count = 0;
        if (!yw_str_list(w, n, "activations", k->activations[0], sizeof k->activations[0], 4,
                         &k->activation_count))
            return false;
        for (uint32_t i = 0; i < k->activation_count; i++)
            if (strcmp(k->activations[i], "f32") && strcmp(k->activations[i], "f16"))
                return yw_fail(w, yw_list_item(w, n, i), "activations",
                               "'%s' is not an activation type (f32 or f16)", k->activations[i]);
    }
    if ((n = yw_get(w, root, "tile"))) {
        if (!load_tile(w, n, k, partial)) return false;
        k->tile_mark = yw_mark(n);
    }
    if ((n = yw_get(w, root, "weights")) && !yw_uint(w, n, "weights", 0, 8, &k->weights))
        return false;
    if ((n = yw_get(w, root, "min_subgroup_size"))) {
        if (!yw_uint(w, n, "min_subgroup_size", 1, 128, &k->min_subgroup_size)) return false;
        if (k->min_subgroup_size & (k->min_subgroup_size - 1))
            return yw_fail(w, n, "min_subgroup_size", "%u is not a power of two",
                           k->min_subgroup_size);
    }
    if (!partial && !load_bindings(w, yw_get(w, root, "bindings"), k->bindings, &k->binding_count,
                                   QK_MAX_BINDINGS - 8))
        return false;
    if ((n = yw_get(w, root, "push_constants"))) {
        if (!yw_str_list(w, n, "push_constants", k->push[0], sizeof k->push[0], QK_MAX_LIST,
                         &k->push_count))
            return false;
        for (uint32_t i = 0; i < k->push_count; i++)
            if (!ident_ok(k->push[i], false))
                return yw_fail(w, yw_list_item(w, n, i), "push_constants",
                               "'%s' is not a name (it becomes a GLSL identifier)", k->push[i]);
    }
    if (!partial) {
        n = yw_get(w, root, "grid");
        if (!yw_is_seq(n) || yw_seq_len(n) != 3)
            return yw_fail(w, n, "grid", "expected a list of three expressions (x, y, z)");
        for (int i = 0; i < 3; i++)
            if (!yw_expr(w, yw_seq_at(w, n, (size_t)i), "grid", QK_EXPR_VALUE, k->grid[i],
                         sizeof k->grid[i]))
                return false;
    }
    if (!partial && (n = yw_get(w, root, "shared_memory")) &&
        !yw_expr(w, n, "shared_memory", QK_EXPR_VALUE, k->shared_memory, sizeof k->shared_memory))
        return false;
    if ((n = yw_get(w, root, "constraints")) &&
        !yw_str_list(w, n, "constraints", k->constraints[0], sizeof k->constraints[0], QK_MAX_RULES,
                     &k->constraint_count))
        return false;
    for (uint32_t i = 0; n && i < k->constraint_count; i++) { /* what qkrt_eval_bool takes */
        qk_error ce = {0};
        if (!qk_expr_check(k->constraints[i], "constraint", QK_EXPR_CONDITION, &ce))
            return yw_fail(w, yw_list_item(w, n, i), "constraints", "%s", ce.msg);
    }
    if (!partial && (n = yw_get(w, root, "rules")) && !load_rules(w, n, k)) return false;
    if ((n = yw_get(w, root, "features")) && !load_features(w, n, k->features, &k->feature_count))
        return false;
    if ((n = yw_get(w, root, "staged")) && !load_staged(w, n, &k->staged)) return false;
    if ((n = yw_get(w, root, "specialize")) && !load_specialize(w, n, k, partial)) return false;
    if ((n = yw_get(w, root, "literals")) && !load_literals(w, n, k)) return false;
    if ((n = yw_get(w, root, "mma"))) {
        k->mma_count = 0;
        if (!yw_str_list(w, n, "mma", k->mma[0], sizeof k->mma[0], 4, &k->mma_count)) return false;
        for (uint32_t i = 0; i < k->mma_count; i++)
            if (strcmp(k->mma[i], "scalar") && strcmp(k->mma[i], "coopmat") &&
                strcmp(k->mma[i], "coopmat_khr") && strcmp(k->mma[i], "coopmat2_nv") &&
                strcmp(k->mma[i], "dot8"))
                return yw_fail(w, n, "mma",
                               "'%s' is not a math path (scalar, coopmat, coopmat_khr, coopmat2_nv "
                               "or dot8)",
                               k->mma[i]);
    }
    if ((n = yw_get(w, root, "fusions"))) {
        k->fusions_mark = yw_mark(n);
        k->fusion_count = 0;
        if (!yw_str_list(w, n, "fusions", k->fusions[0], sizeof k->fusions[0], 8, &k->fusion_count))
            return false;
    }
    return true;
}

static bool load_kernel(yw *w, qk_kernel_spec *k) {
    ynode *root = yw_root(w);
    static const char *const keys[] = {"kernel",      "family",
                                       "description", "template",
                                       "formats",     "activations",
                                       "tile",        "weights",
                                       "bindings",    "push_constants",
                                       "grid",        "shared_memory",
                                       "constraints", "rules",
                                       "features",    "min_subgroup_size",
                                       "mma",         "fusions",
                                       "staged",      "specialize",
                                       "literals",    NULL};
    static const char *const req[] = {"kernel",      "family", "template", "formats",
                                      "activations", "tile",   "bindings", "push_constants",
                                      "grid",        NULL};
    if (!yw_check_map(w, root, "", keys, req)) return false;
    ynode *n;
    if (!name_field(w, yw_get(w, root, "kernel"), "kernel", k->name, sizeof k->name, false) ||
        !name_field(w, yw_get(w, root, "family"), "family", k->family, sizeof k->family, false))
        return false;
    if ((n = yw_get(w, root, "description")) &&
        !yw_str(w, n, "description", k->description, sizeof k->description))
        return false;
    k->weights = 1;
    k->min_subgroup_size = 1;
    snprintf(k->shared_memory, sizeof k->shared_memory, "0");
    return qk_spec_kernel_keys(w, root, k, false);
}

static bool load_fusion(yw *w, qk_fusion_spec *f) {
    ynode *root = yw_root(w), *n;
    static const char *const keys[] = {"fusion",   "description", "stage",
                                       "weights",  "bindings",    "push_constants",
                                       "features", "constraints", NULL};
    static const char *const req[] = {"fusion", "stage", NULL};
    if (!yw_check_map(w, root, "", keys, req) ||
        !name_field(w, yw_get(w, root, "fusion"), "fusion", f->name, sizeof f->name, false) ||
        !yw_str(w, yw_get(w, root, "stage"), "stage", f->stage, sizeof f->stage))
        return false;
    if (!strcmp(f->name, "none"))
        return yw_fail(w, yw_get(w, root, "fusion"), "fusion", "'none' is reserved");
    if (strlen(f->name) > 23) /* a select rule's op, family/fusion, keeps 23 of each */
        return yw_fail(w, yw_get(w, root, "fusion"), "fusion", "'%s' is longer than 23 characters",
                       f->name);
    if ((n = yw_get(w, root, "description")) &&
        !yw_str(w, n, "description", f->description, sizeof f->description))
        return false;
    if ((n = yw_get(w, root, "weights")) && !yw_uint(w, n, "weights", 0, 8, &f->weights))
        return false;
    if ((n = yw_get(w, root, "bindings")) &&
        !load_bindings(w, n, f->bindings, &f->binding_count, 8))
        return false;
    if ((n = yw_get(w, root, "push_constants")) &&
        !yw_str_list(w, n, "push_constants", f->push[0], sizeof f->push[0], 8, &f->push_count))
        return false;
    if ((n = yw_get(w, root, "features")) && !load_features(w, n, f->features, &f->feature_count))
        return false;
    if ((n = yw_get(w, root, "constraints")) &&
        !yw_str_list(w, n, "constraints", f->constraints[0], sizeof f->constraints[0], 8,
                     &f->constraint_count))
        return false;
    for (uint32_t i = 0; i < f->constraint_count; i++) {
        qk_error ce = {0};
        if (!qk_expr_check(f->constraints[i], "constraint", QK_EXPR_CONDITION, &ce))
            return yw_fail(w, yw_list_item(w, n, i), "constraints", "%s", ce.msg);
    }
    return true;
}

bool qk_fusion_spec_load(const char *path, qk_fusion_spec *out, qk_error *e) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    yw w;
    if (!yw_open(&w, path, e)) return false;
    bool ok = load_fusion(&w, out);
    yw_close(&w);
    return ok;
}

bool qk_kernel_spec_load(const char *path, qk_kernel_spec *out, qk_error *e) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    yw w;
    if (!yw_open(&w, path, e)) return false;
    bool ok = load_kernel(&w, out);
    yw_close(&w);
    return ok;
}

/* ---------------------------------------------------------------- folders */

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted *.yaml names in dir; a missing folder is an empty list. */
static char **yaml_files(const char *dir, uint32_t *n) {
    *n = 0;
    DIR *d = opendir(dir);
    if (!d) return NULL;
    char **names = NULL;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 6 || strcmp(ent->d_name + len - 5, ".yaml")) continue;
        names = qk_xrealloc(names, sizeof *names * (*n + 1));
        names[(*n)++] = qk_path_join(dir, ent->d_name);
    }
    closedir(d);
    if (*n) qsort(names, *n, sizeof *names, cmp_str);
    return names;
}

static void free_names(char **names, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

bool qk_format_specs_load(const char *dir, qk_format_spec **out, uint32_t *count, qk_error *e) {
    *out = NULL;
    *count = 0;
    if (!qk_is_dir(dir)) {
        qk_error_set(e, "%s: no such spec folder", dir);
        return false;
    }
    char *fdir = qk_path_join(dir, "formats");
    uint32_t nf;
    char **fnames = yaml_files(fdir, &nf);
    qk_format_spec *fs = qk_xcalloc(nf ? nf : 1, sizeof *fs);
    bool ok = true;
    for (uint32_t i = 0; ok && i < nf; i++)
        ok = qk_format_spec_load(fnames[i], &fs[i], e);
    free_names(fnames, nf);
    free(fdir);
    if (!ok) {
        free(fs);
        return false;
    }
    *out = fs;
    *count = nf;
    return true;
}

bool qk_spec_set_load(const char *dir, qk_spec_set *out, qk_error *e) {
    memset(out, 0, sizeof *out);
    if (!qk_is_dir(dir)) {
        qk_error_set(e, "%s: no such spec folder", dir);
        return false;
    }
    char *fdir = qk_path_join(dir, "formats"), *kdir = qk_path_join(dir, "kernels");
    char *udir = qk_path_join(dir, "fusions");
    uint32_t nf, nk, nu;
    char **fnames = yaml_files(fdir, &nf), **knames = yaml_files(kdir, &nk);
    char **unames = yaml_files(udir, &nu);
    bool ok = true;
    out->formats = qk_xcalloc(nf, sizeof *out->formats);
    out->fusions = qk_xcalloc(nu, sizeof *out->fusions);
    out->families = qk_xcalloc(nk, sizeof *out->families);
    for (uint32_t i = 0; ok && i < nf; i++)
        ok = qk_format_spec_load(fnames[i], &out->formats[out->format_count++], e);
    for (uint32_t i = 0; ok && i < nu; i++)
        ok = qk_fusion_spec_load(unames[i], &out->fusions[out->fusion_count++], e);
    for (uint32_t i = 0; ok && i < nk; i++) {
        if (qk_is_family_file(knames[i])) {
            ok = qk_family_spec_load(knames[i], &out->families[out->family_count++], &out->kernels,
                                     &out->kernel_count, e);
            continue;
        }
        out->kernels = qk_xrealloc(out->kernels, sizeof *out->kernels * (out->kernel_count + 1));
        ok = qk_kernel_spec_load(knames[i], &out->kernels[out->kernel_count++], e);
    }
    free_names(fnames, nf);
    free_names(knames, nk);
    free_names(unames, nu);
    free(fdir);
    free(kdir);
    free(udir);
    if (!ok) qk_spec_set_free(out);
    return ok;
}

void qk_spec_set_free(qk_spec_set *s) {
    free(s->formats);
    free(s->kernels);
    free(s->fusions);
    for (uint32_t i = 0; i < s->family_count; i++)
        qk_family_spec_free(&s->families[i]);
    free(s->families);
    free(s->picks);
    memset(s, 0, sizeof *s);
}
