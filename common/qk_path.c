/* Paths compared as the system sees them: whether a command's output is, or
 * lies inside, one of its inputs, so that no command writes over what it reads. */
#define _DEFAULT_SOURCE
#include "qk_util.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* path made absolute without following what does not exist yet: the
 * realpath of its longest existing part, then the rest ("." dropped, ".."
 * taking one part off), so that a file to be created compares with the
 * folder it will be created in. Caller frees. */
static char *resolve(const char *path) {
    char *p = qk_xstrdup(path), real[PATH_MAX];
    size_t cut = strlen(p);
    for (;;) { /* p[0 .. cut) is the part tried */
        char save = p[cut];
        p[cut] = 0;
        const char *head = cut ? p : path[0] == '/' ? "/" : ".";
        bool found = realpath(head, real) != NULL;
        p[cut] = save;
        if (found) break;
        if (!cut) { /* not even "." resolves: compare the text as it is */
            snprintf(real, sizeof real, "%s", path[0] == '/' ? "/" : ".");
            break;
        }
        while (cut && p[cut - 1] != '/') /* one part off the end */
            cut--;
        while (cut > 1 && p[cut - 1] == '/')
            cut--;
        if (cut == 1 && p[0] == '/') cut = 0;
    }
    qk_str out = {0};
    qk_str_add(&out, real);
    for (const char *s = path + cut; *s;) {
        while (*s == '/')
            s++;
        size_t n = strcspn(s, "/");
        if (!n) break;
        if (n == 2 && !strncmp(s, "..", 2)) {
            char *slash = strrchr(out.s, '/');
            out.len = slash && slash != out.s ? (size_t)(slash - out.s) : 1;
            out.s[out.len] = 0;
        } else if (!(n == 1 && s[0] == '.')) {
            if (out.s[out.len - 1] != '/') qk_str_add(&out, "/");
            qk_str_addn(&out, s, n);
        }
        s += n;
    }
    free(p);
    return qk_str_take(&out);
}

/* Whether resolved path a is b or lies inside it. */
static bool within(const char *a, const char *b) {
    size_t n = strlen(b);
    if (!strcmp(b, "/")) return true;
    return !strncmp(a, b, n) && (a[n] == '\0' || a[n] == '/');
}

/* Whether the resolved path a, or a folder above it, is the file of st (one
 * file under two names: a hard link, a bind mount, another mount of it). */
static bool under_file(const char *a, const struct stat *st, bool self) {
    char *p = qk_xstrdup(a);
    bool found = false;
    for (bool first = true;; first = false) {
        struct stat s;
        if ((self || !first) && stat(p[0] ? p : "/", &s) == 0 && s.st_dev == st->st_dev &&
            s.st_ino == st->st_ino) {
            found = true;
            break;
        }
        char *slash = strrchr(p, '/');
        if (!slash || !p[0]) break;
        *slash = 0;
    }
    free(p);
    return found;
}

bool qk_output_check(const char *opt, const char *out, bool folder, const qk_input *in, size_t n,
                     qk_error *e) {
    if (!out[0]) {
        qk_error_set(e, "%s: an empty path", opt);
        return false;
    }
    char *ro = resolve(out);
    struct stat so;
    bool out_exists = stat(ro, &so) == 0, ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        if (!in[i].path || !in[i].path[0]) continue;
        char *ri = resolve(in[i].path);
        struct stat si;
        bool in_exists = stat(ri, &si) == 0;
        bool same = !strcmp(ro, ri) ||
                    (out_exists && in_exists && so.st_dev == si.st_dev && so.st_ino == si.st_ino);
        if (same) {
            qk_error_set(e, "%s %s is the input %s %s", opt, out, in[i].what, in[i].path);
            ok = false;
        } else if (within(ro, ri) || (in_exists && S_ISDIR(si.st_mode) && under_file(ro, &si, 0))) {
            qk_error_set(e, "%s %s is inside the input %s %s", opt, out, in[i].what, in[i].path);
            ok = false;
        } else if (folder && (within(ri, ro) ||
                              (out_exists && S_ISDIR(so.st_mode) && under_file(ri, &so, 0)))) {
            qk_error_set(e, "%s %s holds the input %s %s, which writing it would replace", opt, out,
                         in[i].what, in[i].path);
            ok = false;
        }
        free(ri);
    }
    free(ro);
    return ok;
}
