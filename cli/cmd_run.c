/* Runtime commands: devices, verify, matmul. They open a context on the
 * chosen device, load a bundle and run kernels through the host operations. */
#include "cli.h"
#include "ops.h"
#include "ops_matmul.h"
#include "ops_moe.h"
#include "qk_npy.h"
#include "qk_util.h"
#include "refs.h"
#include "verify.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The runtime's warnings and errors, as the command's (user: its name),
 * "qkrt:" saying whose. */
static void log_cb(void *user, int level, const char *msg) {
    if (level >= QKRT_LOG_WARN) fprintf(stderr, "qkgen %s: qkrt: %s\n", (const char *)user, msg);
}

int qk_open(const char *cmd, const char *device, bool validation, bool stats, const char *bundle,
            qkrt_context **ctx, qkrt_bundle **b) {
    qkrt_desc d = {
        .device = device, .validation = validation, .log = log_cb, .log_user = (void *)cmd};
    qkrt_result r = stats ? qkrt_create_stats(&d, ctx) : qkrt_create(&d, ctx);
    if (r != QKRT_OK && stats) { /* statistics are a nicety: a device refusing them opens without */
        r = qkrt_create(&d, ctx);
    }
    if (r != QKRT_OK) {
        fprintf(stderr, "qkgen %s: %s\n", cmd, qkrt_create_error());
        return device ? QK_EXIT_USAGE : QK_EXIT_FAIL;
    }
    qkrt_result lr = qkrt_bundle_load(*ctx, bundle, b);
    if (lr != QKRT_OK) {
        fprintf(stderr, "qkgen %s: %s (build one with 'qkgen build')\n", cmd,
                qkrt_last_error(*ctx));
        qkrt_destroy(*ctx);
        /* a missing, unreadable or malformed bundle is bad input */
        return lr == QKRT_ERROR_IO || lr == QKRT_ERROR_MANIFEST ? QK_EXIT_USAGE : QK_EXIT_FAIL;
    }
    return QK_EXIT_OK;
}

int cmd_devices(qk_args *a) {
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen devices\n\nLists the Vulkan devices with what kernels care about.\n"
                 "Choose one with --device N or QKGEN_DEVICE=N.");
            return QK_EXIT_OK;
        }
        return qk_bad_arg(a);
    }
    uint32_t n = 0;
    char err[512];
    if (qkrt_enumerate_devices(NULL, &n, err, sizeof err) != QKRT_OK) {
        fprintf(stderr, "qkgen devices: %s\n", err);
        return QK_EXIT_FAIL;
    }
    qkrt_device_info *d = qk_xcalloc(n ? n : 1, sizeof *d);
    qkrt_enumerate_devices(d, &n, err, sizeof err);
    for (uint32_t i = 0; i < n; i++) {
        printf("%u: %s (%s)\n", d[i].index, d[i].name, d[i].type);
        printf("   driver %s, Vulkan %u.%u.%u\n", d[i].driver, d[i].api_version >> 22,
               (d[i].api_version >> 12) & 0x3ff, d[i].api_version & 0xfff);
        printf("   subgroup %u (min %u, max %u)%s, shared memory %u KiB, workgroup <= %u\n",
               d[i].subgroup_size, d[i].min_subgroup_size, d[i].max_subgroup_size,
               d[i].subgroup_arithmetic ? " with arithmetic" : "", d[i].max_shared_memory / 1024,
               d[i].max_workgroup_invocations);
        printf("   8-bit storage %s, 16-bit storage %s, float16 %s, int8 %s, int8 dot product %s\n",
               d[i].storage_8bit ? "yes" : "no", d[i].storage_16bit ? "yes" : "no",
               d[i].float16 ? "yes" : "no", d[i].int8 ? "yes" : "no",
               d[i].integer_dot_product ? "yes" : "no");
        if (d[i].cooperative_matrix_nv)
            printf("   cooperative matrix: NV (f16 %ux%ux%u)%s%s\n", d[i].coopmat_m, d[i].coopmat_n,
                   d[i].coopmat_k, d[i].cooperative_matrix_khr ? ", KHR" : "",
                   d[i].cooperative_matrix2_nv ? ", NV2 (workgroup scope, tensor loads)" : "");
        else
            printf("   cooperative matrix: %s\n",
                   d[i].cooperative_matrix_khr ? "KHR only" : "none");
        printf("   device-local memory %.1f GiB\n", d[i].device_local_bytes / 1073741824.0);
    }
    if (!n) puts("no Vulkan device (Debian: mesa-vulkan-drivers provides lavapipe)");
    free(d);
    return QK_EXIT_OK;
}

/* Whether kernel i (named name) is of this verify run: its name matches
 * --filter (NULL: all) and its index --shard K/N. */
