/* Fuzz harness: the runtime's JSON reader (runtime/json.c) on any bytes; a
 * parsed tree is walked and checked, a refusal must say where and why. */
#include "fuzz.h"
#include "qk_json.h"

#include <stdio.h>
#include <string.h>

/* Visits every node without recursion on the C stack beyond a fixed depth
 * (the reader's own depth limit is what the fuzzer probes, not this walk). */
static void walk(const qkrt_json *v, unsigned depth) {
    if (v->line == 0 || v->column == 0) qkfuzz_fail("a node without a position", NULL);
    if (depth > 10000) return;
    switch (v->type) {
    case QKRT_JSON_STRING:
        if (!v->string) qkfuzz_fail("a string node without its string", NULL);
        break;
    case QKRT_JSON_NUMBER:
        if (v->integral && (double)v->integer != v->number)
            qkfuzz_fail("an integral number whose double differs", NULL);
        break;
    case QKRT_JSON_ARRAY:
    case QKRT_JSON_OBJECT:
        if (v->count && !v->items) qkfuzz_fail("children counted but absent", NULL);
        for (uint32_t i = 0; i < v->count; i++) {
            if (v->type == QKRT_JSON_OBJECT) {
                if (!v->keys || !v->keys[i]) qkfuzz_fail("an object member without a key", NULL);
                /* the lookup finds a member with that key (the first of duplicates) */
                const qkrt_json *m = qkrt_json_get(v, v->keys[i]);
                if (!m || m < v->items || m > &v->items[i])
                    qkfuzz_fail("qkrt_json_get misses a member", v->keys[i]);
            }
            walk(&v->items[i], depth + 1);
        }
        break;
    default:
        break;
    }
    (void)qkrt_json_type_name(v->type);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char error[256] = "";
    qkrt_json *root = qkrt_json_parse((const char *)data, size, error, sizeof error);
    if (!root) {
        unsigned line = 0, col = 0;
        if (sscanf(error, "%u:%u:", &line, &col) != 2 || line == 0 || col == 0)
            qkfuzz_fail("a refusal without line:col", error);
        return 0;
    }
    walk(root, 0);
    (void)qkrt_json_get(root, "kernels");
    qkrt_json_free(root);
    return 0;
}
