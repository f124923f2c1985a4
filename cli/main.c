/* qkgen's entry point: the command table, help, and the argument helpers
 * every command shares. */
#define _GNU_SOURCE /* fopencookie */
#include "cli.h"
#include "compile/compile.h"
#include "compile/features.h"
#include "qk_util.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifndef QKGEN_SOURCE_DIR
#define QKGEN_SOURCE_DIR "."
#endif

static const struct {
    const char *name;
    int (*run)(qk_args *);
    const char *summary;
} commands[] = {
    {"build", cmd_build, "generate, compile and validate a bundle from YAML specs"},
    {"list", cmd_list, "list formats, kernels and variants of the specs (or dropped ones)"},
    {"emit", cmd_emit, "print the generated GLSL of one variant"},
    {"layout", cmd_layout, "print a C struct's layout as a format's YAML fields (libclang)"},
    {"devices", cmd_devices, "list Vulkan devices and what kernels care about"},
    {"verify", cmd_verify, "run every kernel of a bundle against the CPU reference"},
    {"matmul", cmd_matmul, "multiply quantized weights (.npy) by activations (.npy) on the device"},
    {"bench", cmd_bench, "time kernels on the device against its copy bandwidth"},
    {"export", cmd_export, "write a bundle as one C header (SPIR-V arrays, manifest as C data)"},
    {"tune", cmd_tune, "autotune kernels on the device into a tuning database"},
    {"dequant", cmd_dequant, "dequantize blocks through a format's CPU reference (.npy)"},
};

static void help(FILE *f) {
    fputs("usage: qkgen COMMAND [OPTIONS]\n\n"
          "qkgen compiles YAML kernel specs into validated SPIR-V bundles for quantized\n"
          "LLM inference on Vulkan, and runs them.\n\ncommands:\n",
          f);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-8s %s\n", commands[i].name, commands[i].summary);
    fputs("\n'qkgen COMMAND --help' describes a command.\n", f);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        help(stderr);
        return QK_EXIT_USAGE;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
        help(stdout);
        return QK_EXIT_OK;
    }
    if (!strcmp(argv[1], "--version")) {
        /* and what its shader compiler can do: what variants a build keeps */
        const char *ext[16];
        unsigned n = qk_compile_probed_extensions(ext, 16);
        qk_compile_init();
        printf("qkgen 0.1.0\nshader compiler: %s\n", qk_compile_toolchain());
        for (unsigned i = 0; i < n; i++)
            printf("%s: %s\n", ext[i], qk_compile_has_extension(ext[i]) ? "yes" : "no");
        qk_compile_finish();
        return QK_EXIT_OK;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].name)) {
            qk_args a = {.argc = argc, .i = 2, .argv = argv, .cmd = commands[i].name};
            return commands[i].run(&a);
        }
    const char *names[sizeof commands / sizeof commands[0] + 3] = {"help", "--help", "--version"};
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        names[3 + i] = commands[i].name;
    const char *near = qk_nearest(argv[1], names, sizeof names / sizeof names[0]);
    if (near)
        fprintf(stderr, "qkgen: unknown command '%s'; did you mean %s? (try 'qkgen --help')\n",
                argv[1], near);
    else
        fprintf(stderr, "qkgen: unknown command '%s' (try 'qkgen --help')\n", argv[1]);
    return QK_EXIT_USAGE;
}

/* Remembers that the command tried option name on the current argument. */
static void tried(qk_args *a, const char *name) {
    if (a->tried_at != a->i) a->tried_at = a->i, a->ntried = 0;
    for (unsigned j = 0; j < a->ntried; j++)
        if (!strcmp(a->tried[j], name)) return;
    if (a->ntried < sizeof a->tried / sizeof a->tried[0]) a->tried[a->ntried++] = name;
}

/* Edit distance of a[0 .. na) and b[0 .. nb), a swap of neighbours counting
 * one (the optimal string alignment distance), letters compared without
 * their case; both under 64 characters. */
static int low(char c) {
    return tolower((unsigned char)c);
}