static bool in_run(const char *filter, unsigned shard_k, unsigned shard_n, uint32_t i,
                   const char *name) {
    return (!filter || qk_filter_match(filter, name)) && i % shard_n == shard_k;
}

int cmd_verify(qk_args *a) {
    const char *bundle = qk_default_bundle(), *device = NULL, *filter = NULL, *shard = NULL;
    const char *specs_dir = qk_default_specs();
    uint64_t seed = (uint64_t)time(NULL), M = 37;
    unsigned shard_k = 0, shard_n = 1;
    bool validation = false, verbose = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen verify [--bundle DIR] [--device N] [--filter A,B] [--seed N]\n"
                 "                    [--m M] [--shard K/N] [--specs DIR] [--validation]\n"
                 "                    [--verbose]\n\n"
                 "Runs every mat-vec and matmul kernel of the bundle (default out/default),\n"
                 "plain, with expert ids and with the swiglu fusion, that the device supports\n"
                 "once on fresh random weights against the CPU reference (float64 sums) and\n"
                 "prints kernel, device, NMSE, milliseconds (the run and the check: the\n"
                 "pipelines are made before, on every core at once) and pass/fail (bounds:\n"
                 "1e-6 for f32 paths, 5e-4 for f16-staged tiles: matmuls, cooperative\n"
                 "matrices). Post-op, routing and separate-expert kernels are\n"
                 "counted as skipped: the test suite checks them.\n"
                 "--m M sets each product's weight rows (default 37: not a multiple of any\n"
                 "tile, so partial tiles are checked); K and the tokens follow the kernel.\n"
                 "--shard K/N runs the kernels whose bundle index is K modulo N, so that N\n"
                 "processes share the work (a CPU driver compiles each pipeline for seconds).\n"
                 "The reference of a format is the `reference:` its YAML declares, read from\n"
                 "--specs DIR (default specs/, as build), else the built-in one of the GGUF\n"
                 "and MLX affine formats; kernels of a format with neither are skipped with\n"
                 "that cause (docs/new-format.md).\n"
                 "Exit status 1 if any kernel fails or none was checked.");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--bundle", &bundle) || qk_opt(a, "--device", &device) ||
            qk_opt(a, "--filter", &filter) || qk_opt_range(a, "--seed", 0, UINT64_MAX, &seed) ||
            qk_opt_range(a, "--m", 1, 65536, &M) || qk_opt(a, "--shard", &shard) ||
            qk_opt(a, "--specs", &specs_dir))
            continue;
        if (qk_flag(a, "--validation")) {
            validation = true;
            continue;
        }
        if (qk_flag(a, "--verbose") || qk_flag(a, "-v")) {
            verbose = true;
            continue;
        }
        return qk_bad_arg(a);
    }
    if (shard) {
        /* K and N as qk_parse_u64 reads them: %u wraps 4294967297 to 1 */
        char part[2][24] = {"", ""};
        const size_t n = strcspn(shard, "/");
        uint64_t sk = 0, sn = 0;
        qk_error se = {0};
        bool ok = shard[n] == '/' && n < sizeof part[0] && strlen(shard + n + 1) < sizeof part[1];
        if (ok) {
            memcpy(part[0], shard, n);
            strcpy(part[1], shard + n + 1);
            ok = qk_parse_u64(part[1], 1, 1024, &sn, &se) &&
                 qk_parse_u64(part[0], 0, sn - 1, &sk, &se);
        }
        if (!ok)
            return qk_usage_error(a->cmd, "--shard: '%s' is not K/N with 0 <= K < N <= 1024",
                                  shard);
        shard_k = (unsigned)sk, shard_n = (unsigned)sn;
    }
    qkrt_context *ctx;
    qkrt_bundle *b;
    int rc = qk_declare_refs(a->cmd, specs_dir);
    if (rc) return rc;
    rc = qk_open(a->cmd, device, validation, false, bundle, &ctx, &b);
    if (rc) {
        qk_ref_declared_clear();
        return rc;
    }
    const qkrt_device_info *dev = qkrt_device(ctx);
    printf("seed %llu, device %u: %s\n", (unsigned long long)seed, dev->index, dev->name);
    /* the pipelines of the kernels to run first, the driver compiling on
     * all cores at once (one after another, a GPU driver's
     * cooperative-matrix-2 matmuls took 1-3 s each); a kernel the device
     * cannot run is left to the loop's check */
    uint32_t nk = qkrt_bundle_kernel_count(b), nlist = 0;
    uint32_t *list = qk_xmalloc(sizeof *list * (nk ? nk : 1));
    for (uint32_t i = 0; list && i < nk; i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (in_run(filter, shard_k, shard_n, i, k->name) && qk_verify_has_reference(k) &&
            qk_ref_has(k->format, k->format_variant))
            list[nlist++] = i;
    }
    double t_made = qk_now_s();
    uint32_t made = list ? qkrt_kernels_prepare(ctx, b, list, nlist, 0) : 0;
    printf("%u pipelines made in %.1f s, %u threads at once\n", made, qk_now_s() - t_made,
           qk_cores());
    free(list);
    printf("%-48s %-24.24s %10s %8s  %s\n", "kernel", "device", "NMSE", "ms", "result");
    uint32_t pass = 0, fail = 0, skip_device = 0, skip_family = 0, skip_format = 0;
    char first_skip[512] = "", no_ref[512] = "";
    uint64_t rng = seed;
    bool *passed = qk_xcalloc(qkrt_bundle_kernel_count(b) + 1, sizeof *passed);
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const qkrt_kernel_info *k = qkrt_bundle_kernel(b, i);
        if (!in_run(filter, shard_k, shard_n, i, k->name)) continue;
        qkrt_result check = qkrt_kernel_check(ctx, b, i);
        if (check == QKRT_ERROR_MANIFEST) { /* the bundle's fault, not the device's */
            printf("%-48s %-24.24s %10s %8s  FAIL: %s\n", k->name, dev->name, "-", "-",
                   qkrt_last_error(ctx));
            fail++;
            continue;
        }
        if (check != QKRT_OK) {
            if (verbose)
                printf("%-48s %-24.24s %10s %8s  skip: %s\n", k->name, dev->name, "-", "-",
                       qkrt_last_error(ctx));
            if (!skip_device++) snprintf(first_skip, sizeof first_skip, "%s", qkrt_last_error(ctx));
            continue;
        }
        /* a product of a format without a CPU reference: the format's cause */
        if (qk_verify_has_reference(k) && !qk_ref_has(k->format, k->format_variant)) {
            char why[512];
            snprintf(why, sizeof why, QK_NO_REFERENCE, k->format);
            if (verbose)
                printf("%-48s %-24.24s %10s %8s  skip: %s\n", k->name, dev->name, "-", "-", why);
            if (!skip_format++) snprintf(no_ref, sizeof no_ref, "%s", why);
            continue;
        }
        /* products (plain, with expert ids, with the swiglu fusion) have a
         * reference here; post-ops and separate-expert forms are checked by
         * the test suite (gpu.moe, gpu.postops) */
        char err[1024] = "";
        double nmse = INFINITY, tol = 0, t0 = qk_now_s();
        qkrt_result r =
            qk_verify_product(ctx, b, i, (uint32_t)M, &rng, &nmse, &tol, err, sizeof err);
        const double ms = (qk_now_s() - t0) * 1e3;
        if (r == QKRT_ERROR_UNSUPPORTED) {
            if (verbose)
                printf("%-48s %-24.24s %10s %8s  skip: verify has no reference for family %s "
                       "with fusion %s (the test suite checks it)\n",
                       k->name, dev->name, "-", "-", k->family, k->fusion);
            skip_family++;
            continue;
        }
        bool ok = r == QKRT_OK && nmse <= tol;
        passed[i] = ok;
        printf("%-48s %-24.24s %10.2e %8.0f  %s%s%s\n", k->name, dev->name, nmse, ms,
               ok ? "pass" : "FAIL", r != QKRT_OK ? ": " : "", r != QKRT_OK ? err : "");
        ok ? pass++ : fail++;
    }
    if (skip_device) /* the first one's reason: a device's lack or this runtime's */
        printf("skipped %u kernels this device or runtime cannot run (the first: %s); --verbose "
               "lists them\n",
               skip_device, first_skip);
    if (skip_family)
        printf("skipped %u post-op, routing, copy, dequant and separate-expert kernels: the test "
               "suite checks those (ctest -R 'gpu[.]'); --verbose lists them\n",
               skip_family);
    if (skip_format) /* the first format's; --verbose names each kernel */
        printf("skipped %u kernels of formats without a CPU reference (the first: %s); "
               "--verbose lists them\n",
               skip_format, no_ref);
    if (qkrt_bundle_has_select(b) && shard_k == 0 && !filter)
        fail += qk_verify_select(ctx, b, (uint32_t)M, shard_n == 1 ? passed : NULL);
    free(passed);
    uint32_t skip = skip_device + skip_family + skip_format;
    if (qkrt_validation_errors(ctx)) {
        printf("validation layer reported %u errors\n", qkrt_validation_errors(ctx));
        fail++;
    }
    printf("%u passed, %u failed, %u skipped\n", pass, fail, skip);
    /* a bundle (or filter, or shard) with nothing to check is not a pass */
    if (!pass && !fail) fprintf(stderr, "qkgen verify: no kernel was checked\n");
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    qk_ref_declared_clear();
    return fail || !pass ? QK_EXIT_FAIL : QK_EXIT_OK;
}

