/* Reads shapes (one a line: a value for each shape variable, in the order of
 * qkb_shape_names) and prints, for each kernel, the header's grid, constraint
 * verdict, scratch sizes and push constants; check_header.py compares them with
 * the manifest's expressions. Built as C99 and as C++ by export_header.sh. */
#define QKB_IMPLEMENTATION
#include "qkb_bundle.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    long long v[QKB_SHAPE_COUNT];
    int i;
    unsigned j;
    printf("shape");
    for (i = 0; i < QKB_SHAPE_COUNT; i++)
        printf(" %s", qkb_shape_names[i]);
    printf("\n");
    for (;;) {
        qkb_shape s;
        memset(&s, 0, sizeof s);
        for (i = 0; i < QKB_SHAPE_COUNT; i++) {
            if (scanf("%lld", &v[i]) != 1) return 0;
            if (qkb_shape_set(&s, qkb_shape_names[i], v[i])) return 3;
        }
        for (i = 0; i < QKB_KERNEL_COUNT; i++) {
            const qkb_kernel *k = &qkb_kernels[i];
            uint32_t g[3] = {0, 0, 0};
            unsigned char push[128];
            int rc = k->dispatch(&s, g);
            printf("%s grid %d", k->name, rc);
            if (rc == 0) printf(" %u %u %u", g[0], g[1], g[2]);
            printf(" check %d", k->check(&s));
            for (j = 0; j < k->binding_count; j++) {
                uint64_t bytes = 0;
                if (!k->bindings[j].size_bytes) continue;
                rc = k->bindings[j].size_bytes(&s, &bytes);
                printf(" size %d %llu", rc, (unsigned long long)(rc ? 0 : bytes));
            }
            rc = qkb_push_data(k, &s, push);
            printf(" push %d", rc);
            for (j = 0; rc == 0 && j < k->push_constant_size; j += 4) {
                uint32_t w;
                memcpy(&w, push + j, 4);
                printf(" %u", w);
            }
            if (qkb_find(k->name) != i) printf(" FIND-MISMATCH");
            printf("\n");
        }
    }
}
