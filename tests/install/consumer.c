/* A program outside qkgen, built against an installed qkgen (install.sh): it
 * knows libqkrt only through <qkrt.h> and the package's flags. */
#include <qkrt.h>

#include <stdio.h>
#include <stdlib.h>

/* usage: consumer BUNDLE_DIR. Opens the default device, loads the bundle,
 * makes every kernel's pipeline the device can run, and prints what it did;
 * exit 1 on any failure, with libqkrt's message. */
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s BUNDLE_DIR\n", argv[0]);
        return 2;
    }
    qkrt_context *ctx;
    if (qkrt_create(&(qkrt_desc){0}, &ctx) != QKRT_OK) {
        fprintf(stderr, "qkrt_create: %s\n", qkrt_create_error());
        return 1;
    }
    qkrt_bundle *b;
    if (qkrt_bundle_load(ctx, argv[1], &b) != QKRT_OK) {
        fprintf(stderr, "qkrt_bundle_load: %s\n", qkrt_last_error(ctx));
        qkrt_destroy(ctx);
        return 1;
    }
    uint32_t n = qkrt_bundle_kernel_count(b), runnable = 0;
    uint32_t *ids = malloc(sizeof *ids * (n ? n : 1));
    for (uint32_t i = 0; ids && i < n; i++)
        if (qkrt_kernel_check(ctx, b, i) == QKRT_OK) ids[runnable++] = i;
    uint32_t ready = ids ? qkrt_kernels_prepare(ctx, b, ids, runnable, 0) : 0;
    printf("%s: %u kernels, %u runnable, %u pipelines made (first: %s)\n", qkrt_device(ctx)->name,
           n, runnable, ready, n ? qkrt_bundle_kernel(b, 0)->name : "-");
    int rc = n > 0 && runnable > 0 && ready == runnable && !qkrt_validation_errors(ctx) ? 0 : 1;
    free(ids);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return rc;
}