/* The dtype of an MLX scales/biases array names the scale type. */
static const char *scale_type_of(const qk_npy *a) {
    if (!strcmp(a->dtype, "f4")) return "f32";
    if (!strcmp(a->dtype, "f2")) return "f16";
    if (!strcmp(a->dtype, "u2")) return "bf16";
    return NULL;
}

typedef struct matmul_io {
    const char *format, *wpath, *xpath, *ypath, *spath, *bpath, *idspath;
    qk_npy w, x, s, b, ids;
} matmul_io;

static void matmul_io_free(matmul_io *io) {
    qk_npy_free(&io->w), qk_npy_free(&io->x), qk_npy_free(&io->s), qk_npy_free(&io->b);
    qk_npy_free(&io->ids);
}

/* Tokens up to which the mat-vec families (weights read once for all tokens
 * of a workgroup) beat the tiled matmul; beyond, matmul if the bundle has it. */
enum { QK_MATVEC_MAX_TOKENS = 8 };

/* Checks the arrays against the format (as the bundle describes it) and
 * derives M, K, T (and E, top_k, ne11 with --ids: W stacks E experts
 * [E, M, row], X is [T, K] or [T, top_k, K]); on failure prints the problem
 * and returns false. */
static bool matmul_shapes(const char *cmd, matmul_io *io, const qkrt_kernel_info *k, uint32_t *M,
                          uint32_t *K, uint32_t *T, qk_moe_shape *moe) {
    char d[128];
    bool planar = !strcmp(k->weights_layout, "planar"), experts = io->idspath != NULL;
    uint32_t wd = experts ? 3 : 2; /* dimensions of W */
    if (io->w.ndim != wd) {
        qk_npy_describe(&io->w, d, sizeof d);
        if (experts)
            qk_usage_error(cmd, "%s: expected a 3-D array [E, M, row] of stacked experts, got %s",
                           io->wpath, d);
        else
            qk_usage_error(cmd, "%s: expected a 2-D array [M, row], got %s", io->wpath, d);
        return false;
    }
    uint64_t rowlen = io->w.shape[wd - 1], k64;
    if (!planar) {
        if (strcmp(io->w.dtype, "u1")) {
            qk_npy_describe(&io->w, d, sizeof d);
            qk_usage_error(cmd, "%s: expected uint8 blocks of %s, got %s", io->wpath, io->format,
                           d);
            return false;
        }
        if (rowlen == 0) {
            qk_usage_error(cmd, "%s: rows of 0 bytes (K = 0): nothing to multiply", io->wpath);
            return false;
        }
        if (rowlen % k->block_bytes) {
            qk_usage_error(cmd,
                           "%s: a row of %llu bytes is not a whole number of %s blocks (%u bytes)",
                           io->wpath, (unsigned long long)rowlen, io->format, k->block_bytes);
            return false;
        }
        k64 = rowlen / k->block_bytes * k->block_elements;
    } else {
        uint32_t bits = k->planes[0].per_group * 32 / k->block_elements;
        if (strcmp(io->w.dtype, "u4")) {
            qk_npy_describe(&io->w, d, sizeof d);
            qk_usage_error(cmd, "%s: expected uint32 words of %s, got %s", io->wpath, io->format,
                           d);
            return false;
        }
        k64 = rowlen * 32 / bits;
        if (rowlen * 32 % bits || k64 % k->block_elements) {
            qk_usage_error(cmd, "%s: %llu words per row is not a whole number of groups of %u",
                           io->wpath, (unsigned long long)rowlen, k->block_elements);
            return false;
        }
        const qk_npy *sb[2] = {&io->s, &io->b};
        const char *names[2] = {io->spath, io->bpath};
        for (int i = 0; i < 2; i++) {
            bool ok = sb[i]->ndim == wd && sb[i]->shape[wd - 1] == k64 / k->block_elements;
            for (uint32_t j = 0; j + 1 < wd; j++)
                ok = ok && sb[i]->shape[j] == io->w.shape[j];
            if (!ok) {
                qk_npy_describe(sb[i], d, sizeof d);
                if (experts)
                    qk_usage_error(cmd, "%s: expected [%llu, %llu, %llu], got %s", names[i],
                                   (unsigned long long)io->w.shape[0],
                                   (unsigned long long)io->w.shape[1],
                                   (unsigned long long)(k64 / k->block_elements), d);
                else
                    qk_usage_error(cmd, "%s: expected [%llu, %llu], got %s", names[i],
                                   (unsigned long long)io->w.shape[0],
                                   (unsigned long long)(k64 / k->block_elements), d);
                return false;
            }
        }
        if (strcmp(io->s.dtype, io->b.dtype)) {
            qk_usage_error(cmd, "%s and %s: scales and biases must have one dtype", io->spath,
                           io->bpath);
            return false;
        }
    }
    bool xok = !strcmp(io->x.dtype, "f4") &&
               (experts ? io->x.ndim == 2 || io->x.ndim == 3 : io->x.ndim >= 1 && io->x.ndim <= 2);
    if (!xok) {
        qk_npy_describe(&io->x, d, sizeof d);
        qk_usage_error(cmd, "%s: expected float32 %s, got %s", io->xpath,
                       experts ? "[T, K] or [T, top_k, K]" : "[K] or [T, K]", d);
        return false;
    }
    uint64_t xk = io->x.shape[io->x.ndim - 1];
    if (xk != k64) {
        qk_usage_error(cmd, "%s: K is %llu, but the weights have K = %llu", io->xpath,
                       (unsigned long long)xk, (unsigned long long)k64);
        return false;
    }
    *M = (uint32_t)io->w.shape[wd - 2];
    *K = (uint32_t)k64;
    *T = io->x.ndim >= 2 ? (uint32_t)io->x.shape[0] : 1;
    if (!*M || !*T) {
        qk_usage_error(cmd, "%s: %s = 0: nothing to multiply", !*M ? io->wpath : io->xpath,
                       !*M ? "M (rows)" : "T (tokens)");
        return false;
    }
    if (!experts) return true;
    const qk_npy *ids = &io->ids;
    if (strcmp(ids->dtype, "i4") || ids->ndim != 2 || ids->shape[0] != *T || !ids->shape[1] ||
        ids->shape[1] > io->w.shape[0]) {
        qk_npy_describe(ids, d, sizeof d);
        qk_usage_error(cmd,
                       "%s: expected int32 [T, top_k] with T = %u and top_k <= E = %llu, got %s",
                       io->idspath, *T, (unsigned long long)io->w.shape[0], d);
        return false;
    }
    *moe = (qk_moe_shape){*M, *K, *T, (uint32_t)io->w.shape[0], (uint32_t)ids->shape[1], 1};
    if (io->x.ndim == 3) {
        if (io->x.shape[1] != moe->top_k) {
            qk_usage_error(cmd, "%s: a row per slot needs [T, %u, K], got %llu rows per token",
                           io->xpath, moe->top_k, (unsigned long long)io->x.shape[1]);
            return false;
        }
        moe->ne11 = moe->top_k;
    }
    /* every id names an expert, and a token picks an expert at most once */
    const int32_t *id = ids->data;
    for (uint32_t t = 0; t < *T; t++)
        for (uint32_t s = 0; s < moe->top_k; s++) {
            int32_t e = id[t * moe->top_k + s];
            if (e < 0 || (uint32_t)e >= moe->E) {
                qk_usage_error(cmd, "%s: id %d at [%u, %u] is not an expert (0..%u)", io->idspath,
                               e, t, s, moe->E - 1);
                return false;
            }
            for (uint32_t j = 0; j < s; j++)
                if (id[t * moe->top_k + j] == e) {
                    qk_usage_error(cmd, "%s: token %u picks expert %d twice", io->idspath, t, e);
                    return false;
                }
        }
    return true;
}

