/* Integer expressions over named variables, the one reader of qkgen: spec
 * rules, constraints, grids and sizes in the generator, manifests in libqkrt,
 * and their C form in qkgen export's header (qk_expr_to_c), so that both read
 * the same text alike. Recursive descent over int64 with every operation
 * checked, so no input has undefined behaviour; / rounds down and % follows
 * it, as docs/manifest.md says. */
#include "qk_util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Parentheses and unary operators recurse; past this a hostile text would
 * exhaust the stack, and no real expression comes close. */
enum { MAX_DEPTH = 64 };

typedef struct parser {
    const char *src, *p;
    const char *what; /* "expression", "grid expression", ... */
    qk_lookup_fn lookup;
    void *user;
    qk_error *e;
    int depth;
    bool cond;        /* the last value parsed is a comparison or logical result */
    bool syntax_only; /* qk_expr_check: any name is 1, arithmetic is not checked */
    /* qk_expr_to_c (syntax_only too): the C text of what is parsed goes to
     * out, each operation a call of prefix's checked helper */
    qk_str *out;
    const char *prefix;
    qk_expr_c_var_fn cvar;
    void *cuser;
} parser;

static void emit(parser *ps, const char *text) {
    if (ps->out) qk_str_add(ps->out, text);
}

static size_t mark(const parser *ps) {
    return ps->out ? ps->out->len : 0;
}

/* The text since from, a left operand up to mid and a right one after it,
 * becomes "PREFIX__op(ok, LEFT, RIGHT)". */
static void wrap(parser *ps, size_t from, size_t mid, const char *op) {
    if (!ps->out) return;
    char *left = qk_xmalloc(mid - from + 1), *right = qk_xstrdup(ps->out->s + mid);
    memcpy(left, ps->out->s + from, mid - from);
    left[mid - from] = '\0';
    ps->out->len = from;
    ps->out->s[from] = '\0';
    qk_str_addf(ps->out, "%s__%s(ok, %s, %s)", ps->prefix, op, left, right);
    free(left);
    free(right);
}

static bool fail_at(parser *ps, const char *at, const char *fmt, ...) QK_PRINTF(3, 4);

static bool fail_at(parser *ps, const char *at, const char *fmt, ...) {
    char problem[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(problem, sizeof problem, fmt, ap);
    va_end(ap);
    qk_error_set(ps->e, "%s in %s '%s' (column %d)", problem, ps->what, ps->src,
                 (int)(at - ps->src) + 1);
    return false;
}

static void skip(parser *ps) {
    while (isspace((unsigned char)*ps->p))
        ps->p++;
}

/* Takes tok if it comes next; a one-character operator does not take the
 * start of a two-character one ("<" of "<=", "!" of "!=", "&" of "&&"). */
static bool accept(parser *ps, const char *tok) {
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0) return false;
    if (n == 1 && strchr("<>!", tok[0]) && ps->p[1] == '=') return false;
    ps->p += n;
    return true;
}

/* false with the message; callers skip it in syntax_only mode, whose values
 * are made up: the (defined, wrapped) result stands and parsing goes on */
static bool overflow(parser *ps, const char *at, char op) {
    return fail_at(ps, at, "'%c' overflows 64-bit integers", op);
}

static bool expr_or(parser *ps, int64_t *v);

