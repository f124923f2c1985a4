/* The bad-input corpus: each tests/specs_bad/{format,kernel,family,model}_*.yaml
 * states on its first line the message it must produce
 * ("# expect: :4:3: block.bytes: ..."), which must appear in the error after
 * the file name, and loading must fail (a set_*.yaml, a kernel set, applying
 * to the repository's specs/ or planning with them). Each cli_*.args (run
 * when qkgen's path and a bundle are given) is a qkgen command line on its second line, its
 * first line "# expect: STATUS TEXT": qkgen must exit STATUS within a minute
 * with TEXT in its output (stderr, or stdout where verify's table says it)
 * and write nothing. In the command line @IN@ is the corpus's inputs/ folder
 * (the bad .npy files, manifests, tuning databases and headers the commands
 * read: make_inputs.py writes them), @BUNDLE@ a small bundle of q4_0
 * mat-vecs, and @TMP@ a scratch folder, the command's working folder, which
 * must stay empty. */
#define _POSIX_C_SOURCE 200809L
#include "format/format.h"
#include "plan/plan.h"
#include "spec/model.h"
#include "spec/spec.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { CLI_TIMEOUT_S = 60, MAX_ARGS = 64 };

/* Runs one cli_*.args case: argv from its command line, stderr into err,
 * stdout into err.out. */
static bool run_cli(const char *qkgen, const char *line, const char *in, const char *bundle,
                    const char *tmp, const char *err, int *status, char *why, size_t why_size) {
    qk_str cmd = {0};
    for (const char *p = line; *p; p++) { /* @IN@ and @TMP@ replaced */
        if (!strncmp(p, "@IN@", 4)) {
            qk_str_add(&cmd, in);
            p += 3;
        } else if (!strncmp(p, "@BUNDLE@", 8)) {
            qk_str_add(&cmd, bundle);
            p += 7;
        } else if (!strncmp(p, "@TMP@", 5)) {
            qk_str_add(&cmd, tmp);
            p += 4;
        } else {
            qk_str_addn(&cmd, p, 1);
        }
    }
    char *argv[MAX_ARGS + 2] = {(char *)qkgen};
    int argc = 1;
    /* (an empty line leaves cmd.s NULL: strtok would go on in the last
     * case's freed line) */
    for (char *t = cmd.s ? strtok(cmd.s, " \t\n") : NULL; t && argc <= MAX_ARGS;
         t = strtok(NULL, " \t\n"))
        argv[argc++] = t;
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid == 0) {
        char out[4096];
        snprintf(out, sizeof out, "%s.out", err);
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0644), null = open("/dev/null", O_RDWR);
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        dup2(null, 0), dup2(fo, 1), dup2(fd, 2);
        /* in the scratch folder: a default output (out/, tune.jsonl) lands there */
        if (chdir(tmp) != 0) _exit(126);
        execv(qkgen, argv);
        _exit(127);
    }
    bool ok = pid > 0;
    double t0 = (double)time(NULL);
    int st = 0;
    while (ok && waitpid(pid, &st, WNOHANG) == 0) {
        if ((double)time(NULL) - t0 > CLI_TIMEOUT_S) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            snprintf(why, why_size, "still running after %d s (killed)", CLI_TIMEOUT_S);
            ok = false;
            break;
        }
        nanosleep(&(struct timespec){0, 20 * 1000 * 1000}, NULL);
    }
    if (ok && !WIFEXITED(st)) {
        snprintf(why, why_size, "killed by signal %d", WIFSIGNALED(st) ? WTERMSIG(st) : 0);
        ok = false;
    }
    *status = ok ? WEXITSTATUS(st) : -1;
    qk_str_free(&cmd);
    return ok;
}

/* True if dir has no entries (what a failing command must leave). */
static bool is_empty(const char *dir, char *first, size_t size) {
    DIR *d = opendir(dir);
    struct dirent *ent;
    bool empty = true;
    while (d && (ent = readdir(d)))
        if (strcmp(ent->d_name, ".") && strcmp(ent->d_name, "..")) {
            snprintf(first, size, "%s", ent->d_name);
            empty = false;
            break;
        }
    if (d) closedir(d);
    return empty;
}

/* True if the line of stderr (out) holding at (an error) starts with "qkgen
 * CMD: ", CMD the command line's first word ("qkgen: " where that is no
 * command), as every error must; else false with why. (A usage text, and
 * verify's table on stdout, are no error messages.) */
