/* The declared reference (common/qk_decode.c through gen/format): formats of
 * tests/decl/formats that declare `reference:` for q4_0, q4_K and every MLX
 * affine configuration agree exactly with tests/ref's C dequantizers on
 * random blocks; tables, random hints, the scalar decoders, the GLSL tables
 * and the compile errors' positions are checked on their own. */
#include "format/format.h"
#include "qk_decode.h"
#include "qkref.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int fails;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)

static qk_format_spec *specs;
static uint32_t nspecs;

/* The concrete formats of the test spec named name (*n of them; free them). */
static qk_format *formats_of(const char *name, uint32_t *n) {
    for (uint32_t i = 0; i < nspecs; i++) {
        if (strcmp(specs[i].name, name)) continue;
        qk_format *fs;
        qk_error e = {0};
        if (!qk_format_expand(&specs[i], &fs, n, &e)) {
            printf("FAIL expand %s: %s\n", name, e.msg);
            fails++;
            return NULL;
        }
        return fs;
    }
    printf("FAIL no test spec %s\n", name);
    fails++;
    return NULL;
}

static qk_decode *decode_of(const qk_format *f) {
    qk_decode *d = NULL;
    qk_error e = {0};
    if (!qk_format_decode(f, &d, &e) || !d) {
        printf("FAIL decode %s: %s\n", f->name, e.set ? e.msg : "no reference");
        fails++;
    }
    return d;
}

/* q4_0 and q4_K: on C's random blocks and on the declared generator's. */
static void block_vs_c(const char *name, uint64_t *rng) {
    uint32_t n;
    qk_format *fs = formats_of(name, &n);
    if (!fs) return;
    qk_decode *d = decode_of(&fs[0]);
    const qkref_format *c = qkref_find(name);
    if (d && c) {
        enum { NB = 300 };
        uint8_t *b = malloc((size_t)NB * c->block_bytes);
        double *want = malloc(sizeof *want * NB * c->elements), *got = malloc(sizeof *got * 256);
        for (int pass = 0; pass < 2; pass++) {
            if (pass == 0)
                qkref_random_blocks(c, rng, b, NB);
            else
                for (int i = 0; i < NB; i++)
                    qk_decode_random_block(d, rng, b + (size_t)i * c->block_bytes);
            qkref_dequant_row(c, b, (size_t)NB * c->elements, want);
            size_t bad = 0;
            for (int i = 0; i < NB; i++) {
                char err[256];
                bool ok = qk_decode_block(d, b + (size_t)i * c->block_bytes, got, err, sizeof err);
                CHECK(ok, "%s block %d: %s", name, i, err);
                for (uint32_t j = 0; ok && j < c->elements; j++)
                    if (got[j] != want[(size_t)i * c->elements + j] && !bad++)
                        printf("FAIL %s %s block %d element %u: declared %.17g, C %.17g\n", name,
                               pass ? "declared random" : "C random", i, j, got[j],
                               want[(size_t)i * c->elements + j]);
            }
            fails += bad > 0;
            printf("%s (%s blocks): %d blocks, %zu elements differ\n", name,
                   pass ? "declared random" : "C random", NB, bad);
        }
        free(b), free(want), free(got);
    }
    qk_decode_free(d);
    free(fs);
}

/* Every MLX configuration: 3 rows of 4 groups. */
static void mlx_vs_c(uint64_t *rng) {
    uint32_t n;
    qk_format *fs = formats_of("mlx{bits}_g{group}", &n);
    if (!fs) return;
    uint32_t checked = 0;
    size_t bad = 0;
    for (uint32_t i = 0; i < n; i++) {
        const qk_format *f = &fs[i];
        qk_decode *d = decode_of(f);
        if (!d) continue;
        uint32_t bits = 0, group = f->elements;
        sscanf(f->name, "mlx%u", &bits);
        const char *st = f->variant;
        size_t ss = strcmp(st, "f32") ? 2 : 4, M = 3, K = 4 * (size_t)group;
        uint32_t *w = malloc(M * K * bits / 8);
        uint8_t *sc = malloc(M * (K / group) * ss), *bi = malloc(M * (K / group) * ss);
        double *want = malloc(sizeof *want * K), got[128];
        qkref_mlx_random(bits, group, st, rng, M, K, w, sc, bi);
        for (size_t r = 0; r < M; r++) {
            qkref_mlx_dequant_row(bits, group, st, w + r * K * bits / 32, sc + r * (K / group) * ss,
                                  bi + r * (K / group) * ss, K, want);
            for (size_t g = 0; g < K / group; g++) {
                size_t gi = r * (K / group) + g;
                const uint8_t *planes[3] = {(const uint8_t *)w + gi * group * bits / 8,
                                            sc + gi * ss, bi + gi * ss};
                char err[256];
                bool ok = qk_decode_group(d, planes, got, err, sizeof err);
                CHECK(ok, "%s_%s group %zu: %s", f->name, st, gi, err);
                for (uint32_t j = 0; ok && j < group; j++)
                    if (got[j] != want[g * group + j] && !bad++)
                        printf("FAIL %s_%s row %zu element %zu: declared %.17g, C %.17g\n", f->name,
                               st, r, g * group + j, got[j], want[g * group + j]);
            }
        }
        checked++;
        free(w), free(sc), free(bi), free(want);
        qk_decode_free(d);
    }
    fails += bad > 0;
    printf("mlx: %u configurations, %zu elements differ\n", checked, bad);
    CHECK(checked == 54, "%u MLX configurations, not 54", checked);
    free(fs);
}

