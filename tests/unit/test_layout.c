/* Unit test of the libclang layout checker: reads ggml's block structs and a deliberately wrong
 * copy, and checks sizes, offsets, flattening, type names and every error message it promises. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp, rmdir */

#include "../../gen/format/layout.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct expect_field {
    const char *name, *type;
    uint32_t offset, count;
} expect_field;

typedef struct expect_block {
    const char *name;
    uint32_t size;
    expect_field fields[6];
} expect_block;

/* Written from docs/formats.md and ggml-common.h, not from the reader's output. */
static const expect_block blocks[] = {
    {"block_q4_0", 18, {{"d", "f16", 0, 1}, {"qs", "u8", 2, 16}}},
    {"block_q4_1", 20, {{"d", "f16", 0, 1}, {"m", "f16", 2, 1}, {"qs", "u8", 4, 16}}},
    {"block_q5_0", 22, {{"d", "f16", 0, 1}, {"qh", "u8", 2, 4}, {"qs", "u8", 6, 16}}},
    {"block_q5_1",
     24,
     {{"d", "f16", 0, 1}, {"m", "f16", 2, 1}, {"qh", "u8", 4, 4}, {"qs", "u8", 8, 16}}},
    {"block_q8_0", 34, {{"d", "f16", 0, 1}, {"qs", "i8", 2, 32}}},
    {"block_iq4_nl", 18, {{"d", "f16", 0, 1}, {"qs", "u8", 2, 16}}},
    {"block_mxfp4", 17, {{"e", "u8", 0, 1}, {"qs", "u8", 1, 16}}},
    {"block_q2_K",
     84,
     {{"scales", "u8", 0, 16}, {"qs", "u8", 16, 64}, {"d", "f16", 80, 1}, {"dmin", "f16", 82, 1}}},
    {"block_q3_K",
     110,
     {{"hmask", "u8", 0, 32},
      {"qs", "u8", 32, 64},
      {"scales", "u8", 96, 12},
      {"d", "f16", 108, 1}}},
    {"block_q4_K",
     144,
     {{"d", "f16", 0, 1}, {"dmin", "f16", 2, 1}, {"scales", "u8", 4, 12}, {"qs", "u8", 16, 128}}},
    {"block_q5_K",
     176,
     {{"d", "f16", 0, 1},
      {"dmin", "f16", 2, 1},
      {"scales", "u8", 4, 12},
      {"qh", "u8", 16, 32},
      {"qs", "u8", 48, 128}}},
    {"block_q6_K",
     210,
     {{"ql", "u8", 0, 128},
      {"qh", "u8", 128, 64},
      {"scales", "i8", 192, 16},
      {"d", "f16", 208, 1}}},
};

static int failures;

static void check(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("%s ", ok ? "ok  " : "FAIL");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    if (!ok) failures++;
}

static const expect_block *find_expected(const char *name) {
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++)
        if (strcmp(blocks[i].name, name) == 0) return &blocks[i];
    return NULL;
}

/* The layout a format's YAML would give: names, types, counts and bytes, no offsets. */
static qk_layout yaml_layout(const expect_block *e) {
    qk_layout l;
    memset(&l, 0, sizeof l);
    snprintf(l.name, sizeof l.name, "%s", e->name);
    l.size = e->size;
    for (; l.field_count < 6 && e->fields[l.field_count].name; l.field_count++) {
        qk_layout_field *f = &l.fields[l.field_count];
        snprintf(f->name, sizeof f->name, "%s", e->fields[l.field_count].name);
        snprintf(f->type, sizeof f->type, "%s", e->fields[l.field_count].type);
        f->count = e->fields[l.field_count].count;
    }
    return l;
}

/* Every difference between a read layout and its table entry, as one line; "" if none. */
static void diff_layout(const qk_layout *l, const expect_block *e, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
#define ADD(...)                                                                                   \
    used += (size_t)snprintf(out + used, used < size ? size - used : 0, __VA_ARGS__);              \
    if (used >= size) return
    if (l->size != e->size) {
        ADD(" size %u (want %u);", l->size, e->size);
    }
    uint32_t n = 0;
    while (n < 6 && e->fields[n].name)
        n++;
    if (l->field_count != n) {
        ADD(" %u fields (want %u);", l->field_count, n);
        return;
    }
    for (uint32_t i = 0; i < n; i++) {
        const qk_layout_field *f = &l->fields[i];
        const expect_field *x = &e->fields[i];
        if (strcmp(f->name, x->name) || strcmp(f->type, x->type) || f->offset != x->offset ||
            f->count != x->count) {
            ADD(" field %u is %s %s[%u]@%u (want %s %s[%u]@%u);", i, f->type, f->name, f->count,
                f->offset, x->type, x->name, x->count, x->offset);
        }
    }
#undef ADD
}