static bool error_prefixed(const char *out, const char *at, const char *line, char *why,
                           size_t size) {
    static const char *const commands[] = {"build",   "list",   "emit",   "layout",
                                           "devices", "verify", "matmul", "bench",
                                           "export",  "tune",   "dequant"};
    const char *start = at;
    while (start > out && start[-1] != '\n')
        start--;
    char cmd[32] = "", want[48] = "qkgen: ";
    sscanf(line, "%31s", cmd);
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(cmd, commands[i])) snprintf(want, sizeof want, "qkgen %s: ", cmd);
    if (!strncmp(start, want, strlen(want))) return true;
    const char *nl = strchr(start, '\n');
    snprintf(why, size, "the error line does not start with '%s': %.*s", want,
             (int)(nl ? nl - start : (long)strlen(start)), start);
    return false;
}

/* One cli_*.args case; 1 if it passed, else 0 with FAIL printed. */
static int cli_case(const char *qkgen, const char *bundle, const char *corpus, const char *tmp,
                    const char *n, const char *text) {
    int want = -1, used = 0;
    char expect[512] = "", line[2048] = "", why[256] = "";
    const char *nl = strchr(text, '\n');
    /* (an empty command line runs qkgen without arguments) */
    if (sscanf(text, "# expect: %d %n", &want, &used) != 1 || !nl ||
        sscanf(text + used, "%511[^\n]", expect) != 1 ||
        (nl[1] != '\n' && sscanf(nl + 1, "%2047[^\n]", line) != 1)) {
        printf("FAIL %s: not '# expect: STATUS TEXT' and a command line\n", n);
        return 0;
    }
    char *in = qk_path_join(corpus, "inputs"), *err = qk_path_join(tmp, "../stderr");
    int status;
    bool ran = run_cli(qkgen, line, in, bundle, tmp, err, &status, why, sizeof why);
    qk_error e = {0};
    /* stderr, then stdout (where verify's table says it) */
    char *errs = qk_read_file(err, NULL, &e), *outs = NULL, first[256] = "";
    {
        char *op = qk_path_join(tmp, "../stderr.out");
        outs = qk_read_file(op, NULL, &e);
        free(op);
    }
    qk_str all = {0};
    qk_str_add(&all, errs ? errs : "");
    qk_str_add(&all, outs ? outs : "");
    char *got = qk_str_take(&all);
    int pass = 0;
    if (!ran)
        printf("FAIL %s: %s: %s\n", n, line, why);
    else if (status != want)
        printf("FAIL %s: %s: exit status %d, expected %d\n  output: %s", n, line, status, want,
               got ? got : "");
    else if (!got || !strstr(got, expect))
        printf("FAIL %s: %s\n  got:    %s  wanted: %s\n", n, line, got ? got : "", expect);
    else if (want && errs && strstr(errs, expect) && strncmp(expect, "usage:", 6) &&
             !error_prefixed(errs, strstr(errs, expect), line, why, sizeof why))
        printf("FAIL %s: %s: %s\n", n, line, why);
    else if (!is_empty(tmp, first, sizeof first))
        printf("FAIL %s: %s: wrote %s despite the error\n", n, line, first);
    else
        pass = 1;
    if (!pass) qk_rmtree(tmp), qk_mkdirs(tmp, &e);
    free(got), free(errs), free(outs), free(in), free(err);
    return pass;
}

