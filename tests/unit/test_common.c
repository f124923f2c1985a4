/* The shared utilities: SHA-256 against FIPS vectors, expressions and their
 * errors, .npy round trips. */
#include "qk_npy.h"
#include "qk_util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;
#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL line %d: ", __LINE__);                                                    \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static bool vars(void *user, const char *name, size_t len, int64_t *v) {
    (void)user;
    if (len == 1 && name[0] == 'M') return *v = 1000, true;
    if (len == 2 && !strncmp(name, "NR", 2)) return *v = 3, true;
    return false;
}

static int64_t ev(const char *s, bool *ok, qk_error *e) {
    int64_t v = -999;
    *ok = qk_expr_eval(s, vars, NULL, &v, e);
    return v;
}

/* ev's result when it fails: "FAIL" if expr evaluated, else whether the
 * message holds want. */
static bool ev_fails(const char *expr, const char *want) {
    bool ok;
    qk_error e = {0};
    ev(expr, &ok, &e);
    if (ok || !strstr(e.msg, want)) {
        printf("  '%s': %s\n", expr, ok ? "evaluated" : e.msg);
        return false;
    }
    return true;
}

static void test_expr(void) {
    bool ok;
    qk_error e = {0};
    CHECK(ev("(M + NR - 1) / NR", &ok, &e) == 334 && ok, "ceil div");
    CHECK(ev("M % 7 == 6 && 2 < 3", &ok, &e) == 1 && ok, "compare");
    CHECK(ev("-(4 - 10) * 2", &ok, &e) == 12 && ok, "unary minus");
    CHECK(ev("1 <= 1 || 0", &ok, &e) == 1 && ok, "le, or");
    CHECK(ev("-7 / 2", &ok, &e) == -4 && ev("-7 % 2", &ok, &e) == 1 && ok, "floor division");
    CHECK(ev("7 % -2", &ok, &e) == -1 && ok, "remainder has the divisor's sign");
    CHECK(ev("!(M > 5) + (NR != 3) + +2", &ok, &e) == 2 && ok, "! and unary plus");
    CHECK(ev("(M > 5) * 4 + (M == 3)", &ok, &e) == 4 && ok, "comparisons are integers");
    /* x * 0 and 0 * x: an overflow test that divides by an operand must not trap */
    CHECK(ev("M * 0 + 0 * M + -M * 0", &ok, &e) == 0 && ok, "times zero");
    CHECK(ev("9223372036854775807", &ok, &e) == INT64_MAX && ok, "INT64_MAX");
    CHECK(ev("-9223372036854775807 - 1", &ok, &e) == INT64_MIN && ok, "INT64_MIN");
    CHECK(ev("(-9223372036854775807 - 1) % -1", &ok, &e) == 0 && ok, "INT64_MIN mod -1");
    /* each a trap or undefined behaviour in the evaluators before */
    CHECK(ev_fails("M / (NR - 3)", "division by zero in expression 'M / (NR - 3)' (column 3)"),
          "div0");
    CHECK(ev_fails("M % (NR - 3)", "modulo by zero"), "mod0");
    CHECK(ev_fails("(-9223372036854775807 - 1) / -1", "'/' overflows"), "INT64_MIN / -1");
    CHECK(ev_fails("9223372036854775807 + 1", "'+' overflows"), "add");
    CHECK(ev_fails("-9223372036854775807 - 2", "'-' overflows"), "sub");
    CHECK(ev_fails("3037000500 * 3037000500", "'*' overflows"), "mul");
    CHECK(ev_fails("-(-9223372036854775807 - 1)", "'-' overflows"), "negate");
    CHECK(ev_fails("99999999999999999999", "number too large"), "literal");
    CHECK(ev_fails("Q + 1", "unknown variable 'Q' in expression 'Q + 1' (column 1)"), "unknown");
    CHECK(ev_fails("(M + 1", "unclosed '(' in expression '(M + 1' (column 1)"), "paren");
    CHECK(ev_fails("M)", "unmatched ')'"), "unmatched");
    CHECK(ev_fails("", "unexpected end"), "empty");
    CHECK(ev_fails("2M", "unexpected letter after a number"), "2M");
    CHECK(ev_fails("M = 3", "'=' is not a comparison (use '==') in expression 'M = 3' (column 3)"),
          "=");
    CHECK(ev_fails("1 < M < 9", "a second comparison"), "chain");
    CHECK(ev_fails("M & 1", "unexpected '&'"), "&");
    /* deep nesting is refused, not a stack overflow */
    char deep[4096];
    memset(deep, '(', 2000);
    strcpy(deep + 2000, "1");
    CHECK(ev_fails(deep, "nested deeper than 64"), "deep parentheses");
    memset(deep, '-', 2000);
    CHECK(ev_fails(deep, "nested deeper than 64"), "deep unary");
    /* a condition must compare: a bare integer is not one */
    int64_t v = 0;
    e = (qk_error){0};
    CHECK(qk_expr_eval_as("(M % 8 == 0)", "constraint", QK_EXPR_CONDITION, vars, NULL, &v, &e) &&
              v == 1,
          "condition: %s", e.msg);
    e = (qk_error){0};
    CHECK(!qk_expr_eval_as("M % 8", "constraint", QK_EXPR_CONDITION, vars, NULL, &v, &e) &&
              strstr(e.msg, "no comparison (== != <= >= < >) in constraint 'M % 8'"),
          "not a condition: %s", e.msg);
    /* syntax only, as specs are checked when loaded: any name, no arithmetic */
    e = (qk_error){0};
    CHECK(qk_expr_check("ANY / (B - B) + 9223372036854775807 * 2", NULL, QK_EXPR_VALUE, &e),
          "syntax only: %s", e.msg);
    e = (qk_error){0};
    CHECK(!qk_expr_check("(ANY + 1", "grid expression", QK_EXPR_VALUE, &e) &&
              strstr(e.msg, "unclosed '(' in grid expression '(ANY + 1' (column 1)"),
          "syntax error: %s", e.msg);
    e = (qk_error){0};
    CHECK(!qk_expr_check("K % 32", "constraint", QK_EXPR_CONDITION, &e) &&
              strstr(e.msg, "no comparison"),
          "condition syntax: %s", e.msg);
}