static bool number(parser *ps, int64_t *v) {
    const char *start = ps->p;
    int64_t x = 0;
    while (isdigit((unsigned char)*ps->p)) {
        if (__builtin_mul_overflow(x, 10, &x) || __builtin_add_overflow(x, *ps->p - '0', &x))
            return fail_at(ps, start, "number too large");
        ps->p++;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_')
        return fail_at(ps, ps->p, "unexpected letter after a number");
    *v = x;
    /* the value read, never the text: "010" is ten here, eight in C */
    if (ps->out) qk_str_addf(ps->out, "INT64_C(%lld)", (long long)x);
    return true;
}

static bool variable(parser *ps, int64_t *v) {
    const char *s = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    int len = (int)(ps->p - s);
    if (ps->out && !ps->cvar(ps->cuser, s, (size_t)len, ps->out))
        return fail_at(ps, s, "too many names or a name too long ('%.*s')", len, s);
    if (ps->syntax_only) return *v = 1, true;
    if (!ps->lookup || !ps->lookup(ps->user, s, (size_t)len, v))
        return fail_at(ps, s, "unknown variable '%.*s'", len, s);
    return true;
}

static void unary(parser *ps, const char *op) {
    if (ps->out) qk_str_addf(ps->out, "%s__%s(ok, ", ps->prefix, op);
}

/* primary: number | name | ( or ) | unary operator applied to a primary */
static bool primary(parser *ps, int64_t *v) {
    skip(ps);
    const char *at = ps->p;
    if (++ps->depth > MAX_DEPTH) return fail_at(ps, at, "nested deeper than %d", MAX_DEPTH);
    bool ok;
    ps->cond = false;
    if (accept(ps, "(")) {
        emit(ps, "(");
        ok = expr_or(ps, v);
        if (ok && !accept(ps, ")")) ok = fail_at(ps, at, "unclosed '('");
        emit(ps, ")");
    } else if (accept(ps, "-")) {
        unary(ps, "neg");
        ok = primary(ps, v);
        if (ok && __builtin_sub_overflow((int64_t)0, *v, v) && !ps->syntax_only)
            ok = overflow(ps, at, '-');
        emit(ps, ")");
        ps->cond = false;
    } else if (accept(ps, "+")) {
        unary(ps, "pos");
        ok = primary(ps, v);
        emit(ps, ")");
        ps->cond = false;
    } else if (accept(ps, "!")) {
        unary(ps, "not");
        ok = primary(ps, v);
        emit(ps, ")");
        *v = !*v;
        ps->cond = true;
    } else if (isdigit((unsigned char)*ps->p)) {
        ok = number(ps, v);
    } else if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        ok = variable(ps, v);
    } else if (*ps->p == ')') {
        ok = fail_at(ps, at, "unmatched ')'");
    } else if (*ps->p) {
        ok = fail_at(ps, at, "unexpected '%c'", *ps->p);
    } else {
        ok = fail_at(ps, at, "unexpected end");
    }
    ps->depth--;
    return ok;
}

/* a / b rounded down, and the remainder that goes with it (the sign of b);
 * b is not 0, and INT64_MIN / -1 was refused. */
static int64_t floor_div(int64_t a, int64_t b, int64_t *rem) {
    int64_t q = a / b, r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        q -= 1;
        r += b;
    }
    *rem = r;
    return q;
}

static bool term(parser *ps, int64_t *v) {
    size_t from = mark(ps);
    if (!primary(ps, v)) return false;
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        char op = *ps->p;
        if (op != '*' && op != '/' && op != '%') return true;
        ps->p++;
        int64_t r;
        size_t mid = mark(ps);
        if (!primary(ps, &r)) return false;
        wrap(ps, from, mid, op == '*' ? "mul" : op == '/' ? "div" : "mod");
        ps->cond = false;
        if (op == '*') {
            if (__builtin_mul_overflow(*v, r, v) && !ps->syntax_only) return overflow(ps, at, op);
            continue;
        }
        if (r == 0 && ps->syntax_only) r = 1;
        if (r == 0) return fail_at(ps, at, op == '/' ? "division by zero" : "modulo by zero");
        if (*v == INT64_MIN && r == -1) {
            if (op == '/' && !ps->syntax_only) return overflow(ps, at, op);
            *v = 0;
            continue;
        }
        int64_t rem, q = floor_div(*v, r, &rem);
        *v = op == '/' ? q : rem;
    }
}

static bool sum(parser *ps, int64_t *v) {
    size_t from = mark(ps);
    if (!term(ps, v)) return false;
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        char op = *ps->p;
        if (op != '+' && op != '-') return true;
        ps->p++;
        int64_t r;
        size_t mid = mark(ps);
        if (!term(ps, &r)) return false;
        wrap(ps, from, mid, op == '+' ? "add" : "sub");
        ps->cond = false;
        bool o = op == '+' ? __builtin_add_overflow(*v, r, v) : __builtin_sub_overflow(*v, r, v);
        if (o && !ps->syntax_only) return overflow(ps, at, op);
    }
}

static const char *const compare_ops[] = {"==", "!=", "<=", ">=", "<", ">"};
static const char *const compare_names[] = {"eq", "ne", "le", "ge", "lt", "gt"};

static int next_compare(parser *ps) {
    for (int i = 0; i < 6; i++) {
        const char *save = ps->p;
        if (accept(ps, compare_ops[i])) {
            ps->p = save;
            return i;
        }
    }
    return -1;
}

