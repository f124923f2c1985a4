/* qkgen export: parses its arguments and calls the exporter (export/). */
#include "cli.h"
#include "qk_export.h"

#include <ctype.h>
#include <stdio.h>
#include <string.h>

int cmd_export(qk_args *a) {
    const char *bundle = NULL, *out = NULL, *prefix = "qkb";
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen export BUNDLE --c FILE.h [--prefix NAME]\n\n"
                 "Writes the bundle folder BUNDLE (manifest.json and its .spv files) as one C\n"
                 "header: every module's SPIR-V as a uint32_t array and every kernel's entry as\n"
                 "static data (names, bindings, push constants, specialization constants,\n"
                 "workgroup size, requirements, weights layout), with its dispatch grid and\n"
                 "constraints as C functions of the shape. It compiles as C99 and C++; define\n"
                 "NAME_IMPLEMENTATION (in capitals) in one file before including it.\n\n"
                 "  --c FILE.h     the header to write (atomically; its folder is made\n"
                 "                 where missing)\n"
                 "  --prefix NAME  prefix of its types, functions and macros (default qkb)\n"
                 "exit status: 0 written, 1 cannot write, 2 bad argument or bundle");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--c", &out) || qk_opt(a, "--prefix", &prefix)) continue;
        if (a->argv[a->i][0] != '-' && !bundle) {
            bundle = a->argv[a->i++];
            continue;
        }
        return qk_bad_arg(a);
    }
    if (!bundle)
        return qk_usage_error(a->cmd, "no bundle folder given (see 'qkgen export --help')");
    if (!out) return qk_usage_error(a->cmd, "--c FILE.h is required");
    const qk_input in[] = {{"bundle", bundle}};
    int out_rc = qk_check_output(a->cmd, "--c", out, false, in, 1);
    if (out_rc) return out_rc;
    bool ident = prefix[0] && strlen(prefix) < 48 && !isdigit((unsigned char)prefix[0]);
    for (const char *s = prefix; *s; s++)
        ident &= isalnum((unsigned char)*s) || *s == '_';
    if (!ident) return qk_usage_error(a->cmd, "--prefix: '%s' is not a C identifier", prefix);
    qk_error e = {0};
    if (qk_export_bundle(bundle, out, prefix, &e)) return QK_EXIT_OK;
    fprintf(stderr, "qkgen export: %s\n", e.msg);
    return strstr(e.msg, "cannot write") || strstr(e.msg, "cannot create") ? QK_EXIT_FAIL
                                                                           : QK_EXIT_USAGE;
}
