/* Strings, errors, allocation, files and folders for every part of qkgen.
 * SHA-256 and the expression evaluator live in their own files. */
#define _GNU_SOURCE
#include "qk_util.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

double qk_now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

uint32_t qk_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1u : (uint32_t)n;
}

typedef struct qk_share {
    void (*fn)(void *arg, uint32_t t, uint32_t n);
    void *arg;
    uint32_t t, n;
} qk_share;

static void *qk_share_run(void *p) {
    const qk_share *s = p;
    s->fn(s->arg, s->t, s->n);
    return NULL;
}

void qk_parallel(uint32_t n, void (*fn)(void *arg, uint32_t t, uint32_t n), void *arg) {
    if (n < 1) n = 1;
    if (n > QK_MAX_THREADS) n = QK_MAX_THREADS;
    qk_share shares[QK_MAX_THREADS];
    pthread_t th[QK_MAX_THREADS];
    bool started[QK_MAX_THREADS] = {0};
    for (uint32_t t = 0; t < n; t++) {
        shares[t] = (qk_share){fn, arg, t, n};
        started[t] = t > 0 && pthread_create(&th[t], NULL, qk_share_run, &shares[t]) == 0;
    }
    fn(arg, 0, n);
    for (uint32_t t = 1; t < n; t++) {
        if (started[t])
            pthread_join(th[t], NULL);
        else
            fn(arg, t, n);
    }
}

void qk_error_vset(qk_error *e, const char *fmt, va_list ap) {
    if (!e || e->set) return;
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    e->set = true;
}

void qk_error_set(qk_error *e, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    qk_error_vset(e, fmt, ap);
    va_end(ap);
}

void *qk_xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        fputs("qkgen: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *qk_xcalloc(size_t n, size_t size) {
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) {
        fputs("qkgen: out of memory\n", stderr);
        abort();
    }
    return p;
}

void *qk_xrealloc(void *p, size_t n) {
    p = realloc(p, n ? n : 1);
    if (!p) {
        fputs("qkgen: out of memory\n", stderr);
        abort();
    }
    return p;
}

char *qk_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(qk_xmalloc(n), s, n);
}

static void str_reserve(qk_str *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1) cap *= 2;
    b->s = qk_xrealloc(b->s, cap);
    b->cap = cap;
}

void qk_str_addn(qk_str *b, const char *s, size_t n) {
    str_reserve(b, n);
    memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = 0;
}

void qk_str_add(qk_str *b, const char *s) {
    qk_str_addn(b, s, strlen(s));
}

void qk_str_addf(qk_str *b, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        str_reserve(b, (size_t)n);
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void qk_str_free(qk_str *b) {
    free(b->s);
    *b = (qk_str){0};
}

char *qk_str_take(qk_str *b) {
    char *s = b->s ? b->s : qk_xstrdup("");
    *b = (qk_str){0};
    return s;
}

char *qk_read_file(const char *path, size_t *n, qk_error *e) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        qk_error_set(e, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    qk_str b = {0};
    char chunk[65536];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0) qk_str_addn(&b, chunk, got);
    bool bad = ferror(f);
    fclose(f);
    if (bad) {
        qk_str_free(&b);
        qk_error_set(e, "%s: read error", path);
        return NULL;
    }
    if (n) *n = b.len;
    return qk_str_take(&b);
}

bool qk_write_file(const char *path, const void *data, size_t n, qk_error *e) {
    qk_str tmp = {0};
    qk_str_addf(&tmp, "%s.tmp.%ld", path, (long)getpid());
    FILE *f = fopen(tmp.s, "wb");
    if (!f) {
        qk_error_set(e, "%s: cannot create: %s", tmp.s, strerror(errno));
        qk_str_free(&tmp);
        return false;
    }
    bool ok = fwrite(data, 1, n, f) == n;
    ok = (fclose(f) == 0) && ok;
    if (ok && rename(tmp.s, path) != 0) ok = false;
    if (!ok) {
        qk_error_set(e, "%s: cannot write: %s", path, strerror(errno));
        unlink(tmp.s);
    }
    qk_str_free(&tmp);
    return ok;
}

bool qk_mkdirs(const char *path, qk_error *e) {
    char *p = qk_xstrdup(path);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) break;
        *s = '/';
    }
    bool ok = mkdir(p, 0755) == 0 || (errno == EEXIST && qk_is_dir(p));
    if (!ok) qk_error_set(e, "%s: cannot create folder: %s", path, strerror(errno));
    free(p);
    return ok;
}

bool qk_rmtree(const char *path) {
    DIR *d = opendir(path);
    if (d) {
        struct dirent *ent;
        while ((ent = readdir(d))) {
            if (!strcmp(ent->d_name, ".") || !strcmp(ent->d_name, "..")) continue;
            char *child = qk_path_join(path, ent->d_name);
            struct stat st;
            if (lstat(child, &st) == 0 && S_ISDIR(st.st_mode))
                qk_rmtree(child);
            else
                unlink(child);
            free(child);
        }
        closedir(d);
        return rmdir(path) == 0;
    }
    return unlink(path) == 0 || errno == ENOENT;
}

bool qk_is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

bool qk_is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

char *qk_path_join(const char *dir, const char *name) {
    if (name[0] == '/' || !dir || !dir[0]) return qk_xstrdup(name);
    qk_str b = {0};
    qk_str_add(&b, dir);
    if (b.s[b.len - 1] != '/') qk_str_add(&b, "/");
    qk_str_add(&b, name);
    return qk_str_take(&b);
}

char *qk_path_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return qk_xstrdup(".");
    if (slash == path) return qk_xstrdup("/");
    qk_str b = {0};
    qk_str_addn(&b, path, (size_t)(slash - path));
    return qk_str_take(&b);
}
