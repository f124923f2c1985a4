/* .npy reading and writing. The header is a Python dict literal; we parse only
 * what NumPy writes: 'descr', 'fortran_order' and 'shape'. */
#include "qk_npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The dtypes qkgen reads and writes: NumPy's code, name and item size. */
static const struct {
    const char *code, *name;
    uint32_t size;
} dtypes[] = {
    {"u1", "uint8", 1},   {"i1", "int8", 1},   {"u2", "uint16", 2},  {"i2", "int16", 2},
    {"f2", "float16", 2}, {"u4", "uint32", 4}, {"i4", "int32", 4},   {"f4", "float32", 4},
    {"u8", "uint64", 8},  {"i8", "int64", 8},  {"f8", "float64", 8},
};

static uint32_t dtype_size(const char *d) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtypes[i].code, d)) return dtypes[i].size;
    return 0;
}

static const char *dtype_name(const char *d) {
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (!strcmp(dtypes[i].code, d)) return dtypes[i].name;
    return d;
}

void qk_npy_describe(const qk_npy *a, char *buf, size_t n) {
    int w = snprintf(buf, n, "%s [", dtype_name(a->dtype));
    for (uint32_t i = 0; i < a->ndim && w > 0 && (size_t)w < n; i++)
        w += snprintf(buf + w, n - (size_t)w, "%s%llu", i ? ", " : "",
                      (unsigned long long)a->shape[i]);
    if (w > 0 && (size_t)w < n) snprintf(buf + w, n - (size_t)w, "]");
}

static const char *find_key(const char *h, const char *key) {
    const char *p = strstr(h, key);
    if (!p) return NULL;
    p = strchr(p + strlen(key), ':');
    return p ? p + 1 : NULL;
}

/* "(3, 4)", "(5,)" or "()": digits only, so no sign, and a product that fits
 * in memory's size_t; false with the reason in why. */
static bool parse_shape(const char *sh, qk_npy *out, uint32_t itemsize, size_t *bytes,
                        const char **why) {
    while (*sh == ' ')
        sh++;
    if (*sh++ != '(') return *why = "malformed shape", false;
    uint64_t count = 1;
    for (;;) {
        while (*sh == ' ')
            sh++;
        if (*sh == ')') break;
        if (*sh < '0' || *sh > '9')
            return *why = "malformed shape (dimensions are whole numbers)", false;
        uint64_t v = 0;
        for (; *sh >= '0' && *sh <= '9'; sh++)
            if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, *sh - '0', &v))
                return *why = "a dimension of the shape overflows 64 bits", false;
        if (out->ndim == 8) return *why = "more than 8 dimensions", false;
        out->shape[out->ndim++] = v;
        if (__builtin_mul_overflow(count, v, &count))
            return *why = "the shape's element count overflows 64 bits", false;
        while (*sh == ' ')
            sh++;
        if (*sh == ',')
            sh++;
        else if (*sh != ')')
            return *why = "malformed shape", false;
    }
    out->count = count;
    if (__builtin_mul_overflow(count, (uint64_t)itemsize, &count) || count > SIZE_MAX)
        return *why = "the shape's byte count overflows", false;
    *bytes = (size_t)count;
    return true;
}

