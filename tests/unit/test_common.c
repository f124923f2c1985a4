/* The shared utilities: SHA-256 against FIPS vectors, expressions and their
 * errors, .npy round trips. */
#include "qk_npy.h"
#include "qk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(void) {
    char hex[65];
    qk_sha256_hex("abc", 3, hex);
    CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"), "abc %s", hex);
    qk_sha256_hex("", 0, hex);
    CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"), "empty");
    const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    qk_sha256_hex(m, strlen(m), hex);
    CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"), "448 bits");

    bool ok;
    qk_error e = {0};
    CHECK(ev("(M + NR - 1) / NR", &ok, &e) == 334 && ok, "ceil div");
    CHECK(ev("M % 7 == 6 && 2 < 3", &ok, &e) == 1 && ok, "compare");
    CHECK(ev("-(4 - 10) * 2", &ok, &e) == 12 && ok, "unary minus");
    CHECK(ev("1 <= 1 || 0", &ok, &e) == 1 && ok, "le, or");
    CHECK(ev("-7 / 2", &ok, &e) == -4 && ev("-7 % 2", &ok, &e) == 1 && ok, "floor division");
    e = (qk_error){0};
    ev("M / (NR - 3)", &ok, &e);
    CHECK(!ok && strstr(e.msg, "division by zero"), "div0: %s", e.msg);
    e = (qk_error){0};
    ev("Q + 1", &ok, &e);
    CHECK(!ok && strstr(e.msg, "unknown variable 'Q'"), "unknown: %s", e.msg);
    e = (qk_error){0};
    ev("(M + 1", &ok, &e);
    CHECK(!ok && strstr(e.msg, "expected ')'"), "paren: %s", e.msg);

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
    printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