/* tables (u64, f32), random hints, the scalar decoders, and the GLSL. */
static void tabled(uint64_t *rng) {
    uint32_t n;
    qk_format *fs = formats_of("tabled", &n);
    if (!fs) return;
    qk_decode *d = decode_of(&fs[0]);
    if (d) {
        /* d = 1.0, idx = {1, 2}, sg = 0b10 */
        const uint8_t blk[6] = {0x00, 0x3c, 1, 2, 0x02, 0x00};
        double y[16];
        char err[256];
        CHECK(qk_decode_block(d, blk, y, err, sizeof err), "tabled: %s", err);
        static const double fp4[8] = {0, 0.5, 1, 1.5, 2, 3, 4, 6};
        for (int e = 0; e < 16; e++) {
            double b = e < 8 ? 9 + e : 0xf8 + (e - 8);
            double h = ((0x2 >> e) & 1) ? -0.25 : 0.5;
            double want = b * h + (e < 8 ? fp4[e] : -fp4[e - 8]) + 1.0 + 1.0 - 1.0;
            CHECK(y[e] == want, "tabled element %d: %.17g, want %.17g", e, y[e], want);
        }
        /* the hints: d in [0.5, 1], idx in 0..3, sg in 0..3 or 0x8000..0x8003 */
        int high = 0;
        for (int i = 0; i < 1000; i++) {
            uint8_t b[6];
            qk_decode_random_block(d, rng, b);
            double dv = qk_decode_f16((uint32_t)(b[0] | b[1] << 8));
            uint32_t sg = (uint32_t)(b[4] | b[5] << 8);
            high += sg >= 0x8000;
            CHECK(dv >= 0.5 && dv <= 1.0 && b[2] <= 3 && b[3] <= 3 &&
                      (sg <= 3 || (sg >= 0x8000 && sg <= 0x8003)),
                  "random block out of its hints: d %g, idx %u %u, sg 0x%x", dv, b[2], b[3], sg);
        }
        CHECK(high > 350 && high < 650, "of two ranges, the second taken %d times in 1000", high);
    }
    qk_str g = {0};
    qk_format_emit_glsl(&fs[0], 1, 0, &g);
    CHECK(strstr(g.s, "const uvec2 qkt_grid[4] = uvec2[](") &&
              strstr(g.s, "uvec2(0x04030201u, 0x08070605u)") &&
              strstr(g.s, "const float qkt_half[2] = float[](") && strstr(g.s, "-0.25") &&
              strstr(g.s, "#define QKT_grid_COUNT 4u"),
          "the GLSL tables:\n%s", g.s);
    qk_str_free(&g);
    qk_decode_free(d);
    free(fs);
    CHECK(qk_decode_e4m3(0x7e) == 448 && qk_decode_e4m3(0x01) == ldexp(1, -9) &&
              qk_decode_e4m3(0x38) == 1 && qk_decode_e4m3(0xb8) == -1 &&
              isnan(qk_decode_e4m3(0x7f)),
          "e4m3");
    CHECK(qk_decode_f16(0x3c00) == 1 && qk_decode_f16(0x0001) == ldexp(1, -24), "f16");
}