bool qk_npy_read(const char *path, qk_npy *out, qk_error *e) {
    *out = (qk_npy){0};
    size_t n;
    unsigned char *buf = (unsigned char *)qk_read_file_max(path, QK_NPY_MAX_BYTES, &n, e);
    if (!buf) return false;
    bool ok = false;
    char *h = NULL;
    size_t hlen = 0, hoff = 0;
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        qk_error_set(e, "%s: not a .npy file", path);
        goto done;
    }
    if (buf[6] == 1) {
        hlen = buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (buf[6] == 2 || buf[6] == 3) {
        if (n < 12) { /* versions 2 and 3 have a 4-byte header length */
            qk_error_set(e, "%s: truncated header", path);
            goto done;
        }
        hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        qk_error_set(e, "%s: unsupported .npy version %d", path, buf[6]);
        goto done;
    }
    if (hlen > QK_NPY_MAX_HEADER) {
        qk_error_set(e, "%s: a header of %zu bytes, more than the limit of %d", path, hlen,
                     QK_NPY_MAX_HEADER);
        goto done;
    }
    if (hoff + hlen > n) {
        qk_error_set(e, "%s: truncated header", path);
        goto done;
    }
    h = qk_xmalloc(hlen + 1);
    memcpy(h, buf + hoff, hlen);
    h[hlen] = 0;
    if (strlen(h) != hlen) {
        qk_error_set(e, "%s: malformed header (a NUL byte)", path);
        goto done;
    }
    const char *d = find_key(h, "'descr'");
    const char *fo = find_key(h, "'fortran_order'");
    const char *sh = find_key(h, "'shape'");
    if (!d || !fo || !sh) {
        qk_error_set(e, "%s: malformed header", path);
        goto done;
    }
    while (*d == ' ')
        d++;
    char descr[16] = {0};
    if (sscanf(d, "'%15[^']'", descr) != 1 || strlen(descr) < 3) {
        qk_error_set(e, "%s: malformed dtype", path);
        goto done;
    }
    if (descr[0] == '>' && strcmp(descr + 1, "u1") && strcmp(descr + 1, "i1")) {
        qk_error_set(e, "%s: big-endian dtype '%s' is not supported", path, descr);
        goto done;
    }
    snprintf(out->dtype, sizeof out->dtype, "%s", descr + 1);
    out->itemsize = dtype_size(out->dtype);
    if (!strchr("<>|=", descr[0]) || !out->itemsize) {
        qk_error_set(e, "%s: unsupported dtype '%s'", path, descr);
        goto done;
    }
    while (*fo == ' ')
        fo++;
    if (strncmp(fo, "False", 5) != 0) {
        qk_error_set(e, "%s: Fortran-order arrays are not supported", path);
        goto done;
    }
    size_t bytes = 0;
    const char *why = NULL;
    if (!parse_shape(sh, out, out->itemsize, &bytes, &why)) {
        qk_error_set(e, "%s: %s", path, why);
        goto done;
    }
    if (n - hoff - hlen != bytes) {
        qk_error_set(e, "%s: data is %zu bytes, the header says %zu", path, n - hoff - hlen, bytes);
        goto done;
    }
    out->data = qk_xmalloc(bytes);
    memcpy(out->data, buf + hoff + hlen, bytes);
    ok = true;
done:
    free(h);
    free(buf);
    if (!ok) *out = (qk_npy){0};
    return ok;
}

bool qk_npy_write(const char *path, const char *dtype, uint32_t ndim, const uint64_t *shape,
                  const void *data, qk_error *e) {
    qk_str h = {0};
    qk_str_addf(&h, "{'descr': '%s%s', 'fortran_order': False, 'shape': (",
                dtype_size(dtype) == 1 ? "|" : "<", dtype);
    uint64_t count = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        qk_str_addf(&h, "%llu%s", (unsigned long long)shape[i],
                    ndim == 1      ? ","
                    : i + 1 < ndim ? ", "
                                   : "");
        count *= shape[i];
    }
    qk_str_add(&h, "), }");
    while ((10 + h.len + 1) % 64)
        qk_str_add(&h, " ");
    qk_str_add(&h, "\n");
    size_t bytes = count * dtype_size(dtype);
    qk_str file = {0};
    qk_str_addn(&file, "\x93NUMPY\x01\x00", 8);
    unsigned char len[2] = {(unsigned char)(h.len & 255), (unsigned char)(h.len >> 8)};
    qk_str_addn(&file, (const char *)len, 2);
    qk_str_addn(&file, h.s, h.len);
    qk_str_addn(&file, data, bytes);
    bool ok = qk_write_file(path, file.s, file.len, e);
    qk_str_free(&h);
    qk_str_free(&file);
    return ok;
}

void qk_npy_free(qk_npy *a) {
    free(a->data);
    *a = (qk_npy){0};
}
