/* Answers qkrt_select_activations for queries on stdin, one a line: "op
 * format M K T E top_k activations" -> the kernel's name and the level that
 * answered (qkrt_select_ex, which must agree with qkrt_select for f32
 * queries and qkrt_select_activations for the others: "disagree" where not),
 * or "-" when no rule answers; where qkrt_select_ex answers with a two-pass
 * rule, "twopass:FIRST+KERNEL LEVEL then K", K what qkrt_select answers
 * (it passes over such rules). Paired with tests/tools/select_eval.py, which
 * evaluates the manifest's rule on its own. */
#include "qkrt.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_select BUNDLE < queries\n");
        return 2;
    }
    qkrt_context *ctx;
    qkrt_bundle *b;
    if (qkrt_create(&(qkrt_desc){0}, &ctx) != QKRT_OK) {
        fprintf(stderr, "%s\n", qkrt_create_error());
        return 1;
    }
    if (qkrt_bundle_load(ctx, argv[1], &b) != QKRT_OK) {
        fprintf(stderr, "%s\n", qkrt_last_error(ctx));
        return 1;
    }
    qkrt_device_identity id;
    qkrt_device_identify(ctx, &id);
    printf("device %u %u %u\n", id.vendor_id, id.device_id, id.driver_version);
    char op[64], fmt[96], act[16];
    long long M, K, T, E, top_k;
    while (scanf("%63s %95s %lld %lld %lld %lld %lld %15s", op, fmt, &M, &K, &T, &E, &top_k, act) ==
           8) {
        /* N: M, for the kernels that call their rows so (moe_combine), as
         * qkrt_op_choose names them */
        static const char *const names[] = {"M", "K", "T", "E", "top_k", "ne11", "max_per_expert",
                                            "N"};
        const int64_t values[] = {M, K, T, E ? E : 1, top_k ? top_k : 1, 1, T, M};
        qkrt_shape s = {8, names, values};
        uint32_t ki = UINT32_MAX;
        qkrt_result r = strcmp(act, "f32") ? qkrt_select_activations(ctx, b, op, fmt, act, &s, &ki)
                                           : qkrt_select(ctx, b, op, fmt, &s, &ki);
        qkrt_selection sel = {0};
        qkrt_result rx = qkrt_select_ex(ctx, b, op, fmt, act, &s, &sel);
        if (rx == QKRT_OK && sel.two_pass) /* which qkrt_select passes over, after it */
            printf("twopass:%s+%s %s then %s\n", qkrt_bundle_kernel(b, sel.first_pass)->name,
                   qkrt_bundle_kernel(b, sel.kernel)->name, qkrt_select_level_name(sel.level),
                   r == QKRT_OK ? qkrt_bundle_kernel(b, ki)->name : "-");
        else if (r != rx || (r == QKRT_OK && ki != sel.kernel))
            printf("disagree\n");
        else if (r == QKRT_OK)
            printf("%s %s\n", qkrt_bundle_kernel(b, ki)->name, qkrt_select_level_name(sel.level));
        else
            printf("-\n");
    }
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return 0;
}