/* The kernel of family for the product, as an engine gets it from the
 * operations layer (qkrt_op_choose): the bundle's select table where a rule
 * answers (the level that answered and the device its rules were tuned on in
 * c->selection), else the default choice. -1 with why in err. */
static int choose(qkrt_context *ctx, const qkrt_bundle *b, const char *family, const qk_weights *w,
                  uint32_t M, uint32_t K, uint32_t T, const qk_moe_shape *moe, qkrt_op_choice *c,
                  char *err, size_t err_size) {
    const bool id = moe && moe->E;
    const qkrt_op_query q = {
        family, "none",          w->format,           w->variant,         "f32", M, K,
        T,      id ? moe->E : 1, id ? moe->top_k : 1, id ? moe->ne11 : 1, 0};
    if (qkrt_op_choose(ctx, b, &q, c) != QKRT_OK) {
        snprintf(err, err_size, "%s", qkrt_last_error(ctx));
        return -1;
    }
    return (int)c->kernel;
}

/* The kernel of the family the shape calls for: the mat-vec families for few
 * tokens, the tiled matmul beyond when the bundle has it. -1 with why in
 * err. */
static int matmul_kernel(qkrt_context *ctx, const qkrt_bundle *b, const qk_weights *w,
                         const int32_t *ids, uint32_t M, uint32_t K, uint32_t T,
                         const qk_moe_shape *moe, qkrt_op_choice *how, char *err, size_t err_size) {
    char why[512] = "";
    const char *few = ids ? "matvec_id" : "matvec", *many = ids ? "matmul_id" : "matmul";
    const qk_moe_shape *m = ids ? moe : NULL;
    int ki = -1;
    if (T > QK_MATVEC_MAX_TOKENS) ki = choose(ctx, b, many, w, M, K, T, m, how, why, sizeof why);
    if (ki < 0) ki = choose(ctx, b, few, w, M, K, T, m, how, err, err_size);
    return ki;
}

