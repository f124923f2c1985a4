/* Integer expressions over named variables, the one evaluator of qkgen: spec
 * rules, constraints, grids and sizes in the generator, and manifests in libqkrt.
 * Recursive descent over int64 with every operation checked, so no input has
 * undefined behaviour; / rounds down and % follows it, as docs/manifest.md says. */
#include "qk_util.h"

#include <ctype.h>
#include <stdio.h>
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
} parser;

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
    return true;
}

static bool variable(parser *ps, int64_t *v) {
    const char *s = ps->p;
    while (isalnum((unsigned char)*ps->p) || *ps->p == '_')
        ps->p++;
    int len = (int)(ps->p - s);
    if (ps->syntax_only) return *v = 1, true;
    if (!ps->lookup || !ps->lookup(ps->user, s, (size_t)len, v))
        return fail_at(ps, s, "unknown variable '%.*s'", len, s);
    return true;
}

/* primary: number | name | ( or ) | unary operator applied to a primary */
static bool primary(parser *ps, int64_t *v) {
    skip(ps);
    const char *at = ps->p;
    if (++ps->depth > MAX_DEPTH) return fail_at(ps, at, "nested deeper than %d", MAX_DEPTH);
    bool ok;
    ps->cond = false;
    if (accept(ps, "(")) {
        ok = expr_or(ps, v);
        if (ok && !accept(ps, ")")) ok = fail_at(ps, at, "unclosed '('");
    } else if (accept(ps, "-")) {
        ok = primary(ps, v);
        if (ok && __builtin_sub_overflow((int64_t)0, *v, v) && !ps->syntax_only)
            ok = overflow(ps, at, '-');
        ps->cond = false;
    } else if (accept(ps, "+")) {
        ok = primary(ps, v);
        ps->cond = false;
    } else if (accept(ps, "!")) {
        ok = primary(ps, v);
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
    if (!primary(ps, v)) return false;
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        char op = *ps->p;
        if (op != '*' && op != '/' && op != '%') return true;
        ps->p++;
        int64_t r;
        if (!primary(ps, &r)) return false;
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
    if (!term(ps, v)) return false;
    for (;;) {
        skip(ps);
        const char *at = ps->p;
        char op = *ps->p;
        if (op != '+' && op != '-') return true;
        ps->p++;
        int64_t r;
        if (!term(ps, &r)) return false;
        ps->cond = false;
        bool o = op == '+' ? __builtin_add_overflow(*v, r, v) : __builtin_sub_overflow(*v, r, v);
        if (o && !ps->syntax_only) return overflow(ps, at, op);
    }
}

static const char *const compare_ops[] = {"==", "!=", "<=", ">=", "<", ">"};

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
    if (!sum(ps, v)) return false;
    skip(ps);
    if (ps->p[0] == '=' && ps->p[1] != '=')
        return fail_at(ps, ps->p, "'=' is not a comparison (use '==')");
    int i = next_compare(ps);
    if (i < 0) return true;
    accept(ps, compare_ops[i]);
    int64_t r, l = *v;
    if (!sum(ps, &r)) return false;
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
    if (!compare(ps, v)) return false;
    while (accept(ps, "&&")) {
        int64_t r;
        if (!compare(ps, &r)) return false;
        *v = *v && r;
        ps->cond = true;
    }
    return true;
}

static bool expr_or(parser *ps, int64_t *v) {
    if (!expr_and(ps, v)) return false;
    while (accept(ps, "||")) {
        int64_t r;
        if (!expr_and(ps, &r)) return false;
        *v = *v || r;
        ps->cond = true;
    }
    return true;
}

static bool run(const char *expr, const char *what, qk_expr_kind kind, qk_lookup_fn lookup,
                void *user, bool syntax_only, int64_t *value, qk_error *e) {
    if (!what) what = kind == QK_EXPR_CONDITION ? "condition" : "expression";
    if (!expr) {
        qk_error_set(e, "no %s", what);
        return false;
    }
    parser ps = {expr, expr, what, lookup, user, e, 0, false, syntax_only};
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
    return run(expr, what, kind, lookup, user, false, value, e);
}

bool qk_expr_eval(const char *expr, qk_lookup_fn lookup, void *user, int64_t *value, qk_error *e) {
    return run(expr, NULL, QK_EXPR_VALUE, lookup, user, false, value, e);
}

bool qk_expr_check(const char *expr, const char *what, qk_expr_kind kind, qk_error *e) {
    int64_t v;
    return run(expr, what, kind, NULL, NULL, true, &v, e);
}
