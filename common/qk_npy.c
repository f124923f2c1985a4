/* .npy reading and writing. The header is a Python dict literal; we parse only
 * what NumPy writes: 'descr', 'fortran_order' and 'shape'. */
#include "qk_npy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t dtype_size(const char *d) {
    return (uint32_t)atoi(d + 1);
}

static const char *dtype_name(const char *d) {
    static const struct { const char *code, *name; } names[] = {
        {"u1", "uint8"},   {"i1", "int8"},    {"u2", "uint16"},  {"i2", "int16"},
        {"f2", "float16"}, {"u4", "uint32"},  {"i4", "int32"},   {"f4", "float32"},
        {"u8", "uint64"},  {"i8", "int64"},   {"f8", "float64"},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i].code, d)) return names[i].name;
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

bool qk_npy_read(const char *path, qk_npy *out, qk_error *e) {
    *out = (qk_npy){0};
    size_t n;
    qk_error re = {0};
    unsigned char *buf = (unsigned char *)qk_read_file(path, &n, &re);
    if (!buf) {
        qk_error_set(e, "%s", re.msg);
        return false;
    }
    bool ok = false;
    size_t hlen = 0, hoff = 0;
    if (n < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
        qk_error_set(e, "%s: not a .npy file", path);
        goto done;
    }
    if (buf[6] == 1) {
        hlen = buf[8] | (size_t)buf[9] << 8;
        hoff = 10;
    } else if (buf[6] == 2 || buf[6] == 3) {
        hlen = buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 | (size_t)buf[11] << 24;
        hoff = 12;
    } else {
        qk_error_set(e, "%s: unsupported .npy version %d", path, buf[6]);
        goto done;
    }
    if (hoff + hlen > n) {
        qk_error_set(e, "%s: truncated header", path);
        goto done;
    }
    char *h = qk_xmalloc(hlen + 1);
    memcpy(h, buf + hoff, hlen);
    h[hlen] = 0;
    const char *d = find_key(h, "'descr'");
    const char *fo = find_key(h, "'fortran_order'");
    const char *sh = find_key(h, "'shape'");
    if (!d || !fo || !sh) {
        qk_error_set(e, "%s: malformed header", path);
        free(h);
        goto done;
    }
    while (*d == ' ') d++;
    char descr[16] = {0};
    if (sscanf(d, "'%15[^']'", descr) != 1 || strlen(descr) < 3) {
        qk_error_set(e, "%s: malformed dtype", path);
        free(h);
        goto done;
    }
    if (descr[0] == '>' && strcmp(descr + 1, "u1") && strcmp(descr + 1, "i1")) {
        qk_error_set(e, "%s: big-endian dtype '%s' is not supported", path, descr);
        free(h);
        goto done;
    }
    snprintf(out->dtype, sizeof out->dtype, "%s", descr + 1);
    while (*fo == ' ') fo++;
    if (strncmp(fo, "False", 5) != 0) {
        qk_error_set(e, "%s: Fortran-order arrays are not supported", path);
        free(h);
        goto done;
    }
    while (*sh == ' ') sh++;
    if (*sh != '(') {
        qk_error_set(e, "%s: malformed shape", path);
        free(h);
        goto done;
    }
    sh++;
    out->count = 1;
    while (*sh && *sh != ')') {
        char *end;
        unsigned long long v = strtoull(sh, &end, 10);
        if (end == sh) {
            sh++;
            continue;
        }
        if (out->ndim == 8) break;
        out->shape[out->ndim++] = v;
        out->count *= v;
        sh = end;
    }
    free(h);
    out->itemsize = dtype_size(out->dtype);
    if (!out->itemsize || !strchr("uif", out->dtype[0])) {
        qk_error_set(e, "%s: unsupported dtype '%s'", path, descr);
        goto done;
    }
    size_t bytes = out->count * out->itemsize;
    if (hoff + hlen + bytes != n) {
        qk_error_set(e, "%s: data is %zu bytes, the header says %zu", path, n - hoff - hlen, bytes);
        goto done;
    }
    out->data = qk_xmalloc(bytes);
    memcpy(out->data, buf + hoff + hlen, bytes);
    ok = true;
done:
    free(buf);
    return ok;
}

bool qk_npy_write(const char *path, const char *dtype, uint32_t ndim, const uint64_t *shape,
                  const void *data, qk_error *e) {
    qk_str h = {0};
    qk_str_addf(&h, "{'descr': '%s%s', 'fortran_order': False, 'shape': (",
                dtype_size(dtype) == 1 ? "|" : "<", dtype);
    uint64_t count = 1;
    for (uint32_t i = 0; i < ndim; i++) {
        qk_str_addf(&h, "%llu%s", (unsigned long long)shape[i], ndim == 1 ? "," : i + 1 < ndim ? ", " : "");
        count *= shape[i];
    }
    qk_str_add(&h, "), }");
    while ((10 + h.len + 1) % 64) qk_str_add(&h, " ");
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
