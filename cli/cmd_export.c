/* qkgen export: a bundle folder as one C header (SPIR-V as uint32_t arrays, the
 * manifest as typed static data, grids and constraints as C functions of the shape). */
#include "cli.h"
#include "json.h"
#include "qk_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_VARS = 64 };

typedef struct exporter {
    const char *manifest_path;
    const char *p; /* prefix of every name, e.g. "qkb" */
    char up[64];   /* the same in capitals, for macros */
    qk_error *e;
    /* every shape variable the bundle names, in order of first use */
    uint32_t var_count;
    char vars[MAX_VARS][64];
    qk_str defs; /* the implementation part */
    uint32_t fn_count;
} exporter;

static bool bad(exporter *x, const qkrt_json *node, const char *fmt, ...) QK_PRINTF(3, 4);

static bool bad(exporter *x, const qkrt_json *node, const char *fmt, ...) {
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    if (node)
        qk_error_set(x->e, "%s:%u:%u: %s", x->manifest_path, node->line, node->column, msg);
    else
        qk_error_set(x->e, "%s: %s", x->manifest_path, msg);
    return false;
}

/* ---- C literals ---- */

/* s as a C string literal; '?' escaped so that no trigraph forms */
static void c_string(qk_str *o, const char *s) {
    if (!s) {
        qk_str_add(o, "NULL");
        return;
    }
    qk_str_add(o, "\"");
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\' || c == '?')
            qk_str_addf(o, "\\%c", c);
        else if (c < 0x20 || c > 0x7e)
            qk_str_addf(o, "\\%03o", c);
        else
            qk_str_addn(o, s, 1);
    }
    qk_str_add(o, "\"");
}

/* ---- expressions to C: the grammar of docs/manifest.md, each operation a
 * checked helper call so that C gives the manifest's floor division and
 * int64 overflow errors; helpers take both operands, so && and || evaluate
 * both sides as the manifest's evaluator does ---- */

typedef struct xparse {
    exporter *x;
    const char *src, *p;
    const qkrt_json *node;
    qk_str *out;
    int depth;
    bool cond;
} xparse;

static bool xfail(xparse *ps, const char *problem) {
    return bad(ps->x, ps->node, "%s in expression '%s' (column %d)", problem, ps->src,
               (int)(ps->p - ps->src) + 1);
}

static void xskip(xparse *ps) {
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static bool xaccept(xparse *ps, const char *tok) {
    xskip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0) return false;
    if (n == 1 && strchr("<>!", tok[0]) && ps->p[1] == '=') return false;
    ps->p += n;
    return true;
}

static bool add_var(exporter *x, const char *name, size_t len) {
    for (uint32_t i = 0; i < x->var_count; i++)
        if (strlen(x->vars[i]) == len && !memcmp(x->vars[i], name, len)) return true;
    if (x->var_count == MAX_VARS || len >= sizeof x->vars[0]) return false;
    memcpy(x->vars[x->var_count], name, len);
    x->vars[x->var_count++][len] = '\0';
    return true;
}

static bool x_or(xparse *ps);

/* Emits "P__op(ok, " + left + ", " + right + ")" around the text written since mark. */
static void wrap(xparse *ps, size_t mark, const char *op, const char *right) {
    size_t left_len = ps->out->len - mark;
    char *left = qk_xmalloc(left_len + 1);
    memcpy(left, ps->out->s + mark, left_len);
    left[left_len] = '\0';
    ps->out->len = mark;
    ps->out->s[mark] = '\0';
    qk_str_addf(ps->out, "%s__%s(ok, %s, %s)", ps->x->p, op, left, right);
    free(left);
}

/* Parses the next operand with fn into its own text. */
static char *operand(xparse *ps, bool (*fn)(xparse *)) {
    qk_str *saved = ps->out, tmp = {0};
    ps->out = &tmp;
    bool ok = fn(ps);
    ps->out = saved;
    if (!ok) {
        qk_str_free(&tmp);
        return NULL;
    }
    return qk_str_take(&tmp);
}

static bool x_primary(xparse *ps) {
    xskip(ps);
    if (++ps->depth > 64) return xfail(ps, "nested too deep");
    bool ok = true;
    ps->cond = false;
    if (xaccept(ps, "(")) {
        qk_str_add(ps->out, "(");
        ok = x_or(ps);
        if (ok && !xaccept(ps, ")")) ok = xfail(ps, "unclosed '('");
        if (ok) qk_str_add(ps->out, ")");
    } else if (xaccept(ps, "-") || xaccept(ps, "+") || xaccept(ps, "!")) {
        char op = ps->p[-1];
        qk_str_addf(ps->out, "%s__%s(ok, ", ps->x->p,
                    op == '-'   ? "neg"
                    : op == '!' ? "not"
                                : "pos");
        ok = x_primary(ps);
        qk_str_add(ps->out, ")");
        ps->cond = op == '!';
    } else if (isdigit((unsigned char)*ps->p)) {
        const char *s = ps->p;
        while (isdigit((unsigned char)*ps->p))
            ps->p++;
        if (ps->p - s > 18) return xfail(ps, "number too large");
        if (isalpha((unsigned char)*ps->p) || *ps->p == '_')
            return xfail(ps, "unexpected letter after a number");
        qk_str_addf(ps->out, "INT64_C(%.*s)", (int)(ps->p - s), s);
    } else if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        const char *s = ps->p;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
            ps->p++;
        if (!add_var(ps->x, s, (size_t)(ps->p - s))) return xfail(ps, "too many shape variables");
        qk_str_addf(ps->out, "s->%.*s", (int)(ps->p - s), s);
    } else {
        ok = xfail(ps, *ps->p ? "unexpected character" : "unexpected end");
    }
    ps->depth--;
    return ok;
}

/* One left-associative level: operands parsed by next, operators from ops
 * (text, helper name), each application wrapped in its helper. */
static bool x_level(xparse *ps, bool (*next)(xparse *), const char *const ops[][2], int n) {
    size_t mark = ps->out->len;
    if (!next(ps)) return false;
    for (;;) {
        int i = 0;
        while (i < n && !xaccept(ps, ops[i][0]))
            i++;
        if (i == n) return true;
        char *right = operand(ps, next);
        if (!right) return false;
        wrap(ps, mark, ops[i][1], right);
        free(right);
        ps->cond = strchr("=!<>&|", ops[i][0][0]) != NULL;
    }
}

static bool x_term(xparse *ps) {
    static const char *const ops[][2] = {{"*", "mul"}, {"/", "div"}, {"%", "mod"}};
    return x_level(ps, x_primary, ops, 3);
}

static bool x_sum(xparse *ps) {
    static const char *const ops[][2] = {{"+", "add"}, {"-", "sub"}};
    return x_level(ps, x_term, ops, 2);
}

