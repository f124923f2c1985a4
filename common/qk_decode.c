/* The declared reference's expression language (docs/new-format.md): a
 * recursive-descent parser to a typed tree (every node is an integer or a
 * real, known when compiled), evaluated per element in int64 / float64. */
#include "qk_decode.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t qk_dtype_size(qk_dtype t) {
    switch (t) {
    case QK_DT_U8:
    case QK_DT_I8:
        return 1;
    case QK_DT_U16:
    case QK_DT_I16:
    case QK_DT_F16:
    case QK_DT_BF16:
        return 2;
    case QK_DT_U32:
    case QK_DT_I32:
    case QK_DT_F32:
        return 4;
    case QK_DT_U64:
        return 8;
    default:
        return 0;
    }
}

bool qk_dtype_is_float(qk_dtype t) {
    return t == QK_DT_F16 || t == QK_DT_BF16 || t == QK_DT_F32;
}

/* ------------------------------------------------------- scalar decoders */

double qk_decode_f16(uint32_t h) {
    uint32_t e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0    ? ldexp(m, -24)
               : e == 31 ? (m ? NAN : INFINITY)
                         : ldexp(m | 1024, (int)e - 25);
    return (h & 0x8000) ? -v : v;
}

static double bf16_value(uint32_t h) {
    uint32_t u = (h & 0xffff) << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static double f32_value(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* OCP FP8 E4M3: bias 7, subnormals, no infinities, S.1111.111 is NaN. */
double qk_decode_e4m3(uint32_t b) {
    uint32_t e = (b >> 3) & 15, m = b & 7;
    double v = e == 15 && m == 7 ? NAN : e == 0 ? ldexp(m, -9) : ldexp(8 + m, (int)e - 10);
    return (b & 0x80) ? -v : v;
}

/* OCP E2M1 (fp4): bias 1, one mantissa bit: 0, 0.5, 1, 1.5, 2, 3, 4, 6. */
static double e2m1_value(uint32_t b) {
    uint32_t e = (b >> 1) & 3, m = b & 1;
    double v = e == 0 ? 0.5 * m : ldexp(2 + m, (int)e - 2);
    return (b & 8) ? -v : v;
}

/* ------------------------------------------------------------ the tree */

typedef enum op {
    OP_INT, /* literal (and parameters) */
    OP_REAL,
    OP_ELEM,
    OP_LET,
    OP_VAR,   /* field or plane element: sym, index a (or -1: element 0) */
    OP_TABLE, /* sym, index a */
    OP_BYTE,
    OP_NEG,
    OP_NOT,
    OP_BNOT,
    OP_ADD,
    OP_SUB,
    OP_MUL,
    OP_DIV,
    OP_MOD,
    OP_SHL,
    OP_SHR,
    OP_BAND,
    OP_BOR,
    OP_BXOR,
    OP_LT,
    OP_LE,
    OP_GT,
    OP_GE,
    OP_EQ,
    OP_NE,
    OP_LAND,
    OP_LOR,
    OP_COND,
    OP_F16,
    OP_BF16,
    OP_E4M3,
    OP_E8M0,
    OP_UE4M3,
    OP_E2M1,
    OP_BITS,
    OP_TOINT,
    OP_TOREAL,
    OP_POPCOUNT,
    OP_MIN,
    OP_MAX,
    OP_ABS,
} op;

typedef struct node {
    uint8_t op;
    bool is_int; /* the node's value is an integer (else a real) */
    int32_t a, b, c, sym;
    int32_t pos; /* offset in its expression's text, for messages */
    int64_t i;
    double r;
} node;

typedef struct var {
    char *name;
    qk_dtype type;
    uint32_t offset, count;
    uint32_t ranges;
    double lo[QK_DECODE_MAX_RANGES], hi[QK_DECODE_MAX_RANGES];
} var;

typedef struct table {
    char *name;
    qk_dtype type;
    uint32_t count;
    int64_t *ints;
    double *reals;
} table;

struct qk_decode {
    bool planar;
    uint32_t elements, block_bytes;
    uint32_t var_count, table_count, let_count;
    var *vars;
    table *tables;
    char **let_names;
    int32_t *roots; /* let_count lets, then the value */
    bool *let_int;
    node *nodes;
    uint32_t node_count, node_cap;
};

/* ---------------------------------------------------------- the parser */

typedef struct parser {
    qk_decode *d;
    const char *text, *p;
    int expr;     /* which expression: a let's index or let_count */
    uint32_t par; /* parameters, visible by name */
    const char *const *par_names;
    const int64_t *par_values;
    qk_decode_error *err;
    bool failed;
    int depth;
} parser;

static bool fail_at(parser *ps, const char *at, const char *fmt, ...) {
    if (ps->failed) return false;
    ps->failed = true;
    ps->err->expr = ps->expr;
    ps->err->offset = (int)(at - ps->text);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ps->err->msg, sizeof ps->err->msg, fmt, ap);
    va_end(ap);
    return false;
}

static int32_t new_node(parser *ps, op o, bool is_int, const char *at) {
    qk_decode *d = ps->d;
    if (d->node_count == d->node_cap) {
        d->node_cap = d->node_cap ? 2 * d->node_cap : 64;
        node *n = realloc(d->nodes, sizeof *n * d->node_cap);
        if (!n) abort();
        d->nodes = n;
    }
    node *n = &d->nodes[d->node_count];
    memset(n, 0, sizeof *n);
    n->op = (uint8_t)o;
    n->is_int = is_int;
    n->a = n->b = n->c = n->sym = -1;
    n->pos = (int32_t)(at - ps->text);
    return (int32_t)d->node_count++;
}

static node *N(parser *ps, int32_t i) {
    return &ps->d->nodes[i];
}

static void skip_ws(parser *ps) {
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

static int32_t parse_cond(parser *ps);

static bool expect_char(parser *ps, char c) {
    skip_ws(ps);
    if (*ps->p != c) {
        if (*ps->p) return fail_at(ps, ps->p, "expected '%c', found '%c'", c, *ps->p);
        return fail_at(ps, ps->p, "expected '%c' at the end", c);
    }
    ps->p++;
    return true;
}

static const struct {
    const char *name;
    op o;
    int args;
} funcs[] = {
    {"f16", OP_F16, 1},           {"bf16", OP_BF16, 1},   {"e4m3", OP_E4M3, 1},
    {"e8m0", OP_E8M0, 1},         {"ue4m3", OP_UE4M3, 1}, {"e2m1", OP_E2M1, 1},
    {"bits", OP_BITS, 3},         {"int", OP_TOINT, 1},   {"float", OP_TOREAL, 1},
    {"popcount", OP_POPCOUNT, 1}, {"min", OP_MIN, 2},     {"max", OP_MAX, 2},
    {"abs", OP_ABS, 1},           {"byte", OP_BYTE, 1},
};

static bool name_is(const char *name, size_t len, const char *s) {
    return strlen(s) == len && !strncmp(name, s, len);
}

static int32_t parse_call(parser *ps, const char *at, size_t len) {
    for (size_t f = 0; f < sizeof funcs / sizeof funcs[0]; f++) {
        if (!name_is(at, len, funcs[f].name)) continue;
        int32_t args[3] = {-1, -1, -1};
        for (int k = 0; k < funcs[f].args; k++) {
            if (k && !expect_char(ps, ',')) return -1;
            args[k] = parse_cond(ps);
            if (args[k] < 0) return -1;
        }
        skip_ws(ps);
        if (*ps->p == ',')
            return fail_at(ps, ps->p, "%s() takes %d argument%s", funcs[f].name, funcs[f].args,
                           funcs[f].args > 1 ? "s" : ""),
                   -1;
        if (!expect_char(ps, ')')) return -1;
        op o = funcs[f].o;
        bool is_int;
        switch (o) {
        case OP_BITS:
        case OP_POPCOUNT:
        case OP_BYTE:
        case OP_F16:
        case OP_BF16:
        case OP_E4M3:
        case OP_E8M0:
        case OP_UE4M3:
        case OP_E2M1:
            for (int k = 0; k < funcs[f].args; k++)
                if (!N(ps, args[k])->is_int)
                    return fail_at(ps, ps->text + N(ps, args[k])->pos,
                                   "%s() takes integers (bit patterns, indices), not a real",
                                   funcs[f].name),
                           -1;
            is_int = o == OP_BITS || o == OP_POPCOUNT || o == OP_BYTE;
            break;
        case OP_TOINT:
            is_int = true;
            break;
        case OP_TOREAL:
            is_int = false;
            break;
        case OP_MIN:
        case OP_MAX:
            is_int = N(ps, args[0])->is_int && N(ps, args[1])->is_int;
            break;
        default: /* abs */
            is_int = N(ps, args[0])->is_int;
        }
        if (o == OP_BYTE && ps->d->planar)
            return fail_at(ps, at, "byte() reads a block: a planar format indexes its planes"), -1;
        int32_t n = new_node(ps, o, is_int, at);
        N(ps, n)->a = args[0], N(ps, n)->b = args[1], N(ps, n)->c = args[2];
        return n;
    }
    return fail_at(ps, at, "unknown function '%.*s'", (int)len, at), -1;
}

static int32_t parse_name(parser *ps) {
    const char *at = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    size_t len = (size_t)(ps->p - at);
    skip_ws(ps);
    if (*ps->p == '(') {
        ps->p++;
        return parse_call(ps, at, len);
    }
    qk_decode *d = ps->d;
    bool indexed = *ps->p == '[';
    int32_t index = -1;
    if (indexed) {
        ps->p++;
        index = parse_cond(ps);
        if (index < 0 || !expect_char(ps, ']')) return -1;
        if (!N(ps, index)->is_int)
            return fail_at(ps, ps->text + N(ps, index)->pos, "an index must be an integer"), -1;
    }
    if (name_is(at, len, "e") || ps->expr > 0) {
        int32_t found = -1;
        if (name_is(at, len, "e")) found = -2;
        for (int l = 0; l < ps->expr && found == -1; l++)
            if (name_is(at, len, d->let_names[l])) found = l;
        if (found != -1) {
            if (indexed) return fail_at(ps, at, "'%.*s' is a number: no index", (int)len, at), -1;
            if (found == -2) return new_node(ps, OP_ELEM, true, at);
            int32_t n = new_node(ps, OP_LET, d->let_int[found], at);
            N(ps, n)->sym = found;
            return n;
        }
    }
    for (uint32_t i = 0; i < ps->par; i++)
        if (name_is(at, len, ps->par_names[i])) {
            if (indexed) return fail_at(ps, at, "'%.*s' is a number: no index", (int)len, at), -1;
            int32_t n = new_node(ps, OP_INT, true, at);
            N(ps, n)->i = ps->par_values[i];
            return n;
        }
    for (uint32_t i = 0; i < d->var_count; i++) {
        const var *v = &d->vars[i];
        if (!name_is(at, len, v->name)) continue;
        if (!indexed && v->count > 1)
            return fail_at(ps, at, "'%s' has %u elements: index it (%s[i])", v->name, v->count,
                           v->name),
                   -1;
        int32_t n = new_node(ps, OP_VAR, !qk_dtype_is_float(v->type), at);
        N(ps, n)->sym = (int32_t)i, N(ps, n)->a = index;
        return n;
    }
    for (uint32_t i = 0; i < d->table_count; i++) {
        const table *t = &d->tables[i];
        if (!name_is(at, len, t->name)) continue;
        if (!indexed) return fail_at(ps, at, "'%s' is a table: index it", t->name), -1;
        int32_t n = new_node(ps, OP_TABLE, t->type != QK_DT_F32, at);
        N(ps, n)->sym = (int32_t)i, N(ps, n)->a = index;
        return n;
    }
    for (uint32_t l = (uint32_t)ps->expr; l < d->let_count; l++)
        if (name_is(at, len, d->let_names[l]))
            return fail_at(ps, at, "'%.*s' is a let defined later: lets see only those before",
                           (int)len, at),
                   -1;
    return fail_at(ps, at,
                   "unknown name '%.*s' (e, a let before this one, a parameter, a %s or a table)",
                   (int)len, at, d->planar ? "plane" : "field"),
           -1;
}

static int32_t parse_number(parser *ps) {
    const char *at = ps->p;
    char *end;
    if (at[0] == '0' && (at[1] == 'x' || at[1] == 'X')) {
        unsigned long long v = strtoull(at, &end, 16);
        if (end == at + 2) return fail_at(ps, at, "a hex number needs digits"), -1;
        ps->p = end;
        int32_t n = new_node(ps, OP_INT, true, at);
        N(ps, n)->i = (int64_t)v;
        return n;
    }
    const char *q = at;
    while (isdigit((unsigned char)*q))
        q++;
    if (*q == '.' || *q == 'e' || *q == 'E') {
        double v = strtod(at, &end);
        ps->p = end;
        int32_t n = new_node(ps, OP_REAL, false, at);
        N(ps, n)->r = v;
        return n;
    }
    unsigned long long v = strtoull(at, &end, 10);
    if (v > (unsigned long long)INT64_MAX) return fail_at(ps, at, "the number is too large"), -1;
    ps->p = end;
    int32_t n = new_node(ps, OP_INT, true, at);
    N(ps, n)->i = (int64_t)v;
    return n;
}

static int32_t parse_unary(parser *ps) {
    skip_ws(ps);
    const char *at = ps->p;
    if (++ps->depth > 200) return fail_at(ps, at, "the expression nests too deeply"), -1;
    int32_t r;
    char c = *at;
    if (c == '-' || c == '!' || c == '~' || c == '+') {
        ps->p++;
        int32_t a = parse_unary(ps);
        if (a < 0) return -1;
        if (c == '+') {
            r = a;
        } else {
            if (c == '~' && !N(ps, a)->is_int)
                return fail_at(ps, at, "'~' takes an integer, not a real"), -1;
            r = new_node(ps,
                         c == '-'   ? OP_NEG
                         : c == '!' ? OP_NOT
                                    : OP_BNOT,
                         c == '-' ? N(ps, a)->is_int : true, at);
            N(ps, r)->a = a;
        }
    } else if (c == '(') {
        ps->p++;
        r = parse_cond(ps);
        if (r < 0 || !expect_char(ps, ')')) return -1;
    } else if (isdigit((unsigned char)c) || (c == '.' && isdigit((unsigned char)at[1]))) {
        r = parse_number(ps);
    } else if (isalpha((unsigned char)c) || c == '_') {
        r = parse_name(ps);
    } else if (!c) {
        return fail_at(ps, at, "expected a value at the end"), -1;
    } else {
        return fail_at(ps, at, "unexpected '%c'", c), -1;
    }
    ps->depth--;
    return r;
}

/* Binary operators by C precedence (higher binds tighter). */
static const struct {
    const char *s;
    op o;
    int prec;
} binops[] = {
    {"||", OP_LOR, 1}, {"&&", OP_LAND, 2}, {"|", OP_BOR, 3},  {"^", OP_BXOR, 4}, {"&", OP_BAND, 5},
    {"==", OP_EQ, 6},  {"!=", OP_NE, 6},   {"<<", OP_SHL, 8}, {">>", OP_SHR, 8}, {"<=", OP_LE, 7},
    {">=", OP_GE, 7},  {"<", OP_LT, 7},    {">", OP_GT, 7},   {"+", OP_ADD, 9},  {"-", OP_SUB, 9},
    {"*", OP_MUL, 10}, {"/", OP_DIV, 10},  {"%", OP_MOD, 10},
};

static int match_binop(const char *p) {
    for (size_t i = 0; i < sizeof binops / sizeof binops[0]; i++) {
        size_t n = strlen(binops[i].s);
        if (strncmp(p, binops[i].s, n)) continue;
        /* "|" is not the start of "||", nor "&" of "&&" */
        if (n == 1 && (p[0] == '|' || p[0] == '&') && p[1] == p[0]) continue;
        return (int)i;
    }
    return -1;
}

static int32_t parse_binary(parser *ps, int min_prec) {
    int32_t lhs = parse_unary(ps);
    while (lhs >= 0) {
        skip_ws(ps);
        int k = match_binop(ps->p);
        if (k < 0 || binops[k].prec < min_prec) break;
        const char *at = ps->p;
        ps->p += strlen(binops[k].s);
        int32_t rhs = parse_binary(ps, binops[k].prec + 1);
        if (rhs < 0) return -1;
        op o = binops[k].o;
        bool ai = N(ps, lhs)->is_int, bi = N(ps, rhs)->is_int, is_int;
        switch (o) {
        case OP_SHL:
        case OP_SHR:
        case OP_BAND:
        case OP_BOR:
        case OP_BXOR:
            if (!ai || !bi)
                return fail_at(ps, at, "'%s' takes integers, not a real (int(x) truncates)",
                               binops[k].s),
                       -1;
            is_int = true;
            break;
        case OP_ADD:
        case OP_SUB:
        case OP_MUL:
        case OP_DIV:
        case OP_MOD:
            is_int = ai && bi;
            break;
        default: /* comparisons and logic */
            is_int = true;
        }
        int32_t n = new_node(ps, o, is_int, at);
        N(ps, n)->a = lhs, N(ps, n)->b = rhs;
        lhs = n;
    }
    return lhs;
}

static int32_t parse_cond(parser *ps) {
    int32_t c = parse_binary(ps, 1);
    if (c < 0) return -1;
    skip_ws(ps);
    if (*ps->p != '?') return c;
    const char *at = ps->p++;
    int32_t a = parse_cond(ps);
    if (a < 0 || !expect_char(ps, ':')) return -1;
    int32_t b = parse_cond(ps);
    if (b < 0) return -1;
    int32_t n = new_node(ps, OP_COND, N(ps, a)->is_int && N(ps, b)->is_int, at);
    N(ps, n)->a = c, N(ps, n)->b = a, N(ps, n)->c = b;
    return n;
}

static int32_t parse_expr(parser *ps, const char *text, int expr) {
    ps->text = ps->p = text ? text : "";
    ps->expr = expr;
    ps->depth = 0;
    int32_t r = parse_cond(ps);
    if (r < 0) return -1;
    skip_ws(ps);
    if (*ps->p) return fail_at(ps, ps->p, "unexpected '%c' after the expression", *ps->p), -1;
    return r;
}

/* ----------------------------------------------------------- compiling */

static char *dup_str(const char *s) {
    size_t n = strlen(s) + 1;
    char *c = malloc(n);
    if (!c) abort();
    return memcpy(c, s, n);
}

void qk_decode_free(qk_decode *d) {
    if (!d) return;
    for (uint32_t i = 0; i < d->var_count; i++)
        free(d->vars[i].name);
    for (uint32_t i = 0; i < d->table_count; i++) {
        free(d->tables[i].name);
        free(d->tables[i].ints);
        free(d->tables[i].reals);
    }
    for (uint32_t i = 0; i < d->let_count; i++)
        free(d->let_names[i]);
    free(d->vars), free(d->tables), free(d->let_names), free(d->roots), free(d->let_int);
    free(d->nodes);
    free(d);
}

static void *zalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size);
    if (!p) abort();
    return p;
}

