/* Reads "M K T expression" lines and prints the value examples/engine's
 * evaluator gives (or "error"); check_expr.py compares with its own. */
#include "engine.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    char line[4096], err[256];
    long long m, k, t;
    int used;
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\n")] = '\0';
        if (sscanf(line, "%lld %lld %lld %n", &m, &k, &t, &used) != 3) return 2;
        eng_shape s = {3, {"M", "K", "T"}, {m, k, t}};
        int64_t v;
        if (eng_eval(line + used, &s, 0, &v, err, sizeof err))
            puts("error");
        else
            printf("%lld\n", (long long)v);
    }
    return 0;
}