static bool x_compare(xparse *ps) {
    static const char *const ops[][2] = {{"==", "eq"}, {"!=", "ne"}, {"<=", "le"},
                                         {">=", "ge"}, {"<", "lt"},  {">", "gt"}};
    size_t mark = ps->out->len;
    if (!x_sum(ps)) return false;
    for (int i = 0; i < 6; i++) {
        if (!xaccept(ps, ops[i][0])) continue;
        char *right = operand(ps, x_sum);
        if (!right) return false;
        wrap(ps, mark, ops[i][1], right);
        free(right);
        ps->cond = true;
        for (int j = 0; j < 6; j++) {
            const char *save = ps->p;
            if (xaccept(ps, ops[j][0])) {
                ps->p = save;
                return xfail(ps, "a second comparison (join comparisons with &&)");
            }
        }
        return true;
    }
    xskip(ps);
    if (ps->p[0] == '=' && ps->p[1] != '=') return xfail(ps, "'=' is not a comparison");
    return true;
}

static bool x_and(xparse *ps) {
    static const char *const ops[][2] = {{"&&", "and"}};
    return x_level(ps, x_compare, ops, 1);
}

static bool x_or(xparse *ps) {
    static const char *const ops[][2] = {{"||", "or"}};
    return x_level(ps, x_and, ops, 1);
}

/* Appends expr as a C expression over `s` (a P_shape pointer) and `ok`. */
static bool expr_to_c(exporter *x, const qkrt_json *node, bool condition, qk_str *out) {
    xparse ps = {x, node->string, node->string, node, out, 0, false};
    if (!x_or(&ps)) return false;
    xskip(&ps);
    if (*ps.p) return xfail(&ps, *ps.p == ')' ? "unmatched ')'" : "unexpected text");
    if (condition && !ps.cond) return xfail(&ps, "no comparison");
    return true;
}

/* ---- manifest fields ---- */

static const qkrt_json *field(exporter *x, const qkrt_json *obj, const char *key,
                              qkrt_json_type type, bool required) {
    const qkrt_json *v = qkrt_json_get(obj, key);
    if (!v && required) {
        bad(x, obj, "missing \"%s\"", key);
        return NULL;
    }
    if (v && v->type != type && !(type == QKRT_JSON_STRING && v->type == QKRT_JSON_NULL)) {
        bad(x, v, "\"%s\": expected %s, found %s", key, qkrt_json_type_name(type),
            qkrt_json_type_name(v->type));
        return NULL;
    }
    return v;
}

static const char *str(exporter *x, const qkrt_json *obj, const char *key, bool required) {
    const qkrt_json *v = field(x, obj, key, QKRT_JSON_STRING, required);
    return v && v->type == QKRT_JSON_STRING ? v->string : NULL;
}

static bool u32(exporter *x, const qkrt_json *obj, const char *key, bool required, uint32_t *out) {
    *out = 0;
    const qkrt_json *v = field(x, obj, key, QKRT_JSON_NUMBER, required);
    if (!v) return !required && !x->e->set;
    if (!v->integral || v->integer < 0 || v->integer > UINT32_MAX)
        return bad(x, v, "\"%s\": expected an integer 0 .. 2^32-1", key);
    *out = (uint32_t)v->integer;
    return true;
}

static const qkrt_json *list(exporter *x, const qkrt_json *obj, const char *key, bool required) {
    return field(x, obj, key, QKRT_JSON_ARRAY, required);
}

/* "name": "x" pairs for a C initializer */
static void c_str_field(qk_str *o, const char *s) {
    c_string(o, s);
    qk_str_add(o, ", ");
}

/* A list of strings as a static array; its name, or "NULL" when empty. */
static bool string_array(exporter *x, const qkrt_json *l, const char *what, uint32_t k,
                         char name[64]) {
    snprintf(name, 64, "NULL");
    if (!l || !l->count) return true;
    snprintf(name, 64, "%s__%s_%u", x->p, what, k);
    qk_str_addf(&x->defs, "static const char *const %s[] = {", name);
    for (uint32_t i = 0; i < l->count; i++) {
        if (l->items[i].type != QKRT_JSON_STRING) return bad(x, &l->items[i], "expected a string");
        qk_str_add(&x->defs, i ? ", " : "");
        c_string(&x->defs, l->items[i].string);
    }
    qk_str_add(&x->defs, "};\n");
    return true;
}

/* ---- one kernel entry: its arrays and functions into defs, its table row into row ---- */

typedef struct module {
    const char *spv;
    uint32_t index;
} module;

static bool bindings(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = list(x, k, "bindings", true);
    if (!l) return false;
    qk_str rows = {0};
    for (uint32_t j = 0; j < l->count; j++) {
        const qkrt_json *b = &l->items[j];
        uint32_t set, binding, count;
        const char *name = str(x, b, "name", true), *role = str(x, b, "role", true);
        const char *type = str(x, b, "type", true), *access = str(x, b, "access", true);
        const qkrt_json *size = field(x, b, "size", QKRT_JSON_STRING, false);
        if (!u32(x, b, "set", true, &set) || !u32(x, b, "binding", true, &binding) ||
            !u32(x, b, "count", true, &count) || !name || !role || !type || !access || x->e->set)
            break;
        char fn[64] = "NULL";
        if (size) {
            snprintf(fn, sizeof fn, "%s__size_%u_%u", x->p, i, j);
            qk_str_addf(&x->defs,
                        "static int %s(const %s_shape *s, uint64_t *bytes) {\n"
                        "    int ok_ = 1, *ok = &ok_;\n    int64_t v = ",
                        fn, x->p);
            if (!expr_to_c(x, size, false, &x->defs)) break;
            qk_str_add(&x->defs,
                       ";\n    (void)s;\n    (void)ok;\n    if (!ok_ || v < 0) return -1;\n"
                       "    *bytes = (uint64_t)v;\n    return 0;\n}\n");
        }
        qk_str_addf(&rows, "    {%u, %u, %u, ", set, binding, count);
        c_str_field(&rows, name);
        c_str_field(&rows, role);
        c_str_field(&rows, type);
        qk_str_addf(&rows, "%d, ", !strcmp(access, "write"));
        c_str_field(&rows, size ? size->string : NULL);
        qk_str_addf(&rows, "%s},\n", fn);
    }
    if (!x->e->set && l->count)
        qk_str_addf(&x->defs, "static const %s_binding %s__bindings_%u[] = {\n%s};\n", x->p, x->p,
                    i, rows.s);
    qk_str_free(&rows);
    if (l->count)
        qk_str_addf(row, "%u, %s__bindings_%u, ", l->count, x->p, i);
    else
        qk_str_add(row, "0, NULL, ");
    return !x->e->set;
}

