/* Generator commands: build, list, emit, layout. Each loads and plans the
 * specs the same way; a spec error prints file:line:col and exits 2 before
 * anything is written. */
#include "cli.h"
#include "qk_util.h"
#include "bundle/bundle.h"
#include "compile/compile.h"
#include "emit/emit.h"
#include "format/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Loads and plans spec_dir, with the kernel set at set_path applied (NULL:
 * none); prints the error and returns false on failure. */
static bool load_plan_as(const char *cmd, const char *spec_dir, const char *set_path,
                         bool no_specialize, qk_spec_set *specs, qk_plan *plan) {
    qk_error e = {0};
    if (qk_plan_load(spec_dir, set_path, NULL, 0, no_specialize, specs, plan, &e)) return true;
    qk_usage_error(cmd, "%s", e.msg);
    return false;
}

static bool load_plan(const char *cmd, const char *spec_dir, const char *set_path,
                      qk_spec_set *specs, qk_plan *plan) {
    return load_plan_as(cmd, spec_dir, set_path, false, specs, plan);
}

/* On a terminal one line rewritten in place; otherwise (CI, a log) a line
 * every five seconds, so long builds show they are alive. */
static void report(const char *what, uint32_t done, uint32_t total, const char *variant) {
    static double last;
    if (isatty(2)) {
        fprintf(stderr, "\r\033[K[%u/%u] %s %s", done, total, what, variant);
    } else if (qk_now_s() - last >= 5.0 || done == total) {
        last = qk_now_s();
        fprintf(stderr, "[%u/%u] %s %s\n", done, total, what, variant);
    }
}

static void progress(void *user, uint32_t done, uint32_t total, const char *module) {
    (void)user;
    report("compiling", done + 1, total, module);
}

static void check_progress(void *user, uint32_t done, uint32_t total, const char *variant) {
    (void)user;
    report("checking", done, total, variant);
}

