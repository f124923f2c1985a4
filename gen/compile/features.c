/* Probes the linked glslang and SPIRV-Tools for GLSL extensions by compiling
 * a small shader per extension once; the answers are cached. */
#include "features.h"

#include "compile.h"

#include <glslang/build_info.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

/* Shaders that use an extension, where naming it alone would not show that
 * the whole chain knows it (the validator must accept its instructions):
 * gen/compile/probes/<extension>.comp, made into C strings by CMake, which
 * compiles them at configure time too to report the toolchain. */
static const struct {
    const char *ext;
    const char *source;
} probes[] = {
#include "qk_probes.h"
};

/* From spirv-tools/libspirv.h, which compile.c includes: in C, that header
 * defines a constant with external linkage (kDefaultMaxIdBound, SPIRV-Tools
 * 2023.1), so a second C file including it fails to link. */
const char *spvSoftwareVersionString(void);

#define QK_MAX_PROBED 32

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
    char ext[64];
    bool has;
} cache[QK_MAX_PROBED];
static unsigned cached;

static bool probe(const char *ext) {
    char generic[256];
    const char *src = NULL;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
        if (!strcmp(probes[i].ext, ext)) src = probes[i].source;
    if (!src) { /* glslang refuses an extension it does not know */
        snprintf(generic, sizeof generic,
                 "#version 450\n#extension %s : require\n"
                 "layout(local_size_x = 1) in;\nvoid main() {}\n",
                 ext);
        src = generic;
    }
    qk_spirv m = {0};
    qk_error e = {0};
    qk_compile_init(); /* glslang counts its clients: the caller's own stays open */
    bool ok = qk_compile_all(ext, src, &m, &e);
    qk_compile_finish();
    qk_spirv_free(&m);
    return ok;
}

bool qk_compile_has_extension(const char *ext) {
    if (strlen(ext) >= sizeof cache[0].ext || strchr(ext, '\n')) return false;
    pthread_mutex_lock(&lock);
    for (unsigned i = 0; i < cached; i++)
        if (!strcmp(cache[i].ext, ext)) {
            bool has = cache[i].has;
            pthread_mutex_unlock(&lock);
            return has;
        }
    bool has = probe(ext);
    if (cached < QK_MAX_PROBED) {
        snprintf(cache[cached].ext, sizeof cache[0].ext, "%s", ext);
        cache[cached++].has = has;
    }
    pthread_mutex_unlock(&lock);
    return has;
}

unsigned qk_compile_probed_extensions(const char **names, unsigned cap) {
    unsigned n = 0;
    for (size_t i = 0; i < sizeof probes / sizeof probes[0] && n < cap; i++)
        names[n++] = probes[i].ext;
    return n;
}

static char toolchain[160];

static void describe(void) {
    snprintf(toolchain, sizeof toolchain, "glslang %d.%d.%d%s, SPIRV-Tools %s",
             GLSLANG_VERSION_MAJOR, GLSLANG_VERSION_MINOR, GLSLANG_VERSION_PATCH,
             GLSLANG_VERSION_FLAVOR, spvSoftwareVersionString());
}

const char *qk_compile_toolchain(void) {
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, describe);
    return toolchain;
}

const char *qk_compile_missing_reason(const char *ext, char *buf, unsigned size) {
    snprintf(buf, size,
             "needs %s, which this qkgen's shader compiler (%s) cannot compile; "
             "scripts/toolchain.sh builds one that can",
             ext, qk_compile_toolchain());
    return buf;
}