/* Compile errors name the expression and the offset of the bad token. */
static void errors(void) {
    static const struct {
        const char *value, *msg;
        int offset;
    } cases[] = {
        {"d * (qs[e] + 1", "expected ')'", 14}, {"d * nope", "unknown name 'nope'", 4},
        {"d * qs", "has 16 elements", 4},       {"d & 3", "takes integers", 2},
        {"e2m1(d)", "takes integers", 5},       {"later + 1", "defined later", 0},
        {"d * 2 )", "unexpected ')'", 6},       {"sqrt(d)", "unknown function", 0},
        {"min(d)", "expected ','", 5},
    };
    const qk_decode_var vars[] = {{.name = "d", .type = QK_DT_F16, .offset = 0, .count = 1},
                                  {.name = "qs", .type = QK_DT_U8, .offset = 2, .count = 16}};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *ln[] = {"later"}, *lt[] = {"1"};
        bool use_let = strstr(cases[i].value, "later") != NULL;
        /* "later" as a let after the value is not expressible: make the value a let before it */
        const char *ln2[] = {"first", "later"}, *lt2[] = {cases[i].value, "1"};
        qk_decode_desc desc = {.elements = 32,
                               .block_bytes = 18,
                               .var_count = 2,
                               .vars = vars,
                               .value = use_let ? "first" : cases[i].value,
                               .let_count = use_let ? 2 : 0,
                               .let_names = use_let ? ln2 : ln,
                               .let_exprs = use_let ? lt2 : lt};
        qk_decode_error err;
        qk_decode *d = qk_decode_new(&desc, &err);
        CHECK(!d && strstr(err.msg, cases[i].msg) && err.offset == cases[i].offset && err.expr == 0,
              "'%s': got %s (expr %d offset %d: %s), want offset %d: %s", cases[i].value,
              d ? "no error" : "an error", err.expr, err.offset, err.msg, cases[i].offset,
              cases[i].msg);
        qk_decode_free(d);
    }
    /* evaluation errors name the element */
    const char *vt = "qs[e]";
    qk_decode_desc desc = {
        .elements = 32, .block_bytes = 18, .var_count = 2, .vars = vars, .value = vt};
    qk_decode_error err;
    qk_decode *d = qk_decode_new(&desc, &err);
    uint8_t b[18] = {0};
    double y[32];
    char msg[256] = "";
    CHECK(d && !qk_decode_block(d, b, y, msg, sizeof msg) &&
              strstr(msg, "element 16: index 16 of 'qs' is out of range 0..15"),
          "out of range: %s", msg);
    qk_decode_free(d);
    desc.value = "1.0 / e";
    d = qk_decode_new(&desc, &err);
    CHECK(d && !qk_decode_block(d, b, y, msg, sizeof msg) &&
              strstr(msg, "element 0: the value is infinite"),
          "not finite: %s", msg);
    qk_decode_free(d);
}

/* MLX's own definitions (mlx/backend/metal/kernels/fp8.h, fp4.h and
 * fp_quantized.h), rebuilt as MLX computes them, through f16 bit patterns:
 * E4M3 as the half with the code's bits moved up, times 256; E2M1 as the
 * half (code & 7) << 9, times 16384; E8M0 as the f32 bits b << 23 (0: 2^-127).
 * A group of 16 takes an E4M3 scale, else E8M0; 4-bit codes low nibble
 * first, 8-bit values a byte each. */
static double mlx_e4m3(uint32_t b) {
    uint32_t v = b & 127, u = (v << 7) | (((v + 1) >> 7) << 14);
    double h = qkref_f16_to_f32((uint16_t)u) * 256.0;
    return (b & 128) ? -h : h;
}

static double mlx_e2m1(uint32_t b) {
    double h = qkref_f16_to_f32((uint16_t)((b & 7) << 9)) * 16384.0;
    return (b & 8) ? -h : h;
}

