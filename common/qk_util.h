/* Small utilities shared by every part of qkgen: growable strings, a sticky
 * error with a message, SHA-256, files and folders, integer expressions. */
#ifndef QK_UTIL_H
#define QK_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#if defined(__GNUC__)
#define QK_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define QK_PRINTF(a, b)
#endif

/* ---- errors: the first one set wins, later ones are ignored ---- */
typedef struct qk_error {
    bool set;
    char msg[2048];
} qk_error;

void qk_error_set(qk_error *e, const char *fmt, ...) QK_PRINTF(2, 3);
void qk_error_vset(qk_error *e, const char *fmt, va_list ap);

/* ---- growable strings; an allocation failure aborts (host memory is not a
 * recoverable condition for a code generator) ---- */
typedef struct qk_str {
    char *s;
    size_t len, cap;
} qk_str;

void qk_str_add(qk_str *b, const char *s);
void qk_str_addn(qk_str *b, const char *s, size_t n);
void qk_str_addf(qk_str *b, const char *fmt, ...) QK_PRINTF(2, 3);
void qk_str_free(qk_str *b);
/* Returns the string (never NULL) and leaves b empty; the caller frees it. */
char *qk_str_take(qk_str *b);

void *qk_xmalloc(size_t n);
void *qk_xcalloc(size_t n, size_t size);
void *qk_xrealloc(void *p, size_t n);
char *qk_xstrdup(const char *s);
/* Room for element number count (0-based) of an array of size-byte elements
 * that grows by doubling, its capacity implied by count (the next power of
 * two): appending n elements costs O(n), where growing by one each time is
 * quadratic (and minutes under AddressSanitizer, whose realloc always moves). */
void *qk_grow(void *a, size_t count, size_t size);

/* ---- SHA-256 ---- */
typedef struct qk_sha256 {
    uint32_t h[8];
    uint64_t len;
    uint8_t buf[64];
    size_t fill;
} qk_sha256;

void qk_sha256_init(qk_sha256 *c);
void qk_sha256_update(qk_sha256 *c, const void *data, size_t n);
void qk_sha256_final(qk_sha256 *c, uint8_t out[32]);
/* 64 hex digits and a NUL */
void qk_sha256_hex(const void *data, size_t n, char out[65]);
void qk_sha256_final_hex(qk_sha256 *c, char out[65]);

/* Seconds on a monotonic clock, for elapsed times. */
double qk_now_s(void);
/* Whether name contains filter or one of its comma-separated parts: the one
 * --filter syntax of build, list, verify, bench and tune. */
bool qk_filter_match(const char *filter, const char *name);
/* The host's online cores, at least 1: threads for work split among them. */
uint32_t qk_cores(void);
/* Runs fn(arg, t, n) for t = 0 .. n - 1 at once, share 0 on the calling thread
 * and each other on a thread of its own (one the system refuses runs on the
 * calling thread after share 0); returns when all have. n is at most
 * QK_MAX_THREADS (more are capped), 0 counts as 1. */
#define QK_MAX_THREADS 64u
void qk_parallel(uint32_t n, void (*fn)(void *arg, uint32_t t, uint32_t n), void *arg);

/* ---- files ---- */
/* Reads a whole regular file (NUL-terminated, size in *n if n) of at most max
 * bytes (0: QK_READ_MAX). FIFOs, devices and folders are refused: they could
 * block or never end. NULL with "path: why" in e on failure. */
#define QK_READ_MAX ((size_t)1 << 30)
char *qk_read_file_max(const char *path, size_t max, size_t *n, qk_error *e);
/* qk_read_file_max with QK_READ_MAX. */
char *qk_read_file(const char *path, size_t *n, qk_error *e);
/* True if path is a regular file of at most max bytes, which a reader that
 * opens it itself (libclang) may read; else false with the reason in e. */
bool qk_check_file(const char *path, size_t max, qk_error *e);
/* Writes path atomically: a temporary file beside it, then rename. */
bool qk_write_file(const char *path, const void *data, size_t n, qk_error *e);
bool qk_mkdirs(const char *path, qk_error *e);
/* Removes what killed writers left in dir: files and folders named
 * "*.tmp.PID" (qk_write_file's, a bundle's) or "*.old.PID" whose process is
 * gone. Returns how many were removed. */
uint32_t qk_remove_stale_temps(const char *dir);
/* An exclusive lock (flock) on path, created if need be, held until the
 * returned descriptor is closed or the process ends: a killed holder never
 * leaves it held. The holder writes "pid N since TIME" into the file. When
 * another process holds it: with wait, says so on log (may be NULL) and
 * blocks until it is free; without, returns -1 at once with *busy set and
 * "PATH is held by pid N since TIME" in e. -1 with the reason in e (and
 * *busy false) when the file cannot be opened or locked. */
int qk_lock_file(const char *path, bool wait, FILE *log, bool *busy, qk_error *e);
/* Removes a folder and everything under it; true if it is gone. */
bool qk_rmtree(const char *path);
bool qk_is_dir(const char *path);
bool qk_is_file(const char *path);
/* dir + "/" + name (name returned as is when absolute); caller frees. */
char *qk_path_join(const char *dir, const char *name);
/* The folder part of a path ("." for a bare name); caller frees. */
char *qk_path_dir(const char *path);

/* ---- outputs that must not overwrite inputs (qk_path.c) ---- */
/* One input of a command: what names it in messages ("bundle", "database",
 * "--x"), and its path (NULL or "": the command has none). */