int cmd_build(qk_args *a) {
    for (int i = a->i; i < a->argc; i++) /* a tuned bundle: cli/cmd_tune.c */
        if (!strncmp(a->argv[i], "--tuned", 7)) return cmd_build_tuned(a);
    const char *spec_dir = NULL, *out = "out", *name = "default", *filter = NULL;
    const char *templates = qk_default_templates(), *set_path = NULL, *specs_opt = NULL;
    bool force = false, quiet = false, representative = false, no_specialize = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen build [--specs DIR] [--set FILE] [--out DIR] [--name NAME]\n"
                 "                   [--templates DIR] [--filter A,B] [--representative]\n"
                 "                   [--no-specialize] [--force] [--quiet]\n"
                 "       qkgen build [--specs DIR] --tuned DB [--model FILE] [--precision P]\n"
                 "                   [--out DIR] [--name NAME]   (a tuned bundle: qkgen tune "
                 "--help)\n\n"
                 "Expands the specs of DIR (--specs DIR, or DIR as the first argument;\n"
                 "default specs/: formats/*.yaml and\n"
                 "kernels/*.yaml) into variants, emits GLSL, compiles it with glslang, optimizes\n"
                 "and validates it with SPIRV-Tools, and writes DIR/NAME (default out/default):\n"
                 "a SPIR-V module per kernel, format and path (tile sizes are its\n"
                 "specialization constants, the kernel spec's `specialize:`) and\n"
                 "manifest.json. Unchanged modules come from the cache in DIR/.cache; an\n"
                 "unchanged bundle is not rewritten. --specs and --templates default to\n"
                 "./specs and ./templates, else to an installed qkgen's share/qkgen (or to\n"
                 "$QKGEN_SPECS and $QKGEN_TEMPLATES when set).\n\n"
                 "  --set FILE        a kernel set (specs/sets/*.yaml): only the kernels and\n"
                 "                    families it names, on its formats and fusions, less\n"
                 "                    the family points it excludes\n"
                 "  --filter A,B      only the variants whose name contains one of the\n"
                 "                    comma-separated parts (as in list, verify, bench, tune)\n"
                 "  --representative  of those, only the first tile of each path: kernel x\n"
                 "                    format (and option) x activation x mma x fusion\n"
                 "  --no-specialize   every variant a module of its own, tile sizes compiled\n"
                 "                    in (as before qkgen-bundle/2; for comparisons)\n"
                 "  --force           ignore the caches and compile everything\n"
                 "exit status: 0 built or up to date, 1 compile or write failure, 2 bad spec");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--out", &out) || qk_opt(a, "--name", &name) ||
            qk_opt(a, "--templates", &templates) || qk_opt(a, "--filter", &filter) ||
            qk_opt(a, "--set", &set_path) || qk_opt(a, "--specs", &specs_opt))
            continue;
        if (qk_flag(a, "--force")) {
            force = true;
            continue;
        }
        if (qk_flag(a, "--representative")) {
            representative = true;
            continue;
        }
        if (qk_flag(a, "--no-specialize")) {
            no_specialize = true;
            continue;
        }
        if (qk_flag(a, "--quiet") || qk_flag(a, "-q")) {
            quiet = true;
            continue;
        }
        if (a->argv[a->i][0] != '-' && !spec_dir) {
            spec_dir = a->argv[a->i++];
            continue;
        }
        return qk_bad_arg(a);
    }
    if (!qk_spec_dir_arg(a->cmd, spec_dir, specs_opt, &spec_dir)) return QK_EXIT_USAGE;
    if (!name[0] || strchr(name, '/') || name[0] == '.')
        return qk_usage_error(a->cmd, "--name: '%s' is not a plain folder name", name);
    if (!out[0]) return qk_usage_error(a->cmd, "--out: an empty path");
    /* the bundle replaces DIR/NAME as a whole */
    char *bundle_dir = qk_path_join(out, name);
    const qk_input in[] = {
        {"spec folder", spec_dir}, {"template folder", templates}, {"kernel set", set_path}};
    int out_rc = qk_check_output(a->cmd, "--out", bundle_dir, true, in, sizeof in / sizeof in[0]);
    free(bundle_dir);
    if (out_rc) return out_rc;
    double t0 = qk_now_s();
    qk_spec_set specs;
    qk_plan plan;
    if (!load_plan_as(a->cmd, spec_dir, set_path, no_specialize, &specs, &plan))
        return QK_EXIT_USAGE;
    for (uint32_t i = 0; i < specs.kernel_count; i++) {
        qk_error te = {0};
        if (!qk_emit_check_template(&specs.kernels[i], templates, &te)) {
            qk_usage_error(a->cmd, "%s", te.msg);
            qk_plan_free(&plan);
            qk_spec_set_free(&specs);
            return QK_EXIT_USAGE;
        }
    }
    qk_build_opts o = {.templates_dir = templates,
                       .out_dir = out,
                       .name = name,
                       .filter = filter,
                       .representative = representative,
                       .force = force,
                       .progress = quiet ? NULL : progress,
                       .check_progress = quiet ? NULL : check_progress,
                       .log = quiet ? NULL : qk_stderr(a->cmd)};
    qk_build_stats st;
    qk_error e = {0};
    qk_compile_init();
    bool ok = qk_bundle_build(&specs, &plan, &o, &st, &e);
    qk_compile_finish();
    if (!quiet && isatty(2)) fputs("\r\033[K", stderr);
    int rc = QK_EXIT_OK;
    if (!ok) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        /* a layout mismatch is an error in the specs, like any other */
        rc = strstr(e.msg, "c_struct:") || strstr(e.msg, "no variant") ? QK_EXIT_USAGE
                                                                       : QK_EXIT_FAIL;
    } else if (!quiet) {
        if (st.up_to_date)
            printf("%s is up to date: %u variants (%.3f s)\n", st.path, st.variants,
                   qk_now_s() - t0);
        else
            printf("built %s: %u variants in %u modules (%u compiled, %u from cache), %u points "
                   "dropped by rules, in %.2f s\n",
                   st.path, st.variants, st.modules, st.compiled, st.cached, st.dropped,
                   qk_now_s() - t0);
    }
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    return rc;
}