static bool push_constants(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = list(x, k, "push_constants", true);
    uint32_t size = 0;
    if (!l || !u32(x, k, "push_constant_size", true, &size)) return false;
    if (l->count)
        qk_str_addf(&x->defs, "static const %s_push_constant %s__push_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < l->count; j++) {
        const qkrt_json *c = &l->items[j];
        const char *name = str(x, c, "name", true), *type = str(x, c, "type", true);
        uint32_t offset;
        if (!name || !type || !u32(x, c, "offset", true, &offset)) return false;
        if (strcmp(type, "u32") && strcmp(type, "i32"))
            return bad(x, c, "push constant '%s': type '%s', expected u32 or i32", name, type);
        if (offset + 4 > size)
            return bad(x, c, "push constant '%s' ends past push_constant_size %u", name, size);
        bool ident = isalpha((unsigned char)name[0]) || name[0] == '_';
        for (const char *s = name; *s; s++)
            ident &= isalnum((unsigned char)*s) || *s == '_';
        if (!ident || !add_var(x, name, strlen(name)))
            return bad(x, c, "push constant '%s' is not a shape variable name", name);
        qk_str_addf(&x->defs, "    {\"%s\", %u, \"%s\", offsetof(%s_shape, %s)},\n", name, offset,
                    type, x->p, name);
    }
    if (l->count) {
        qk_str_add(&x->defs, "};\n");
        qk_str_addf(row, "%u, %s__push_%u, %u, ", l->count, x->p, i, size);
    } else {
        qk_str_addf(row, "0, NULL, %u, ", size);
    }
    return true;
}

static bool specialization(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = list(x, k, "specialization_constants", false);
    if (!l || !l->count) {
        qk_str_add(row, "0, NULL, ");
        return !x->e->set;
    }
    qk_str_addf(&x->defs, "static const %s_specialization %s__spec_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < l->count; j++) {
        const qkrt_json *c = &l->items[j];
        const char *name = str(x, c, "name", true), *type = str(x, c, "type", true);
        const qkrt_json *value = field(x, c, "value", QKRT_JSON_NUMBER, true);
        uint32_t id, data = 0;
        if (!name || !type || !value || !u32(x, c, "id", true, &id)) return false;
        bool integral = value->integral;
        if (!strcmp(type, "f32")) {
            float f = (float)value->number;
            memcpy(&data, &f, 4);
        } else if (!strcmp(type, "u32") && integral && value->integer >= 0 &&
                   value->integer <= UINT32_MAX) {
            data = (uint32_t)value->integer;
        } else if (!strcmp(type, "i32") && integral && value->integer >= INT32_MIN &&
                   value->integer <= INT32_MAX) {
            data = (uint32_t)(int32_t)value->integer;
        } else if (!strcmp(type, "bool") && integral && (value->integer | 1) == 1) {
            data = (uint32_t)value->integer;
        } else {
            return bad(x, value, "specialization constant '%s': %g is not a %s", name,
                       value->number, type);
        }
        qk_str_addf(&x->defs, "    {%u, ", id);
        c_str_field(&x->defs, name);
        c_str_field(&x->defs, type);
        qk_str_addf(&x->defs, "0x%08xu},\n", data);
    }
    qk_str_add(&x->defs, "};\n");
    qk_str_addf(row, "%u, %s__spec_%u, ", l->count, x->p, i);
    return true;
}

/* The grid as a function; kernels with the same rule share one. */
static bool dispatch(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *d = field(x, k, "dispatch", QKRT_JSON_OBJECT, true);
    const qkrt_json *g = d ? list(x, d, "grid", true) : NULL;
    if (!g) return false;
    if (g->count != 3) return bad(x, g, "\"grid\": expected 3 expressions, found %u", g->count);
    qk_str fn = {0};
    qk_str_addf(&fn,
                "static int %s__grid_%u(const %s_shape *s, uint32_t groups[3]) {\n"
                "    int ok_ = 1, *ok = &ok_, i;\n    int64_t v[3];\n",
                x->p, i, x->p);
    for (uint32_t j = 0; j < 3; j++) {
        if (g->items[j].type != QKRT_JSON_STRING) return bad(x, &g->items[j], "expected a string");
        qk_str_addf(&fn, "    v[%u] = ", j);
        if (!expr_to_c(x, &g->items[j], false, &fn)) {
            qk_str_free(&fn);
            return false;
        }
        qk_str_add(&fn, ";\n");
    }
    qk_str_add(&fn, "    (void)s;\n    (void)ok;\n    for (i = 0; i < 3; i++) {\n"
                    "        if (!ok_ || v[i] < 0 || v[i] > INT64_C(4294967295)) return -1;\n"
                    "        groups[i] = (uint32_t)v[i];\n    }\n    return 0;\n}\n");
    qk_str_add(&x->defs, fn.s);
    qk_str_free(&fn);
    qk_str_add(row, "{");
    for (uint32_t j = 0; j < 3; j++)
        c_str_field(row, g->items[j].string);
    qk_str_addf(row, "}, %s__grid_%u, ", x->p, i);
    return true;
}

static bool constraints(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *l = list(x, k, "constraints", true);
    char names[64];
    if (!l || !string_array(x, l, "constraints", i, names)) return false;
    qk_str_addf(&x->defs,
                "static int %s__check_%u(const %s_shape *s) {\n"
                "    int ok_ = 1, *ok = &ok_;\n    (void)s;\n    (void)ok;\n",
                x->p, i, x->p);
    for (uint32_t j = 0; j < l->count; j++) {
        qk_str_add(&x->defs, "    if (!");
        if (!expr_to_c(x, &l->items[j], true, &x->defs)) return false;
        qk_str_addf(&x->defs, " || !ok_) return %u;\n", j);
    }
    qk_str_add(&x->defs, "    return -1;\n}\n");
    qk_str_addf(row, "%u, %s, %s__check_%u", l->count, names, x->p, i);
    return true;
}

