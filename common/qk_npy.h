/* .npy files (NumPy's format, version 1 and 2): read and write little-endian,
 * C-order arrays. Used by the CLI and the tests. */
#ifndef QK_NPY_H
#define QK_NPY_H

#include "qk_util.h"

typedef struct qk_npy {
    char dtype[16]; /* normalized: "u1" "i1" "u2" "i2" "f2" "u4" "i4" "f4" "f8" "i8" "u8" */
    uint32_t ndim;
    uint64_t shape[8];
    uint64_t count; /* product of the shape */
    uint32_t itemsize;
    void *data; /* count * itemsize bytes */
} qk_npy;

/* Limits of what qk_npy_read takes: the file (a regular one), and the
 * header (NumPy writes under 100 bytes for the arrays qkgen uses). */
#define QK_NPY_MAX_BYTES  ((size_t)1 << 36)
#define QK_NPY_MAX_HEADER 65536

/* Reads path; on failure false with "path: message" in e. Fortran order and
 * big-endian arrays are refused; every size is checked for overflow, and the
 * data must be exactly what the header says. */
bool qk_npy_read(const char *path, qk_npy *out, qk_error *e);
/* Writes atomically (temporary file then rename). dtype as in qk_npy. */
bool qk_npy_write(const char *path, const char *dtype, uint32_t ndim, const uint64_t *shape,
                  const void *data, qk_error *e);
void qk_npy_free(qk_npy *a);
/* "float32 [3, 4]" style description for messages. */
void qk_npy_describe(const qk_npy *a, char *buf, size_t n);

#endif