/* Runs kernel ki (of family matvec, matmul, matvec_id or matmul_id) on the
 * product. */
static qkrt_result matmul_run(qkrt_context *ctx, const qkrt_bundle *b, uint32_t ki,
                              const qkrt_op_choice *how, const qk_weights *w, const float *x,
                              const int32_t *ids, uint32_t M, uint32_t K, uint32_t T,
                              const qk_moe_shape *moe, float *y, char *err, size_t err_size) {
    err[0] = 0;
    double ns[2];
    const uint32_t first = how->selection.first_pass;
    if (how->selection.two_pass) /* the rule's first pass, then its kernel on f16 weights */
        return ids ? qk_run_matmul_id_two_pass(ctx, b, first, ki, w, x, ids, moe, y, ns, err,
                                               err_size)
                   : qk_run_matmul_two_pass(ctx, b, first, ki, w, x, M, K, T, y, ns, err, err_size);
    if (!strncmp(qkrt_bundle_kernel(b, ki)->family, "matmul", 6))
        return ids ? qk_run_matmul_id(ctx, b, ki, w, x, ids, moe, y, NULL, err, err_size)
                   : qk_run_matmul(ctx, b, ki, w, x, M, K, T, y, NULL, err, err_size);
    return ids ? qk_run_matvec_id(ctx, b, ki, w, 1, ids, x, M, K, T, moe->top_k, moe->ne11, moe->E,
                                  y, NULL, err, err_size)
               : qk_run_matvec(ctx, b, ki, w, x, M, K, T, y, NULL, err, err_size);
}

