/* qkgen dequant: blocks of a format through its CPU reference (declared in
 * its YAML, else built in) to float64, for checking a reference against
 * another implementation of the format (tests/tools/ggml_crosscheck.sh). */
#include "cli.h"
#include "ops.h"
#include "qk_npy.h"
#include "qk_util.h"
#include "refs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int cmd_dequant(qk_args *a) {
    const char *format = NULL, *in = NULL, *out = NULL, *blocks_out = NULL;
    const char *specs_dir = qk_default_specs();
    uint64_t random_n = 0, seed = (uint64_t)time(NULL);
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen dequant --format F --in BLOCKS --out Y.npy [--specs DIR]\n"
                 "       qkgen dequant --format F --random N --blocks-out BLOCKS --out Y.npy\n"
                 "                     [--seed S] [--specs DIR]\n\n"
                 "Dequantizes the blocks of a block format through its CPU reference, the\n"
                 "one verify, bench and tune use: the `reference:` its YAML declares under\n"
                 "--specs DIR (default specs/), else the built-in one. BLOCKS is raw blocks\n"
                 "back to back (a whole number of them); Y.npy gets float64 [blocks,\n"
                 "elements]. --random N first writes N random blocks, the checks' random\n"
                 "data, to BLOCKS (seed printed). Planar formats (MLX) are not read here.");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--format", &format) || qk_opt(a, "--in", &in) || qk_opt(a, "--out", &out) ||
            qk_opt(a, "--blocks-out", &blocks_out) || qk_opt(a, "--specs", &specs_dir) ||
            qk_opt_u64(a, "--random", &random_n) || qk_opt_u64(a, "--seed", &seed))
            continue;
        return qk_bad_arg(a);
    }
    if (!format || !out) return qk_usage_error(a->cmd, "--format and --out are required");
    if (!in == !random_n)
        return qk_usage_error(a->cmd, "either --in BLOCKS or --random N (with --blocks-out)");
    if (random_n && !blocks_out)
        return qk_usage_error(a->cmd, "--random N writes its blocks to --blocks-out FILE");
    if (random_n > (1u << 24))
        return qk_usage_error(a->cmd, "--random: %llu is more than %u blocks",
                              (unsigned long long)random_n, 1u << 24);
    int rc = qk_declare_refs(a->cmd, specs_dir);
    if (rc) return rc;
    uint32_t elements, bytes;
    if (!qk_ref_block_format(format, "", &elements, &bytes)) {
        if (qk_ref_has(format, ""))
            qk_usage_error(a->cmd, "%s is a planar format: dequant reads block formats", format);
        else
            qk_usage_error(a->cmd, QK_NO_REFERENCE, format);
        qk_ref_declared_clear();
        return QK_EXIT_USAGE;
    }
    qk_weights w = {.format = format, .variant = "", .plane_count = 1};
    qk_error e = {0};
    size_t n = 0;
    uint64_t rng = seed;
    if (random_n) {
        printf("seed %llu\n", (unsigned long long)seed);
        if (!qk_random_weights(format, "", 1, (uint32_t)random_n * elements, &rng, &w)) {
            fprintf(stderr, "qkgen %s: %s\n", a->cmd, qk_ref_why());
            qk_ref_declared_clear();
            return QK_EXIT_FAIL;
        }
        n = w.bytes[0];
        if (!qk_write_file(blocks_out, w.plane[0], n, &e)) {
            fprintf(stderr, "qkgen %s: %s\n", a->cmd, e.msg);
            qk_free_weights(&w);
            qk_ref_declared_clear();
            return QK_EXIT_FAIL;
        }
    } else {
        char *data = qk_read_file(in, &n, &e);
        if (!data) {
            fprintf(stderr, "qkgen %s: %s\n", a->cmd, e.msg);
            qk_ref_declared_clear();
            return QK_EXIT_USAGE;
        }
        if (!n || n % bytes) {
            qk_usage_error(a->cmd, "%s: %zu bytes are not a whole number of %s's %u-byte blocks",
                           in, n, format, bytes);
            free(data);
            qk_ref_declared_clear();
            return QK_EXIT_USAGE;
        }
        w.plane[0] = data, w.bytes[0] = n;
    }
    uint64_t nb = n / bytes, shape[2] = {nb, elements};
    double *y = malloc(sizeof *y * nb * elements);
    rc = QK_EXIT_OK;
    if (!y || !qk_ref_dequant(&w, 1, (uint32_t)(nb * elements), y)) {
        fprintf(stderr, "qkgen %s: %s\n", a->cmd, y ? qk_ref_why() : "out of memory");
        rc = QK_EXIT_FAIL;
    } else if (!qk_npy_write(out, "f8", 2, shape, y, &e)) {
        fprintf(stderr, "qkgen %s: %s\n", a->cmd, e.msg);
        rc = QK_EXIT_FAIL;
    } else {
        printf("%llu blocks of %s: %s\n", (unsigned long long)nb, format, out);
    }
    free(y);
    qk_free_weights(&w);
    qk_ref_declared_clear();
    return rc;
}