static size_t edit_distance(const char *a, size_t na, const char *b, size_t nb) {
    size_t d[64][64];
    for (size_t i = 0; i <= na; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= nb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= na; i++)
        for (size_t j = 1; j <= nb; j++) {
            size_t best = d[i - 1][j - 1] + (low(a[i - 1]) != low(b[j - 1]));
            if (d[i - 1][j] + 1 < best) best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best) best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && low(a[i - 1]) == low(b[j - 2]) &&
                low(a[i - 2]) == low(b[j - 1]) && d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[na][nb];
}

const char *qk_nearest(const char *word, const char *const *names, size_t n) {
    const size_t nw = strcspn(word, "=");
    const char *near = NULL;
    size_t best = SIZE_MAX;
    for (size_t i = 0; i < n && nw < 64; i++) {
        const size_t nn = strlen(names[i]);
        if (nn >= 64) continue;
        const size_t d = edit_distance(word, nw, names[i], nn);
        const size_t most = nn / 3 ? nn / 3 : 1;
        /* (0: the same but for case, or a flag given a value) */
        if (d <= most && d < best) best = d, near = names[i];
    }
    return near;
}

bool qk_flag(qk_args *a, const char *name) {
    tried(a, name);
    if (a->i < a->argc && !strcmp(a->argv[a->i], name)) {
        a->i++;
        return true;
    }
    return false;
}

static const char *missing = "\x01";

bool qk_opt(qk_args *a, const char *name, const char **value) {
    tried(a, name);
    if (a->i >= a->argc) return false;
    const char *arg = a->argv[a->i];
    size_t n = strlen(name);
    if (strncmp(arg, name, n)) return false;
    if (arg[n] == '=') {
        *value = arg + n + 1;
        a->i++;
        return true;
    }
    if (arg[n]) return false;
    *value = a->i + 1 < a->argc ? a->argv[a->i + 1] : missing;
    a->i += 2;
    if (*value == missing) {
        qk_usage_error(a->cmd, "%s needs a value", name);
        exit(QK_EXIT_USAGE); /* the CLI alone may exit; the libraries never do */
    }
    return true;
}

bool qk_opt_range(qk_args *a, const char *name, uint64_t min, uint64_t max, uint64_t *value) {
    const char *s;
    if (!qk_opt(a, name, &s)) return false;
    qk_error e = {0};
    if (!qk_parse_u64(s, min, max, value, &e)) {
        qk_usage_error(a->cmd, "%s: %s", name, e.msg);
        exit(QK_EXIT_USAGE); /* the CLI alone may exit */
    }
    return true;
}

int qk_usage_error(const char *cmd, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "qkgen %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return QK_EXIT_USAGE;
}

/* qk_stderr's stream: each line written goes to stderr after "qkgen CMD: ". */
typedef struct prefixed {
    const char *cmd;
    bool mid; /* within a line: its prefix is out */
} prefixed;

static ssize_t prefixed_write(void *cookie, const char *buf, size_t n) {
    prefixed *p = cookie;
    for (size_t i = 0; i < n;) {
        if (!p->mid) fprintf(stderr, "qkgen %s: ", p->cmd), p->mid = true;
        const char *nl = memchr(buf + i, '\n', n - i);
        const size_t len = nl ? (size_t)(nl - (buf + i)) + 1 : n - i;
        fwrite(buf + i, 1, len, stderr);
        p->mid = !nl;
        i += len;
    }
    fflush(stderr);
    return (ssize_t)n;
}

FILE *qk_stderr(const char *cmd) {
    static FILE *f;
    static prefixed p;
    if (!f) {
        p.cmd = cmd;
        f = fopencookie(&p, "w", (cookie_io_functions_t){.write = prefixed_write});
        if (f) setvbuf(f, NULL, _IOLBF, 0);
    }
    return f ? f : stderr;
}

int qk_check_output(const char *cmd, const char *opt, const char *out, bool folder,
                    const qk_input *in, size_t n) {
    qk_error e = {0};
    if (qk_output_check(opt, out, folder, in, n, &e)) return 0;
    return qk_usage_error(cmd, "%s", e.msg);
}

int qk_bad_arg(qk_args *a) {
    const char *arg = a->argv[a->i];
    const char *near = a->tried_at == a->i ? qk_nearest(arg, a->tried, a->ntried) : NULL;
    if (arg[0] == '-' && near)
        return qk_usage_error(a->cmd,
                              "unknown option '%s'; did you mean %s? (see 'qkgen %s --help')", arg,
                              near, a->cmd);
    if (arg[0] == '-')
        return qk_usage_error(a->cmd, "unknown option '%s' (see 'qkgen %s --help')", arg, a->cmd);
    return qk_usage_error(a->cmd, "unexpected argument '%s' (see 'qkgen %s --help')", arg, a->cmd);
}

