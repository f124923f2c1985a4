/* The engine's own evaluator of manifest expressions, written from
 * docs/manifest.md alone: int64, checked, / rounding down, % following it. */
#include "engine.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

typedef struct ev {
    const char *src, *p;
    const eng_shape *s;
    char *err;
    size_t n;
    int failed, cond;
} ev;

static int fail(ev *e, const char *what) {
    if (!e->failed)
        snprintf(e->err, e->n, "%s at column %d of '%s'", what, (int)(e->p - e->src) + 1, e->src);
    e->failed = 1;
    return -1;
}

static void space(ev *e) {
    while (isspace((unsigned char)*e->p))
        e->p++;
}

/* Takes op if it is next and is not the start of a longer operator. */
static int take(ev *e, const char *op) {
    space(e);
    size_t len = strlen(op);
    if (strncmp(e->p, op, len)) return 0;
    if (len == 1 && strchr("<>!", op[0]) && e->p[1] == '=') return 0;
    e->p += len;
    return 1;
}

static int either(ev *e, int64_t a, int64_t b, char op, int64_t *out) {
    int64_t r = 0;
    int bad;
    switch (op) {
    case '+':
        bad = __builtin_add_overflow(a, b, &r);
        break;
    case '-':
        bad = __builtin_sub_overflow(a, b, &r);
        break;
    case '*':
        bad = __builtin_mul_overflow(a, b, &r);
        break;
    default: /* '/' and '%' */
        if (b == 0) return fail(e, "division by zero");
        bad = op == '/' && a == INT64_MIN && b == -1;
        if (!bad && b == -1) {
            r = op == '/' ? -a : 0;
        } else if (!bad) {
            int64_t q = a / b, m = a % b;
            if (m != 0 && (m < 0) != (b < 0)) q -= 1, m += b;
            r = op == '/' ? q : m;
        }
    }
    if (bad) return fail(e, "overflow");
    *out = r;
    return 0;
}

static int any_of(ev *e, int64_t *v);

static int primary(ev *e, int64_t *v) {
    space(e);
    e->cond = 0;
    if (take(e, "(")) {
        if (any_of(e, v)) return -1;
        return take(e, ")") ? 0 : fail(e, "expected ')'");
    }
    if (take(e, "-")) return primary(e, v) ? -1 : either(e, 0, *v, '-', v);
    if (take(e, "+")) return primary(e, v);
    if (take(e, "!")) {
        if (primary(e, v)) return -1;
        *v = !*v;
        e->cond = 1;
        return 0;
    }
    if (isdigit((unsigned char)*e->p)) {
        int64_t x = 0;
        while (isdigit((unsigned char)*e->p))
            if (either(e, x, 10, '*', &x) || either(e, x, *e->p++ - '0', '+', &x)) return -1;
        *v = x;
        return 0;
    }
    if (isalpha((unsigned char)*e->p) || *e->p == '_') {
        const char *s = e->p;
        while (isalnum((unsigned char)*e->p) || *e->p == '_')
            e->p++;
        for (uint32_t i = 0; i < e->s->count; i++)
            if (strlen(e->s->names[i]) == (size_t)(e->p - s) &&
                !strncmp(e->s->names[i], s, (size_t)(e->p - s))) {
                *v = e->s->values[i];
                return 0;
            }
        e->p = s;
        return fail(e, "unknown variable");
    }
    return fail(e, "expected a number, a name or '('");
}

static int product(ev *e, int64_t *v) {
    if (primary(e, v)) return -1;
    for (;;) {
        char op = take(e, "*") ? '*' : take(e, "/") ? '/' : take(e, "%") ? '%' : 0;
        int64_t r;
        if (!op) return 0;
        if (primary(e, &r) || either(e, *v, r, op, v)) return -1;
        e->cond = 0;
    }
}

static int sum(ev *e, int64_t *v) {
    if (product(e, v)) return -1;
    for (;;) {
        char op = take(e, "+") ? '+' : take(e, "-") ? '-' : 0;
        int64_t r;
        if (!op) return 0;
        if (product(e, &r) || either(e, *v, r, op, v)) return -1;
        e->cond = 0;
    }
}

static int comparison(ev *e, int64_t *v) {
    static const char *const ops[] = {"==", "!=", "<=", ">=", "<", ">"};
    if (sum(e, v)) return -1;
    for (int i = 0; i < 6; i++) {
        int64_t r, l = *v;
        if (!take(e, ops[i])) continue;
        if (sum(e, &r)) return -1;
        *v = i == 0   ? l == r
             : i == 1 ? l != r
             : i == 2 ? l <= r
             : i == 3 ? l >= r
             : i == 4 ? l < r
                      : l > r;
        e->cond = 1;
        for (int j = 0; j < 6; j++) {
            const char *at = e->p;
            if (take(e, ops[j])) {
                e->p = at;
                return fail(e, "a second comparison");
            }
        }
        return 0;
    }
    return 0;
}

static int all_of(ev *e, int64_t *v) {
    if (comparison(e, v)) return -1;
    while (take(e, "&&")) {
        int64_t r;
        if (comparison(e, &r)) return -1;
        *v = *v && r;
        e->cond = 1;
    }
    return 0;
}

static int any_of(ev *e, int64_t *v) {
    if (all_of(e, v)) return -1;
    while (take(e, "||")) {
        int64_t r;
        if (all_of(e, &r)) return -1;
        *v = *v || r;
        e->cond = 1;
    }
    return 0;
}

int eng_eval(const char *expr, const eng_shape *s, int condition, int64_t *out, char *err,
             size_t n) {
    ev e = {expr, expr, s, err, n, 0, 0};
    int64_t v;
    if (any_of(&e, &v)) return -1;
    space(&e);
    if (*e.p) return fail(&e, "unexpected text");
    if (condition && !e.cond) return fail(&e, "not a condition");
    *out = v;
    return 0;
}
