/* Reads queries (vendor device driver op format variant|- activations and a
 * value for each shape variable in the order of qkb_shape_names) and prints
 * the kernel qkb_select_level picks and the level ("NAME:family"), or "-";
 * "disagree" where qkb_select_activations (qkb_select for f32) picks another.
 * check_select.py compares with select_eval.py. */
#define QKB_IMPLEMENTATION
#include "qkb_bundle.h"

#include <stdio.h>
#include <string.h>

int main(void) {
    unsigned vendor, device, driver;
    char op[64], format[64], variant[64], act[16];
    while (scanf("%u %u %u %63s %63s %63s %15s", &vendor, &device, &driver, op, format, variant,
                 act) == 7) {
        static const char *const levels[] = {"device", "family", "vendor", "default"};
        qkb_shape s;
        int i, k, kl, level = -1;
        memset(&s, 0, sizeof s);
        for (i = 0; i < QKB_SHAPE_COUNT; i++) {
            long long v;
            if (scanf("%lld", &v) != 1 || qkb_shape_set(&s, qkb_shape_names[i], v)) return 3;
        }
        if (strcmp(act, "f32"))
            k = qkb_select_activations(vendor, device, driver, op, format,
                                       strcmp(variant, "-") ? variant : NULL, act, &s, NULL, NULL);
        else
            k = qkb_select(vendor, device, driver, op, format,
                           strcmp(variant, "-") ? variant : NULL, &s, NULL, NULL);
        kl = qkb_select_level(vendor, device, driver, op, format,
                              strcmp(variant, "-") ? variant : NULL, act, &s, NULL, NULL, &level);
        if (k != kl || (k >= 0 && (level < QKB_SELECT_DEVICE || level > QKB_SELECT_DEFAULT)))
            printf("disagree\n");
        else if (k < 0)
            printf("-\n");
        else
            printf("%s:%s\n", qkb_kernels[k].name, levels[level]);
    }
    return 0;
}