static bool is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* An installed qkgen's data: share/qkgen beside its bin/ (cmake --install),
 * found from the executable's own path; NULL when there is none (a build
 * folder's qkgen). */
static const char *installed_share(void) {
    static char dir[PATH_MAX];
    static bool looked;
    if (!looked) {
        looked = true;
        char exe[PATH_MAX], share[PATH_MAX + 32];
        ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
        exe[n > 0 ? n : 0] = '\0';
        char *slash = strrchr(exe, '/');
        if (slash) {
            *slash = '\0'; /* the executable's folder */
            snprintf(share, sizeof share, "%s/../share/qkgen", exe);
            if (!realpath(share, dir) || !is_dir(dir)) dir[0] = '\0';
        }
    }
    return dir[0] ? dir : NULL;
}

/* A default folder: $env, else ./name (run from a source tree or a project
 * with its own), else the installed share/qkgen/name, else the source tree
 * this qkgen was built from. */
static const char *pick_dir(const char *env, const char *name, char *buf, size_t size) {
    const char *e = getenv(env);
    if (e && e[0]) return e;
    if (is_dir(name)) return name;
    const char *share = installed_share();
    snprintf(buf, size, "%s/%s", share ? share : QKGEN_SOURCE_DIR, name);
    return buf;
}

const char *qk_default_specs(void) {
    static char buf[PATH_MAX + 16];
    return pick_dir("QKGEN_SPECS", "specs", buf, sizeof buf);
}

const char *qk_default_templates(void) {
    static char buf[PATH_MAX + 16];
    return pick_dir("QKGEN_TEMPLATES", "templates", buf, sizeof buf);
}

const char *qk_default_bundle(void) {
    return "out/default";
}

bool qk_model_arg(const char *cmd, const char *specs_dir, const char **model) {
    const char *name = *model;
    if (!name || qk_is_file(name)) return true; /* a file path, as given */
    if (strchr(name, '/')) {
        qk_usage_error(cmd, "--model %s: no such file", name);
        return false;
    }
    /* a bare name: the models beside the specs the command reads, then an
     * installed qkgen's, then the source tree's; each folder once */
    const char *share = installed_share();
    char *dirs[3], real[3][PATH_MAX];
    size_t nd = 0;
    dirs[nd++] = qk_path_join(specs_dir, "models");
    if (share) dirs[nd++] = qk_path_join(share, "specs/models");
    dirs[nd++] = qk_path_join(QKGEN_SOURCE_DIR, "specs/models");
    const size_t len = strlen(name);
    const char *ext = len > 5 && !strcmp(name + len - 5, ".yaml") ? "" : ".yaml";
    static char *found; /* the path *model keeps */
    qk_str looked = {0};
    for (size_t i = 0; i < nd && *model != found; i++) {
        if (!realpath(dirs[i], real[i])) snprintf(real[i], sizeof real[i], "%s", dirs[i]);
        bool seen = false;
        for (size_t j = 0; j < i; j++)
            seen |= !strcmp(real[i], real[j]);
        if (seen) continue;
        qk_str path = {0};
        qk_str_addf(&path, "%s/%s%s", real[i], name, ext);
        free(found);
        found = qk_str_take(&path);
        if (qk_is_file(found)) *model = found;
        qk_str_addf(&looked, "%s%s", looked.len ? ", " : "", real[i]);
    }
    for (size_t i = 0; i < nd; i++)
        free(dirs[i]);
    if (*model != found)
        qk_usage_error(cmd, "--model %s: no such file, nor a model %s%s in %s", name, name, ext,
                       looked.s);
    qk_str_free(&looked);
    return *model == found;
}

bool qk_spec_dir_arg(const char *cmd, const char *positional, const char *opt, const char **dir) {
    if (positional && opt) {
        qk_usage_error(cmd, "the spec folder is given twice ('%s' and --specs %s)", positional,
                       opt);
        return false;
    }
    *dir = opt ? opt : positional ? positional : qk_default_specs();
    return true;
}