/* One comparison at most: "1 < M < 9" means something else in C than in
 * mathematics, so it is refused rather than guessed. */
static bool compare(parser *ps, int64_t *v) {
    size_t from = mark(ps);
    if (!sum(ps, v)) return false;
    skip(ps);
    if (ps->p[0] == '=' && ps->p[1] != '=')
        return fail_at(ps, ps->p, "'=' is not a comparison (use '==')");
    int i = next_compare(ps);
    if (i < 0) return true;
    accept(ps, compare_ops[i]);
    int64_t r, l = *v;
    size_t mid = mark(ps);
    if (!sum(ps, &r)) return false;
    wrap(ps, from, mid, compare_names[i]);
    skip(ps);
    if (next_compare(ps) >= 0)
        return fail_at(ps, ps->p, "a second comparison (join comparisons with &&)");
    *v = i == 0   ? l == r
         : i == 1 ? l != r
         : i == 2 ? l <= r
         : i == 3 ? l >= r
         : i == 4 ? l < r
                  : l > r;
    ps->cond = true;
    return true;
}

static bool expr_and(parser *ps, int64_t *v) {
    size_t from = mark(ps);
    if (!compare(ps, v)) return false;
    while (accept(ps, "&&")) {
        int64_t r;
        size_t mid = mark(ps);
        if (!compare(ps, &r)) return false;
        wrap(ps, from, mid, "and");
        *v = *v && r;
        ps->cond = true;
    }
    return true;
}

static bool expr_or(parser *ps, int64_t *v) {
    size_t from = mark(ps);
    if (!expr_and(ps, v)) return false;
    while (accept(ps, "||")) {
        int64_t r;
        size_t mid = mark(ps);
        if (!expr_and(ps, &r)) return false;
        wrap(ps, from, mid, "or");
        *v = *v || r;
        ps->cond = true;
    }
    return true;
}

static bool run(const char *expr, const char *what, qk_expr_kind kind, qk_lookup_fn lookup,
                void *user, bool syntax_only, int64_t *value, qk_error *e, parser *c) {
    if (!what) what = kind == QK_EXPR_CONDITION ? "condition" : "expression";
    if (!expr) {
        qk_error_set(e, "no %s", what);
        return false;
    }
    parser ps = {.src = expr,
                 .p = expr,
                 .what = what,
                 .lookup = lookup,
                 .user = user,
                 .e = e,
                 .syntax_only = syntax_only};
    if (c) ps.out = c->out, ps.prefix = c->prefix, ps.cvar = c->cvar, ps.cuser = c->cuser;
    int64_t v = 0;
    if (!expr_or(&ps, &v)) return false;
    skip(&ps);
    if (*ps.p == ')') return fail_at(&ps, ps.p, "unmatched ')'");
    if (*ps.p) return fail_at(&ps, ps.p, "unexpected '%c'", *ps.p);
    if (kind == QK_EXPR_CONDITION && !ps.cond)
        return fail_at(&ps, expr, "no comparison (== != <= >= < >)");
    *value = v;
    return true;
}

bool qk_expr_eval_as(const char *expr, const char *what, qk_expr_kind kind, qk_lookup_fn lookup,
                     void *user, int64_t *value, qk_error *e) {
    return run(expr, what, kind, lookup, user, false, value, e, NULL);
}

bool qk_expr_eval(const char *expr, qk_lookup_fn lookup, void *user, int64_t *value, qk_error *e) {
    return run(expr, NULL, QK_EXPR_VALUE, lookup, user, false, value, e, NULL);
}

bool qk_expr_check(const char *expr, const char *what, qk_expr_kind kind, qk_error *e) {
    int64_t v;
    return run(expr, what, kind, NULL, NULL, true, &v, e, NULL);
}

bool qk_expr_to_c(const char *expr, const char *what, qk_expr_kind kind, const char *prefix,
                  qk_expr_c_var_fn var, void *user, qk_str *out, qk_error *e) {
    parser c = {.out = out, .prefix = prefix, .cvar = var, .cuser = user};
    size_t start = out->len;
    int64_t v;
    bool ok = run(expr, what, kind, NULL, NULL, true, &v, e, &c);
    if (!ok && out->s) out->len = start, out->s[start] = '\0';
    return ok;
}
