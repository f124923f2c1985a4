/* qkgen export: the manifest's expressions as C through the one expression
 * reader (common/qk_expr.c), each operation a call of a checked helper so
 * that C gets the manifest's floor division and overflow errors. */
#include "export.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* C and C++ keywords, which cannot be a member of the shape struct. */
static bool keyword(const char *name, size_t len) {
    static const char *const words[] = {
        "auto",     "break",    "case",     "char",   "const",     "continue", "default",
        "do",       "double",   "else",     "enum",   "extern",    "float",    "for",
        "goto",     "if",       "inline",   "int",    "long",      "register", "restrict",
        "return",   "short",    "signed",   "sizeof", "static",    "struct",   "switch",
        "typedef",  "union",    "unsigned", "void",   "volatile",  "while",    "bool",
        "class",    "delete",   "new",      "this",   "true",      "false",    "template",
        "typename", "operator", "private",  "public", "namespace", "using",    "virtual"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (strlen(words[i]) == len && !memcmp(words[i], name, len)) return true;
    return false;
}

bool qk_export_add_var(exporter *x, const char *name, size_t len) {
    if (keyword(name, len)) return false;
    for (uint32_t i = 0; i < x->var_count; i++)
        if (strlen(x->vars[i]) == len && !memcmp(x->vars[i], name, len)) return true;
    if (x->var_count == QK_EXPORT_MAX_VARS || len >= sizeof x->vars[0]) return false;
    memcpy(x->vars[x->var_count], name, len);
    x->vars[x->var_count++][len] = '\0';
    return true;
}

/* A name of an expression as the member of the shape it reads. */
static bool c_var(void *user, const char *name, size_t len, qk_str *out) {
    exporter *x = user;
    if (!qk_export_add_var(x, name, len)) return false;
    qk_str_addf(out, "s->%.*s", (int)len, name);
    return true;
}

/* The expression through common/qk_expr.c's reader, the one libqkrt
 * evaluates it with: every literal written as the value that reader takes. */
bool qk_export_expr(exporter *x, const qkrt_json *node, bool condition, qk_str *out) {
    qk_error e = {0};
    if (qk_expr_to_c(node->string, NULL, condition ? QK_EXPR_CONDITION : QK_EXPR_VALUE, x->p, c_var,
                     x, out, &e))
        return true;
    return qk_export_bad(x, node, "%s", e.msg);
}