static bool weights(exporter *x, const qkrt_json *k, uint32_t i, qk_str *row) {
    const qkrt_json *w = qkrt_json_get(k, "weights");
    if (!w || w->type == QKRT_JSON_NULL) {
        qk_str_add(row, "NULL, ");
        return true;
    }
    if (w->type != QKRT_JSON_OBJECT) return bad(x, w, "\"weights\": expected an object or null");
    const char *layout = str(x, w, "layout", true);
    if (!layout) return false;
    uint32_t elements = 0, bytes = 0, group = 0;
    const qkrt_json *fields = list(x, w, "fields", false), *planes = list(x, w, "planes", false);
    const qkrt_json *params = field(x, w, "params", QKRT_JSON_OBJECT, false);
    if (!u32(x, w, "block_elements", false, &elements) ||
        !u32(x, w, "block_bytes", false, &bytes) || !u32(x, w, "group", false, &group) || x->e->set)
        return false;
    uint32_t nf = fields ? fields->count : 0, np = planes ? planes->count : 0;
    uint32_t nparams = params ? params->count : 0;
    if (nf) qk_str_addf(&x->defs, "static const %s_field %s__fields_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < nf; j++) {
        const qkrt_json *f = &fields->items[j];
        uint32_t offset, count;
        const char *name = str(x, f, "name", true), *type = str(x, f, "type", true);
        if (!name || !type || !u32(x, f, "offset", true, &offset) ||
            !u32(x, f, "count", true, &count))
            return false;
        qk_str_add(&x->defs, "    {");
        c_str_field(&x->defs, name);
        c_str_field(&x->defs, type);
        qk_str_addf(&x->defs, "%u, %u},\n", offset, count);
    }
    if (nf) qk_str_add(&x->defs, "};\n");
    if (np) qk_str_addf(&x->defs, "static const %s_plane %s__planes_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < np; j++) {
        const qkrt_json *f = &planes->items[j];
        uint32_t per_group;
        const char *name = str(x, f, "name", true), *type = str(x, f, "type", true);
        if (!name || !type || !u32(x, f, "per_group", true, &per_group)) return false;
        qk_str_add(&x->defs, "    {");
        c_str_field(&x->defs, name);
        c_str_field(&x->defs, type);
        qk_str_addf(&x->defs, "%u},\n", per_group);
    }
    if (np) qk_str_add(&x->defs, "};\n");
    if (nparams)
        qk_str_addf(&x->defs, "static const %s_param %s__params_%u[] = {\n", x->p, x->p, i);
    for (uint32_t j = 0; j < nparams; j++) {
        if (params->items[j].type != QKRT_JSON_STRING)
            return bad(x, &params->items[j], "expected a string");
        qk_str_add(&x->defs, "    {");
        c_str_field(&x->defs, params->keys[j]);
        c_string(&x->defs, params->items[j].string);
        qk_str_add(&x->defs, "},\n");
    }
    if (nparams) qk_str_add(&x->defs, "};\n");
    qk_str_addf(&x->defs, "static const %s_weights %s__weights_%u = {", x->p, x->p, i);
    c_str_field(&x->defs, layout);
    qk_str_addf(&x->defs, "%u, %u, %u, ", elements, bytes, nf);
    if (nf)
        qk_str_addf(&x->defs, "%s__fields_%u, ", x->p, i);
    else
        qk_str_add(&x->defs, "NULL, ");
    qk_str_addf(&x->defs, "%u, %u, ", group, nparams);
    if (nparams)
        qk_str_addf(&x->defs, "%s__params_%u, ", x->p, i);
    else
        qk_str_add(&x->defs, "NULL, ");
    qk_str_addf(&x->defs, "%u, ", np);
    if (np)
        qk_str_addf(&x->defs, "%s__planes_%u};\n", x->p, i);
    else
        qk_str_add(&x->defs, "NULL};\n");
    qk_str_addf(row, "&%s__weights_%u, ", x->p, i);
    return true;
}

/* Reads each distinct module once, checks it against the entry's hash, and
 * writes it as an array; returns its index in mods. */
static int module_of(exporter *x, const char *dir, const qkrt_json *k, module *mods,
                     uint32_t *count, char (*hashes)[65]) {
    const qkrt_json *spv = field(x, k, "spv", QKRT_JSON_STRING, true);
    const char *want = str(x, k, "spv_sha256", true);
    if (!spv || !want) return -1;
    uint32_t m = 0;
    while (m < *count && strcmp(mods[m].spv, spv->string))
        m++;
    if (m == *count) {
        if (strchr(spv->string, '/') || spv->string[0] == '.')
            return bad(x, spv, "\"spv\": '%s' is not a file name in the bundle", spv->string), -1;
        char *path = qk_path_join(dir, spv->string);
        size_t n = 0;
        char *code = qk_read_file(path, &n, x->e);
        free(path);
        if (!code) return -1;
        if (n == 0 || n % 4) {
            free(code);
            return bad(x, spv, "%s: %zu bytes, not whole 32-bit words", spv->string, n), -1;
        }
        qk_sha256_hex(code, n, hashes[m]);
        qk_str_addf(&x->defs, "static const uint32_t %s__spv_%u[%zu] = {", x->p, m, n / 4);
        for (size_t w = 0; w < n / 4; w++) {
            uint32_t word;
            memcpy(&word, code + 4 * w, 4);
            qk_str_addf(&x->defs, "%s0x%08xu,", w % 8 ? " " : "\n    ", word);
        }
        qk_str_add(&x->defs, "\n};\n");
        free(code);
        mods[m] = (module){spv->string, m};
        (*count)++;
    }
    if (strcmp(hashes[m], want))
        return bad(x, spv, "%s: its SHA-256 is %s, the manifest says %s", spv->string, hashes[m],
                   want),
               -1;
    return (int)m;
}

static bool kernel(exporter *x, const char *dir, const qkrt_json *k, uint32_t i, module *mods,
                   uint32_t *nmods, char (*hashes)[65], qk_str *rows) {
    if (k->type != QKRT_JSON_OBJECT) return bad(x, k, "kernels[%u]: expected an object", i);
    qk_str row = {0};
    static const char *const names[] = {"name",   "family",         "kernel",
                                        "format", "format_variant", "activation",
                                        "mma",    "fusion",         "precision"};
    qk_str_add(&row, "  {");
    for (size_t j = 0; j < sizeof names / sizeof names[0]; j++) {
        const char *s = str(x, k, names[j], j == 0 || j == 1);
        if (x->e->set) break;
        c_str_field(&row, s);
    }
    const qkrt_json *tile = field(x, k, "tile", QKRT_JSON_OBJECT, false);
    uint32_t t[3] = {0};
    if (tile && (!u32(x, tile, "NR0", false, &t[0]) || !u32(x, tile, "NR1", false, &t[1]) ||
                 !u32(x, tile, "NK", false, &t[2])))
        goto fail;
    qk_str_addf(&row, "{%u, %u, %u}, ", t[0], t[1], t[2]);
    int m = x->e->set ? -1 : module_of(x, dir, k, mods, nmods, hashes);
    if (m < 0) goto fail;
    c_str_field(&row, mods[m].spv);
    c_str_field(&row, hashes[m]);
    const char *entry = str(x, k, "entry_point", true);
    if (!entry) goto fail;
    c_str_field(&row, entry);
    qk_str_addf(&row, "%s__spv_%d, sizeof %s__spv_%d / 4, ", x->p, m, x->p, m);
    const qkrt_json *wg = list(x, k, "workgroup_size", true);
    if (!wg) goto fail;
    if (wg->count != 3) {
        bad(x, wg, "\"workgroup_size\": expected 3 numbers");
        goto fail;
    }
    qk_str_add(&row, "{");
    for (uint32_t j = 0; j < 3; j++) {
        const qkrt_json *v = &wg->items[j];
        if (v->type != QKRT_JSON_NUMBER || !v->integral || v->integer < 1 || v->integer > 65535) {
            bad(x, v, "\"workgroup_size\": expected sizes 1 .. 65535");
            goto fail;
        }
        qk_str_addf(&row, "%s%lld", j ? ", " : "", (long long)v->integer);
    }
    qk_str_add(&row, "}, ");
    uint32_t rss, mss, smb;
    if (!u32(x, k, "required_subgroup_size", true, &rss) ||
        !u32(x, k, "min_subgroup_size", true, &mss) ||
        !u32(x, k, "shared_memory_bytes", true, &smb))
        goto fail;
    qk_str_addf(&row, "%u, %u, %u, ", rss, mss, smb);
    const char *version = str(x, k, "vulkan_version", true);
    unsigned major, minor;
    if (!version) goto fail;
    if (sscanf(version, "%u.%u", &major, &minor) != 2 || major > 127 || minor > 1023) {
        bad(x, qkrt_json_get(k, "vulkan_version"), "vulkan_version '%s' is not MAJOR.MINOR",
            version);
        goto fail;
    }
    c_str_field(&row, version);
    qk_str_addf(&row, "%uu, ", major << 22 | minor << 12);
    char ext[64], feat[64];
    const qkrt_json *exts = list(x, k, "extensions", true), *feats = list(x, k, "features", true);
    if (!exts || !feats || !string_array(x, exts, "extensions", i, ext) ||
        !string_array(x, feats, "features", i, feat))
        goto fail;
    qk_str_addf(&row, "%u, %s, %u, %s, ", exts->count, ext, feats->count, feat);
    if (!weights(x, k, i, &row) || !bindings(x, k, i, &row) || !push_constants(x, k, i, &row) ||
        !specialization(x, k, i, &row) || !dispatch(x, k, i, &row) || !constraints(x, k, i, &row))
        goto fail;
    qk_str_add(&row, "},\n");
    qk_str_add(rows, row.s);
    qk_str_free(&row);
    return true;
fail:
    qk_str_free(&row);
    if (!x->e->set) bad(x, k, "kernels[%u]: malformed", i);
    return false;
}

