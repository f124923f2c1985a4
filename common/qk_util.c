/* Strings, errors, allocation, files and folders for every part of qkgen.
 * SHA-256 and the expression evaluator live in their own files. */
#define _GNU_SOURCE
#include "qk_util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
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

void *qk_grow(void *a, size_t count, size_t size) {
    if (count & (count - 1)) return a; /* not a power of two: there is room */
    size_t cap = count ? 2 * count : 1;
    if (cap < count || cap > SIZE_MAX / size) {
        fputs("qkgen: out of memory\n", stderr);
        abort();
    }
    return qk_xrealloc(a, cap * size);
}

char *qk_xstrdup(const char *s) {
    size_t n = strlen(s) + 1;
    return memcpy(qk_xmalloc(n), s, n);
}

static void str_reserve(qk_str *b, size_t extra) {
    if (b->len + extra + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + extra + 1)
        cap *= 2;
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

static const char *file_kind(mode_t mode) {
    return S_ISDIR(mode)    ? "a folder"
           : S_ISFIFO(mode) ? "a FIFO"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
           : S_ISSOCK(mode) ? "a socket"
                            : "not a regular file";
}

/* Opens without blocking (a FIFO's open waits for a writer), then looks at
 * what was opened, so that the check and the read see the same file. */
static int open_regular(const char *path, size_t max, size_t *size, qk_error *e) {
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        qk_error_set(e, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = file_kind(st.st_mode);
    if (why) {
        qk_error_set(e, "%s: cannot read: %s (only regular files are read)", path, why);
    } else if ((uint64_t)st.st_size > max) {
        qk_error_set(e, "%s: %lld bytes, more than the limit of %zu for this file", path,
                     (long long)st.st_size, max);
    } else {
        *size = (size_t)st.st_size;
        return fd;
    }
    close(fd);
    return -1;
}

bool qk_check_file(const char *path, size_t max, qk_error *e) {
    size_t size;
    int fd = open_regular(path, max, &size, e);
    if (fd < 0) return false;
    close(fd);
    return true;
}

char *qk_read_file_max(const char *path, size_t max, size_t *n, qk_error *e) {
    size_t size;
    int fd = open_regular(path, max ? max : QK_READ_MAX, &size, e);
    if (fd < 0) return NULL;
    char *buf = malloc(size + 1);
    if (!buf) {
        qk_error_set(e, "%s: %zu bytes do not fit in memory", path, size);
        close(fd);
        return NULL;
    }
    /* the size of the fstat: a file that grows meanwhile is read to there */
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, buf + got, size - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            qk_error_set(e, "%s: read error: %s", path, r < 0 ? strerror(errno) : "file shrank");
            free(buf);
            close(fd);
            return NULL;
        }
        got += (size_t)r;
    }
    close(fd);
    buf[size] = '\0';
    if (n) *n = size;
    return buf;
}

char *qk_read_file(const char *path, size_t *n, qk_error *e) {
    return qk_read_file_max(path, QK_READ_MAX, n, e);
}

/* ---- a set of strings, to find duplicates in linear time ---- */

struct qk_strset_slot {
    const char *key; /* NULL: free */
    uint32_t index;
};

