/* The qkgen command line: thin glue over the generator, the runtime and the
 * host operations. Shared helpers for argument parsing and defaults. */
#ifndef QK_CLI_H
#define QK_CLI_H

#include <stdbool.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>

/* Exit statuses: 0 success, 1 a failure while working, 2 bad input (usage,
 * malformed spec, wrong .npy). */
enum { QK_EXIT_OK = 0, QK_EXIT_FAIL = 1, QK_EXIT_USAGE = 2 };

/* Ranges of the counts and sizes every command takes: rows and depth of a
 * product as a model spec's (specs/models), timed runs, milliseconds. */
#define QK_ARG_MAX_ROWS (1u << 20)
#define QK_ARG_MAX_RUNS 1000000u
#define QK_ARG_MAX_MS   600000u

typedef struct qk_args {
    int argc, i;
    char **argv;
    const char *cmd;
    /* the options qk_flag and qk_opt tried on argv[tried_at]: what
     * qk_bad_arg compares an unknown one with */
    int tried_at;
    unsigned ntried;
    const char *tried[128];
} qk_args;

/* Option parsing: true if argv[i] is the flag (and takes its value). */
bool qk_flag(qk_args *a, const char *name);
bool qk_opt(qk_args *a, const char *name, const char **value);
/* A number option: the value as a decimal integer min..max (qk_parse_u64),
 * else "qkgen CMD: NAME: 'V' is not a non-negative integer" (or "V is out of
 * range MIN..MAX") and exit 2. Every count and size of a command line goes
 * through it: nothing is truncated to a narrower type after it. */
bool qk_opt_range(qk_args *a, const char *name, uint64_t min, uint64_t max, uint64_t *value);
/* Reports an unknown option or extra argument; returns QK_EXIT_USAGE. An
 * unknown option gets the nearest of those the command tried on it (edit
 * distance, qk_nearest): "unknown option '--tokns'; did you mean --tokens?". */
int qk_bad_arg(qk_args *a);
int qk_usage_error(const char *cmd, const char *fmt, ...);
/* A stream for the libraries' messages (a FILE * log): each line goes to
 * stderr after "qkgen CMD: ", as every error of the command does. The first
 * call's cmd names it; stderr itself where no such stream can be made. */
FILE *qk_stderr(const char *cmd);
/* The one of names[0 .. n) nearest to word by edit distance (insertions,
 * deletions, substitutions and swaps of two neighbours; what comes after an
 * '=' in word ignored), when it is near enough to be a typo of it (at most
 * a third of its letters, and at least one, differ); else NULL. */
const char *qk_nearest(const char *word, const char *const *names, size_t n);

/* 0 if the command may write out (qk_output_check: not one of its inputs
 * in[0 .. n), nor inside one, nor for a folder holding one), else prints
 * "qkgen CMD: OPT OUT is inside the input ..." and returns QK_EXIT_USAGE.
 * Every command calls it for each output before it reads or writes. */
typedef struct qk_input qk_input;
int qk_check_output(const char *cmd, const char *opt, const char *out, bool folder,
                    const qk_input *in, size_t n);

/* Defaults that follow the working directory, then the source tree. */
const char *qk_default_specs(void);
const char *qk_default_templates(void);
const char *qk_default_bundle(void);
/* *dir = the spec folder a command names: --specs DIR (opt) or its first
 * argument (positional), not both, else qk_default_specs(). False (a usage
 * message printed) when both are given. */
bool qk_spec_dir_arg(const char *cmd, const char *positional, const char *opt, const char **dir);
/* --model NAME: a model spec's file as given, else (a name without '/')
 * NAME or NAME.yaml in specs_dir/models, an installed qkgen's
 * share/qkgen/specs/models, or the source tree's specs/models, the first
 * found (*model then points to it). False, after "qkgen CMD: --model NAME:
 * no such file, nor a model NAME.yaml in A, B" naming every folder looked
 * in. *model NULL (no --model) is left alone. */
bool qk_model_arg(const char *cmd, const char *specs_dir, const char **model);

/* Opens a context on device (NULL: the default; validation also by
 * $QKGEN_VALIDATION) and loads bundle; on failure prints "qkgen CMD: ..." and
 * returns the exit status (nothing left open). */
typedef struct qkrt_context qkrt_context;
typedef struct qkrt_bundle qkrt_bundle;
int qk_open(const char *cmd, const char *device, bool validation, bool stats, const char *bundle,
            qkrt_context **ctx, qkrt_bundle **b);

int cmd_build(qk_args *a);
int cmd_list(qk_args *a);
int cmd_emit(qk_args *a);
int cmd_layout(qk_args *a);
int cmd_devices(qk_args *a);
int cmd_verify(qk_args *a);
int cmd_matmul(qk_args *a);
int cmd_bench(qk_args *a);
int cmd_export(qk_args *a);
int cmd_tune(qk_args *a);
int cmd_dequant(qk_args *a);
/* qkgen build --tuned DB: a bundle of the tuned winners and fallbacks with a
 * select table (cli/cmd_tune.c). */
int cmd_build_tuned(qk_args *a);

#endif
