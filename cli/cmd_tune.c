/* qkgen tune and build --tuned: their arguments and cases; the run, the
 * merge, the report and the tuned bundle are the tuner's (tune/). */
#define _POSIX_C_SOURCE 200809L
#include "cli.h"
#include "ops.h"        /* the CPU references */
#include "ops_matmul.h" /* QK_F16W */
#include "qk_util.h"
#include "refs.h"
#include "spec/model.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The single case of --family/--m/--k/--tokens. */
/* An option not given (0 is a value, and out of range). */
#define UNSET UINT64_MAX

static int one_case(const char *cmd, const char *family, uint64_t m, uint64_t k, uint64_t t,
                    uint64_t e, uint64_t topk, qk_tune_case *c) {
    const char *fam = !strcmp(family, "moe")          ? "matvec_id"
                      : !strcmp(family, "moe_matmul") ? "matmul_id"
                                                      : family;
    if (strcmp(fam, "matvec") && strcmp(fam, "matmul") && strcmp(fam, "matvec_id") &&
        strcmp(fam, "matmul_id"))
        return qk_usage_error(cmd,
                              "--family: '%s' is not tuned (matvec, matmul, matvec_id or moe, "
                              "matmul_id or moe_matmul)",
                              family);
    if (m == UNSET || k == UNSET || t == UNSET)
        return qk_usage_error(cmd, "--family needs --m, --k and --tokens");
    /* the ranges of a model spec's ops and token counts (specs/models) */
    const struct {
        const char *name;
        uint64_t v, max;
    } ranges[] = {{"--m", m, 1u << 20}, {"--k", k, 1u << 20}, {"--tokens", t, 65536}};
    for (int i = 0; i < 3; i++)
        if (ranges[i].v < 1 || ranges[i].v > ranges[i].max)
            return qk_usage_error(cmd, "%s: %llu is out of range 1..%llu", ranges[i].name,
                                  (unsigned long long)ranges[i].v,
                                  (unsigned long long)ranges[i].max);
    bool id = strstr(fam, "_id") != NULL;
    if (id != (e && topk))
        return qk_usage_error(cmd,
                              id ? "%s needs --experts and --top-k"
                                 : "--experts and --top-k are for matvec_id and matmul_id",
                              fam);
    if (e > 4096 || topk > 64)
        return qk_usage_error(cmd, "--experts %llu --top-k %llu: at most 4096 experts, 64 a token",
                              (unsigned long long)e, (unsigned long long)topk);
    if (topk > e)
        return qk_usage_error(cmd, "--top-k %llu is more than --experts %llu",
                              (unsigned long long)topk, (unsigned long long)e);
    memset(c, 0, sizeof *c);
    snprintf(c->op, sizeof c->op, "%s", fam);
    c->M = (uint32_t)m, c->K = (uint32_t)k, c->T = (uint32_t)t, c->E = (uint32_t)e;
    c->top_k = (uint32_t)topk;
    return 0;
}

/* The most shards one tune splits into (far more than a fleet's GPUs). */
#define QK_MAX_SHARDS 65536u

/* --shard K/N: shard K of N, numbered from 0 as a Kubernetes indexed Job's
 * JOB_COMPLETION_INDEX and a Slurm array of 0-(N-1) number their tasks;
 * else a usage message naming the argument. */
static int parse_shard(const char *cmd, const char *arg, uint32_t *k, uint32_t *n) {
    const char *slash = strchr(arg, '/');
    if (!slash)
        return qk_usage_error(cmd, "--shard %s: not K/N (shard K of N, K from 0 to N-1)", arg);
    char *ks = strndup(arg, (size_t)(slash - arg));
    uint64_t kv, nv;
    qk_error e = {0};
    bool k_ok = qk_parse_u64(ks, 0, QK_MAX_SHARDS - 1, &kv, &e);
    free(ks);
    if (!k_ok) return qk_usage_error(cmd, "--shard %s: K: %s", arg, e.msg);
    if (!qk_parse_u64(slash + 1, 1, QK_MAX_SHARDS, &nv, &e))
        return qk_usage_error(cmd, "--shard %s: N: %s", arg, e.msg);
    if (kv >= nv)
        return qk_usage_error(cmd,
                              "--shard %s: no shard %llu of %llu: shards are numbered from 0, "
                              "0/%llu to %llu/%llu",
                              arg, (unsigned long long)kv, (unsigned long long)nv,
                              (unsigned long long)nv, (unsigned long long)(nv - 1),
                              (unsigned long long)nv);
    *k = (uint32_t)kv, *n = (uint32_t)nv;
    return 0;
}

