/* The exported header's side of select_diff.py: reads the runnable kernels
 * ("kernel NAME 0|1" lines up to "end", as select_qkrt prints them), then
 * queries ("vendor device driver op format variant|- activations" and a value
 * for each name of qkb_shape_names, in order) and prints the kernel
 * qkb_select_activations picks with its dispatch grid (-1 -1 -1 where it
 * fails), or "-". */
#define QKB_IMPLEMENTATION
#include "qkb_bundle.h"

#include <stdio.h>
#include <string.h>

static char runs[QKB_KERNEL_COUNT];

/* as libqkrt: a kernel this device cannot run is passed over */
static int can_run(const qkb_kernel *k, void *user) {
    (void)user;
    return runs[k - qkb_kernels];
}

int main(void) {
    char word[512];
    int flag, i, k;
    while (scanf("%511s", word) == 1 && strcmp(word, "end")) {
        if (strcmp(word, "kernel") || scanf("%511s %d", word, &flag) != 2) return 3;
        k = qkb_find(word);
        if (k >= 0) runs[k] = (char)flag;
    }
    unsigned vendor, device, driver;
    char op[64], format[64], variant[64], act[16];
    while (scanf("%u %u %u %63s %63s %63s %15s", &vendor, &device, &driver, op, format, variant,
                 act) == 7) {
        qkb_shape s;
        uint32_t g[3];
        memset(&s, 0, sizeof s);
        for (i = 0; i < QKB_SHAPE_COUNT; i++) {
            long long v;
            if (scanf("%lld", &v) != 1 || qkb_shape_set(&s, qkb_shape_names[i], v)) return 3;
        }
        k = qkb_select_activations(vendor, device, driver, op, format,
                                   strcmp(variant, "-") ? variant : NULL, act, &s, can_run, NULL);
        if (k < 0)
            printf("-\n");
        else if (qkb_kernels[k].dispatch(&s, g))
            printf("%s -1 -1 -1\n", qkb_kernels[k].name);
        else
            printf("%s %u %u %u\n", qkb_kernels[k].name, g[0], g[1], g[2]);
    }
    return 0;
}
