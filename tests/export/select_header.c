/* The exported header's side of select_diff.py: reads the runnable kernels
 * ("kernel NAME 0|1" lines up to "end", as select_qkrt prints them), then
 * queries ("vendor device driver op format variant|- activations" and a value
 * for each name of qkb_shape_names, in order) and prints the kernel
 * qkb_select_level picks with its dispatch grid (-1 -1 -1 where it fails) and
 * the level that answered, or "-"; "disagree" where qkb_select_activations
 * picks another kernel. */
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
    static const char *const levels[] = {"device", "family", "vendor", "default"};
    unsigned vendor, device, driver;
    char op[64], format[64], variant[64], act[16];
    while (scanf("%u %u %u %63s %63s %63s %15s", &vendor, &device, &driver, op, format, variant,
                 act) == 7) {
        qkb_shape s;
        uint32_t g[3];
        int level = -1, kl;
        memset(&s, 0, sizeof s);
        for (i = 0; i < QKB_SHAPE_COUNT; i++) {
            long long v;
            if (scanf("%lld", &v) != 1 || qkb_shape_set(&s, qkb_shape_names[i], v)) return 3;
        }
        k = qkb_select_activations(vendor, device, driver, op, format,
                                   strcmp(variant, "-") ? variant : NULL, act, &s, can_run, NULL);
        kl =
            qkb_select_level(vendor, device, driver, op, format,
                             strcmp(variant, "-") ? variant : NULL, act, &s, can_run, NULL, &level);
        if (k != kl || (k >= 0 && (level < QKB_SELECT_DEVICE || level > QKB_SELECT_DEFAULT)))
            printf("disagree\n");
        else if (k < 0)
            printf("-\n");
        else if (qkb_kernels[k].dispatch(&s, g))
            printf("%s -1 -1 -1 %s\n", qkb_kernels[k].name, levels[level]);
        else
            printf("%s %u %u %u %s\n", qkb_kernels[k].name, g[0], g[1], g[2], levels[level]);
    }
    return 0;
}