/* Keeps shard k of n of cases[0 .. nc): every n-th case from the k-th.
 * The list is the model's order (formats, then ops, then token counts) or
 * --formats' order, made before the device is opened: the same on every
 * machine, so the shards of one tune cover each case once. Returns the
 * shard's count. */
static uint32_t shard_cases(qk_tune_case *cases, uint32_t nc, uint32_t k, uint32_t n) {
    uint32_t kept = 0;
    for (uint32_t i = k; i < nc; i += n)
        cases[kept++] = cases[i];
    return kept;
}

/* Whether op is a prefill matmul, the families with f16-activation kernels. */
static bool tiled(const char *op) {
    return !strcmp(op, "matmul") || !strcmp(op, "matmul_id");
}

static const char *fallback_name(void *user, const qk_tune_case *c) {
    const qk_variant *v =
        qk_tune_fallback(user, c->op, c->format, c->format_variant, qk_tune_case_activations(c));
    return v ? v->name : NULL;
}

/* specs_dir planned, with the kernel set at set_path applied (NULL: none),
 * on the n formats of only (NULL: every format). */
static bool load_plan_only(const char *cmd, const char *specs_dir, const char *set_path,
                           const char *const *only, uint32_t n, qk_spec_set *specs, qk_plan *plan) {
    qk_error e = {0};
    if (qk_plan_load(specs_dir, set_path, only, n, false, specs, plan, &e)) return true;
    qk_usage_error(cmd, "%s", e.msg);
    return false;
}

static bool load_plan(const char *cmd, const char *specs_dir, const char *set_path,
                      qk_spec_set *specs, qk_plan *plan) {
    return load_plan_only(cmd, specs_dir, set_path, NULL, 0, specs, plan);
}

/* False, with a message, for a database that has no record to read: the
 * lines it had (if any) were reported as ignored while loading. */
static bool has_records(const char *cmd, const char *opt, const qk_tune_db *db) {
    if (db->count) return true;
    qk_usage_error(cmd, "%s: %s: no records%s", opt, db->path,
                   db->bad || db->torn ? " (every line ignored: see above)" : "");
    return false;
}

static int report(const char *dbpath, const char *svg, const char *precision, const char *specs_dir,
                  const char *set_path) {
    qk_tune_db db;
    qk_error e = {0};
    if (!qk_is_file(dbpath)) return qk_usage_error("tune", "--report: %s: no such file", dbpath);
    const qk_input in[] = {
        {"database", dbpath}, {"spec folder", specs_dir}, {"kernel set", set_path}};
    int out_rc = svg ? qk_check_output("tune", "--svg", svg, false, in, 3) : 0;
    if (out_rc) return out_rc;
    if (!qk_tune_db_load(dbpath, &db, qk_stderr("tune"), &e)) {
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
        return QK_EXIT_FAIL;
    }
    if (!has_records("tune", "--report", &db)) {
        qk_tune_db_free(&db);
        return QK_EXIT_USAGE;
    }
    qk_spec_set specs;
    qk_plan plan;
    if (!load_plan("tune", specs_dir, set_path, &specs, &plan)) return QK_EXIT_USAGE;
    qk_tune_outcome *oc;
    uint32_t n = qk_tune_outcomes(&db, precision, fallback_name, &plan, &oc);
    const qk_tune_device *last = NULL;
    for (uint32_t i = 0; i < n; i++) {
        if (!last || !qk_tune_same_device(last, &oc[i].dev)) {
            printf("device %s (vendor 0x%x, device 0x%x, driver %u)\n", oc[i].dev.name,
                   oc[i].dev.vendor_id, oc[i].dev.device_id, oc[i].dev.driver_version);
            last = &oc[i].dev;
        }
    }
    qk_tune_report_text(stdout, oc, n);
    int rc = QK_EXIT_OK;
    if (svg) {
        qk_str s = {0};
        qk_tune_report_svg(&s, &db, oc, n);
        if (!qk_write_file(svg, s.s, s.len, &e)) {
            fprintf(stderr, "qkgen tune: %s\n", e.msg);
            rc = QK_EXIT_FAIL;
        } else {
            printf("plot: %s\n", svg);
        }
        qk_str_free(&s);
    }
    free(oc);
    qk_tune_db_free(&db);
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    return rc;
}