/* Index of --kernel NAME in the bundle if it computes this product: of a
 * family of it (mat-vec or matmul, with expert ids where --ids is given),
 * unfused, of the weights' format, and fitting the shape; -1 with why in
 * err otherwise. */
static int forced_kernel(const qkrt_bundle *b, const char *bundle, const char *name,
                         const qk_weights *w, bool ids, uint32_t M, uint32_t K, uint32_t T,
                         const qk_moe_shape *moe, char *err, size_t err_size) {
    int ki = qkrt_bundle_find(b, name);
    if (ki < 0) {
        snprintf(err, err_size, "--kernel: no kernel '%s' in %s (qkgen list --variants)", name,
                 bundle);
        return -1;
    }
    const qkrt_kernel_info *k = qkrt_bundle_kernel(b, (uint32_t)ki);
    const char *fam = k->family;
    bool product = ids ? !strcmp(fam, "matvec_id") || !strcmp(fam, "matmul_id")
                       : !strcmp(fam, "matvec") || !strcmp(fam, "matmul");
    if (!product || strcmp(k->fusion, "none")) {
        snprintf(err, err_size, "--kernel: %s is a %s%s%s kernel, not an unfused %s", name, fam,
                 strcmp(k->fusion, "none") ? " with fusion " : "",
                 strcmp(k->fusion, "none") ? k->fusion : "",
                 ids ? "matvec_id or matmul_id (--ids)" : "matvec or matmul (no --ids)");
        return -1;
    }
    if (strcmp(k->format, w->format) || strcmp(k->format_variant, w->variant)) {
        snprintf(err, err_size, "--kernel: %s takes format %s%s%s, the weights are %s%s%s", name,
                 k->format, k->format_variant[0] ? "/" : "", k->format_variant, w->format,
                 w->variant[0] ? "/" : "", w->variant);
        return -1;
    }
    /* routed: every pair may go to one expert (max_per_expert T * top_k) */
    const bool fits =
        ids ? qk_kernel_fits(k, M, K, T, moe->E, moe->top_k, moe->ne11, T * moe->top_k)
            : qk_kernel_fits(k, M, K, T, 0, 1, 1, T);
    if (!fits) {
        snprintf(err, err_size, "--kernel: %s does not fit M=%u K=%u T=%u (its constraints)", name,
                 M, K, T);
        return -1;
    }
    return ki;
}