typedef struct qk_input {
    const char *what;
    const char *path;
} qk_input;
/* Whether a command may write out (named opt in messages; folder: a folder
 * the command replaces as a whole): out must not be one of in[0 .. n), nor
 * lie inside one (every file of a folder input is an input), nor, for a
 * folder, hold one. Paths compare resolved (the realpath of their longest
 * existing part, then the rest) and, where files exist, by device and inode
 * (hard links, bind mounts). False with "OPT OUT is inside the input WHAT
 * PATH" ("is the input", "holds the input") in e; an empty out is refused. */
bool qk_output_check(const char *opt, const char *out, bool folder, const qk_input *in, size_t n,
                     qk_error *e);

/* ---- numbers from a command line or a file ---- */
/* s as a decimal integer min..max (digits only: no sign, space or base
 * prefix; "010" is 10), the one reader of counts and sizes that a user
 * gives. False with "'S' is not a non-negative integer" or "S is out of
 * range MIN..MAX" in e: nothing is truncated or wrapped. */
bool qk_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *value, qk_error *e);

/* ---- a set of strings (not copied: they must outlive it), for finding
 * duplicates among n names in O(n) rather than comparing every pair ---- */
typedef struct qk_strset {
    struct qk_strset_slot *slots;
    size_t cap, count;
} qk_strset;
/* 1: key was new and is added with index; 0: an equal key is there, added
 * with *earlier (if earlier); -1: out of memory. */
int qk_strset_add(qk_strset *s, const char *key, uint32_t index, uint32_t *earlier);
void qk_strset_free(qk_strset *s);

/* ---- escaping (qk_escape.c): the one function of each language qkgen
 * writes, through which every writer puts a string or number that came from a
 * file, a device or a user; none of them fails ---- */
/* s as a C string literal ("NULL" for NULL): quote, backslash and '?' (no
 * trigraph) escaped, every byte outside printable ASCII as an octal escape. */
void qk_c_string(qk_str *o, const char *s);
/* s as text inside a C block comment: "* /" and "/ *" split so that the
 * comment neither ends nor nests, no "??", bytes outside printable ASCII as '.'. */
void qk_c_comment(qk_str *o, const char *s);
/* s as a JSON string literal: quote and backslash escaped, control
 * characters and DEL as \u00XX, bytes that are not UTF-8 as U+FFFD. */
void qk_json_string(qk_str *o, const char *s);
/* v as a JSON number that reads back as the same double (the shortest of 15
 * to 17 significant digits, at most 24 characters); null when v is infinite
 * or NaN, which JSON cannot say: a reader refuses the field, not the file. */
void qk_json_number(qk_str *o, double v);
/* Whether s is UTF-8 throughout (no stray or missing continuation byte, no
 * overlong form, surrogate or code point past U+10FFFF): a reader's test of
 * text that a writer would otherwise change (each other byte as U+FFFD). */
bool qk_utf8_valid(const char *s);
/* s as SVG/XML character data or attribute value: & < > " ' as entities,
 * characters XML 1.0 forbids and bytes that are not UTF-8 as U+FFFD. */
void qk_xml_text(qk_str *o, const char *s);

/* ---- integer expressions, the one evaluator of the generator and libqkrt:
 * + - * / % ( ), unary - + !, comparisons == != < <= > >= (one per operand of
 * && and ||; they yield 0 or 1), && ||, decimal numbers and names looked up
 * through a callback. / rounds down (floor) and % follows it (a / b * b + a % b
 * == a). Overflow of int64, division or modulo by zero, unknown names and
 * syntax errors fail with "PROBLEM in WHAT 'EXPR' (column N)". ---- */
typedef bool (*qk_lookup_fn)(void *user, const char *name, size_t len, int64_t *value);
typedef enum qk_expr_kind {
    QK_EXPR_VALUE,     /* any expression */
    QK_EXPR_CONDITION, /* its outermost operator must be a comparison, && || or ! */
} qk_expr_kind;
/* what names the expression in messages ("grid expression"); NULL: "expression"
 * or "condition". Returns false with a message in e. */
bool qk_expr_eval_as(const char *expr, const char *what, qk_expr_kind kind, qk_lookup_fn lookup,
                     void *user, int64_t *value, qk_error *e);
bool qk_expr_eval(const char *expr, qk_lookup_fn lookup, void *user, int64_t *value, qk_error *e);
/* Checks expr's syntax (and, for QK_EXPR_CONDITION, that it is a condition)
 * without values: every name is accepted and arithmetic is not checked, so
 * a spec's expressions fail at their line when loaded, not at planning. */
bool qk_expr_check(const char *expr, const char *what, qk_expr_kind kind, qk_error *e);
/* Appends a name's C form (qkgen export: "s->M") to out; false refuses it. */
typedef bool (*qk_expr_c_var_fn)(void *user, const char *name, size_t len, qk_str *out);
/* Checks expr as qk_expr_check does and appends it to out as a C expression
 * of the same value: each operation a call "PREFIX__op(ok, a, b)" (add sub
 * mul div mod eq ne le ge lt gt and or; neg pos not of one operand) of a
 * helper with the evaluator's semantics, each number the value read, written
 * as INT64_C(value) (never the text: "010" is ten here and eight in C),
 * parentheses kept, names through var. out is unchanged on failure. */
bool qk_expr_to_c(const char *expr, const char *what, qk_expr_kind kind, const char *prefix,
                  qk_expr_c_var_fn var, void *user, qk_str *out, qk_error *e);

#endif
