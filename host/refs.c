/* The declared references of a spec folder's formats, compiled from their
 * YAML and handed to the host operations, which check bundles with them. */
#include "format/format.h"
#include "ops.h"
#include "refs.h"

#include <stdio.h>
#include <stdlib.h>

int qk_declare_refs(const char *cmd, const char *specs_dir) {
    qk_format_spec *specs;
    uint32_t n;
    qk_error e = {0};
    if (!qk_format_specs_load(specs_dir, &specs, &n, &e)) {
        fprintf(stderr, "qkgen %s: %s\n", cmd, e.msg);
        return QK_REFS_BAD_SPEC;
    }
    int rc = 0;
    for (uint32_t i = 0; i < n && !rc; i++) {
        if (!specs[i].has_reference) continue;
        qk_format *fs;
        uint32_t nf;
        if (!qk_format_expand(&specs[i], &fs, &nf, &e)) {
            fprintf(stderr, "qkgen %s: %s\n", cmd, e.msg);
            rc = QK_REFS_BAD_SPEC;
            break;
        }
        for (uint32_t j = 0; j < nf && !rc; j++) {
            qk_decode *d;
            if (!qk_format_decode(&fs[j], &d, &e)) {
                fprintf(stderr, "qkgen %s: %s\n", cmd, e.msg);
                rc = QK_REFS_BAD_SPEC;
            } else if (d) {
                qk_ref_declare(fs[j].name, fs[j].variant, d);
            }
        }
        free(fs);
    }
    free(specs);
    return rc;
}
