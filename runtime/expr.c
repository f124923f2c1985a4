/* Integer expressions of manifests: dispatch grids and shape constraints, over
 * named shape variables. Recursive descent, checked for overflow and zero division. */
#include "internal.h"

#include <stdio.h>
#include <string.h>

typedef struct expr_parser {
    const char *text, *p, *end; /* parses [p, end) of text */
    const char *what;           /* "expression", "grid expression", ... */
    const qkrt_shape *shape;
    char *error;
    size_t error_size;
    bool failed;
} expr_parser;

static bool fail_at(expr_parser *ep, const char *at, const char *problem, size_t len,
                    const char *detail) {
    if (!ep->failed && ep->error && ep->error_size) {
        snprintf(ep->error, ep->error_size, "%s%.*s%s in %s '%s' (column %u)", problem, (int)len,
                 detail ? detail : "", detail ? "'" : "", ep->what, ep->text,
                 (unsigned)(at - ep->text) + 1);
    }
    ep->failed = true;
    return false;
}

static bool fail(expr_parser *ep, const char *problem) {
    return fail_at(ep, ep->p, problem, 0, NULL);
}

static void skip_space(expr_parser *ep) {
    while (ep->p < ep->end && (*ep->p == ' ' || *ep->p == '\t'))
        ep->p++;
}

static bool is_ident_start(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_digit(char c) {
    return c >= '0' && c <= '9';
}

static bool add(expr_parser *ep, const char *at, int64_t a, int64_t b, int64_t *out) {
    if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
        return fail_at(ep, at, "overflow", 0, NULL);
    *out = a + b;
    return true;
}

static bool mul(expr_parser *ep, const char *at, int64_t a, int64_t b, int64_t *out) {
    /* the CERT INT32-C test; none of these divisions can overflow */
    bool overflow = a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a)
                          : (b > 0 ? a < INT64_MIN / b : (a != 0 && b < INT64_MAX / a));
    if (overflow) return fail_at(ep, at, "overflow", 0, NULL);
    *out = a * b;
    return true;
}

static bool parse_sum(expr_parser *ep, int64_t *out);

static bool parse_primary(expr_parser *ep, int64_t *out) {
    skip_space(ep);
    if (ep->p >= ep->end) return fail(ep, "unexpected end");
    const char *start = ep->p;
    if (*ep->p == '(') {
        ep->p++;
        if (!parse_sum(ep, out)) return false;
        skip_space(ep);
        if (ep->p >= ep->end || *ep->p != ')') return fail_at(ep, start, "unclosed '('", 0, NULL);
        ep->p++;
        return true;
    }
    if (is_digit(*ep->p)) {
        int64_t v = 0;
        while (ep->p < ep->end && is_digit(*ep->p)) {
            int d = *ep->p - '0';
            if (v > (INT64_MAX - d) / 10) return fail_at(ep, start, "number too large", 0, NULL);
            v = v * 10 + d;
            ep->p++;
        }
        if (ep->p < ep->end && is_ident_start(*ep->p)) return fail(ep, "unexpected letter");
        *out = v;
        return true;
    }
    if (is_ident_start(*ep->p)) {
        while (ep->p < ep->end && (is_ident_start(*ep->p) || is_digit(*ep->p)))
            ep->p++;
        size_t len = (size_t)(ep->p - start);
        const qkrt_shape *s = ep->shape;
        uint32_t count = s ? (s->count < QKRT_MAX_VARS ? s->count : QKRT_MAX_VARS) : 0;
        for (uint32_t i = 0; i < count; i++) {
            const char *name = s->names[i];
            if (name && strlen(name) == len && memcmp(name, start, len) == 0) {
                *out = s->values[i];
                return true;
            }
        }
        return fail_at(ep, start, "unknown variable '", len, start);
    }
    char c[2] = {*ep->p, 0};
    return fail_at(ep, start, "unexpected '", 1, c);
}

static bool parse_unary(expr_parser *ep, int64_t *out) {
    skip_space(ep);
    if (ep->p < ep->end && (*ep->p == '-' || *ep->p == '+')) {
        const char *at = ep->p;
        bool negate = *ep->p == '-';
        ep->p++;
        if (!parse_unary(ep, out)) return false;
        if (negate) return mul(ep, at, *out, -1, out);
        return true;
    }
    return parse_primary(ep, out);
}

static bool parse_product(expr_parser *ep, int64_t *out) {
    if (!parse_unary(ep, out)) return false;
    for (;;) {
        skip_space(ep);
        if (ep->p >= ep->end || (*ep->p != '*' && *ep->p != '/' && *ep->p != '%')) return true;
        const char *at = ep->p;
        char op = *ep->p++;
        int64_t rhs;
        if (!parse_unary(ep, &rhs)) return false;
        if (op == '*') {
            if (!mul(ep, at, *out, rhs, out)) return false;
            continue;
        }
        if (rhs == 0) return fail_at(ep, at, "division by zero", 0, NULL);
        if (*out == INT64_MIN && rhs == -1) return fail_at(ep, at, "overflow", 0, NULL);
        /* "/" rounds down (floor), and "%" is the matching non-negative-for-positive-divisor
         * remainder, so a / b * b + a % b == a for every sign */
        int64_t q = *out / rhs, r = *out % rhs;
        if (r != 0 && ((r < 0) != (rhs < 0))) {
            q -= 1;
            r += rhs;
        }
        *out = op == '/' ? q : r;
    }
}

