/* The libclang loader behind clang_dl.h: dlopen of the Debian 12 library
 * names, then every function qkgen uses looked up once. */
#define _GNU_SOURCE
#include <clang-c/Index.h>
#include <dlfcn.h>
#include <stdio.h>

#define QK_CLANG_NO_MACROS
#include "clang_dl.h"

qk_clang_api qk_clang;

bool qk_clang_load(char *err, size_t err_size) {
    static void *lib;
    if (lib) return true;
    static const char *const names[] = {"libclang-14.so.1", "libclang-14.so.13", "libclang.so.1",
                                        "/usr/lib/llvm-14/lib/libclang.so.1", "libclang.so"};
    void *h = NULL;
    for (size_t i = 0; !h && i < sizeof names / sizeof names[0]; i++)
        h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(err, err_size,
                 "libclang is not installed (Debian: libclang1-14); it is needed "
                 "to check formats against C structs");
        return false;
    }
#define QK_CLANG_LOOKUP(f)                                                                         \
    if (!(*(void **)&qk_clang.f = dlsym(h, #f))) {                                                 \
        snprintf(err, err_size, "libclang lacks %s", #f);                                          \
        dlclose(h);                                                                                \
        return false;                                                                              \
    }
    QK_CLANG_FUNCS(QK_CLANG_LOOKUP)
#undef QK_CLANG_LOOKUP
    lib = h;
    return true;
}
