/* Fuzz harness: the integer expression evaluator (common/qk_expr.c) as the
 * generator calls it and through libqkrt's qkrt_eval/qkrt_eval_bool. */
#include "fuzz.h"
#include "qk_util.h"
#include "qkrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The manifests' variables with ordinary values, and names that hold the
 * extremes, so overflow checks are reached through names as well as literals. */
static const struct {
    const char *name;
    int64_t value;
} vars[] = {
    {"M", 4096},          {"K", 11008},          {"T", 7},   {"E", 128},  {"top_k", 8},
    {"ne11", 1},          {"max_per_expert", 3}, {"NR0", 2}, {"NR1", 16}, {"NK", 32},
    {"WG", 256},          {"zero", 0},           {"one", 1}, {"neg", -1}, {"big", INT64_MAX},
    {"small", INT64_MIN},
};
enum { VAR_COUNT = sizeof vars / sizeof vars[0] };

static bool lookup(void *user, const char *name, size_t len, int64_t *value) {
    (void)user;
    for (size_t i = 0; i < VAR_COUNT; i++)
        if (strlen(vars[i].name) == len && !memcmp(vars[i].name, name, len)) {
            *value = vars[i].value;
            return true;
        }
    return false;
}

/* A refusal is a message; short expressions are quoted whole, so the message
 * ends with a column inside the expression (or just past its end). */
static void check_message(const char *msg, const char *expr) {
    if (!msg[0]) qkfuzz_fail("an expression refused without a message", expr);
    size_t len = strlen(expr);
    if (len > 512) return;
    const char *c = NULL; /* the last one: the expression may contain the text too */
    for (const char *p = strstr(msg, "(column "); p; p = strstr(p + 1, "(column "))
        c = p;
    long col = c ? strtol(c + 8, NULL, 10) : 0;
    if (col < 1 || (size_t)col > len + 1) qkfuzz_fail("a message without a valid column", msg);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *expr = malloc(size + 1);
    if (!expr) return 0;
    memcpy(expr, data, size);
    expr[size] = '\0';

    qk_error e = {0};
    int64_t v = 0;
    bool ok = qk_expr_eval(expr, lookup, NULL, &v, &e);
    if (!ok) check_message(e.msg, expr);
    qk_error ce = {0};
    int64_t cv = 0;
    bool cok = qk_expr_eval_as(expr, "condition", QK_EXPR_CONDITION, lookup, NULL, &cv, &ce);
    if (!cok) check_message(ce.msg, expr);
    if (cok && (!ok || cv != v || (cv != 0 && cv != 1)))
        qkfuzz_fail("a condition's value differs from the expression's or is not 0/1", expr);

    /* libqkrt's entry points over the same variables must agree */
    const char *names[VAR_COUNT];
    int64_t values[VAR_COUNT];
    for (uint32_t i = 0; i < VAR_COUNT; i++) {
        names[i] = vars[i].name;
        values[i] = vars[i].value;
    }
    qkrt_shape shape = {VAR_COUNT, names, values};
    char error[512] = "";
    int64_t rv = 0;
    qkrt_result r = qkrt_eval(expr, &shape, &rv, error, sizeof error);
    if ((r == QKRT_OK) != ok || (ok && rv != v))
        qkfuzz_fail("qkrt_eval and qk_expr_eval disagree", expr);
    if (r != QKRT_OK && !error[0]) qkfuzz_fail("qkrt_eval refused without a message", expr);
    bool b = false;
    error[0] = '\0';
    r = qkrt_eval_bool(expr, &shape, &b, error, sizeof error);
    if ((r == QKRT_OK) != cok || (cok && b != (cv != 0)))
        qkfuzz_fail("qkrt_eval_bool and the condition disagree", expr);
    if (r != QKRT_OK && !error[0]) qkfuzz_fail("qkrt_eval_bool refused without a message", expr);
    free(expr);
    return 0;
}