/* Writes a version-1 .npy file of header text dict and data bytes; reading
 * it must fail with want in the message. */
static bool npy_fails(const char *dict, const void *data, size_t bytes, const char *want) {
    char path[] = "/tmp/qk_npy_bad_XXXXXX";
    int fd = mkstemp(path);
    char head[10] = "\x93NUMPY\x01\x00";
    size_t hlen = strlen(dict);
    head[8] = (char)(hlen & 255), head[9] = (char)(hlen >> 8);
    bool written = write(fd, head, 10) == 10 && write(fd, dict, hlen) == (ssize_t)hlen &&
                   write(fd, data, bytes) == (ssize_t)bytes;
    close(fd);
    qk_npy a;
    qk_error e = {0};
    bool read = qk_npy_read(path, &a, &e);
    unlink(path);
    if (read) qk_npy_free(&a);
    if (!written || read || !strstr(e.msg, want)) {
        printf("  '%s': %s\n", dict, read ? "read" : e.msg);
        return false;
    }
    return true;
}

static void test_npy_bad(void) {
    uint8_t data[64] = {0};
    /* (2^62 + 4) x 4 bytes wrapped to 16 and was read as 16 bytes */
    CHECK(npy_fails("{'descr': '|u1', 'fortran_order': False, 'shape': (4611686018427387908, 4), }",
                    data, 16, "the shape's element count overflows 64 bits"),
          "shape product");
    CHECK(npy_fails("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693953,), }",
                    data, 8, "the shape's byte count overflows"),
          "byte count");
    CHECK(npy_fails("{'descr': '|u1', 'fortran_order': False, 'shape': (99999999999999999999,), }",
                    data, 8, "a dimension of the shape overflows 64 bits"),
          "dimension");
    CHECK(npy_fails("{'descr': '|u1', 'fortran_order': False, 'shape': (-4, 4), }", data, 16,
                    "dimensions are whole numbers"),
          "negative");
    CHECK(npy_fails("{'descr': '|u1', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }",
                    data, 1, "more than 8 dimensions"),
          "ndim");
    CHECK(npy_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 20,
                    "data is 20 bytes, the header says 24"),
          "short data");
    CHECK(npy_fails("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data, 28,
                    "data is 28 bytes, the header says 24"),
          "long data");
    CHECK(npy_fails("{'descr': '<u99999999999', 'fortran_order': False, 'shape': (2,), }", data, 8,
                    "unsupported dtype '<u99999999999'"),
          "dtype size");
    /* a version-2 header length of 4 GiB - 1 */
    char path[] = "/tmp/qk_npy_bad_XXXXXX";
    int fd = mkstemp(path);
    CHECK(write(fd, "\x93NUMPY\x02\x00\xff\xff\xff\xff{}", 14) == 14, "write");
    close(fd);
    qk_npy a;
    qk_error e = {0};
    CHECK(!qk_npy_read(path, &a, &e) &&
              strstr(e.msg, "a header of 4294967295 bytes, more than the limit of 65536"),
          "header length: %s", e.msg);
    unlink(path);
}

