/* Integer expressions over named variables: the dispatch-grid rules,
 * constraints and legality rules of kernel specs. Recursive descent; / rounds
 * down and % follows it, as docs/manifest.md defines for engines and as
 * libqkrt's evaluator does, so the generator and runtime agree on any value. */
#include "qk_util.h"

#include <ctype.h>
#include <string.h>

typedef struct parser {
    const char *src, *p;
    qk_lookup_fn lookup;
    void *user;
    qk_error *e;
} parser;

static bool fail(parser *ps, const char *what) {
    qk_error_set(ps->e, "%s at column %d of '%s'", what, (int)(ps->p - ps->src) + 1, ps->src);
    return false;
}

static void skip(parser *ps) {
    while (isspace((unsigned char)*ps->p)) ps->p++;
}

static bool accept(parser *ps, const char *tok) {
    skip(ps);
    size_t n = strlen(tok);
    if (strncmp(ps->p, tok, n) != 0) return false;
    /* "<" must not swallow the start of "<=", nor "=" of "==" etc. */
    if (n == 1 && strchr("<>", tok[0]) && ps->p[1] == '=') return false;
    ps->p += n;
    return true;
}

static bool expr_or(parser *ps, int64_t *v);

static bool primary(parser *ps, int64_t *v) {
    skip(ps);
    if (accept(ps, "(")) {
        if (!expr_or(ps, v)) return false;
        if (!accept(ps, ")")) return fail(ps, "expected ')'");
        return true;
    }
    if (accept(ps, "-")) {
        if (!primary(ps, v)) return false;
        *v = -*v;
        return true;
    }
    if (isdigit((unsigned char)*ps->p)) {
        int64_t x = 0;
        while (isdigit((unsigned char)*ps->p)) x = x * 10 + (*ps->p++ - '0');
        *v = x;
        return true;
    }
    if (isalpha((unsigned char)*ps->p) || *ps->p == '_') {
        const char *s = ps->p;
        while (isalnum((unsigned char)*ps->p) || *ps->p == '_') ps->p++;
        if (!ps->lookup || !ps->lookup(ps->user, s, (size_t)(ps->p - s), v)) {
            qk_error_set(ps->e, "unknown variable '%.*s' in '%s'", (int)(ps->p - s), s, ps->src);
            return false;
        }
        return true;
    }
    return fail(ps, *ps->p ? "unexpected character" : "unexpected end");
}

static bool term(parser *ps, int64_t *v) {
    if (!primary(ps, v)) return false;
    for (;;) {
        char op;
        if (accept(ps, "*"))
            op = '*';
        else if (accept(ps, "/"))
            op = '/';
        else if (accept(ps, "%"))
            op = '%';
        else
            return true;
        int64_t r;
        if (!primary(ps, &r)) return false;
        if (op != '*' && r == 0) return fail(ps, "division by zero");
        int64_t q = *v / r;
        if ((*v % r != 0) && ((*v < 0) != (r < 0))) q--; /* floor */
        *v = op == '*' ? *v * r : op == '/' ? q : *v - q * r;
    }
}

static bool sum(parser *ps, int64_t *v) {
    if (!term(ps, v)) return false;
    for (;;) {
        int sign;
        if (accept(ps, "+"))
            sign = 1;
        else if (accept(ps, "-"))
            sign = -1;
        else
            return true;
        int64_t r;
        if (!term(ps, &r)) return false;
        *v += sign * r;
    }
}

static bool compare(parser *ps, int64_t *v) {
    if (!sum(ps, v)) return false;
    static const char *ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    for (int i = 0; i < 6; i++) {
        if (!accept(ps, ops[i])) continue;
        int64_t r;
        if (!sum(ps, &r)) return false;
        int64_t l = *v;
        *v = i == 0 ? l == r : i == 1 ? l != r : i == 2 ? l <= r : i == 3 ? l >= r : i == 4 ? l < r : l > r;
        return true;
    }
    return true;
}

static bool expr_and(parser *ps, int64_t *v) {
    if (!compare(ps, v)) return false;
    while (accept(ps, "&&")) {
        int64_t r;
        if (!compare(ps, &r)) return false;
        *v = *v && r;
    }
    return true;
}

static bool expr_or(parser *ps, int64_t *v) {
    if (!expr_and(ps, v)) return false;
    while (accept(ps, "||")) {
        int64_t r;
        if (!expr_and(ps, &r)) return false;
        *v = *v || r;
    }
    return true;
}

bool qk_expr_eval(const char *expr, qk_lookup_fn lookup, void *user, int64_t *value, qk_error *e) {
    parser ps = {expr, expr, lookup, user, e};
    int64_t v = 0;
    if (!expr_or(&ps, &v)) return false;
    skip(&ps);
    if (*ps.p) return fail(&ps, "unexpected text");
    *value = v;
    return true;
}