qk_decode *qk_decode_new(const qk_decode_desc *desc, qk_decode_error *err) {
    memset(err, 0, sizeof *err);
    err->expr = -1;
    qk_decode *d = zalloc(1, sizeof *d);
    d->planar = desc->planar;
    d->elements = desc->elements;
    d->block_bytes = desc->block_bytes;
    d->var_count = desc->var_count;
    d->vars = zalloc(desc->var_count, sizeof *d->vars);
    for (uint32_t i = 0; i < desc->var_count; i++) {
        const qk_decode_var *s = &desc->vars[i];
        var *v = &d->vars[i];
        v->name = dup_str(s->name);
        v->type = s->type;
        v->offset = s->offset;
        v->count = s->count ? s->count : 1;
        v->ranges = s->random_count < QK_DECODE_MAX_RANGES ? s->random_count : QK_DECODE_MAX_RANGES;
        memcpy(v->lo, s->random_lo, sizeof v->lo);
        memcpy(v->hi, s->random_hi, sizeof v->hi);
    }
    d->table_count = desc->table_count;
    d->tables = zalloc(desc->table_count, sizeof *d->tables);
    for (uint32_t i = 0; i < desc->table_count; i++) {
        const qk_decode_table *s = &desc->tables[i];
        table *t = &d->tables[i];
        t->name = dup_str(s->name);
        t->type = s->type;
        t->count = s->count;
        if (s->type == QK_DT_F32) {
            t->reals = zalloc(s->count, sizeof *t->reals);
            memcpy(t->reals, s->reals, sizeof *t->reals * s->count);
        } else {
            t->ints = zalloc(s->count, sizeof *t->ints);
            memcpy(t->ints, s->ints, sizeof *t->ints * s->count);
        }
    }
    d->let_count = desc->let_count;
    d->let_names = zalloc(desc->let_count, sizeof *d->let_names);
    d->let_int = zalloc(desc->let_count, sizeof *d->let_int);
    d->roots = zalloc(desc->let_count + 1, sizeof *d->roots);
    for (uint32_t i = 0; i < desc->let_count; i++)
        d->let_names[i] = dup_str(desc->let_names[i]);
    parser ps = {.d = d,
                 .par = desc->param_count,
                 .par_names = desc->param_names,
                 .par_values = desc->param_values,
                 .err = err};
    for (uint32_t i = 0; i <= desc->let_count; i++) {
        const char *text = i < desc->let_count ? desc->let_exprs[i] : desc->value;
        int32_t r = parse_expr(&ps, text, (int)i);
        if (r < 0) {
            qk_decode_free(d);
            return NULL;
        }
        d->roots[i] = r;
        if (i < desc->let_count) d->let_int[i] = d->nodes[r].is_int;
    }
    return d;
}