int main(int argc, char **argv) {
    if (argc != 2 && argc != 4) {
        fprintf(stderr, "usage: test_spec CORPUS_DIR [QKGEN BUNDLE]\n");
        return 2;
    }
    const char *qkgen = argc == 4 ? argv[2] : NULL, *bundle = argc == 4 ? argv[3] : NULL;
    char scratch[] = "/tmp/qk_bad_XXXXXX";
    if (qkgen && !mkdtemp(scratch)) {
        printf("FAIL: mkdtemp\n");
        return 1;
    }
    char *tmp = qkgen ? qk_path_join(scratch, "tmp") : NULL;
    qk_error te = {0};
    if (tmp && !qk_mkdirs(tmp, &te)) {
        printf("FAIL: %s\n", te.msg);
        return 1;
    }
    int pass = 0, fail = 0, cli = 0;
    DIR *d = opendir(argv[1]);
    if (!d) {
        printf("FAIL: cannot open %s\n", argv[1]);
        return 1;
    }
    struct dirent *ent;
    while ((ent = readdir(d))) {
        const char *n = ent->d_name;
        size_t len = strlen(n);
        if (!strncmp(n, "cli_", 4) && len > 9 && !strcmp(n + len - 5, ".args")) {
            if (!qkgen) continue; /* (spec.malformed_corpus runs without) */
            char *path = qk_path_join(argv[1], n);
            qk_error re = {0};
            char *text = qk_read_file(path, NULL, &re);
            int ok = text ? cli_case(qkgen, bundle, argv[1], tmp, n, text) : 0;
            if (!text) printf("FAIL %s: %s\n", n, re.msg);
            pass += ok, fail += !ok, cli++;
            free(text), free(path);
            continue;
        }
        if (len < 6 || strcmp(n + len - 5, ".yaml")) continue;
        bool format = !strncmp(n, "format_", 7), model = !strncmp(n, "model_", 6);
        bool family = !strncmp(n, "family_", 7), set = !strncmp(n, "set_", 4);
        bool fusion = !strncmp(n, "fusion_", 7);
        if (!format && !model && !family && !set && !fusion && strncmp(n, "kernel_", 7)) {
            printf("FAIL %s: corpus files start with format_, kernel_, family_, fusion_, model_ "
                   "or set_\n",
                   n);
            fail++;
            continue;
        }
        char *path = qk_path_join(argv[1], n);
        qk_error re = {0};
        char *text = qk_read_file(path, NULL, &re);
        char expect[512] = "";
        if (!text || sscanf(text, "# expect: %511[^\n]", expect) != 1) {
            printf("FAIL %s: no '# expect:' first line\n", n);
            fail++;
            free(text);
            free(path);
            continue;
        }
        qk_error e = {0};
        bool ok;
        if (format) {
            /* expanded too: a declared reference compiles there */
            qk_format_spec *fs = malloc(sizeof *fs);
            qk_format *fmts = NULL;
            uint32_t nf = 0;
            ok = qk_format_spec_load(path, fs, &e) && qk_format_expand(fs, &fmts, &nf, &e);
            free(fmts);
            free(fs);
        } else if (family) {
            qk_family_spec fs;
            qk_kernel_spec *ks = NULL;
            uint32_t nk = 0;
            ok = qk_family_spec_load(path, &fs, &ks, &nk, &e);
            qk_family_spec_free(&fs);
            free(ks);
        } else if (set) {
            /* the corpus lies in tests/specs_bad: the specs are ../../specs */
            char *dir = qk_path_join(argv[1], "../../specs");
            qk_spec_set ss;
            qk_plan p = {0};
            qk_error le = {0};
            if (!qk_spec_set_load(dir, &ss, &le)) {
                printf("FAIL %s: %s\n", n, le.msg);
                fail++;
                free(dir), free(text), free(path);
                continue;
            }
            ok = qk_spec_set_apply(&ss, dir, path, &e) && qk_plan_build(&ss, &p, &e);
            qk_plan_free(&p);
            qk_spec_set_free(&ss);
            free(dir);
        } else if (fusion) {
            qk_fusion_spec *us = malloc(sizeof *us);
            ok = qk_fusion_spec_load(path, us, &e);
            free(us);
        } else if (model) {
            qk_model_spec *ms = malloc(sizeof *ms);
            ok = qk_model_spec_load(path, ms, &e);
            free(ms);
        } else {
            qk_kernel_spec *ks = malloc(sizeof *ks);
            ok = qk_kernel_spec_load(path, ks, &e);
            free(ks);
        }
        /* the message starts with the path; the expectation follows it */
        char want[1200];
        snprintf(want, sizeof want, "%s%s", path, expect);
        if (ok) {
            printf("FAIL %s: loaded without error\n", n);
            fail++;
        } else if (strncmp(e.msg, want, strlen(want))) {
            printf("FAIL %s:\n  got:    %s\n  wanted: %s\n", n, e.msg, want);
            fail++;
        } else {
            pass++;
        }
        free(text);
        free(path);
    }
    closedir(d);
    if (pass + fail < 10) {
        printf("FAIL: the corpus has only %d cases\n", pass + fail);
        fail++;
    }
    if (qkgen) {
        qk_rmtree(scratch);
        free(tmp);
    }
    printf("%d passed, %d failed (%d command lines, %d specs)\n", pass, fail, cli,
           pass + fail - cli);
    return fail ? 1 : 0;
}
