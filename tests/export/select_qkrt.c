/* libqkrt's side of select_diff.py: loads BUNDLE, prints the device ("device
 * VENDOR DEVICE DRIVER") and each kernel with whether this device runs it
 * ("kernel NAME 0|1"), then answers queries from stdin. The first line of
 * input names the shape variables; each query line is "op format variant|-
 * activations" and one value per name. Answer: the kernel qkrt_select_ex
 * picks, its grid (qkrt_eval of the manifest's; -1 where it fails or leaves
 * 0 .. 2^32-1) and the level that answered, or "-". */
#include "qkrt.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_NAMES = 64 };

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: select_qkrt BUNDLE < queries\n");
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
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++)
        printf("kernel %s %d\n", qkrt_bundle_kernel(b, i)->name,
               qkrt_kernel_check(ctx, b, i) == QKRT_OK);
    printf("end\n");
    fflush(stdout);
    static char names[MAX_NAMES][64];
    const char *name_ptrs[MAX_NAMES];
    int64_t values[MAX_NAMES];
    uint32_t n = 0;
    char line[4096];
    if (!fgets(line, sizeof line, stdin)) return 0;
    for (char *t = strtok(line, " \n"); t && n < MAX_NAMES; t = strtok(NULL, " \n")) {
        snprintf(names[n], sizeof names[n], "%s", t);
        name_ptrs[n] = names[n];
        n++;
    }
    char op[64], fmt[128], variant[64], act[16];
    while (scanf("%63s %63s %63s %15s", op, fmt, variant, act) == 4) {
        for (uint32_t i = 0; i < n; i++) {
            long long v;
            if (scanf("%lld", &v) != 1) return 3;
            values[i] = v;
        }
        if (strcmp(variant, "-")) {
            size_t l = strlen(fmt);
            snprintf(fmt + l, sizeof fmt - l, "/%s", variant);
        }
        qkrt_shape s = {n, name_ptrs, values};
        qkrt_selection sel;
        if (qkrt_select_ex(ctx, b, op, fmt, act, &s, &sel) != QKRT_OK) {
            printf("-\n");
            continue;
        }
        uint32_t k = sel.kernel;
        const char *level = qkrt_select_level_name(sel.level);
        const qkrt_kernel_info *info = qkrt_bundle_kernel(b, k);
        int64_t v[3];
        bool ok = true; /* as the header's dispatch: all three, or -1 for all */
        for (int g = 0; g < 3; g++) {
            char err[256];
            ok &= qkrt_eval(info->grid[g], &s, &v[g], err, sizeof err) == QKRT_OK && v[g] >= 0 &&
                  v[g] <= (int64_t)UINT32_MAX;
        }
        if (ok)
            printf("%s %lld %lld %lld %s\n", info->name, (long long)v[0], (long long)v[1],
                   (long long)v[2], level);
        else
            printf("%s -1 -1 -1 %s\n", info->name, level);
    }
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return 0;
}