bool qk_decode_planar(const qk_decode *d) {
    return d->planar;
}
uint32_t qk_decode_elements(const qk_decode *d) {
    return d->elements;
}
uint32_t qk_decode_block_bytes(const qk_decode *d) {
    return d->block_bytes;
}
uint32_t qk_decode_plane_count(const qk_decode *d) {
    return d->planar ? d->var_count : 0;
}
uint32_t qk_decode_plane_per_group(const qk_decode *d, uint32_t p) {
    return d->vars[p].count;
}
qk_dtype qk_decode_plane_type(const qk_decode *d, uint32_t p) {
    return d->vars[p].type;
}

/* ---------------------------------------------------------- evaluation */

typedef struct ctx {
    const qk_decode *d;
    const uint8_t *block;
    const uint8_t *const *planes;
    int64_t e;
    int64_t *let_i;
    double *let_r;
    bool failed;
    char *err;
    size_t err_size;
} ctx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void
eval_fail(ctx *c, const char *fmt, ...) {
    if (c->failed) return;
    c->failed = true;
    int n = snprintf(c->err, c->err_size, "element %lld: ", (long long)c->e);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < c->err_size) vsnprintf(c->err + n, c->err_size - (size_t)n, fmt, ap);
    va_end(ap);
}

static uint64_t load_le(const uint8_t *p, uint32_t n) {
    uint64_t v = 0;
    for (uint32_t i = 0; i < n; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

/* Element i of a field or plane: integers as integers (sign-extended for
 * signed types), floats as their values. */
static void read_elem(const var *v, const uint8_t *p, int64_t *iv, double *rv) {
    uint64_t raw = load_le(p, qk_dtype_size(v->type));
    switch (v->type) {
    case QK_DT_I8:
        *iv = (int8_t)raw;
        break;
    case QK_DT_I16:
        *iv = (int16_t)raw;
        break;
    case QK_DT_I32:
        *iv = (int32_t)raw;
        break;
    case QK_DT_F16:
        *rv = qk_decode_f16((uint32_t)raw);
        break;
    case QK_DT_BF16:
        *rv = bf16_value((uint32_t)raw);
        break;
    case QK_DT_F32:
        *rv = f32_value((uint32_t)raw);
        break;
    default:
        *iv = (int64_t)raw;
    }
}

static int64_t eval_i(ctx *c, int32_t n);
static double eval_r(ctx *c, int32_t n);

static void eval_var(ctx *c, const node *n, int64_t *iv, double *rv) {
    const var *v = &c->d->vars[n->sym];
    int64_t idx = n->a >= 0 ? eval_i(c, n->a) : 0;
    if (idx < 0 || idx >= (int64_t)v->count) {
        eval_fail(c, "index %lld of '%s' is out of range 0..%u", (long long)idx, v->name,
                  v->count - 1);
        return;
    }
    uint32_t size = qk_dtype_size(v->type);
    const uint8_t *p = c->d->planar ? c->planes[n->sym] + (size_t)idx * size
                                    : c->block + v->offset + (size_t)idx * size;
    read_elem(v, p, iv, rv);
}

static int64_t eval_i(ctx *c, int32_t ni);

/* The entry of table node n its index expression names: its table in *t and
 * the index, or -1 (and the evaluation failed) out of range. */
static int64_t table_index(ctx *c, const node *n, const table **t) {
    *t = &c->d->tables[n->sym];
    const int64_t idx = eval_i(c, n->a);
    if (idx >= 0 && idx < (int64_t)(*t)->count) return idx;
    eval_fail(c, "index %lld of table '%s' is out of range 0..%u", (long long)idx, (*t)->name,
              (*t)->count - 1);
    return -1;
}

static int64_t eval_i(ctx *c, int32_t ni) {
    const node *n = &c->d->nodes[ni];
    if (c->failed) return 0;
    switch ((op)n->op) {
    case OP_INT:
        return n->i;
    case OP_ELEM:
        return c->e;
    case OP_LET:
        return c->let_i[n->sym];
    case OP_VAR: {
        int64_t v = 0;
        double r = 0;
        eval_var(c, n, &v, &r);
        return v;
    }
    case OP_TABLE: {
        const table *t;
        const int64_t idx = table_index(c, n, &t);
        return idx < 0 ? 0 : t->ints[idx];
    }
    case OP_BYTE: {
        int64_t idx = eval_i(c, n->a);
        if (idx < 0 || idx >= (int64_t)c->d->block_bytes) {
            eval_fail(c, "byte(%lld) is out of the block's %u bytes", (long long)idx,
                      c->d->block_bytes);
            return 0;
        }
        return c->block[idx];
    }
    case OP_NEG:
        return (int64_t)(0 - (uint64_t)eval_i(c, n->a));
    case OP_NOT:
        return c->d->nodes[n->a].is_int ? !eval_i(c, n->a) : !eval_r(c, n->a);
    case OP_BNOT:
        return ~eval_i(c, n->a);
    case OP_ADD:
        return (int64_t)((uint64_t)eval_i(c, n->a) + (uint64_t)eval_i(c, n->b));
    case OP_SUB:
        return (int64_t)((uint64_t)eval_i(c, n->a) - (uint64_t)eval_i(c, n->b));
    case OP_MUL:
        return (int64_t)((uint64_t)eval_i(c, n->a) * (uint64_t)eval_i(c, n->b));
    case OP_DIV:
    case OP_MOD: {
        int64_t a = eval_i(c, n->a), b = eval_i(c, n->b);
        if (b == 0 || (a == INT64_MIN && b == -1)) {
            eval_fail(c, "integer %s by %lld", n->op == OP_DIV ? "division" : "modulo",
                      (long long)b);
            return 0;
        }
        return n->op == OP_DIV ? a / b : a % b;
    }
    case OP_SHL:
    case OP_SHR: {
        int64_t a = eval_i(c, n->a), b = eval_i(c, n->b);
        if (b < 0 || b > 63) {
            eval_fail(c, "shift by %lld (0..63)", (long long)b);
            return 0;
        }
        return n->op == OP_SHL ? (int64_t)((uint64_t)a << b) : a >> b;
    }
    case OP_BAND:
        return eval_i(c, n->a) & eval_i(c, n->b);
    case OP_BOR:
        return eval_i(c, n->a) | eval_i(c, n->b);
    case OP_BXOR:
        return eval_i(c, n->a) ^ eval_i(c, n->b);
    case OP_LT:
    case OP_LE:
    case OP_GT:
    case OP_GE:
    case OP_EQ:
    case OP_NE: {
        const node *a = &c->d->nodes[n->a], *b = &c->d->nodes[n->b];
        int cmp;
        if (a->is_int && b->is_int) {
            int64_t x = eval_i(c, n->a), y = eval_i(c, n->b);
            cmp = (x > y) - (x < y);
        } else {
            double x = eval_r(c, n->a), y = eval_r(c, n->b);
            if (x != x || y != y) return n->op == OP_NE; /* NaN compares unequal */
            cmp = (x > y) - (x < y);
        }
        switch ((op)n->op) {
        case OP_LT:
            return cmp < 0;
        case OP_LE:
            return cmp <= 0;
        case OP_GT:
            return cmp > 0;
        case OP_GE:
            return cmp >= 0;
        case OP_EQ:
            return cmp == 0;
        default:
            return cmp != 0;
        }
    }
    case OP_LAND:
        return eval_r(c, n->a) != 0 && eval_r(c, n->b) != 0;
    case OP_LOR:
        return eval_r(c, n->a) != 0 || eval_r(c, n->b) != 0;
    case OP_COND:
        return eval_r(c, n->a) != 0 ? eval_i(c, n->b) : eval_i(c, n->c);
    case OP_BITS: {
        int64_t x = eval_i(c, n->a), lo = eval_i(c, n->b), w = eval_i(c, n->c);
        if (lo < 0 || lo > 63 || w < 0 || w > 63) {
            eval_fail(c, "bits(x, %lld, %lld): lo and n must be in 0..63", (long long)lo,
                      (long long)w);
            return 0;
        }
        return (int64_t)(((uint64_t)x >> lo) & ((1ull << w) - 1));
    }
    case OP_TOINT: {
        if (c->d->nodes[n->a].is_int) return eval_i(c, n->a);
        double r = eval_r(c, n->a);
        if (!(r > -9.2e18 && r < 9.2e18)) {
            eval_fail(c, "int(%g) is out of range", r);
            return 0;
        }
        return (int64_t)r;
    }
    case OP_POPCOUNT:
        return __builtin_popcountll((uint64_t)eval_i(c, n->a));
    case OP_MIN:
    case OP_MAX: {
        int64_t a = eval_i(c, n->a), b = eval_i(c, n->b);
        return (n->op == OP_MIN) == (a < b) ? a : b;
    }
    case OP_ABS: {
        int64_t a = eval_i(c, n->a);
        return a < 0 ? (int64_t)(0 - (uint64_t)a) : a;
    }
    default:
        return 0; /* real-valued ops are never asked for an integer */
    }
}

static double eval_r(ctx *c, int32_t ni) {
    const node *n = &c->d->nodes[ni];
    if (n->is_int) return (double)eval_i(c, ni);
    if (c->failed) return 0;
    switch ((op)n->op) {
    case OP_REAL:
        return n->r;
    case OP_LET:
        return c->let_r[n->sym];
    case OP_VAR: {
        int64_t v = 0;
        double r = 0;
        eval_var(c, n, &v, &r);
        return r;
    }
    case OP_TABLE: {
        const table *t;
        const int64_t idx = table_index(c, n, &t);
        return idx < 0 ? 0 : t->reals[idx];
    }
    case OP_NEG:
        return -eval_r(c, n->a);
    case OP_ADD:
        return eval_r(c, n->a) + eval_r(c, n->b);
    case OP_SUB:
        return eval_r(c, n->a) - eval_r(c, n->b);
    case OP_MUL:
        return eval_r(c, n->a) * eval_r(c, n->b);
    case OP_DIV:
        return eval_r(c, n->a) / eval_r(c, n->b);
    case OP_MOD:
        return fmod(eval_r(c, n->a), eval_r(c, n->b));
    case OP_COND:
        return eval_r(c, n->a) != 0 ? eval_r(c, n->b) : eval_r(c, n->c);
    case OP_F16:
        return qk_decode_f16((uint32_t)eval_i(c, n->a) & 0xffff);
    case OP_BF16:
        return bf16_value((uint32_t)eval_i(c, n->a) & 0xffff);
    case OP_E4M3:
        return qk_decode_e4m3((uint32_t)eval_i(c, n->a) & 0xff);
    case OP_UE4M3: { /* as GGUF's NVFP4 scales: byte 0x7f is 0, else bit 7 is ignored */
        uint32_t b = (uint32_t)eval_i(c, n->a) & 0xff, e = (b >> 3) & 15, m = b & 7;
        return b == 0x7f ? 0 : e == 0 ? ldexp(m, -9) : ldexp(8 + m, (int)e - 10);
    }
    case OP_E8M0: {
        int64_t b = eval_i(c, n->a) & 0xff;
        return b == 255 ? NAN : ldexp(1.0, (int)b - 127);
    }
    case OP_E2M1:
        return e2m1_value((uint32_t)eval_i(c, n->a) & 15);
    case OP_TOREAL:
        return eval_r(c, n->a);
    case OP_MIN:
    case OP_MAX: {
        double a = eval_r(c, n->a), b = eval_r(c, n->b);
        return n->op == OP_MIN ? fmin(a, b) : fmax(a, b);
    }
    case OP_ABS:
        return fabs(eval_r(c, n->a));
    default:
        return 0;
    }
}

static bool decode(const qk_decode *d, const uint8_t *block, const uint8_t *const *planes,
                   double *y, char *err, size_t err_size) {
    int64_t li[64], *let_i = d->let_count > 64 ? zalloc(d->let_count, sizeof *let_i) : li;
    double lr[64], *let_r = d->let_count > 64 ? zalloc(d->let_count, sizeof *let_r) : lr;
    ctx c = {d, block, planes, 0, let_i, let_r, false, err, err_size};
    bool ok = true;
    for (uint32_t e = 0; e < d->elements && ok; e++) {
        c.e = e;
        for (uint32_t l = 0; l < d->let_count; l++) {
            if (d->let_int[l])
                let_i[l] = eval_i(&c, d->roots[l]);
            else
                let_r[l] = eval_r(&c, d->roots[l]);
        }
        y[e] = eval_r(&c, d->roots[d->let_count]);
        if (!c.failed && !isfinite(y[e]))
            eval_fail(&c, "the value is %s", isnan(y[e]) ? "NaN" : "infinite");
        ok = !c.failed;
    }
    if (let_i != li) free(let_i);
    if (let_r != lr) free(let_r);
    return ok;
}

bool qk_decode_block(const qk_decode *d, const uint8_t *block, double *y, char *err,
                     size_t err_size) {
    return decode(d, block, NULL, y, err, err_size);
}

bool qk_decode_group(const qk_decode *d, const uint8_t *const *planes, double *y, char *err,
                     size_t err_size) {
    return decode(d, NULL, planes, y, err, err_size);
}

/* ---------------------------------------------------------- random data */

static uint64_t next(uint64_t *s) {
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* f32 bits to f16 bits, rounding to nearest even (values in f16's range). */
static uint32_t f16_bits(double v) {
    uint32_t sign = v < 0 ? 0x8000 : 0;
    double a = fabs(v);
    if (a >= 65520) return sign | 0x7c00;
    if (a < ldexp(1, -14)) return sign | (uint32_t)nearbyint(ldexp(a, 24)); /* subnormal */
    int ex;
    double m = frexp(a, &ex);                          /* a = m 2^ex, m in [0.5, 1) */
    uint32_t mant = (uint32_t)nearbyint(ldexp(m, 11)); /* 1024..2048 */
    if (mant == 2048) mant = 1024, ex++;
    return sign | ((uint32_t)(ex + 14) << 10) | (mant - 1024);
}

static uint32_t bf16_bits(double v) {
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    u += 0x7fff + ((u >> 16) & 1); /* to nearest even */
    return u >> 16;
}

static uint64_t float_bits(qk_dtype t, double v) {
    if (t == QK_DT_F16) return f16_bits(v);
    if (t == QK_DT_BF16) return bf16_bits(v);
    float f = (float)v;
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* The raw bits of one random element of v. */
static uint64_t random_elem(const var *v, uint64_t *rng) {
    uint64_t r = next(rng);
    if (v->ranges) {
        uint32_t k = v->ranges > 1 ? (uint32_t)(next(rng) % v->ranges) : 0;
        double lo = v->lo[k], hi = v->hi[k];
        if (qk_dtype_is_float(v->type)) {
            double u = (double)(r >> 11) * 0x1p-53; /* [0, 1) */
            return float_bits(v->type, lo + (hi - lo) * u);
        }
        uint64_t span = (uint64_t)((int64_t)hi - (int64_t)lo) + 1;
        return (uint64_t)((int64_t)lo + (int64_t)(span ? r % span : r));
    }
    if (qk_dtype_is_float(v->type)) {
        /* magnitude in [2^-10, 1), random sign: finite, modest, exact in f16 */
        double m = ldexp(1024 + (double)((r >> 1) & 1023), -10 - (int)((r >> 11) % 10) - 1);
        return float_bits(v->type, (r & 1) ? -m : m);
    }
    return r;
}

static void store_le(uint8_t *p, uint64_t v, uint32_t n) {
    for (uint32_t i = 0; i < n; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

void qk_decode_random_block(const qk_decode *d, uint64_t *rng, uint8_t *block) {
    for (uint32_t i = 0; i < d->block_bytes; i += 8)
        store_le(block + i, next(rng), d->block_bytes - i < 8 ? d->block_bytes - i : 8);
    for (uint32_t f = 0; f < d->var_count; f++) {
        const var *v = &d->vars[f];
        if (!v->ranges && !qk_dtype_is_float(v->type)) continue; /* random bits already */
        uint32_t size = qk_dtype_size(v->type);
        for (uint32_t i = 0; i < v->count; i++)
            store_le(block + v->offset + i * size, random_elem(v, rng), size);
    }
}

void qk_decode_random_group(const qk_decode *d, uint64_t *rng, uint8_t *const *planes) {
    for (uint32_t p = 0; p < d->var_count; p++) {
        const var *v = &d->vars[p];
        uint32_t size = qk_dtype_size(v->type);
        for (uint32_t i = 0; i < v->count; i++)
            store_le(planes[p] + i * size, random_elem(v, rng), size);
    }
}