/* What a tune that stops before its device work frees; returns rc. */
static int setup_failed(int rc, int lock, qk_tune_case *cases, qk_plan *plan, qk_spec_set *specs) {
    if (lock >= 0) close(lock);
    free(cases);
    qk_plan_free(plan);
    qk_spec_set_free(specs);
    qk_ref_declared_clear();
    return rc;
}

static const char *usage =
    "usage: qkgen tune (--model NAME|FILE | --family F --m M --k K --tokens T\n"
    "                  [--experts E --top-k N]) [--formats A,B] [--device N] [--db FILE]\n"
    "                  [--budget SECONDS] [--strategy halving|exhaustive]\n"
    "                  [--precision f32|f16|q8|any] [--activations f32|f16]\n"
    "                  [--filter A,B] [--out DIR]\n"
    "                  [--runs N] [--warmup-ms MS] [--rotate-mb MB] [--finalists N] [--seed N]\n"
    "                  [--screen-warmup-ms MS] [--steady-ms MS] [--specs DIR] [--set FILE]\n"
    "                  [--shard K/N] [--dry-run] [--wait]\n"
    "       qkgen tune --merge A [B ...] --db C [--wait]\n"
    "       qkgen tune --report DB [--svg FILE] [--precision P]\n\n"
    "Times the candidate kernels of each case on the device and appends every\n"
    "result to the tuning database (--db, default tune.jsonl, its folder made\n"
    "where missing; docs/tuning-db.md).\n"
    "Cases come from a model's shape set (specs/models/*.yaml: each op at its\n"
    "decode token counts on the mat-vec families, at its prefill counts on the\n"
    "tiled ones; --model llama3-8b names specs/models/llama3-8b.yaml of --specs,\n"
    "else of an installed qkgen's share/qkgen, else of the source tree) or from\n"
    "one shape. Candidates are the variants of the kernel\n"
    "specs for that operation, format and activation type (no fusion) that the\n"
    "legality rules keep, the device can run and the shape allows, plus the\n"
    "operation's portable fallback, and for the prefill matmuls the two-pass\n"
    "pairs (a dequant kernel, then the product on f16w blocks, timed as one:\n"
    "twopass:<dequant>+<matmul>); they are built on demand through the\n"
    "generator and its content-hash cache into DIR/tune (default out/), from\n"
    "--specs DIR (default specs/), of the kernel set FILE only with --set\n"
    "(specs/sets/*.yaml: its kernels, formats and fusions, less its exclusions).\n"
    "Each candidate is checked against the CPU reference on the device first (a\n"
    "wrong one is recorded as wrong and never wins), then timed by qkgen bench's\n"
    "method: halving (default) screens every correct candidate over 10\n"
    "dispatches after --screen-warmup-ms (default 10; the case's first after the\n"
    "whole warm-up: --warmup-ms, default 1000, or less once --steady-ms, default\n"
    "250, has passed and the time a run takes has stopped falling over 50 ms\n"
    "windows; 0: the whole --warmup-ms), halves the field at twice the runs until\n"
    "--finalists (default 3) are left, and times those in full, in alternating\n"
    "slices of their runs (A B C, C B A, ...); exhaustive times every candidate\n"
    "in full.\n"
    "--budget spreads SECONDS over the cases left: past a case's share no more\n"
    "candidates are screened, and past the budget no case is started (a resumed\n"
    "tune measures what is left: run it again). A tune resumes from\n"
    "the database: what it has for this device and content hash is not measured\n"
    "again. --precision keeps the classes that may win: q8 (activations rounded\n"
    "to 8 bits: int8-dot kernels), f16 (f16 staging: tiled matmuls, cooperative\n"
    "matrices), f32, or any (default: each within its class's error bound).\n"
    "--activations f16 tunes the prefill matmuls (matmul, matmul_id) on f16\n"
    "activations, for an engine whose hidden state is f16: their f16-activation\n"
    "kernels are the candidates, the case and its records say f16 (a case of\n"
    "its own; qkrt_select_activations picks its winner); a model's mat-vec\n"
    "cases stay on f32, the only activations their kernels take (default f32).\n"
    "--shard K/N tunes shard K of N (K from 0 to N-1): every N-th case from the\n"
    "K-th, in an order that is the same on every machine for the same model (or\n"
    "shape), --formats and --activations, so N machines (a Slurm array job, a\n"
    "Kubernetes indexed Job) each write their own database, and --merge joins\n"
    "them into the whole tune's; a shard past the cases tunes nothing.\n"
    "--dry-run builds the candidates into DIR/tune and lists them (a shard's\n"
    "only, with --shard); nothing is timed.\n"
    "--merge writes the records of A, B, ... (and C's own) into C, each once.\n"
    "One tune or merge writes a database at a time: another finds it in use and\n"
    "exits 1, or with --wait waits for it (and then measures only what is left).\n"
    "--report prints per case the winner, its time, the fallback's time and the\n"
    "speedup, and with --svg writes a plot of the search.\n"
    "exit status: 0 done, 1 a case without a correct candidate or a device\n"
    "failure, 2 bad arguments or specs";

