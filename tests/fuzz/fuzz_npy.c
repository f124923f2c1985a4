/* Fuzz harness: the .npy reader (common/qk_npy.c). An accepted array must be
 * consistent (count = product of the shape, data of that size) and survive a
 * write and a second read unchanged. */
#include "fuzz.h"
#include "qk_npy.h"

#include <stdio.h>
#include <string.h>

static void check_same(const qk_npy *a, const qk_npy *b) {
    if (strcmp(a->dtype, b->dtype) || a->ndim != b->ndim || a->count != b->count ||
        a->itemsize != b->itemsize || memcmp(a->shape, b->shape, a->ndim * sizeof a->shape[0]) != 0)
        qkfuzz_fail("an array read back differs from the one written", a->dtype);
    if (a->count && memcmp(a->data, b->data, a->count * a->itemsize) != 0)
        qkfuzz_fail("an array's data read back differs from the data written", a->dtype);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = qkfuzz_file("in.npy", data, size);
    qk_npy a;
    qk_error e = {0};
    if (!qk_npy_read(path, &a, &e)) {
        if (!e.set || strncmp(e.msg, path, strlen(path)) != 0)
            qkfuzz_fail("an array refused without a message that starts with its path", e.msg);
        return 0;
    }
    if (a.ndim > sizeof a.shape / sizeof a.shape[0])
        qkfuzz_fail("more dimensions than the shape holds", a.dtype);
    uint64_t count = 1;
    for (uint32_t i = 0; i < a.ndim; i++)
        if (__builtin_mul_overflow(count, a.shape[i], &count))
            qkfuzz_fail("a shape whose product overflows was accepted", a.dtype);
    if (count != a.count) qkfuzz_fail("count is not the product of the shape", a.dtype);
    uint64_t bytes;
    if (__builtin_mul_overflow(count, (uint64_t)a.itemsize, &bytes) || bytes > size)
        qkfuzz_fail("more data than the file holds", a.dtype);
    /* every byte of the data is readable (ASan checks the buffer's size) */
    const volatile uint8_t *p = a.data;
    uint8_t sum = 0;
    for (uint64_t i = 0; i < bytes; i++)
        sum += p[i];
    (void)sum;
    char desc[256];
    qk_npy_describe(&a, desc, sizeof desc);

    char out[300];
    snprintf(out, sizeof out, "%s/out.npy", qkfuzz_dir());
    qk_npy b;
    if (!qk_npy_write(out, a.dtype, a.ndim, a.shape, a.data, &e))
        qkfuzz_fail("an array that was read cannot be written", e.msg);
    if (!qk_npy_read(out, &b, &e)) qkfuzz_fail("an array written cannot be read back", e.msg);
    check_same(&a, &b);
    qk_npy_free(&b);
    qk_npy_free(&a);
    return 0;
}
