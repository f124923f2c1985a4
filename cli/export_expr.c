/* qkgen export: the manifest's expressions as C, with each operation a call of
 * a checked helper so that C gets the manifest's floor division and overflow errors. */
#include "export.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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
    return qk_export_bad(ps->x, ps->node, "%s in expression '%s' (column %d)", problem, ps->src,
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

bool qk_export_add_var(exporter *x, const char *name, size_t len) {
    for (uint32_t i = 0; i < x->var_count; i++)
        if (strlen(x->vars[i]) == len && !memcmp(x->vars[i], name, len)) return true;
    if (x->var_count == QK_EXPORT_MAX_VARS || len >= sizeof x->vars[0]) return false;
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
        if (!qk_export_add_var(ps->x, s, (size_t)(ps->p - s)))
            return xfail(ps, "too many shape variables");
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
bool qk_export_expr(exporter *x, const qkrt_json *node, bool condition, qk_str *out) {
    xparse ps = {x, node->string, node->string, node, out, 0, false};
    if (!x_or(&ps)) return false;
    xskip(&ps);
    if (*ps.p) return xfail(&ps, *ps.p == ')' ? "unmatched ')'" : "unexpected text");
    if (condition && !ps.cond) return xfail(&ps, "no comparison");
    return true;
}