static uint64_t str_hash(const char *s) {
    uint64_t h = 14695981039346656037ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static bool strset_put(struct qk_strset_slot *slots, size_t cap, const char *key, uint32_t index,
                       uint32_t *earlier) {
    for (size_t i = str_hash(key) & (cap - 1);; i = (i + 1) & (cap - 1)) {
        if (!slots[i].key) {
            slots[i] = (struct qk_strset_slot){key, index};
            return true;
        }
        if (strcmp(slots[i].key, key) == 0) {
            if (earlier) *earlier = slots[i].index;
            return false;
        }
    }
}

int qk_strset_add(qk_strset *s, const char *key, uint32_t index, uint32_t *earlier) {
    if (2 * (s->count + 1) > s->cap) { /* at most half full: short probes */
        size_t cap = s->cap ? 2 * s->cap : 16;
        struct qk_strset_slot *slots = calloc(cap, sizeof *slots);
        if (!slots) return -1;
        for (size_t i = 0; i < s->cap; i++)
            if (s->slots[i].key) strset_put(slots, cap, s->slots[i].key, s->slots[i].index, NULL);
        free(s->slots);
        s->slots = slots;
        s->cap = cap;
    }
    if (!strset_put(s->slots, s->cap, key, index, earlier)) return 0;
    s->count++;
    return 1;
}

void qk_strset_free(qk_strset *s) {
    free(s->slots);
    *s = (qk_strset){0};
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

/* The process id a temporary name ends with (".tmp.PID", ".old.PID"), or 0. */
static long temp_owner(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || dot == name || !dot[1] || strspn(dot + 1, "0123456789") != strlen(dot + 1))
        return 0;
    size_t stem = (size_t)(dot - name);
    if (!((stem > 4 && !strncmp(dot - 4, ".tmp", 4)) || (stem > 4 && !strncmp(dot - 4, ".old", 4))))
        return 0;
    long pid = strtol(dot + 1, NULL, 10);
    return pid > 0 ? pid : 0;
}

/* What the holder of a lock wrote in it, for the message of one that waits
 * or gives up ("unknown" when it has not written it yet). */
static void lock_holder(int fd, char *out, size_t size) {
    ssize_t n = pread(fd, out, size - 1, 0);
    out[n > 0 ? n : 0] = 0;
    out[strcspn(out, "\n")] = 0;
    if (!out[0]) snprintf(out, size, "an unknown process");
}

int qk_lock_file(const char *path, bool wait, FILE *log, bool *busy, qk_error *e) {
    *busy = false;
    int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) {
        qk_error_set(e, "%s: cannot open: %s", path, strerror(errno));
        return -1;
    }
    int rc = flock(fd, LOCK_EX | LOCK_NB);
    if (rc != 0 && errno == EWOULDBLOCK) {
        char holder[128];
        lock_holder(fd, holder, sizeof holder);
        if (!wait) {
            *busy = true;
            qk_error_set(e, "%s is held by %s", path, holder);
            close(fd);
            return -1;
        }
        if (log) fprintf(log, "waiting for %s, held by %s\n", path, holder), fflush(log);
        while ((rc = flock(fd, LOCK_EX)) != 0 && errno == EINTR) {
        }
    }
    if (rc != 0) {
        qk_error_set(e, "%s: cannot lock: %s", path, strerror(errno));
        close(fd);
        return -1;
    }
    char note[96], when[40];
    time_t now = time(NULL);
    struct tm tm;
    strftime(when, sizeof when, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    int n = snprintf(note, sizeof note, "pid %ld since %s\n", (long)getpid(), when);
    /* a note that cannot be written only makes another's message vaguer */
    bool noted = ftruncate(fd, 0) == 0 && pwrite(fd, note, (size_t)n, 0) == n;
    (void)noted;
    return fd;
}

uint32_t qk_remove_stale_temps(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return 0;
    uint32_t removed = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        long pid = temp_owner(ent->d_name);
        /* a live process (or one of another user: EPERM) may still write it */
        if (!pid || kill((pid_t)pid, 0) == 0 || errno != ESRCH) continue;
        char *path = qk_path_join(dir, ent->d_name);
        removed += qk_rmtree(path);
        free(path);
    }
    closedir(d);
    return removed;
}

bool qk_mkdirs(const char *path, qk_error *e) {
    if (!path[0]) { /* (p + 1 below would be past its end) */
        qk_error_set(e, "'': cannot create folder: an empty path");
        return false;
    }
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

bool qk_filter_match(const char *filter, const char *name) {
    for (const char *f = filter; *f;) {
        size_t n = strcspn(f, ",");
        for (const char *s = name; n && *s; s++)
            if (!strncmp(s, f, n)) return true;
        f += n + (f[n] == ',');
    }
    return false;
}

bool qk_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *value, qk_error *e) {
    /* digits only: strtoull alone takes "-1" (as 2^64 - 1), " 8", "+8" and
     * "0x8"; past 2^64 - 1 it says ERANGE, which is out of range as well */
    size_t n = strspn(s, "0123456789");
    if (!n || s[n]) {
        qk_error_set(e, "'%s' is not a non-negative integer", s);
        return false;
    }
    errno = 0;
    unsigned long long v = strtoull(s, NULL, 10);
    if (errno == ERANGE || v < min || v > max) {
        qk_error_set(e, "%s is out of range %llu..%llu", s, (unsigned long long)min,
                     (unsigned long long)max);
        return false;
    }
    *value = v;
    return true;
}