/* Only regular files are read: a FIFO blocked, /dev/zero never ended. */
static void test_read_file(void) {
    qk_error e = {0};
    size_t n = 0;
    CHECK(!qk_read_file("/dev/zero", &n, &e) &&
              strstr(e.msg, "/dev/zero: cannot read: a character device (only regular files"),
          "/dev/zero: %s", e.msg);
    qk_npy a;
    e = (qk_error){0};
    CHECK(!qk_npy_read("/dev/zero", &a, &e) && strstr(e.msg, "a character device"),
          "npy /dev/zero: %s", e.msg);
    char dir[] = "/tmp/qk_read_XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/spec.yaml", dir);
    CHECK(mkfifo(fifo, 0600) == 0, "mkfifo");
    e = (qk_error){0};
    CHECK(!qk_read_file(fifo, &n, &e) && strstr(e.msg, "spec.yaml: cannot read: a FIFO"),
          "fifo: %s", e.msg);
    unlink(fifo);
    e = (qk_error){0};
    CHECK(!qk_read_file(dir, &n, &e) && strstr(e.msg, "cannot read: a folder"), "dir: %s", e.msg);
    FILE *f = fopen(fifo, "wb");
    fputs("0123456789", f);
    fclose(f);
    e = (qk_error){0};
    CHECK(!qk_read_file_max(fifo, 9, &n, &e) &&
              strstr(e.msg, "10 bytes, more than the limit of 9 for this file"),
          "limit: %s", e.msg);
    char *text = qk_read_file_max(fifo, 10, &n, &e);
    CHECK(text && n == 10 && !strcmp(text, "0123456789"), "read at the limit");
    free(text);
    unlink(fifo);
    rmdir(dir);
}

int main(void) {
    char hex[65];
    qk_sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
          "abc %s", hex);
    qk_sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
          "empty");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    qk_sha256_hex(m, strlen(m), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
          "448 bits");

    test_expr();

    qk_error e = {0};
    char path[] = "/tmp/qk_npy_XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    float data[6] = {1, 2, 3, 4, 5, 6.5f};
    uint64_t shape[2] = {2, 3};
    qk_npy a;
    CHECK(qk_npy_write(path, "f4", 2, shape, data, &e), "write");
    CHECK(qk_npy_read(path, &a, &e) && a.ndim == 2 && a.shape[1] == 3 && !strcmp(a.dtype, "f4") &&
              ((float *)a.data)[5] == 6.5f,
          "read back");
    char d[64];
    qk_npy_describe(&a, d, sizeof d);
    CHECK(!strcmp(d, "float32 [2, 3]"), "describe '%s'", d);
    qk_npy_free(&a);
    FILE *f = fopen(path, "wb");
    fputs("not numpy", f);
    fclose(f);
    e = (qk_error){0};
    CHECK(!qk_npy_read(path, &a, &e) && strstr(e.msg, "not a .npy file"), "bad file: %s", e.msg);
    unlink(path);
    test_npy_bad();
    test_read_file();
    /* an empty path: refused, not read past its end (ASan: heap overflow) */
    e = (qk_error){0};
    CHECK(!qk_mkdirs("", &e) && strstr(e.msg, "an empty path"), "qk_mkdirs(\"\"): %s", e.msg);
    printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