int cmd_matmul(qk_args *a) {
    matmul_io io = {0};
    const char *bundle = qk_default_bundle(), *device = NULL, *kernel = NULL;
    bool validation = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen matmul --format F --weights W.npy --x X.npy --out Y.npy\n"
                 "                    [--ids IDS.npy] [--scales S.npy --biases B.npy]\n"
                 "                    [--bundle DIR] [--device N] [--kernel NAME]\n\n"
                 "Computes Y = X W^T on the device with the bundle's kernels: mat-vec for up to 8\n"
                 "tokens, the tiled matmul beyond (mat-vec where the bundle has no matmul).\n"
                 "The kernel is the one the bundle's select table names for this device and\n"
                 "shape (a tuned bundle: qkgen build --tuned); without a table, the f32 kernel\n"
                 "with the best-fitting token tile, then the most rows per workgroup.\n"
                 "--kernel NAME runs that kernel of the bundle instead (a mat-vec or matmul,\n"
                 "with expert ids where --ids is given, of the weights' format, unfused).\n"
                 "It prints the kernel it ran, how it was chosen (from a select table: the\n"
                 "level whose rules answered: this device's, its family's, its vendor's or the\n"
                 "portable default ones) and the milliseconds of the run (upload, dispatch\n"
                 "and download) on stderr.\n"
                 "  W.npy  block formats: uint8 [M, K/QK*block_bytes], the raw GGUF blocks;\n"
                 "         MLX formats (mlx<bits>_g<group>): uint32 [M, K*bits/32]\n"
                 "  S.npy, B.npy  MLX scales and biases [M, K/group]: <f4 f32, <f2 f16, <u2 bf16 "
                 "bits\n"
                 "  X.npy  float32 [K] or [T, K]\n"
                 "  Y.npy  float32 [M] for a 1-D X, else [T, M]\n"
                 "With --ids (mixture of experts), each token's row goes through its top_k "
                 "experts:\n"
                 "  IDS.npy  int32 [T, top_k], the experts of each token (distinct per token)\n"
                 "  W.npy    stacked experts [E, M, row] (S.npy, B.npy [E, M, K/group])\n"
                 "  X.npy    float32 [T, K] (one row per token) or [T, top_k, K] (a row per slot)\n"
                 "  Y.npy    float32 [T, top_k, M]\n"
                 "exit status: 0 done, 1 device failure, 2 bad arguments or arrays");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--format", &io.format) || qk_opt(a, "--weights", &io.wpath) ||
            qk_opt(a, "--x", &io.xpath) || qk_opt(a, "--out", &io.ypath) ||
            qk_opt(a, "--scales", &io.spath) || qk_opt(a, "--biases", &io.bpath) ||
            qk_opt(a, "--ids", &io.idspath) || qk_opt(a, "--bundle", &bundle) ||
            qk_opt(a, "--device", &device) || qk_opt(a, "--kernel", &kernel))
            continue;
        if (qk_flag(a, "--validation")) {
            validation = true;
            continue;
        }
        return qk_bad_arg(a);
    }
    const char *need[][2] = {
        {"--format", io.format}, {"--weights", io.wpath}, {"--x", io.xpath}, {"--out", io.ypath}};
    for (int i = 0; i < 4; i++)
        if (!need[i][1]) return qk_usage_error(a->cmd, "%s is required", need[i][0]);
    bool mlx = !strncmp(io.format, "mlx", 3);
    if (mlx && (!io.spath || !io.bpath))
        return qk_usage_error(a->cmd, "%s is planar: --scales and --biases are required",
                              io.format);
    if (!mlx && (io.spath || io.bpath))
        return qk_usage_error(a->cmd, "--scales and --biases are for MLX formats only");
    const qk_input in[] = {{"--weights", io.wpath}, {"--x", io.xpath},     {"--scales", io.spath},
                           {"--biases", io.bpath},  {"--ids", io.idspath}, {"bundle", bundle}};
    int out_rc = qk_check_output(a->cmd, "--out", io.ypath, false, in, sizeof in / sizeof in[0]);
    if (out_rc) return out_rc;

    qk_error e = {0};
    if (!qk_npy_read(io.wpath, &io.w, &e) || !qk_npy_read(io.xpath, &io.x, &e) ||
        (mlx && (!qk_npy_read(io.spath, &io.s, &e) || !qk_npy_read(io.bpath, &io.b, &e))) ||
        (io.idspath && !qk_npy_read(io.idspath, &io.ids, &e))) {
        fprintf(stderr, "qkgen matmul: %s\n", e.msg);
        matmul_io_free(&io);
        return QK_EXIT_USAGE;
    }
    qk_weights w = {.format = io.format, .variant = ""};
    if (mlx && !(w.variant = scale_type_of(&io.s))) {
        qk_usage_error(a->cmd, "%s: dtype %s is not a scale type (<f4, <f2 or <u2 for bf16)",
                       io.spath, io.s.dtype);
        matmul_io_free(&io);
        return QK_EXIT_USAGE;
    }
    qkrt_context *ctx;
    qkrt_bundle *b;
    int rc = qk_open(a->cmd, device, validation, false, bundle, &ctx, &b);
    if (rc) {
        matmul_io_free(&io);
        return rc;
    }
    char err[1024] = "";
    uint32_t M, K, T;
    qk_moe_shape moe = {0};
    float *y = NULL;
    /* Any kernel of the format tells its layout; the choice by shape follows. */
    int ki = qk_pick_kernel(ctx, b, "matvec", &w, "f32", 0, 1, err, sizeof err);
    if (ki < 0) { /* a bundle of prefill kernels alone (a tuned one); else the first why */
        char why[sizeof err];
        ki = qk_pick_kernel(ctx, b, "matmul", &w, "f32", 0, 64, why, sizeof why);
    }
    if (ki < 0) {
        fprintf(stderr, "qkgen matmul: %s\n", err);
        rc = QK_EXIT_USAGE;
    } else if (!matmul_shapes(a->cmd, &io, qkrt_bundle_kernel(b, (uint32_t)ki), &M, &K, &T, &moe)) {
        rc = QK_EXIT_USAGE;
    } else {
        w.plane_count = mlx ? 3 : 1;
        w.plane[0] = io.w.data, w.bytes[0] = io.w.count * io.w.itemsize;
        if (mlx) {
            w.plane[1] = io.s.data, w.bytes[1] = io.s.count * io.s.itemsize;
            w.plane[2] = io.b.data, w.bytes[2] = io.b.count * io.b.itemsize;
        }
        const int32_t *ids = io.idspath ? io.ids.data : NULL;
        size_t ny = (size_t)T * (ids ? moe.top_k : 1) * M;
        y = qk_xmalloc(sizeof *y * ny);
        qkrt_op_choice how = {0};
        ki = kernel
                 ? forced_kernel(b, bundle, kernel, &w, ids != NULL, M, K, T, &moe, err, sizeof err)
                 : matmul_kernel(ctx, b, &w, ids, M, K, T, &moe, &how, err, sizeof err);
        /* how it was chosen; from a select table, the level that answered
         * and the device its rules were tuned on */
        char chosen[400];
        const qkrt_selection *sel = &how.selection;
        if (kernel)
            snprintf(chosen, sizeof chosen, "--kernel");
        else if (how.source != QKRT_OP_SELECTED || ki < 0)
            snprintf(chosen, sizeof chosen, "the default choice");
        else
            snprintf(chosen, sizeof chosen, "the bundle's select table, %s level%s%s%s",
                     qkrt_select_level_name(sel->level), sel->tuned_on[0] ? ": tuned on " : "",
                     sel->tuned_on,
                     sel->level == QKRT_SELECT_DEFAULT ? ": the portable rules" : "");
        const double t0 = qk_now_s();
        qkrt_result r = ki < 0 ? QKRT_ERROR_UNSUPPORTED
                               : matmul_run(ctx, b, (uint32_t)ki, &how, &w, io.x.data, ids, M, K, T,
                                            &moe, y, err, sizeof err);
        if (r == QKRT_OK)
            fprintf(
                stderr, "qkgen matmul: %s%s%s (%s), M=%u K=%u T=%u%s: %.2f ms\n",
                how.selection.two_pass ? qkrt_bundle_kernel(b, how.selection.first_pass)->name : "",
                how.selection.two_pass ? " then " : "", qkrt_bundle_kernel(b, (uint32_t)ki)->name,
                chosen, M, K, T, ids ? " with expert ids" : "", (qk_now_s() - t0) * 1e3);
        if (r != QKRT_OK) {
            fprintf(stderr, "qkgen matmul: %s\n", err);
            rc = r == QKRT_ERROR_UNSUPPORTED ? QK_EXIT_USAGE : QK_EXIT_FAIL;
        } else {
            uint64_t shape[3] = {T, ids ? moe.top_k : M, M};
            bool one = !ids && io.x.ndim == 1;
            uint32_t nd = ids ? 3 : one ? 1 : 2;
            if (!qk_npy_write(io.ypath, "f4", nd, one ? shape + 2 : shape, y, &e)) {
                fprintf(stderr, "qkgen matmul: %s\n", e.msg);
                rc = QK_EXIT_FAIL;
            }
        }
    }
    if (qkrt_validation_errors(ctx)) {
        fprintf(stderr, "qkgen matmul: the validation layer reported %u errors\n",
                qkrt_validation_errors(ctx));
        rc = QK_EXIT_FAIL;
    }
    free(y);
    matmul_io_free(&io);
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return rc;
}