static double mlx_e8m0(uint32_t b) {
    uint32_t u = b == 0 ? 0x400000u : b << 23;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The MLX modes of specs/formats named by the arguments NAME:GROUP:BITS (the
 * CMake test names them: no C of qkgen names a format) against MLX's
 * definitions on random groups of their declared random data. */
static void mlx_modes(const char *specs_dir, char **args, int nargs, uint64_t *rng) {
    qk_format_spec *fs;
    uint32_t n;
    qk_error e = {0};
    if (!qk_format_specs_load(specs_dir, &fs, &n, &e)) {
        printf("FAIL %s\n", e.msg);
        fails++;
        return;
    }
    struct {
        char name[64];
        uint32_t group, bits;
    } modes[8];
    int nm = 0;
    for (int a = 0; a < nargs && nm < 8; a++) {
        if (sscanf(args[a], "%63[^:]:%u:%u", modes[nm].name, &modes[nm].group, &modes[nm].bits) !=
                3 ||
            (modes[nm].group != 16 && modes[nm].group != 32) ||
            (modes[nm].bits != 4 && modes[nm].bits != 8)) {
            printf("FAIL argument '%s': not NAME:GROUP:BITS (group 16 or 32, bits 4 or 8)\n",
                   args[a]);
            fails++;
            continue;
        }
        nm++;
    }
    for (int m = 0; m < nm; m++) {
        const qk_format_spec *sp = NULL;
        for (uint32_t i = 0; i < n; i++)
            if (!strcmp(fs[i].name, modes[m].name)) sp = &fs[i];
        CHECK(sp, "no %s in %s", modes[m].name, specs_dir);
        if (!sp) continue;
        qk_format *f;
        uint32_t nf;
        qk_decode *d = NULL;
        if (!qk_format_expand(sp, &f, &nf, &e) || !(d = decode_of(&f[0]))) {
            printf("FAIL %s: %s\n", modes[m].name, e.msg);
            fails++;
            continue;
        }
        CHECK(qk_decode_elements(d) == modes[m].group && qk_decode_plane_count(d) == 2,
              "%s: group %u, %u planes", modes[m].name, qk_decode_elements(d),
              qk_decode_plane_count(d));
        uint8_t w[32], sc[4];
        double y[32];
        size_t bad = 0;
        for (int g = 0; g < 2000; g++) {
            uint8_t *planes[2] = {w, sc};
            qk_decode_random_group(d, rng, planes);
            char err[256];
            bool ok = qk_decode_group(d, (const uint8_t *const *)planes, y, err, sizeof err);
            CHECK(ok, "%s group %d: %s", modes[m].name, g, err);
            double s = modes[m].group == 16 ? mlx_e4m3(sc[0]) : mlx_e8m0(sc[0]);
            for (uint32_t i = 0; ok && i < modes[m].group; i++) {
                double v =
                    modes[m].bits == 8 ? mlx_e4m3(w[i]) : mlx_e2m1(w[i / 2] >> (4 * (i % 2)));
                if (y[i] != s * v && !bad++)
                    printf("FAIL %s element %u: declared %.17g, MLX's %.17g\n", modes[m].name, i,
                           y[i], s * v);
            }
        }
        fails += bad > 0;
        printf("%s: 2000 random groups against MLX's definitions, %zu elements differ\n",
               modes[m].name, bad);
        qk_decode_free(d);
        free(f);
    }
    free(fs);
}

/* The small-float functions on their special codes. */
static void smallfloats(void) {
    const qk_decode_var vars[] = {{.name = "b", .type = QK_DT_U8, .offset = 0, .count = 8}};
    static const struct {
        const char *fn;
        double want[8]; /* of the bytes below */
    } cases[] = {
        /* GGUF's UE4M3: 0x7f is 0, bit 7 otherwise ignored (0xfe is 448) */
        {"ue4m3", {0, 448, 1, 1.0 / 512, 448, 0, 1, 0.015625}},
        {"e4m3", {NAN, -448, -1, 1.0 / 512, 448, 0, 1, 0.015625}},
        {"e8m0", {0x1p0, 0x1p127, 0x1p57, 0x1p-126, 0x1p-1, 0x1p-127, 0x1p-71, 0x1p-119}},
        {"e2m1", {-6, -4, -0.0, 0.5, -4, 0, -0.0, 0.0}},
    };
    const uint8_t bytes[8] = {0x7f, 0xfe, 0xb8, 0x01, 0x7e, 0x00, 0x38, 0x08};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char value[32];
        snprintf(value, sizeof value, "%s(b[e])", cases[i].fn);
        qk_decode_desc desc = {
            .elements = 8, .block_bytes = 8, .var_count = 1, .vars = vars, .value = value};
        qk_decode_error err;
        qk_decode *d = qk_decode_new(&desc, &err);
        double y[8];
        char msg[256] = "";
        /* e4m3's 0x7f is NaN: the reference of element 0 fails, naming it */
        bool nan0 = isnan(cases[i].want[0]);
        bool ok = d && qk_decode_block(d, bytes, y, msg, sizeof msg);
        CHECK(nan0 ? !ok && strstr(msg, "element 0: the value is NaN") : ok, "%s: %s", value,
              d ? msg : err.msg);
        if (nan0) {
            static const uint8_t shifted[8] = {0x00, 0xfe, 0xb8, 0x01, 0x7e, 0x00, 0x38, 0x08};
            ok = d && qk_decode_block(d, shifted, y, msg, sizeof msg);
            y[0] = NAN; /* not compared */
        }
        for (int k = nan0; ok && k < 8; k++)
            CHECK(y[k] == cases[i].want[k], "%s(0x%02x) = %.17g, want %.17g", cases[i].fn, bytes[k],
                  y[k], cases[i].want[k]);
        qk_decode_free(d);
    }
}

int main(int argc, char **argv) {
    if (argc < 3) {
        fprintf(stderr, "usage: test_decode TEST_SPECS (tests/decl) SPECS (specs) "
                        "[MLX_MODE:GROUP:BITS ...]\n");
        return 2;
    }
    uint64_t seed = (uint64_t)time(NULL), rng = seed;
    printf("seed %llu\n", (unsigned long long)seed);
    qk_error e = {0};
    if (!qk_format_specs_load(argv[1], &specs, &nspecs, &e)) {
        printf("FAIL %s\n", e.msg);
        return 1;
    }
    block_vs_c("q4_0", &rng);
    block_vs_c("q4_K", &rng);
    mlx_vs_c(&rng);
    tabled(&rng);
    errors();
    smallfloats();
    mlx_modes(argv[2], argv + 3, argc - 3, &rng);
    free(specs);
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}