/* ---- the header around the kernels ---- */

static void header_types(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_add(o, "/* Every shape variable the bundle's expressions and push constants name. */\n"
                  "typedef struct ");
    qk_str_addf(o, "%s_shape {\n", p);
    for (uint32_t i = 0; i < x->var_count; i++)
        qk_str_addf(o, "    int64_t %s;\n", x->vars[i]);
    if (!x->var_count) qk_str_add(o, "    int64_t unused_;\n");
    qk_str_addf(
        o,
        "} %s_shape;\n\n"
        "typedef struct %s_binding {\n"
        "    uint32_t set, binding, count; /* count > 1: an array of buffers */\n"
        "    const char *name, *role, *type;\n"
        "    int writable;\n"
        "    const char *size; /* bytes to allocate as an expression, or NULL */\n"
        "    int (*size_bytes)(const %s_shape *s, uint64_t *bytes); /* 0, or -1: overflow */\n"
        "} %s_binding;\n\n"
        "typedef struct %s_push_constant {\n"
        "    const char *name; /* the shape variable of the same name */\n"
        "    uint32_t offset;\n"
        "    const char *type; /* \"u32\" or \"i32\" */\n"
        "    size_t shape_offset; /* offsetof(%s_shape, name) */\n"
        "} %s_push_constant;\n\n"
        "typedef struct %s_specialization {\n"
        "    uint32_t id; /* SpecId: VkSpecializationMapEntry.constantID */\n"
        "    const char *name, *type; /* type: \"u32\", \"i32\", \"f32\" or \"bool\" */\n"
        "    uint32_t data; /* the 4 bytes VkSpecializationInfo takes */\n"
        "} %s_specialization;\n\n"
        "typedef struct %s_field { const char *name, *type; uint32_t offset, count; } %s_field;\n"
        "typedef struct %s_plane { const char *name, *type; uint32_t per_group; } %s_plane;\n"
        "typedef struct %s_param { const char *name, *value; } %s_param;\n"
        "typedef struct %s_weights {\n"
        "    const char *layout; /* \"block\" or \"planar\" */\n"
        "    uint32_t block_elements, block_bytes, field_count;\n"
        "    const %s_field *fields;\n"
        "    uint32_t group, param_count;\n"
        "    const %s_param *params;\n"
        "    uint32_t plane_count;\n"
        "    const %s_plane *planes;\n"
        "} %s_weights;\n\n",
        p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    qk_str_addf(
        o,
        "typedef struct %s_kernel {\n"
        "    const char *name, *family, *kernel, *format, *format_variant, *activation, *mma,\n"
        "        *fusion, *precision; /* NULL where the manifest does not say */\n"
        "    uint32_t tile[3];         /* NR0, NR1, NK */\n"
        "    const char *spv, *spv_sha256, *entry_point;\n"
        "    const uint32_t *code; /* the SPIR-V module, shared by the kernels of one spv */\n"
        "    size_t code_words;\n"
        "    uint32_t workgroup_size[3], required_subgroup_size, min_subgroup_size,\n"
        "        shared_memory_bytes;\n"
        "    const char *vulkan_version;\n"
        "    uint32_t api_version; /* VK_MAKE_API_VERSION(0, major, minor, 0) */\n"
        "    uint32_t extension_count;\n"
        "    const char *const *extensions;\n"
        "    uint32_t feature_count;\n"
        "    const char *const *features;\n"
        "    const %s_weights *weights; /* NULL: the kernel takes no quantized weights */\n"
        "    uint32_t binding_count;\n"
        "    const %s_binding *bindings;\n"
        "    uint32_t push_constant_count;\n"
        "    const %s_push_constant *push_constants;\n"
        "    uint32_t push_constant_size;\n"
        "    uint32_t specialization_count;\n"
        "    const %s_specialization *specialization;\n"
        "    const char *grid[3];\n"
        "    /* workgroups to dispatch: 0, or -1 when a value overflows or leaves 0 .. 2^32-1 */\n"
        "    int (*dispatch)(const %s_shape *s, uint32_t groups[3]);\n"
        "    uint32_t constraint_count;\n"
        "    const char *const *constraints;\n"
        "    /* -1 when every constraint holds, else the index of the first that fails */\n"
        "    int (*check)(const %s_shape *s);\n"
        "} %s_kernel;\n\n",
        p, p, p, p, p, p, p, p);
}

static void header_api(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_addf(
        o,
        "extern const %s_kernel %s_kernels[%s_KERNEL_COUNT];\n"
        "/* The names of %s_shape's fields, in order. */\n"
        "extern const char *const %s_shape_names[%s_SHAPE_COUNT];\n"
        "/* The index of the kernel called name, or -1. */\n"
        "int %s_find(const char *name);\n"
        "/* Sets the shape variable called name: 0, or -1 if the bundle names none such. */\n"
        "int %s_shape_set(%s_shape *s, const char *name, int64_t value);\n"
        "/* Writes k's push_constant_size bytes of push constants for shape s: 0, or -1\n"
        " * if a value does not fit its type. */\n"
        "int %s_push_data(const %s_kernel *k, const %s_shape *s, void *out);\n\n",
        p, p, x->up, p, p, x->up, p, p, p, p, p, p);
}

/* Checked int64 arithmetic with the manifest's semantics. */
static void helpers(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_addf(o,
                "static inline int64_t %s__fail(int *ok) { *ok = 0; return 0; }\n"
                "static inline int64_t %s__add(int *ok, int64_t a, int64_t b) {\n"
                "    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b)) return "
                "%s__fail(ok);\n"
                "    return a + b;\n}\n"
                "static inline int64_t %s__sub(int *ok, int64_t a, int64_t b) {\n"
                "    if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < INT64_MIN + b)) return "
                "%s__fail(ok);\n"
                "    return a - b;\n}\n"
                "static inline int64_t %s__mul(int *ok, int64_t a, int64_t b) {\n"
                "    if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)\n"
                "              : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a)))\n"
                "        return %s__fail(ok);\n"
                "    return a * b;\n}\n"
                "/* / rounds down and %% takes the sign of the divisor */\n"
                "static inline int64_t %s__div(int *ok, int64_t a, int64_t b) {\n"
                "    int64_t q;\n"
                "    if (b == 0 || (a == INT64_MIN && b == -1)) return %s__fail(ok);\n"
                "    q = a / b;\n"
                "    return (a %% b != 0 && ((a %% b < 0) != (b < 0))) ? q - 1 : q;\n}\n"
                "static inline int64_t %s__mod(int *ok, int64_t a, int64_t b) {\n"
                "    int64_t r;\n"
                "    if (b == 0) return %s__fail(ok);\n"
                "    if (b == -1) return 0;\n"
                "    r = a %% b;\n"
                "    return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;\n}\n"
                "static inline int64_t %s__neg(int *ok, int64_t a) {\n"
                "    return a == INT64_MIN ? %s__fail(ok) : -a;\n}\n"
                "static inline int64_t %s__pos(int *ok, int64_t a) { (void)ok; return a; }\n"
                "static inline int64_t %s__not(int *ok, int64_t a) { (void)ok; return !a; }\n",
                p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    static const char *const cmp[][2] = {{"eq", "=="}, {"ne", "!="}, {"le", "<="},  {"ge", ">="},
                                         {"lt", "<"},  {"gt", ">"},  {"and", "&&"}, {"or", "||"}};
    for (int i = 0; i < 8; i++)
        qk_str_addf(o,
                    "static inline int64_t %s__%s(int *ok, int64_t a, int64_t b) {\n"
                    "    (void)ok;\n    return a %s b;\n}\n",
                    p, cmp[i][0], cmp[i][1]);
}

static void api_defs(exporter *x, qk_str *o) {
    const char *p = x->p;
    qk_str_addf(o, "const char *const %s_shape_names[%s_SHAPE_COUNT] = {", p, x->up);
    for (uint32_t i = 0; i < x->var_count; i++)
        qk_str_addf(o, "%s\"%s\"", i ? ", " : "", x->vars[i]);
    qk_str_add(o, x->var_count ? "};\n\n" : "\"unused_\"};\n\n");
    qk_str_addf(o,
                "int %s_find(const char *name) {\n"
                "    int i;\n"
                "    for (i = 0; i < %s_KERNEL_COUNT; i++)\n"
                "        if (strcmp(%s_kernels[i].name, name) == 0) return i;\n"
                "    return -1;\n}\n\n"
                "int %s_shape_set(%s_shape *s, const char *name, int64_t value) {\n",
                p, x->up, p, p, p);
    for (uint32_t i = 0; i < x->var_count; i++)
        qk_str_addf(o, "    if (strcmp(name, \"%s\") == 0) return s->%s = value, 0;\n", x->vars[i],
                    x->vars[i]);
    qk_str_addf(
        o,
        "    (void)s;\n    (void)value;\n    return -1;\n}\n\n"
        "int %s_push_data(const %s_kernel *k, const %s_shape *s, void *out) {\n"
        "    uint32_t i;\n"
        "    for (i = 0; i < k->push_constant_count; i++) {\n"
        "        const %s_push_constant *c = &k->push_constants[i];\n"
        "        int64_t v;\n"
        "        uint32_t word;\n"
        "        memcpy(&v, (const char *)s + c->shape_offset, sizeof v);\n"
        "        if (c->type[0] == 'u' ? v < 0 || v > INT64_C(4294967295)\n"
        "                              : v < INT64_C(-2147483648) || v > INT64_C(2147483647))\n"
        "            return -1;\n"
        "        word = (uint32_t)v;\n"
        "        memcpy((char *)out + c->offset, &word, 4);\n"
        "    }\n"
        "    return 0;\n}\n",
        p, p, p, p);
}

/* ---- the tuned selection table (manifest.md, "Selection"), when the bundle has one ---- */

static int kernel_index(const qkrt_json *kernels, const char *name) {
    for (uint32_t i = 0; i < kernels->count; i++) {
        const qkrt_json *n = qkrt_json_get(&kernels->items[i], "name");
        if (n && n->type == QKRT_JSON_STRING && !strcmp(n->string, name)) return (int)i;
    }
    return -1;
}

/* A range [lo, hi] (hi null: unbounded, -1 in C) as "{lo, hi}". */
static bool range(exporter *x, const qkrt_json *r, const char *key, qk_str *o) {
    const qkrt_json *v = field(x, r, key, QKRT_JSON_ARRAY, true);
    if (!v) return false;
    const qkrt_json *lo = v->count == 2 ? &v->items[0] : NULL, *hi = lo ? &v->items[1] : NULL;
    if (!lo || lo->type != QKRT_JSON_NUMBER || !lo->integral || lo->integer < 0 ||
        !(hi->type == QKRT_JSON_NULL || (hi->type == QKRT_JSON_NUMBER && hi->integral)))
        return bad(x, v, "\"%s\": expected [lo, hi] with hi an integer or null", key);
    qk_str_addf(o, "{INT64_C(%lld), INT64_C(%lld)}, ", (long long)lo->integer,
                hi->type == QKRT_JSON_NULL ? -1LL : (long long)hi->integer);
    return true;
}

/* A list of rules as a static array (its name in name, "NULL" when empty). */
static bool rules(exporter *x, const qkrt_json *kernels, const qkrt_json *l, const char *what,
                  char name[64]) {
    snprintf(name, 64, "NULL");
    if (!l || !l->count) return !x->e->set;
    snprintf(name, 64, "%s__%s", x->p, what);
    qk_str_addf(&x->defs, "static const %s_rule %s[] = {\n", x->p, name);
    for (uint32_t i = 0; i < l->count; i++) {
        const qkrt_json *r = &l->items[i];
        const char *op = str(x, r, "op", true), *format = str(x, r, "format", true);
        const char *variant = str(x, r, "format_variant", false);
        const char *kernel = str(x, r, "kernel", true), *precision = str(x, r, "precision", false);
        if (!op || !format || !kernel) return false;
        int k = kernel_index(kernels, kernel);
        if (k < 0) return bad(x, r, "select: kernel '%s' is not in the manifest", kernel);
        qk_str_add(&x->defs, "    {");
        c_str_field(&x->defs, op);
        c_str_field(&x->defs, format);
        c_str_field(&x->defs, variant ? variant : "");
        qk_str_addf(&x->defs, "%d, ", k);
        c_str_field(&x->defs, precision);
        if (!range(x, r, "M", &x->defs) || !range(x, r, "K", &x->defs) ||
            !range(x, r, "T", &x->defs))
            return false;
        qk_str_add(&x->defs, "},\n");
    }
    qk_str_add(&x->defs, "};\n");
    return true;
}

/* The table as P_selection and its rule as P_select(); true with nothing
 * written when the manifest has no "select". */
static bool selection(exporter *x, const qkrt_json *root, const qkrt_json *kernels, qk_str *decl) {
    const qkrt_json *t = field(x, root, "select", QKRT_JSON_OBJECT, false);
    if (!t) return !x->e->set;
    uint32_t version;
    if (!u32(x, t, "version", true, &version)) return false;
    if (version != 1) return bad(x, t, "select: version %u, this exporter knows 1", version);
    const qkrt_json *devices = list(x, t, "devices", true), *defaults = list(x, t, "default", true);
    char dname[64], names[64];
    if (!devices || !defaults || !rules(x, kernels, defaults, "select_default", dname))
        return false;
    qk_str devs = {0};
    for (uint32_t i = 0; i < devices->count; i++) {
        const qkrt_json *d = &devices->items[i];
        uint32_t vendor, device, driver;
        char what[32];
        snprintf(what, sizeof what, "select_device_%u", i);
        if (!u32(x, d, "vendor_id", true, &vendor) || !u32(x, d, "device_id", true, &device) ||
            !u32(x, d, "driver_version", true, &driver) ||
            !rules(x, kernels, list(x, d, "rules", false), what, names)) {
            qk_str_free(&devs);
            return false;
        }
        qk_str_addf(&devs, "    {%uu, %uu, %uu, ", vendor, device, driver);
        c_str_field(&devs, str(x, d, "cache_uuid", false));
        c_str_field(&devs, str(x, d, "name", false));
        const qkrt_json *rl = qkrt_json_get(d, "rules");
        qk_str_addf(&devs, "%u, %s},\n", rl && rl->type == QKRT_JSON_ARRAY ? rl->count : 0, names);
    }
    if (devices->count)
        qk_str_addf(&x->defs, "static const %s_device_rules %s__select_devices[] = {\n%s};\n", x->p,
                    x->p, devs.s);
    qk_str_free(&devs);
    const char *p = x->p;
    qk_str_addf(&x->defs, "const %s_selection %s_selection_table = {%u, %s%s, %u, %s};\n\n", p, p,
                devices->count, devices->count ? p : "NULL",
                devices->count ? "__select_devices" : "", defaults->count, dname);
    qk_str_addf(
        decl,
        "/* The tuned selection table (docs/manifest.md, \"Selection\"). */\n"
        "#define %s_HAS_SELECT 1\n"
        "typedef struct %s_rule {\n"
        "    const char *op, *format, *format_variant;\n"
        "    int kernel; /* index into %s_kernels */\n"
        "    const char *precision;\n"
        "    int64_t M[2], K[2], T[2]; /* inclusive; an upper bound of -1 has no bound */\n"
        "} %s_rule;\n"
        "typedef struct %s_device_rules {\n"
        "    uint32_t vendor_id, device_id, driver_version;\n"
        "    const char *cache_uuid, *name;\n"
        "    uint32_t rule_count;\n"
        "    const %s_rule *rules;\n"
        "} %s_device_rules;\n"
        "typedef struct %s_selection {\n"
        "    uint32_t device_count;\n"
        "    const %s_device_rules *devices;\n"
        "    uint32_t default_count;\n"
        "    const %s_rule *defaults;\n"
        "} %s_selection;\n"
        "extern const %s_selection %s_selection_table;\n"
        "/* The kernel the table picks for a device (VkPhysicalDeviceProperties' IDs and\n"
        " * driverVersion), an op and format (format_variant NULL: any) and shape s:\n"
        " * its index, or -1. can_run (NULL: every kernel) says whether the device\n"
        " * runs a kernel (its features and limits). */\n"
        "int %s_select(uint32_t vendor_id, uint32_t device_id, uint32_t driver_version,\n"
        "    const char *op, const char *format, const char *format_variant,\n"
        "    const %s_shape *s, int (*can_run)(const %s_kernel *k, void *user), void *user);\n\n",
        x->up, p, p, p, p, p, p, p, p, p, p, p, p, p, p, p);
    bool has[3] = {false, false, false};
    for (uint32_t i = 0; i < x->var_count; i++)
        for (int j = 0; j < 3; j++)
            has[j] |= !strcmp(x->vars[i], j == 0 ? "M" : j == 1 ? "K" : "T");
    qk_str_addf(
        &x->defs,
        "int %s_select(uint32_t vendor_id, uint32_t device_id, uint32_t driver_version,\n"
        "    const char *op, const char *format, const char *format_variant,\n"
        "    const %s_shape *s, int (*can_run)(const %s_kernel *k, void *user), void *user) {\n"
        "    const %s_selection *t = &%s_selection_table;\n"
        "    const %s_device_rules *dev = NULL;\n"
        "    uint32_t i, pass;\n"
        "    int64_t v[3];\n"
        "    v[0] = %s;\n    v[1] = %s;\n    v[2] = %s;\n"
        "    for (i = 0; i < t->device_count; i++) {\n"
        "        const %s_device_rules *d = &t->devices[i];\n"
        "        if (d->vendor_id != vendor_id || d->device_id != device_id) continue;\n"
        "        if (d->driver_version == driver_version) {\n"
        "            dev = d;\n            break;\n        }\n"
        "        if (!dev) dev = d;\n    }\n"
        "    for (pass = 0; pass < 2; pass++) {\n"
        "        const %s_rule *r = pass ? t->defaults : dev ? dev->rules : NULL;\n"
        "        uint32_t n = pass ? t->default_count : dev ? dev->rule_count : 0;\n"
        "        for (i = 0; i < n; i++, r++) {\n"
        "            const int64_t *range[3];\n"
        "            int j, in = 1;\n"
        "            range[0] = r->M;\n            range[1] = r->K;\n"
        "            range[2] = r->T;\n"
        "            if (strcmp(r->op, op) || strcmp(r->format, format) ||\n"
        "                (format_variant && strcmp(r->format_variant, format_variant)))\n"
        "                continue;\n"
        "            for (j = 0; j < 3; j++)\n"
        "                in &= v[j] >= range[j][0] && (range[j][1] < 0 || v[j] <= range[j][1]);\n"
        "            if (!in || %s_kernels[r->kernel].check(s) >= 0) continue;\n"
        "            if (can_run && !can_run(&%s_kernels[r->kernel], user)) continue;\n"
        "            return r->kernel;\n"
        "        }\n    }\n    return -1;\n}\n",
        p, p, p, p, p, p, has[0] ? "s->M" : "0", has[1] ? "s->K" : "0", has[2] ? "s->T" : "0", p, p,
        p, p);
    return true;
}

static bool export_bundle(exporter *x, const char *dir, const char *out_path) {
    char *mpath = qk_path_join(dir, "manifest.json");
    x->manifest_path = mpath;
    size_t n = 0;
    char *text = qk_read_file(mpath, &n, x->e);
    char err[512];
    qkrt_json *root = text ? qkrt_json_parse(text, n, err, sizeof err) : NULL;
    if (text && !root) qk_error_set(x->e, "%s:%s", mpath, err);
    const char *schema = root ? str(x, root, "schema", true) : NULL;
    const qkrt_json *kernels = schema ? list(x, root, "kernels", true) : NULL;
    if (kernels && strncmp(schema, "qkgen-bundle/", 13))
        bad(x, qkrt_json_get(root, "schema"), "schema '%s' is not a qkgen bundle's", schema);
    if (kernels && !kernels->count) bad(x, kernels, "no kernels");
    qk_str rows = {0}, o = {0};
    uint32_t nk = kernels && !x->e->set ? kernels->count : 0, nmods = 0;
    module *mods = qk_xcalloc(nk + 1, sizeof *mods);
    char(*hashes)[65] = qk_xcalloc(nk + 1, sizeof *hashes);
    for (uint32_t i = 0; i < nk && !x->e->set; i++)
        kernel(x, dir, &kernels->items[i], i, mods, &nmods, hashes, &rows);
    qk_str select_decl = {0};
    if (!x->e->set) selection(x, root, kernels, &select_decl);
    bool ok = !x->e->set;
    if (ok) {
        const char *hash = str(x, root, "inputs_hash", false);
        qk_str_addf(&o,
                    "/* %s: the qkgen bundle %s as C data, generated by 'qkgen export' from its\n"
                    " * manifest.json (schema %s%s%s); do not edit. %u kernels, %u modules.\n"
                    " * Declarations everywhere; in exactly one C or C++ file, define\n"
                    " * %s_IMPLEMENTATION before including it for the definitions.\n"
                    " * docs/engines.md describes the types. */\n"
                    "#ifndef %s_H\n#define %s_H\n\n#include <stddef.h>\n#include <stdint.h>\n\n"
                    "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
                    "#define %s_SCHEMA \"%s\"\n#define %s_INPUTS_HASH \"%s\"\n"
                    "#define %s_KERNEL_COUNT %u\n#define %s_SHAPE_COUNT %u\n\n",
                    out_path, dir, schema, hash ? ", inputs " : "", hash ? hash : "", nk, nmods,
                    x->up, x->up, x->up, x->up, schema, x->up, hash ? hash : "", x->up, nk, x->up,
                    x->var_count ? x->var_count : 1);
        header_types(x, &o);
        header_api(x, &o);
        if (select_decl.len) qk_str_add(&o, select_decl.s);
        qk_str_addf(&o,
                    "#ifdef __cplusplus\n}\n#endif\n#endif /* %s_H */\n\n"
                    "#if defined(%s_IMPLEMENTATION) && !defined(%s_IMPLEMENTED)\n"
                    "#define %s_IMPLEMENTED\n#include <string.h>\n"
                    "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n",
                    x->up, x->up, x->up, x->up);
        helpers(x, &o);
        qk_str_add(&o, x->defs.s);
        qk_str_addf(&o, "\nconst %s_kernel %s_kernels[%s_KERNEL_COUNT] = {\n%s};\n\n", x->p, x->p,
                    x->up, rows.s);
        api_defs(x, &o);
        qk_str_addf(&o, "\n#ifdef __cplusplus\n}\n#endif\n#endif /* %s_IMPLEMENTATION */\n", x->up);
        ok = qk_write_file(out_path, o.s, o.len, x->e);
    }
    qk_str_free(&rows);
    qk_str_free(&o);
    qk_str_free(&select_decl);
    free(mods);
    free(hashes);
    qkrt_json_free(root);
    free(text);
    free(mpath);
    return ok;
}

int cmd_export(qk_args *a) {
    const char *bundle = NULL, *out = NULL, *prefix = "qkb";
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen export BUNDLE --c FILE.h [--prefix NAME]\n\n"
                 "Writes the bundle folder BUNDLE (manifest.json and its .spv files) as one C\n"
                 "header: every module's SPIR-V as a uint32_t array and every kernel's entry as\n"
                 "static data (names, bindings, push constants, specialization constants,\n"
                 "workgroup size, requirements, weights layout), with its dispatch grid and\n"
                 "constraints as C functions of the shape. It compiles as C99 and C++; define\n"
                 "NAME_IMPLEMENTATION (in capitals) in one file before including it.\n\n"
                 "  --c FILE.h     the header to write (atomically)\n"
                 "  --prefix NAME  prefix of its types, functions and macros (default qkb)\n"
                 "exit status: 0 written, 1 cannot write, 2 bad argument or bundle");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--c", &out) || qk_opt(a, "--prefix", &prefix)) continue;
        if (a->argv[a->i][0] != '-' && !bundle) {
            bundle = a->argv[a->i++];
            continue;
        }
        return qk_bad_arg(a);
    }
    if (!bundle)
        return qk_usage_error(a->cmd, "no bundle folder given (see 'qkgen export --help')");
    if (!out) return qk_usage_error(a->cmd, "--c FILE.h is required");
    bool ident = prefix[0] && strlen(prefix) < 48 && !isdigit((unsigned char)prefix[0]);
    for (const char *s = prefix; *s; s++)
        ident &= isalnum((unsigned char)*s) || *s == '_';
    if (!ident) return qk_usage_error(a->cmd, "--prefix: '%s' is not a C identifier", prefix);
    qk_error e = {0};
    exporter x = {.p = prefix, .e = &e};
    for (size_t i = 0; prefix[i]; i++)
        x.up[i] = (char)toupper((unsigned char)prefix[i]);
    bool ok = export_bundle(&x, bundle, out);
    qk_str_free(&x.defs);
    if (ok) return QK_EXIT_OK;
    fprintf(stderr, "qkgen export: %s\n", e.msg);
    return strstr(e.msg, "cannot write") || strstr(e.msg, "cannot create") ? QK_EXIT_FAIL
                                                                           : QK_EXIT_USAGE;
}
