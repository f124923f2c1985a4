/* ggml_crosscheck: dequantizes raw blocks through ggml's own to_float (a
 * ggml build given as a shared library, loaded with dlopen; no ggml header
 * or source) and compares with qkgen's reference of the same blocks (a
 * float64 .npy from `qkgen dequant`): max abs and rel differences.
 *   ggml_crosscheck LIB GGML_TYPE BLOCKS Y.npy [TOL]
 * Exit 0 when the max abs difference, relative to the largest |y|, is at
 * most TOL (default 1e-6: ggml rounds each product to f32), 1 otherwise,
 * 2 on bad input; 77 when LIB cannot be loaded (the caller skips). */
#include "qk_npy.h"

#include <dlfcn.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The leading fields of ggml's type traits that this tool reads: the ABI of
 * ggml_get_type_traits(type) in the build it loads. */
typedef void (*to_float_fn)(const void *x, float *y, int64_t k);
typedef struct type_traits {
    const char *type_name;
    int64_t blck_size, blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    to_float_fn to_float;
} type_traits;

int main(int argc, char **argv) {
    if (argc < 5 || argc > 6) {
        fprintf(stderr, "usage: ggml_crosscheck LIB GGML_TYPE BLOCKS Y.npy [TOL]\n");
        return 2;
    }
    double tol = argc == 6 ? atof(argv[5]) : 1e-6;
    void *lib = dlopen(argv[1], RTLD_LAZY | RTLD_LOCAL);
    if (!lib) {
        printf("skip: cannot load %s: %s\n", argv[1], dlerror());
        return 77;
    }
    const char *(*type_name)(int) = (const char *(*)(int))dlsym(lib, "ggml_type_name");
    const type_traits *(*traits)(int) =
        (const type_traits *(*)(int))dlsym(lib, "ggml_get_type_traits");
    size_t (*type_size)(int) = (size_t(*)(int))dlsym(lib, "ggml_type_size");
    int64_t (*blck_size)(int) = (int64_t(*)(int))dlsym(lib, "ggml_blck_size");
    if (!type_name || !traits || !type_size || !blck_size) {
        printf("skip: %s exports no ggml_type_name, ggml_get_type_traits, ggml_type_size and "
               "ggml_blck_size\n",
               argv[1]);
        return 77;
    }
    int type = -1;
    for (int i = 0; i < 64 && type < 0; i++) {
        const char *n = type_name(i);
        if (n && !strcasecmp(n, argv[2])) type = i;
    }
    if (type < 0) {
        fprintf(stderr, "ggml_crosscheck: this ggml has no type '%s'\n", argv[2]);
        return 2;
    }
    const type_traits *t = traits(type);
    /* the traits' layout is this build's: check it against the plain getters */
    if (t->blck_size != blck_size(type) || t->type_size != type_size(type) || !t->to_float) {
        fprintf(stderr, "ggml_crosscheck: the type traits of %s do not match this layout\n",
                argv[2]);
        return 2;
    }
    FILE *f = fopen(argv[3], "rb");
    if (!f) {
        fprintf(stderr, "ggml_crosscheck: cannot open %s\n", argv[3]);
        return 2;
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *blocks = malloc(n > 0 ? (size_t)n : 1);
    bool read_ok = n > 0 && fread(blocks, 1, (size_t)n, f) == (size_t)n;
    fclose(f);
    if (!read_ok || (size_t)n % t->type_size) {
        fprintf(stderr, "ggml_crosscheck: %s: %ld bytes are not whole %zu-byte %s blocks\n",
                argv[3], n, t->type_size, argv[2]);
        return 2;
    }
    int64_t nb = n / (long)t->type_size, k = nb * t->blck_size;
    qk_npy y;
    qk_error e = {0};
    if (!qk_npy_read(argv[4], &y, &e)) {
        fprintf(stderr, "ggml_crosscheck: %s\n", e.msg);
        return 2;
    }
    if (strcmp(y.dtype, "f8") || y.count != (uint64_t)k) {
        fprintf(stderr, "ggml_crosscheck: %s is not float64 with %lld elements\n", argv[4],
                (long long)k);
        return 2;
    }
    float *g = malloc(sizeof *g * (size_t)k);
    t->to_float(blocks, g, k);
    const double *q = y.data;
    double max_abs = 0, max_rel = 0, max_y = 0;
    int64_t differ = 0, worst = 0;
    for (int64_t i = 0; i < k; i++) {
        double d = fabs((double)g[i] - q[i]);
        if (!isfinite(g[i]) || !isfinite(q[i])) d = INFINITY;
        if (d > 0) differ++;
        if (d > max_abs) max_abs = d, worst = i;
        if (q[i] != 0 && d / fabs(q[i]) > max_rel) max_rel = d / fabs(q[i]);
        if (fabs(q[i]) > max_y) max_y = fabs(q[i]);
    }
    printf("%s: %lld blocks, %lld elements: max |ggml - qkgen| %.3g (element %lld: ggml %.9g, "
           "qkgen %.17g), max relative %.3g, %lld elements differ, max |y| %.3g\n",
           argv[2], (long long)nb, (long long)k, max_abs, (long long)worst, (double)g[worst],
           q[worst], max_rel, (long long)differ, max_y);
    bool ok = max_abs <= tol * (max_y > 0 ? max_y : 1);
    free(g);
    free(blocks);
    qk_npy_free(&y);
    return ok ? 0 : 1;
}