static void test_ggml_blocks(const char *formats) {
    char header[512], err[512], diff[1024];
    snprintf(header, sizeof header, "%s/ggml_blocks.h", formats);
    printf("-- every block of %s against the table\n", header);
    for (size_t i = 0; i < sizeof blocks / sizeof blocks[0]; i++) {
        qk_layout l;
        int rc = qk_layout_read(header, blocks[i].name, &l, err, sizeof err);
        if (rc != 0) {
            check(0, "%s: read failed: %s", blocks[i].name, err);
            continue;
        }
        diff_layout(&l, &blocks[i], diff, sizeof diff);
        check(diff[0] == '\0', "%s: %u bytes, %u fields, offsets and types as ggml%s",
              blocks[i].name, l.size, l.field_count, diff);
        qk_layout yaml = yaml_layout(&blocks[i]);
        rc = qk_layout_compare(&yaml, &l, err, sizeof err);
        check(rc == 0, "%s: agrees with its YAML layout%s%s", blocks[i].name, rc ? ": " : "",
              rc ? err : "");
    }
}

static void expect_mismatch(const char *header, const char *name, uint32_t size,
                            const char *message) {
    char err[512], want[600];
    qk_layout l;
    if (qk_layout_read(header, name, &l, err, sizeof err) != 0) {
        check(0, "%s in %s: read failed: %s", name, header, err);
        return;
    }
    check(l.size == size, "%s in %s: size %u (want %u)", name, header, l.size, size);
    const expect_block *e = find_expected(name);
    char diff[1024];
    diff_layout(&l, e, diff, sizeof diff);
    check(diff[0] != '\0', "%s in %s: differs from ggml:%s", name, header, diff);
    qk_layout yaml = yaml_layout(e);
    int rc = qk_layout_compare(&yaml, &l, err, sizeof err);
    snprintf(want, sizeof want, "%s in %s: %s", name, header, message);
    check(rc == -1 && strcmp(err, want) == 0, "compare says \"%s\" (want \"%s\")",
          rc ? err : "(nothing)", want);
}

static void test_wrong_blocks(const char *tests) {
    char header[512];
    snprintf(header, sizeof header, "%s/ggml_blocks_wrong.h", tests);
    printf("-- the deliberately wrong structs of %s\n", header);
    expect_mismatch(header, "block_q4_0", 18, "field qs: count 15, the YAML says 16");
    expect_mismatch(header, "block_q8_0", 34, "field qs (the YAML's d): count 32, the YAML says 1");
    expect_mismatch(header, "block_mxfp4", 20, "size 20 bytes, the YAML says 17");
    expect_mismatch(header, "block_q6_K", 212, "field d: f32 of 4 bytes, the YAML says f16 of 2");
}

/* Reads name from header, expecting failure with a message containing each of the parts. */
static void expect_error(const char *header, const char *name, const char *what, const char *part1,
                         const char *part2) {
    char err[512] = "";
    qk_layout l;
    int rc = qk_layout_read(header, name, &l, err, sizeof err);
    int ok = rc == -1 && strstr(err, part1) && (!part2 || strstr(err, part2));
    check(ok, "%s: \"%s\"", what, rc ? err : "(no error)");
}

static int write_file(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    if (!f) return -1;
    fputs(text, f);
    return fclose(f);
}