int cmd_tune(qk_args *a) {
    const char *model = NULL, *family = NULL, *formats = NULL, *device = NULL, *dbpath = NULL;
    const char *strategy = "halving", *precision = "any", *filter = NULL, *out = "out";
    const char *report_db = NULL, *svg = NULL, *specs_dir = qk_default_specs();
    const char *templates = qk_default_templates(), *set_path = NULL, *activations = "f32";
    const char *shard = NULL;
    uint32_t shard_k = 0, shard_n = 1;
    char *const *merge = NULL; /* --merge's databases, in argv: as many as a fleet's shards */
    uint32_t nmerge = 0;
    uint64_t m = UNSET, k = UNSET, t = UNSET, experts = 0, topk = 0, budget = 0, runs = 50,
             warm_ms = 1000;
    uint64_t rotate_mb = 200, finalists = 3, seed = (uint64_t)time(NULL);
    uint64_t screen_warm_ms = 10, steady_ms = 250;
    bool dry_run = false, wait = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts(usage);
            return QK_EXIT_OK;
        }
        if (qk_flag(a, "--dry-run")) {
            dry_run = true;
            continue;
        }
        if (qk_flag(a, "--wait")) {
            wait = true;
            continue;
        }
        if (qk_flag(a, "--merge")) {
            if (merge)
                return qk_usage_error(a->cmd, "--merge is given twice: list every database "
                                              "after one --merge");
            merge = &a->argv[a->i];
            while (a->i < a->argc && a->argv[a->i][0] != '-')
                nmerge++, a->i++;
            if (!nmerge) return qk_usage_error(a->cmd, "--merge needs the databases to merge");
            continue;
        }
        if (qk_opt(a, "--model", &model) || qk_opt(a, "--family", &family) ||
            qk_opt(a, "--formats", &formats) || qk_opt(a, "--device", &device) ||
            qk_opt(a, "--db", &dbpath) || qk_opt(a, "--strategy", &strategy) ||
            qk_opt(a, "--precision", &precision) || qk_opt(a, "--filter", &filter) ||
            qk_opt(a, "--out", &out) || qk_opt(a, "--report", &report_db) ||
            qk_opt(a, "--svg", &svg) || qk_opt(a, "--specs", &specs_dir) ||
            qk_opt(a, "--set", &set_path) || qk_opt(a, "--templates", &templates) ||
            qk_opt(a, "--activations", &activations) || qk_opt(a, "--shard", &shard) ||
            qk_opt_range(a, "--m", 1, QK_ARG_MAX_ROWS, &m) ||
            qk_opt_range(a, "--k", 1, QK_ARG_MAX_ROWS, &k) ||
            qk_opt_range(a, "--tokens", 1, 65536, &t) ||
            qk_opt_range(a, "--experts", 1, 4096, &experts) ||
            qk_opt_range(a, "--top-k", 1, 64, &topk) ||
            qk_opt_range(a, "--budget", 0, 366u * 86400, &budget) ||
            qk_opt_range(a, "--runs", 20, QK_ARG_MAX_RUNS, &runs) ||
            qk_opt_range(a, "--warmup-ms", 0, QK_ARG_MAX_MS, &warm_ms) ||
            qk_opt_range(a, "--rotate-mb", 0, 65536, &rotate_mb) ||
            qk_opt_range(a, "--finalists", 1, 64, &finalists) ||
            qk_opt_range(a, "--seed", 0, UINT64_MAX, &seed) ||
            qk_opt_range(a, "--screen-warmup-ms", 0, QK_ARG_MAX_MS, &screen_warm_ms) ||
            qk_opt_range(a, "--steady-ms", 0, QK_ARG_MAX_MS, &steady_ms))
            continue;
        return qk_bad_arg(a);
    }
    if (strcmp(precision, "f32") && strcmp(precision, "f16") && strcmp(precision, "q8") &&
        strcmp(precision, "any"))
        return qk_usage_error(a->cmd, "--precision: '%s' is not f32, f16, q8 or any", precision);
    if (strcmp(activations, "f32") && strcmp(activations, "f16"))
        return qk_usage_error(a->cmd, "--activations: '%s' is not f32 or f16", activations);
    if (shard && (nmerge || report_db))
        return qk_usage_error(a->cmd,
                              "--shard %s: shards a tune, not --merge or --report (they take "
                              "whole databases)",
                              shard);
    if (shard) {
        int src = parse_shard(a->cmd, shard, &shard_k, &shard_n);
        if (src) return src;
    }
    if (nmerge) {
        if (!dbpath) return qk_usage_error(a->cmd, "--merge needs --db OUT");
        qk_error e = {0};
        uint32_t n = 0;
        for (uint32_t i = 0; i < nmerge; i++) /* before the lock, which creates a file */
            if (!qk_is_file(merge[i]))
                return qk_usage_error(a->cmd, "--merge: %s: no such database", merge[i]);
        qk_input *in = qk_xcalloc(nmerge, sizeof *in);
        for (uint32_t i = 0; i < nmerge; i++)
            in[i] = (qk_input){"database", merge[i]};
        int out_rc = qk_check_output(a->cmd, "--db", dbpath, false, in, nmerge);
        free(in);
        if (out_rc) return out_rc;
        int lock = qk_tune_lock(dbpath, wait, qk_stderr(a->cmd));
        if (lock < 0) return QK_EXIT_FAIL;
        bool ok =
            qk_tune_db_merge((const char *const *)merge, nmerge, dbpath, qk_stderr(a->cmd), &n, &e);
        close(lock);
        if (!ok) {
            fprintf(stderr, "qkgen tune: %s\n", e.msg);
            return strstr(e.msg, "no such database") ? QK_EXIT_USAGE : QK_EXIT_FAIL;
        }
        printf("merged %u databases into %s: %u records\n", nmerge, dbpath, n);
        return QK_EXIT_OK;
    }
    if (report_db) return report(report_db, svg, precision, specs_dir, set_path);
    if (!dbpath) dbpath = "tune.jsonl";
    if (!model == !family) return qk_usage_error(a->cmd, "either --model FILE or --family F");
    if (!qk_model_arg(a->cmd, specs_dir, &model)) return QK_EXIT_USAGE;
    if (strcmp(strategy, "halving") && strcmp(strategy, "exhaustive"))
        return qk_usage_error(a->cmd, "--strategy: '%s' is not halving or exhaustive", strategy);
    /* the database is appended to and the candidates' bundle out/tune
     * replaced: neither may be, or lie in, what the tune reads, nor in each
     * other */
    if (!out[0]) return qk_usage_error(a->cmd, "--out: an empty path");
    {
        char *cand = qk_path_join(out, "tune");
        qk_input in[] = {{"model", model},
                         {"spec folder", specs_dir},
                         {"template folder", templates},
                         {"kernel set", set_path},
                         {"candidate bundle", cand}};
        const size_t n = sizeof in / sizeof in[0];
        int out_rc = qk_check_output(a->cmd, "--db", dbpath, false, in, n);
        in[n - 1] = (qk_input){"database", dbpath};
        if (!out_rc) out_rc = qk_check_output(a->cmd, "--out", cand, true, in, n);
        free(cand);
        if (out_rc) return out_rc;
    }

    /* the cases */
    qk_tune_case *cases = NULL;
    uint32_t nc = 0;
    static qk_model_spec ms; /* large: not on the stack */
    if (model) {
        qk_error e = {0};
        if (!qk_model_spec_load(model, &ms, &e)) {
            return qk_usage_error(a->cmd, "%s", e.msg);
        }
        qk_model_case *mc;
        nc = qk_model_cases(&ms, formats, &mc);
        cases = qk_xcalloc(nc + 1, sizeof *cases);
        for (uint32_t i = 0; i < nc; i++) {
            snprintf(cases[i].op, sizeof cases[i].op, "%s", mc[i].family);
            snprintf(cases[i].format, sizeof cases[i].format, "%s", mc[i].format);
            snprintf(cases[i].format_variant, sizeof cases[i].format_variant, "%s",
                     qk_tune_format_variant(mc[i].format));
            cases[i].M = mc[i].m, cases[i].K = mc[i].k, cases[i].T = mc[i].tokens;
            cases[i].E = mc[i].experts, cases[i].top_k = mc[i].top_k;
        }
        free(mc);
    } else {
        qk_tune_case c;
        int rc = one_case(a->cmd, family, m, k, t, experts, topk, &c);
        if (rc) return rc;
        if (strcmp(activations, "f32") && !tiled(c.op))
            return qk_usage_error(a->cmd,
                                  "--activations %s: the prefill matmuls have it (--family "
                                  "matmul or moe_matmul), the mat-vecs f32 only",
                                  activations);
        char fl[512];
        snprintf(fl, sizeof fl, "%s", formats ? formats : "q4_0");
        cases = qk_xcalloc(32, sizeof *cases);
        for (char *f = strtok(fl, ","); f && nc < 32; f = strtok(NULL, ",")) {
            bool dup = false; /* each case once, as a model's: a shard's is no other's */
            for (uint32_t i = 0; i < nc && !dup; i++)
                dup = !strcmp(cases[i].format, f);
            if (dup) continue;
            cases[nc] = c;
            snprintf(cases[nc].format, sizeof cases[nc].format, "%s", f);
            snprintf(cases[nc].format_variant, sizeof cases[nc].format_variant, "%s",
                     qk_tune_format_variant(f));
            nc++;
        }
    }
    /* the tiled cases' activations (--activations); the mat-vecs take f32 */
    uint32_t ntiled = 0;
    for (uint32_t i = 0; i < nc; i++) {
        ntiled += tiled(cases[i].op);
        snprintf(cases[i].activations, sizeof cases[i].activations, "%s",
                 tiled(cases[i].op) ? activations : "f32");
    }
    if (strcmp(activations, "f32") && !ntiled)
        fprintf(stderr,
                "qkgen tune: --activations %s: %s has no matmul or matmul_id case: every case "
                "is tuned on f32\n",
                activations, model ? model : "the shape");
    /* the kernels expanded on the cases' formats only: a few of the
     * search space's points, the same variants; and on f16w blocks, the
     * second pass of the prefill products' two-pass candidates */
    const char **only = qk_xcalloc(nc + 2, sizeof *only);
    for (uint32_t i = 0; i < nc; i++)
        only[i] = cases[i].format;
    const uint32_t nonly = nc + (ntiled > 0);
    if (ntiled) only[nc] = QK_F16W;
    qk_spec_set specs;
    qk_plan plan;
    bool planned = load_plan_only(a->cmd, specs_dir, set_path, only, nonly, &specs, &plan);
    free(only);
    if (!planned) {
        free(cases);
        return QK_EXIT_USAGE;
    }
    qk_error ke = {0};
    if (model && !qk_model_spec_check_kernels(&ms, &specs, &ke)) {
        fprintf(stderr, "qkgen tune: %s\n", ke.msg);
        return setup_failed(QK_EXIT_USAGE, -1, cases, &plan, &specs);
    }
    for (uint32_t i = 0; i < nc; i++) {
        const qk_format *f = qk_plan_find_format(&plan, cases[i].format);
        if (!f) {
            qk_usage_error(a->cmd, "%s: no format '%s' in %s", model ? model : "--formats",
                           cases[i].format, specs_dir);
            return setup_failed(QK_EXIT_USAGE, -1, cases, &plan, &specs);
        }
        if (cases[i].K % f->elements) { /* no kernel of the format takes a part of a block */
            qk_usage_error(a->cmd, "%s: K = %u is not a whole number of %s's %u-element blocks",
                           model ? model : "--k", cases[i].K, f->name, f->elements);
            return setup_failed(QK_EXIT_USAGE, -1, cases, &plan, &specs);
        }
    }
    /* each case's CPU reference (the format's declared one, else built in):
     * checked before anything is built or timed */
    int drc = qk_declare_refs(a->cmd, specs_dir);
    if (drc) return setup_failed(drc, -1, cases, &plan, &specs);
    for (uint32_t i = 0; i < nc; i++)
        if (!qk_ref_has(cases[i].format, cases[i].format_variant)) {
            fprintf(stderr, "qkgen tune: " QK_NO_REFERENCE "\n", cases[i].format);
            return setup_failed(QK_EXIT_USAGE, -1, cases, &plan, &specs);
        }
    /* this machine's shard of the cases, every case checked above first so
     * that every shard refuses what one refuses */
    const uint32_t all_cases = nc;
    char shard_of[96] = ""; /* "shard 2/4: 13 of 50 cases", for the progress and the summary */
    if (shard) {
        nc = shard_cases(cases, nc, shard_k, shard_n);
        snprintf(shard_of, sizeof shard_of, "shard %u/%u: %u of %u cases", shard_k, shard_n, nc,
                 all_cases);
    }
    if (shard && !nc) { /* more shards than cases: a batch system's spare task */
        printf("%s: nothing to tune, no database written\n", shard_of);
        return setup_failed(QK_EXIT_OK, -1, cases, &plan, &specs);
    }
    qk_tune_run_opts ro = {.db = dbpath,
                           .out = out,
                           .templates = templates,
                           .device = device,
                           .kernel_count = model ? ms.kernel_count : 0,
                           .kernels = ms.kernels,
                           .precision = precision,
                           .filter = filter,
                           .exhaustive = !strcmp(strategy, "exhaustive"),
                           .dry_run = dry_run,
                           .wait = wait,
                           .budget_s = budget,
                           .runs = runs,
                           .warm_ms = warm_ms,
                           .rotate_mb = rotate_mb,
                           .finalists = finalists,
                           .seed = seed,
                           .screen_warm_ms = screen_warm_ms,
                           .steady_ms = steady_ms,
                           .shard_k = shard_k,
                           .shard_n = shard ? shard_n : 0,
                           .shard_of = shard_of,
                           .log = qk_stderr(a->cmd)};
    return setup_failed(qk_tune_run(&ro, &specs, &plan, cases, nc), -1, cases, &plan, &specs);
}