/* The kernel a dropped point's name belongs to: the longest kernel name
 * that the name continues with '_'. */
static const qk_kernel_spec *dropped_kernel(const qk_spec_set *s, const char *name) {
    const qk_kernel_spec *best = NULL;
    for (uint32_t i = 0; i < s->kernel_count; i++) {
        size_t n = strlen(s->kernels[i].name);
        if (!strncmp(name, s->kernels[i].name, n) && name[n] == '_' &&
            (!best || n > strlen(best->name)))
            best = &s->kernels[i];
    }
    return best;
}

/* qkgen list --axes FAMILY: the axes and values with their meanings, each
 * combination's kernel and variant count or the reason it has none, and the
 * rules that dropped points of the family's kernels, with how many. */
static int list_axes(const char *cmd, const qk_spec_set *s, const qk_plan *p, const char *name) {
    const qk_family_spec *f = NULL;
    for (uint32_t i = 0; i < s->family_count && !f; i++)
        if (!strcmp(s->families[i].name, name)) f = &s->families[i];
    if (!f) {
        qk_str known = {0};
        for (uint32_t i = 0; i < s->family_count; i++)
            qk_str_addf(&known, "%s%s", i ? ", " : "", s->families[i].name);
        int rc = qk_usage_error(cmd, "--axes: no family '%s' (the specs have: %s)", name,
                                known.s ? known.s : "none");
        qk_str_free(&known);
        return rc;
    }
    printf("family %s (%s): %s\n\naxes (a variant name spells each value but an axis's first):\n",
           f->name, f->path, f->description);
    for (uint32_t a = 0; a < f->axis_count; a++) {
        const qk_axis_spec *ax = &f->axes[a];
        printf("  %s: %s%s\n", ax->name, ax->meaning,
               ax->spelled ? "" : " (not spelled in the kernel name)");
        for (uint32_t v = 0; v < ax->value_count; v++)
            printf("    %-10s %s\n", ax->values[v].name, ax->values[v].meaning);
    }
    printf("\npoints:\n");
    for (uint32_t i = 0; i < f->point_count; i++) {
        const qk_family_point *pt = &f->points[i];
        qk_str axes = {0};
        for (uint32_t a = 0; a < f->axis_count; a++)
            qk_str_addf(&axes, "%s%s=%s", a ? " " : "", f->axes[a].name,
                        f->axes[a].values[pt->value[a]].name);
        uint32_t n = 0;
        for (uint32_t v = 0; v < p->variant_count; v++) {
            const qk_kernel_spec *k = p->variants[v].kernel;
            n += !strcmp(k->origin, f->name) && !strcmp(k->axes, axes.s);
        }
        if (pt->excluded[0])
            printf("  %-40s %s\n  %40s excluded: %s\n", pt->kernel, axes.s, "", pt->excluded);
        else
            printf("  %-40s %s: %u variants\n", pt->kernel, axes.s, n);
        qk_str_free(&axes);
    }
    /* reasons in order of first appearance, with their counts */
    uint32_t nr = 0, *count = qk_xcalloc(p->dropped_count + 1, sizeof *count);
    const char **reason = qk_xcalloc(p->dropped_count + 1, sizeof *reason);
    for (uint32_t i = 0; i < p->dropped_count; i++) {
        const qk_kernel_spec *k = dropped_kernel(s, p->dropped[i].name);
        if (!k || strcmp(k->origin, f->name)) continue;
        /* the built-in limit's reasons differ by the bytes: one line for all */
        const char *why =
            !strncmp(p->dropped[i].reason, "needs ", 6) &&
                    strstr(p->dropped[i].reason, "bytes of shared memory")
                ? "needs more shared memory than Vulkan devices commonly give (48 KiB)"
                : p->dropped[i].reason;
        uint32_t r = 0;
        while (r < nr && strcmp(reason[r], why))
            r++;
        if (r == nr) reason[nr++] = why;
        count[r]++;
    }
    printf("\npoints of the tile space dropped by rules (qkgen list --dropped names them):\n");
    for (uint32_t r = 0; r < nr; r++)
        printf("  %6u  %s\n", count[r], reason[r]);
    free(count);
    free(reason);
    return QK_EXIT_OK;
}

