/* The shader toolchain's extension probes (gen/compile/features.c) against
 * what CMake found with the same toolchain's programs at configure time. */
#include "compile/compile.h"
#include "compile/features.h"

#include <stdio.h>
#include <string.h>

static int failures;

/* Whether the space-separated list holds name. */
static bool listed(const char *list, const char *name) {
    size_t n = strlen(name);
    for (const char *p = strstr(list, name); p; p = strstr(p + 1, name))
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0')) return true;
    return false;
}

static void expect(const char *ext, bool want) {
    bool has = qk_compile_has_extension(ext);
    printf("%s: %s\n", ext, has ? "yes" : "no");
    if (has != want) {
        printf("FAIL: %s: the linked toolchain says %s, expected %s\n", ext, has ? "yes" : "no",
               want ? "yes" : "no");
        failures++;
    }
    if (qk_compile_has_extension(ext) != has) { /* the cached answer */
        printf("FAIL: %s: a second query answers otherwise\n", ext);
        failures++;
    }
}

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: test_features 'EXTENSIONS CMAKE FOUND' 'THOSE IT DID NOT'\n");
        return 2;
    }
    qk_compile_init();
    printf("%s\n", qk_compile_toolchain());
    if (!strstr(qk_compile_toolchain(), "glslang ") ||
        !strstr(qk_compile_toolchain(), "SPIRV-Tools")) {
        printf("FAIL: toolchain described as '%s'\n", qk_compile_toolchain());
        failures++;
    }
    /* every qkgen since Debian 12's glslang 12 compiles the NV form */
    expect("GL_NV_cooperative_matrix", true);
    expect("GL_EXT_shader_explicit_arithmetic_types_float16", true);
    expect("GL_QK_no_such_extension", false);
    expect("GL_KHR_cooperative_matrix\n#error", false);
    const char *names[16];
    unsigned n = qk_compile_probed_extensions(names, 16);
    if (n < 3) {
        printf("FAIL: %u probes, expected at least 3\n", n);
        failures++;
    }
    bool known = !strstr(argv[2], "unknown");
    for (unsigned i = 0; known && i < n; i++) {
        if (listed(argv[1], names[i]) == listed(argv[2], names[i])) {
            printf("FAIL: %s: CMake's lists ('%s' / '%s') do not place it\n", names[i], argv[1],
                   argv[2]);
            failures++;
            continue;
        }
        expect(names[i], listed(argv[1], names[i]));
    }
    char why[256];
    qk_compile_missing_reason("GL_NV_cooperative_matrix2", why, sizeof why);
    printf("%s\n", why);
    if (!strstr(why, "GL_NV_cooperative_matrix2") || !strstr(why, "glslang")) {
        printf("FAIL: reason '%s'\n", why);
        failures++;
    }
    qk_compile_finish();
    printf("%s\n", failures ? "FAILED" : "ok");
    return failures != 0;
}