/* Headers written on the fly: the syntax error, unsupported types, flattening corner cases. */
static void test_generated(const char *dir) {
    char path[600], want[700];
    printf("-- error messages and corner cases (headers in %s)\n", dir);

    snprintf(path, sizeof path, "%s/syntax.h", dir);
    write_file(path, "#include <stdint.h>\ntypedef struct {\n    uint8_t a b;\n} s;\n");
    snprintf(want, sizeof want, "%s:3:14: ", path);
    expect_error(path, "s", "syntax error reported at file:line:col", want, "expected ';'");

    /* stddef.h comes from clang's resource directory, not glibc: this fails with "file not
     * found" unless the reader found that directory. */
    snprintf(path, sizeof path, "%s/types.h", dir);
    write_file(path, "#include <stddef.h>\n#include <stdint.h>\n"
                     "struct with_size { uint8_t a; size_t n; };\n"
                     "struct with_double { double x; };\n"
                     "struct with_bits { uint32_t lo : 4; };\n"
                     "struct with_named { struct { int q; } inner; };\n"
                     "typedef float not_a_struct;\n");
    snprintf(want, sizeof want, "%s:3:", path);
    expect_error(path, "with_size", "size_t (via <stddef.h>) is unsupported", want,
                 "field n of struct with_size has unsupported type size_t");
    expect_error(path, "with_double", "double is unsupported",
                 "field x of struct with_double has unsupported type double", NULL);
    expect_error(path, "with_bits", "bit-fields are refused", "field lo of struct with_bits",
                 "bit-field");
    expect_error(path, "with_named", "a named struct member is unsupported",
                 "field inner of struct with_named has unsupported type", NULL);
    expect_error(path, "not_a_struct", "a typedef of a non-struct", "'not_a_struct'",
                 "not a defined struct");

    snprintf(path, sizeof path, "%s/missing.h", dir);
    snprintf(want, sizeof want, "%s: cannot open", path);
    expect_error(path, "x", "a header that does not exist", want, NULL);

    /* Nested anonymous members (a union whose first member is a struct holding a union),
     * typedef names that make a float, a multi-dimensional array and every builtin type. The
     * inner union holds a float, so its alignment of 4 puts b at 12, not 10. */
    snprintf(path, sizeof path, "%s/nested.h", dir);
    write_file(path, "#include <stdint.h>\n"
                     "typedef uint16_t my_fp16_t;\ntypedef uint16_t ggml_bf16_t;\n"
                     "typedef uint16_t ggml_half;\ntypedef uint32_t ggml_half2;\n"
                     "struct nested {\n"
                     "    char c; signed char sc; unsigned char uc; int16_t s16;\n"
                     "    union { struct { uint8_t a; union { ggml_half b; float f; }; };\n"
                     "            uint32_t w; };\n"
                     "    my_fp16_t h[2][3]; ggml_bf16_t bf; ggml_half2 h2;\n"
                     "    int32_t i; float x;\n"
                     "};\n");
    static const expect_block nested = {"nested",
                                        44,
                                        {{"c", "i8", 0, 1},
                                         {"sc", "i8", 1, 1},
                                         {"uc", "u8", 2, 1},
                                         {"s16", "i16", 4, 1},
                                         {"a", "u8", 8, 1},
                                         {"b", "f16", 12, 1}}};
    static const expect_field rest[] = {{"h", "f16", 16, 6},
                                        {"bf", "bf16", 28, 1},
                                        {"h2", "u32", 32, 1},
                                        {"i", "i32", 36, 1},
                                        {"x", "f32", 40, 1}};
    char err[512], got[1024] = "";
    qk_layout l;
    int rc = qk_layout_read(path, "nested", &l, err, sizeof err);
    int ok = rc == 0 && l.size == nested.size && l.field_count == 6 + sizeof rest / sizeof rest[0];
    for (uint32_t i = 0; rc == 0 && i < l.field_count; i++) {
        const qk_layout_field *f = &l.fields[i];
        const expect_field *x = i < 6 ? &nested.fields[i] : i < 11 ? &rest[i - 6] : NULL;
        ok = ok && x && !strcmp(f->name, x->name) && !strcmp(f->type, x->type) &&
             f->offset == x->offset && f->count == x->count;
        size_t used = strlen(got);
        snprintf(got + used, sizeof got - used, " %s %s[%u]@%u", f->type, f->name, f->count,
                 f->offset);
    }
    check(ok, "flattening, absolute offsets, float typedef names, array counts:%s", rc ? err : got);
}

static void test_missing_struct(const char *formats) {
    char header[512], want[600];
    snprintf(header, sizeof header, "%s/ggml_blocks.h", formats);
    printf("-- a struct the header lacks\n");
    snprintf(want, sizeof want, "%s: no struct named 'block_q9_0'", header);
    expect_error(header, "block_q9_0", "missing struct", want, NULL);
}

static void test_yaml(const char *formats) {
    char header[512], err[512];
    snprintf(header, sizeof header, "%s/ggml_blocks.h", formats);
    printf("-- YAML output\n");
    qk_layout l;
    if (qk_layout_read(header, "block_q4_K", &l, err, sizeof err) != 0) {
        check(0, "block_q4_K: %s", err);
        return;
    }
    char text[1024] = "";
    FILE *f = tmpfile();
    if (f) {
        qk_layout_print_yaml(&l, f);
        rewind(f);
        size_t n = fread(text, 1, sizeof text - 1, f);
        text[n] = '\0';
        fclose(f);
    }
    char want[1024];
    snprintf(want, sizeof want,
             "# block_q4_K in %s: 144 bytes; offsets: d 0 dmin 2 scales 4 qs 16\n"
             "block: { bytes: 144 }\n"
             "fields:\n"
             "  - { name: d, type: f16 }\n"
             "  - { name: dmin, type: f16 }\n"
             "  - { name: scales, type: u8, count: 12 }\n"
             "  - { name: qs, type: u8, count: 128 }\n",
             header);
    check(strcmp(text, want) == 0, "block_q4_K as YAML:\n%s", text);
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr,
                "usage: %s FORMATS_DIR TESTS_DIR (the folders with ggml_blocks.h and "
                "ggml_blocks_wrong.h)\n",
                argv[0]);
        return 2;
    }
    test_ggml_blocks(argv[1]);
    test_wrong_blocks(argv[2]);
    test_missing_struct(argv[1]);
    test_yaml(argv[1]);

    char base[64];
    const char *tmp = getenv("TMPDIR");
    snprintf(base, sizeof base, "%s/qk_layout_XXXXXX", tmp && strlen(tmp) < 40 ? tmp : "/tmp");
    char *dir = mkdtemp(base);
    if (dir) {
        test_generated(dir);
        const char *names[] = {"syntax.h", "types.h", "nested.h"};
        for (size_t i = 0; i < 3; i++) {
            char path[600];
            snprintf(path, sizeof path, "%s/%s", dir, names[i]);
            remove(path);
        }
        rmdir(dir);
    } else {
        check(0, "cannot make a temporary folder in %s", base);
    }

    printf("%s: %d failure%s\n", failures ? "FAILED" : "passed", failures,
           failures == 1 ? "" : "s");
    return failures ? 1 : 0;
}