/* Variants and modules per kernel (a family point), then variants per
 * format: what a bundle of these specs holds, in a screen rather than
 * thousands of names. */
static void list_counts(const qk_plan *p) {
    printf("\n%-34s %-12s %8s %8s %8s\n", "kernel", "operation", "formats", "variants", "modules");
    uint32_t modules = 0;
    for (uint32_t i = 0; i < p->variant_count; i++) {
        const qk_kernel_spec *k = p->variants[i].kernel;
        if (i && p->variants[i - 1].kernel == k) continue; /* a kernel's variants are together */
        uint32_t n = 0, mods = 0, fmts = 0;
        const qk_format *last = NULL;
        for (uint32_t j = i; j < p->variant_count && p->variants[j].kernel == k; j++) {
            n++;
            mods += p->variants[j].module_first == j;
            if (p->variants[j].format != last &&
                (!last || strcmp(p->variants[j].format->name, last->name)))
                fmts++;
            last = p->variants[j].format;
        }
        modules += mods;
        printf("%-34s %-12s %8u %8u %8u\n", k->name, k->family, fmts, n, mods);
    }
    printf("%-34s %-12s %8s %8u %8u\n", "(all)", "", "", p->variant_count, modules);
    printf("\n%-12s %8s\n", "format", "variants");
    for (uint32_t f = 0; f < p->format_count; f++) {
        if (f && !strcmp(p->formats[f].name, p->formats[f - 1].name)) continue;
        uint32_t n = 0;
        for (uint32_t i = 0; i < p->variant_count; i++)
            n += !strcmp(p->variants[i].format->name, p->formats[f].name);
        if (n) printf("%-12s %8u\n", p->formats[f].name, n);
    }
    printf("(qkgen list --variants for the names, --axes FAMILY for a family's axes)\n");
}

/* Per format, the paths (operation, math path, fusion) it has a kernel on,
 * and why it lacks the others: what `list --formats` adds to the formats. */
static void list_paths(const qk_plan *p, const qk_spec_set *specs) {
    qk_path paths[48];
    uint32_t np = qk_plan_paths(p, paths, 48);
    if (np > 48) np = 48;
    if (!np) return;
    printf("\npaths (operation/math path[+fusion]):\n");
    for (uint32_t j = 0; j < np; j++)
        printf("  %2u  %s/%s%s%s\n", j + 1, paths[j].operation, paths[j].mma,
               paths[j].fusion[0] ? "+" : "", paths[j].fusion);
    printf("\n%-12s", "format");
    for (uint32_t j = 0; j < np; j++)
        printf(" %2u", j + 1);
    printf("\n");
    qk_str lacks = {0};
    for (uint32_t i = 0; i < p->format_count; i++) {
        const qk_format *f = &p->formats[i];
        if (i && !strcmp(f->name, p->formats[i - 1].name)) continue;
        if (!qk_spec_set_keeps(specs, NULL, f->name, f->variant)) continue;
        printf("%-12s", f->name);
        for (uint32_t j = 0; j < np; j++) {
            char why[320];
            bool has = qk_plan_format_path(p, f->name, &paths[j], why, sizeof why);
            printf("  %s", has ? "+" : ".");
            if (!has)
                qk_str_addf(&lacks, "%-12s %2u %s/%s%s%s: %s\n", f->name, j + 1, paths[j].operation,
                            paths[j].mma, paths[j].fusion[0] ? "+" : "", paths[j].fusion, why);
        }
        printf("\n");
    }
    printf("(+ has kernels on the path, . lacks them)\n");
    if (lacks.len) printf("\nwhat each format lacks, and why:\n%s", lacks.s);
    qk_str_free(&lacks);
}

