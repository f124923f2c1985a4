/* Fuzz harness: what qkgen export writes from a manifest's text. An
 * expression's C form (qk_expr_to_c) exists exactly when libqkrt's reader
 * takes the expression and is plain C; any bytes as a C string literal read
 * back unchanged, and as comment text never end or nest the comment. */
#include "fuzz.h"
#include "qk_json.h"
#include "qk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool c_var(void *user, const char *name, size_t len, qk_str *out) {
    (void)user;
    qk_str_addf(out, "s->%.*s", (int)len, name);
    return true;
}

/* The C form has names, numbers, calls, commas, spaces and "->" only, and
 * its parentheses balance. */
static void check_c(const char *c, const char *expr) {
    int depth = 0;
    for (const char *p = c; *p; p++) {
        if (*p == '(') depth++;
        if (*p == ')' && --depth < 0) qkfuzz_fail("unbalanced parentheses in the C form", c);
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_(), ->", *p))
            qkfuzz_fail("a character outside the C form's", expr);
    }
    if (depth) qkfuzz_fail("unclosed parentheses in the C form", c);
}

/* The bytes a C literal that qk_c_string wrote stands for. */
static char *decode_c(const char *lit) {
    size_t n = strlen(lit);
    if (n < 2 || lit[0] != '"' || lit[n - 1] != '"') qkfuzz_fail("not a C literal", lit);
    if (strstr(lit, "??")) qkfuzz_fail("a trigraph in a C literal", lit);
    char *out = malloc(n), *o = out;
    for (const char *p = lit + 1; p < lit + n - 1; p++) {
        if (*p == '"') qkfuzz_fail("an unescaped quote in a C literal", lit);
        if ((unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            qkfuzz_fail("a raw byte outside printable ASCII in a C literal", lit);
        if (*p != '\\') {
            *o++ = *p;
        } else if (p[1] >= '0' && p[1] <= '7') {
            *o++ = (char)((p[1] - '0') * 64 + (p[2] - '0') * 8 + (p[3] - '0'));
            p += 3;
        } else {
            *o++ = *++p;
        }
    }
    *o = '\0';
    return out;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *s = malloc(size + 1);
    if (!s) return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    for (int kind = 0; kind < 2; kind++) {
        qk_expr_kind k = kind ? QK_EXPR_CONDITION : QK_EXPR_VALUE;
        qk_error e1 = {0}, e2 = {0};
        qk_str c = {0};
        bool checked = qk_expr_check(s, NULL, k, &e1);
        bool written = qk_expr_to_c(s, NULL, k, "P", c_var, NULL, &c, &e2);
        if (checked != written) qkfuzz_fail("qk_expr_to_c and qk_expr_check disagree", s);
        if (written) check_c(c.s ? c.s : "", s);
        if (!written && (c.len || strcmp(e1.msg, e2.msg)))
            qkfuzz_fail("a refused C form left text or another message", s);
        qk_str_free(&c);
    }
    qk_str lit = {0}, comment = {0};
    qk_c_string(&lit, s);
    char *back = decode_c(lit.s);
    if (strcmp(back, s)) qkfuzz_fail("a C literal reads back differently", lit.s);
    qk_c_comment(&comment, s);
    for (const char *p = comment.s ? comment.s : ""; *p; p++)
        if ((p[0] == '*' && p[1] == '/') || (p[0] == '/' && p[1] == '*') ||
            (p[0] == '?' && p[1] == '?') || (unsigned char)*p < 0x20 || (unsigned char)*p > 0x7e)
            qkfuzz_fail("comment text that a compiler reads otherwise", comment.s);
    free(back);
    qk_str_free(&lit);
    qk_str_free(&comment);
    free(s);
    return 0;
}