int cmd_build_tuned(qk_args *a) {
    const char *spec_dir = NULL, *out = "out", *name = "tuned", *dbpath = NULL, *model = NULL;
    const char *templates = qk_default_templates(), *precision = "any", *set_path = NULL;
    const char *specs_opt = NULL;
    uint64_t within = 3;
    bool quiet = false, specialize = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen build [--specs DIR] --tuned DB [--model NAME|FILE]\n"
                 "                   [--precision P] [--out DIR] [--name NAME] [--within PCT] "
                 "[--templates DIR]\n"
                 "                   [--set FILE] [--specialize] [--quiet]\n\n"
                 "Writes DIR/NAME (default out/tuned): the fastest correct kernel of each case\n"
                 "of the tuning database DB (of the model's cases with --model) on each device\n"
                 "it holds, among the precision classes P allows (f32, f16, q8 or any, the\n"
                 "default), plus one portable fallback per operation, format and activation\n"
                 "type (none for f16 activations of the K-quants and mxfp4: NVIDIA-only\n"
                 "kernels), and a select table in the manifest (docs/manifest.md,\n"
                 "\"Selection\") that says which kernel runs for a device, operation, format\n"
                 "and shape: the rules tuned on that device, else on a sibling of its family\n"
                 "(device ids that differ in their low 8 bits), else on another device of its\n"
                 "vendor, else the fallbacks. Records of variants whose\n"
                 "SPIR-V the generator no longer makes are ignored with a message. Where one\n"
                 "kernel is within --within percent (default 3; 0: off) of a case's best, by\n"
                 "the times of one stage, it serves that case too, so the bundle holds fewer.\n"
                 "--set FILE takes winners and fallbacks from that kernel set only\n"
                 "(specs/sets/*.yaml), as the tune that wrote DB did with --set.\n"
                 "Each kernel is a module of its own, its tile sizes compiled in: a tuned\n"
                 "bundle has few, and an engine then passes no specialization constants\n"
                 "(both forms time within 2% on the H100, docs/ARCHITECTURE.md).\n"
                 "--specialize keeps them as specialization constants, one module per\n"
                 "path, as in the default bundle and the database's records.");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--tuned", &dbpath) || qk_opt(a, "--model", &model) ||
            qk_opt(a, "--out", &out) || qk_opt(a, "--name", &name) ||
            qk_opt(a, "--templates", &templates) || qk_opt(a, "--precision", &precision) ||
            qk_opt(a, "--set", &set_path) || qk_opt_range(a, "--within", 0, 100, &within) ||
            qk_opt(a, "--specs", &specs_opt))
            continue;
        if (qk_flag(a, "--quiet") || qk_flag(a, "-q")) {
            quiet = true;
            continue;
        }
        if (qk_flag(a, "--specialize")) {
            specialize = true;
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
    if (strcmp(precision, "f32") && strcmp(precision, "f16") && strcmp(precision, "q8") &&
        strcmp(precision, "any"))
        return qk_usage_error(a->cmd, "--precision: '%s' is not f32, f16, q8 or any", precision);
    if (!qk_model_arg(a->cmd, spec_dir, &model)) return QK_EXIT_USAGE;
    if (!qk_is_file(dbpath)) return qk_usage_error(a->cmd, "--tuned: %s: no such file", dbpath);
    if (!out[0]) return qk_usage_error(a->cmd, "--out: an empty path");
    char *bundle_dir = qk_path_join(out, name); /* replaced as a whole */
    const qk_input in[] = {{"database", dbpath},
                           {"model", model},
                           {"spec folder", spec_dir},
                           {"template folder", templates},
                           {"kernel set", set_path}};
    int out_rc = qk_check_output(a->cmd, "--out", bundle_dir, true, in, sizeof in / sizeof in[0]);
    free(bundle_dir);
    if (out_rc) return out_rc;
    double t0 = qk_now_s();
    static qk_model_spec ms;
    qk_model_case *mc = NULL;
    uint32_t nmc = 0;
    qk_error e = {0};
    if (model) {
        if (!qk_model_spec_load(model, &ms, &e)) {
            return qk_usage_error(a->cmd, "%s", e.msg);
        }
        nmc = qk_model_cases(&ms, NULL, &mc);
    }
    qk_spec_set specs;
    qk_plan plan;
    if (!load_plan(a->cmd, spec_dir, set_path, &specs, &plan)) return QK_EXIT_USAGE;
    if (model && !qk_model_spec_check_kernels(&ms, &specs, &e)) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        free(mc);
        qk_plan_free(&plan);
        qk_spec_set_free(&specs);
        return QK_EXIT_USAGE;
    }
    qk_tune_bundle_opts bo = {.db = dbpath,
                              .model = model,
                              .cases = mc,
                              .case_count = nmc,
                              .precision = precision,
                              .within = within / 100.0,
                              .specialize = specialize,
                              .quiet = quiet,
                              .spec_dir = spec_dir,
                              .set_path = set_path,
                              .templates = templates,
                              .out = out,
                              .name = name,
                              .t0 = t0,
                              .log = qk_stderr(a->cmd)};
    int rc = qk_tune_build_bundle(&bo, &specs, &plan);
    free(mc);
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    return rc;
}