int cmd_list(qk_args *a) {
    const char *spec_dir = NULL, *filter = NULL, *axes = NULL, *set_path = NULL, *specs_opt = NULL;
    bool formats = false, variants = false, dropped = false, representative = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen list [--specs DIR] [--set FILE] [--formats] [--variants]\n"
                 "                  [--dropped] [--filter A,B] [--representative]\n"
                 "                  [--axes FAMILY]\n\n"
                 "Lists the formats and how many variants and modules each kernel and format\n"
                 "of the specs (--specs DIR, or DIR as the first argument; default specs/)\n"
                 "has (the default), the variant names (--variants), or the points of the\n"
                 "search space that rules dropped, with why (--dropped).\n"
                 "--formats alone adds each format's paths: the operations and math paths\n"
                 "(dot8, coopmat, ...) it has kernels on, and why it lacks the others.\n"
                 "--set, --filter and --representative select variants as 'qkgen build'\n"
                 "does (--set FILE: a kernel set, specs/sets/*.yaml).\n"
                 "--axes FAMILY prints a family spec's axes and values with their meanings,\n"
                 "each combination's kernel and variant count or why it has none, and the\n"
                 "rules that dropped points of its tile space.");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--axes", &axes) || qk_opt(a, "--set", &set_path) ||
            qk_opt(a, "--specs", &specs_opt))
            continue;
        if (qk_flag(a, "--formats"))
            formats = true;
        else if (qk_flag(a, "--variants"))
            variants = true;
        else if (qk_flag(a, "--dropped"))
            dropped = true;
        else if (qk_flag(a, "--representative"))
            representative = true;
        else if (qk_opt(a, "--filter", &filter))
            continue;
        else if (a->argv[a->i][0] != '-' && !spec_dir)
            spec_dir = a->argv[a->i++];
        else
            return qk_bad_arg(a);
    }
    if (!qk_spec_dir_arg(a->cmd, spec_dir, specs_opt, &spec_dir)) return QK_EXIT_USAGE;
    bool counts = !formats && !variants && !dropped;
    if (counts) formats = true;
    qk_spec_set specs;
    qk_plan plan;
    if (!load_plan(a->cmd, spec_dir ? spec_dir : qk_default_specs(), set_path, &specs, &plan))
        return QK_EXIT_USAGE;
    if (axes) {
        int rc = list_axes(a->cmd, &specs, &plan, axes);
        qk_plan_free(&plan);
        qk_spec_set_free(&specs);
        return rc;
    }
    if (formats) {
        printf("%-12s %-7s %-14s %8s %7s  %s\n", "format", "layout", "options", "elements",
               "bits/w", "spec");
        for (uint32_t i = 0; i < plan.format_count; i++) {
            const qk_format *f = &plan.formats[i];
            if (i && !strcmp(f->name, plan.formats[i - 1].name)) continue;
            /* MLX scale types are options of one format, listed once; with
             * --set, the formats and options the set keeps */
            qk_str opts = {0};
            bool kept = false;
            for (uint32_t j = i; j < plan.format_count && !strcmp(plan.formats[j].name, f->name);
                 j++) {
                if (!qk_spec_set_keeps(&specs, NULL, f->name, plan.formats[j].variant)) continue;
                kept = true;
                if (plan.formats[j].variant[0])
                    qk_str_addf(&opts, "%s%s", opts.len ? "," : "", plan.formats[j].variant);
            }
            if (!kept) continue;
            double bpw = 8.0 * (double)qk_format_row_bytes(f, f->elements) / f->elements;
            printf("%-12s %-7s %-14s %8u %7.3g  %s\n", f->name,
                   f->layout == QK_LAYOUT_BLOCK ? "block" : "planar", opts.s ? opts.s : "-",
                   f->elements, bpw, f->spec->path);
            qk_str_free(&opts);
        }
    }
    if (formats && !counts) list_paths(&plan, &specs);
    if (counts) list_counts(&plan);
    if (variants) {
        if (formats) putchar('\n');
        uint32_t *picked = qk_xcalloc(plan.variant_count + 1, sizeof *picked);
        uint32_t n = qk_plan_select(&plan, filter, representative, picked);
        for (uint32_t i = 0; i < n; i++)
            printf("%s\n", plan.variants[picked[i]].name);
        printf("(%u variants)\n", n);
        free(picked);
    }
    if (dropped) {
        for (uint32_t i = 0; i < plan.dropped_count; i++)
            printf("%s: %s\n", plan.dropped[i].name, plan.dropped[i].reason);
        printf("(%u dropped)\n", plan.dropped_count);
    }
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    return QK_EXIT_OK;
}