static bool parse_sum(expr_parser *ep, int64_t *out) {
    if (!parse_product(ep, out)) return false;
    for (;;) {
        skip_space(ep);
        if (ep->p >= ep->end || (*ep->p != '+' && *ep->p != '-')) return true;
        const char *at = ep->p;
        char op = *ep->p++;
        int64_t rhs;
        if (!parse_product(ep, &rhs)) return false;
        if (op == '-') {
            if (rhs == INT64_MIN) return fail_at(ep, at, "overflow", 0, NULL);
            rhs = -rhs;
        }
        if (!add(ep, at, *out, rhs, out)) return false;
    }
}

/* Parses the whole of [from, to) as one expression. */
static bool parse_span(expr_parser *ep, const char *from, const char *to, int64_t *out) {
    ep->p = from;
    ep->end = to;
    skip_space(ep);
    if (ep->p >= ep->end) return fail(ep, "empty operand");
    if (!parse_sum(ep, out)) return false;
    skip_space(ep);
    if (ep->p < ep->end) {
        if (*ep->p == ')') return fail(ep, "unmatched ')'");
        char c[2] = {*ep->p, 0};
        return fail_at(ep, ep->p, "unexpected '", 1, c);
    }
    return true;
}

static void init(expr_parser *ep, const char *expr, const char *what, const qkrt_shape *shape,
                 char *error, size_t error_size) {
    *ep = (expr_parser){expr, expr, expr, what, shape, error, error_size, false};
    if (error && error_size) error[0] = '\0';
}

qkrt_result qkrt_eval_named(const char *expr, const char *what, const qkrt_shape *shape,
                            int64_t *value, char *error, size_t error_size) {
    if (!expr || !value) {
        if (error && error_size) snprintf(error, error_size, "qkrt_eval: expr and value needed");
        return QKRT_ERROR_ARGUMENT;
    }
    expr_parser ep;
    init(&ep, expr, what, shape, error, error_size);
    int64_t v = 0;
    if (!parse_span(&ep, expr, expr + strlen(expr), &v)) return QKRT_ERROR_ARGUMENT;
    *value = v;
    return QKRT_OK;
}

qkrt_result qkrt_eval(const char *expr, const qkrt_shape *shape, int64_t *value, char *error,
                      size_t error_size) {
    return qkrt_eval_named(expr, "expression", shape, value, error, error_size);
}

qkrt_result qkrt_eval_bool(const char *expr, const qkrt_shape *shape, bool *value, char *error,
                           size_t error_size) {
    if (!expr || !value) {
        if (error && error_size)
            snprintf(error, error_size, "qkrt_eval_bool: expr and value needed");
        return QKRT_ERROR_ARGUMENT;
    }
    expr_parser ep;
    init(&ep, expr, "constraint", shape, error, error_size);
    /* the one comparison operator, outside any parentheses */
    const char *op = NULL;
    size_t op_len = 0;
    int depth = 0;
    for (const char *c = expr; *c; c++) {
        if (*c == '(') depth++;
        if (*c == ')') depth--;
        if (depth != 0 || !strchr("=!<>", *c)) continue;
        size_t len = c[1] == '=' ? 2 : 1;
        if ((*c == '=' || *c == '!') && len == 1) {
            ep.p = c;
            fail(&ep, *c == '=' ? "'=' is not a comparison (use '==')" : "unexpected '!'");
            return QKRT_ERROR_ARGUMENT;
        }
        if (op) {
            ep.p = c;
            fail(&ep, "a second comparison");
            return QKRT_ERROR_ARGUMENT;
        }
        op = c;
        op_len = len;
        c += len - 1;
    }
    if (!op) {
        fail(&ep, "no comparison (== != <= >= < >)");
        return QKRT_ERROR_ARGUMENT;
    }
    int64_t lhs, rhs;
    if (!parse_span(&ep, expr, op, &lhs)) return QKRT_ERROR_ARGUMENT;
    if (!parse_span(&ep, op + op_len, expr + strlen(expr), &rhs)) return QKRT_ERROR_ARGUMENT;
    switch (op[0]) {
    case '=':
        *value = lhs == rhs;
        break;
    case '!':
        *value = lhs != rhs;
        break;
    case '<':
        *value = op_len == 2 ? lhs <= rhs : lhs < rhs;
        break;
    default:
        *value = op_len == 2 ? lhs >= rhs : lhs > rhs;
        break;
    }
    return QKRT_OK;
}