int cmd_emit(qk_args *a) {
    const char *spec_dir = NULL, *name = NULL, *templates = qk_default_templates();
    const char *set_path = NULL;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen emit VARIANT [--specs DIR] [--set FILE] [--templates DIR]\n\n"
                 "Prints the complete GLSL generated for VARIANT (a name from 'qkgen list',\n"
                 "of the kernel set FILE with --set).");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--specs", &spec_dir) || qk_opt(a, "--templates", &templates) ||
            qk_opt(a, "--set", &set_path))
            continue;
        if (a->argv[a->i][0] != '-' && !name) {
            name = a->argv[a->i++];
            continue;
        }
        return qk_bad_arg(a);
    }
    if (!name) return qk_usage_error(a->cmd, "which variant? (see 'qkgen list --variants')");
    qk_spec_set specs;
    qk_plan plan;
    if (!load_plan(a->cmd, spec_dir ? spec_dir : qk_default_specs(), set_path, &specs, &plan))
        return QK_EXIT_USAGE;
    int rc = QK_EXIT_USAGE;
    for (uint32_t i = 0; i < plan.variant_count; i++) {
        if (strcmp(plan.variants[i].name, name)) continue;
        qk_str src = {0};
        qk_error e = {0};
        if (qk_emit_variant(&plan.variants[i], templates, &src, NULL, NULL, &e)) {
            fputs(src.s, stdout);
            rc = QK_EXIT_OK;
        } else {
            fprintf(stderr, "qkgen emit: %s\n", e.msg);
            rc = QK_EXIT_FAIL;
        }
        qk_str_free(&src);
    }
    if (rc == QK_EXIT_USAGE) qk_usage_error(a->cmd, "no variant named '%s'", name);
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    return rc;
}

int cmd_layout(qk_args *a) {
    const char *header = NULL, *name = NULL;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen layout --header FILE --struct NAME\n\n"
                 "Parses FILE with libclang and prints struct NAME's size and fields as the\n"
                 "'block:' and 'fields:' of a format spec.");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--header", &header) || qk_opt(a, "--struct", &name)) continue;
        return qk_bad_arg(a);
    }
    if (!header) return qk_usage_error(a->cmd, "--header FILE is required");
    if (!name) return qk_usage_error(a->cmd, "--struct NAME is required");
    qk_layout l;
    char err[1024];
    if (qk_layout_read(header, name, &l, err, sizeof err) != 0) {
        fprintf(stderr, "qkgen layout: %s\n", err);
        return QK_EXIT_USAGE;
    }
    qk_layout_print_yaml(&l, stdout);
    return QK_EXIT_OK;
}
