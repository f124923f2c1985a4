/* qkgen tune: times the candidates of a model's cases (or one case) on the
 * device through the bench's timing path and records every result in the
 * tuning database; also --merge and --report. `build --tuned` is here too. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "cli.h"
#include "compile/compile.h"
#include "qk_util.h"
#include "refs.h"
#include "spec/model.h"
#include "qk_json.h" /* libqkrt's reader, for the manifest's kernel entries */
#include "tune.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What one tune run shares with the bench's hooks. */
typedef struct tune_run {
    qk_tune_db db;
    qk_tune_device dev;
    const qk_tune_case *c;
    char **names, **hashes; /* the work bundle's content hashes */
    uint32_t nh;
    bool exhaustive;
    double warm_ms, screen_warm_ms, steady_ms; /* --warmup-ms, --screen-warmup-ms, --steady-ms:
                                                  the records' notes */
    uint32_t done, total;                      /* candidates measured, of all cases */
    double t0;
    uint32_t case_i, case_n, case_done, case_total;
    char shard[40]; /* "shard 2/4, " under --shard: the bar says which shard runs */
    bool tty, failed_write;
    qk_error e;
    double phase_s[QK_BENCH_PHASES]; /* the case's time by phase (qk_bench_opts) */
    double db_s;                     /* of it, appending records (a write and fsync each) */
} tune_run;

static const char *hash_of(void *user, const char *variant) {
    const tune_run *t = user;
    for (uint32_t i = 0; i < t->nh; i++)
        if (!strcmp(t->names[i], variant)) return t->hashes[i];
    return NULL;
}

static void bar(tune_run *t, const char *kernel) {
    if (!t->tty) return;
    double el = qk_now_s() - t->t0;
    uint32_t left = t->total > t->done ? t->total - t->done : 0;
    char eta[32] = "?";
    if (t->done) snprintf(eta, sizeof eta, "%.0f s", el / t->done * left);
    fprintf(stderr, "\r\033[K[%scase %u/%u] %s %s m=%u k=%u t=%u: %u/%u done, %u left, ETA %s  %s",
            t->shard, t->case_i + 1, t->case_n, t->c->op, t->c->format, t->c->M, t->c->K, t->c->T,
            t->case_done, t->case_total, left, eta, kernel);
    fflush(stderr);
}

static bool prior(void *user, const qkrt_kernel_info *k, qk_bench_result *r) {
    tune_run *t = user;
    const char *h = hash_of(t, k->name);
    if (!h) return false;
    const qk_tune_record *p = qk_tune_db_find(&t->db, &t->dev, k->name, h, t->c, "full");
    if (!p) p = qk_tune_db_find(&t->db, &t->dev, k->name, h, t->c, "check");
    if (!p && !t->exhaustive) p = qk_tune_db_find(&t->db, &t->dev, k->name, h, t->c, "screen");
    if (!p) return false;
    r->ok = !strcmp(p->status, "ok");
    r->unsupported = !strcmp(p->status, "unsupported");
    r->nmse = p->nmse;
    snprintf(r->error, sizeof r->error, "%s", r->ok ? "" : p->note);
    if (!strcmp(p->stage, "full"))
        r->timed = true, r->us = p->us, r->us_min = p->us_min, r->us_max = p->us_max,
        r->runs = p->runs;
    else if (!strcmp(p->stage, "screen"))
        r->us_screen = p->us, r->screen_runs = p->runs;
    t->case_done++, t->done++;
    return true;
}

static void record(void *user, const qkrt_kernel_info *k, const qk_bench_result *r,
                   const char *stage) {
    tune_run *t = user;
    if (t->failed_write) return; /* the database stopped at its first lost record */
    qk_tune_record rec = {0};
    rec.dev = t->dev;
    snprintf(rec.variant, sizeof rec.variant, "%s", k->name);
    snprintf(rec.family, sizeof rec.family, "%s", k->family);
    const char *h = hash_of(t, k->name);
    snprintf(rec.spv_sha256, sizeof rec.spv_sha256, "%s", h ? h : "");
    rec.c = *t->c;
    snprintf(rec.precision, sizeof rec.precision, "%s", k->precision);
    rec.nmse = r->nmse;
    bool check = !strcmp(stage, "check");
    snprintf(rec.status, sizeof rec.status, "%s",
             !check                           ? "ok"
             : r->unsupported                 ? "unsupported"
             : !strncmp(r->error, "wrong", 5) ? "wrong"
                                              : "failed");
    snprintf(rec.stage, sizeof rec.stage, "%s", stage);
    if (!strcmp(stage, "screen"))
        rec.us = rec.us_min = rec.us_max = r->us_screen, rec.runs = r->screen_runs;
    else if (!check)
        rec.us = r->us, rec.us_min = r->us_min, rec.us_max = r->us_max, rec.runs = r->runs;
    char steady[48] = ""; /* the case's first warm-up may end sooner (--steady-ms) */
    if (t->steady_ms > 0)
        snprintf(steady, sizeof steady, ", or from %.0f ms once steady", t->steady_ms);
    if (check)
        snprintf(rec.note, sizeof rec.note, "%s", r->error);
    else if (!strcmp(stage, "screen"))
        snprintf(rec.note, sizeof rec.note,
                 "screen: median of %u dispatches after a %.0f ms "
                 "warm-up (the case's first: %.0f ms%s)",
                 r->screen_runs, t->screen_warm_ms, t->warm_ms, steady);
    else if (t->exhaustive)
        snprintf(rec.note, sizeof rec.note,
                 "full: median of %u dispatches between barriers "
                 "after a warm-up of %.0f ms or more",
                 r->runs, t->warm_ms / 4);
    else
        snprintf(rec.note, sizeof rec.note,
                 "full: median of %u dispatches between barriers, in slices "
                 "alternating with the other finalists', after a warm-up of %.0f ms "
                 "following the screen (%.0f ms where none ran)",
                 r->runs, 3 * t->screen_warm_ms, t->warm_ms);
    rec.time = (double)time(NULL);
    const double tw = qk_now_s();
    if (!qk_tune_db_append(&t->db, &rec, &t->e)) t->failed_write = true;
    t->db_s += qk_now_s() - tw;
    if (strcmp(stage, "full") || !r->us_screen) t->case_done++, t->done++;
    bar(t, k->name);
}

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

static void device_of(qkrt_context *ctx, qk_tune_device *d) {
    qkrt_device_identity id;
    qkrt_device_identify(ctx, &id);
    memset(d, 0, sizeof *d);
    d->vendor_id = id.vendor_id, d->device_id = id.device_id;
    d->driver_version = id.driver_version;
    for (int i = 0; i < 16; i++)
        snprintf(d->cache_uuid + 2 * i, 3, "%02x", id.pipeline_cache_uuid[i]);
    snprintf(d->name, sizeof d->name, "%.127s", id.name);
}

/* qk_tune_outcomes' fallback_of of one case: user is its fallback's name. */
static const char *case_fallback(void *user, const qk_tune_case *c) {
    (void)c;
    return user;
}

static const char *fallback_name(void *user, const qk_tune_case *c) {
    const qk_variant *v =
        qk_tune_fallback(user, c->op, c->format, c->format_variant, qk_tune_case_activations(c));
    return v ? v->name : NULL;
}

/* The fallback's time and its ratio to the winner as --report computes them
 * for case c from the records of db on dev (qk_tune_outcome_speedup): the
 * tune's line and the report agree. *fb_us 0: the fallback has no time. */
static double case_speedup(const qk_tune_db *db, const qk_tune_device *dev, const qk_tune_case *c,
                           const char *precision, const char *fallback, double *fb_us,
                           bool *fb_full) {
    qk_tune_db one = {.recs = qk_xmalloc(sizeof *one.recs * (db->count + 1))};
    for (uint32_t i = 0; i < db->count; i++)
        if (qk_tune_same_device(&db->recs[i].dev, dev) && qk_tune_same_case(&db->recs[i].c, c))
            one.recs[one.count++] = db->recs[i];
    qk_tune_outcome *oc = NULL;
    uint32_t n = qk_tune_outcomes(&one, precision, case_fallback, (void *)fallback, &oc);
    double x = n ? qk_tune_outcome_speedup(&oc[0]) : 0;
    *fb_us = n && oc[0].fallback ? oc[0].fallback->us : 0;
    *fb_full = n && oc[0].fallback && !strcmp(oc[0].fallback->stage, "full");
    free(oc);
    free(one.recs);
    return x;
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

static bool takes_q8(const qk_variant *v) {
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t nb = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < nb; i++)
        if (!strcmp(b[i].role, "activations_q8") && !b[i].writable) return true;
    return false;
}

/* The database's lock for this run, or -1 with the message printed: one
 * tune or merge writes a database at a time (docs/tuning-db.md). */
static int lock_db(const char *dbpath, bool wait) {
    bool busy;
    qk_error e = {0};
    int fd = qk_tune_db_lock(dbpath, wait, qk_stderr("tune"), &busy, &e);
    if (fd < 0 && busy)
        fprintf(stderr,
                "qkgen tune: %s is in use by another qkgen tune or --merge (%s); run this one "
                "when it ends, or pass --wait to wait for it\n",
                dbpath, e.msg);
    else if (fd < 0)
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
    return fd;
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
    "operation's portable fallback; they are built on demand through the\n"
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
        int lock = lock_db(dbpath, wait);
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
     * search space's points, the same variants */
    const char **only = qk_xcalloc(nc ? nc : 1, sizeof *only);
    for (uint32_t i = 0; i < nc; i++)
        only[i] = cases[i].format;
    qk_spec_set specs;
    qk_plan plan;
    bool planned = load_plan_only(a->cmd, specs_dir, set_path, only, nc, &specs, &plan);
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
    /* held from before the database is loaded until the last record: a
     * second writer would measure the same candidates again, and a merge
     * would replace the file under this one's appends */
    int lock = dry_run ? -2 : lock_db(dbpath, wait);
    if (lock == -1) return setup_failed(QK_EXIT_FAIL, -1, cases, &plan, &specs);
    qkrt_context *ctx = NULL;
    qkrt_desc desc = {.device = device};
    if (qkrt_create(&desc, &ctx) != QKRT_OK) {
        fprintf(stderr, "qkgen tune: %s\n", qkrt_create_error());
        return setup_failed(device ? QK_EXIT_USAGE : QK_EXIT_FAIL, lock, cases, &plan, &specs);
    }
    const qkrt_device_info *dev = qkrt_device(ctx);
    qk_tune_space space = {.kernel_count = model ? ms.kernel_count : 0,
                           .kernels = ms.kernels,
                           .precision = precision,
                           .dev = dev,
                           .filter = filter};
    /* every case's candidates and fallback, built at once */
    bool *want = qk_xcalloc(plan.variant_count + 1, sizeof *want);
    const char **fb = qk_xcalloc(nc + 1, sizeof *fb);
    uint32_t total = 0, *per_case = qk_xcalloc(nc + 1, sizeof *per_case);
    bool any_q8 = false;
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < plan.variant_count; i++)
            if (qk_tune_candidate(&plan.variants[i], &cases[c], &space))
                want[i] = true, n++, any_q8 |= takes_q8(&plan.variants[i]);
        const qk_variant *f =
            qk_tune_fallback(&plan, cases[c].op, cases[c].format, cases[c].format_variant,
                             qk_tune_case_activations(&cases[c]));
        if (f) want[f - plan.variants] = true, fb[c] = f->name;
        per_case[c] = n + 1;
        total += n + 1;
    }
    for (uint32_t i = 0; any_q8 && i < plan.variant_count; i++)
        if (!strcmp(plan.variants[i].kernel->family, "quantize")) want[i] = true;
    tune_run tr = {.exhaustive = !strcmp(strategy, "exhaustive"),
                   .tty = isatty(2),
                   .case_n = nc,
                   .total = total};
    device_of(ctx, &tr.dev);
    if (shard) snprintf(tr.shard, sizeof tr.shard, "shard %u/%u, ", shard_k, shard_n);
    tr.warm_ms = (double)warm_ms, tr.screen_warm_ms = (double)screen_warm_ms;
    tr.steady_ms = (double)steady_ms;
    char count[112];
    if (shard)
        snprintf(count, sizeof count, "%s", shard_of);
    else
        snprintf(count, sizeof count, "%u cases", nc);
    printf("device %u: %s (vendor 0x%x, device 0x%x, driver %u), %s, seed %llu\n", dev->index,
           dev->name, tr.dev.vendor_id, tr.dev.device_id, tr.dev.driver_version, count,
           (unsigned long long)seed);
    qk_build_stats st;
    qk_error e = {0};
    double t_build = qk_now_s();
    int rc = QK_EXIT_OK;
    qkrt_bundle *b = NULL;
    char *bundle_dir = qk_path_join(out, "tune");
    if (!qk_tune_build_subset(&specs, &plan, want, templates, out, "tune", !tr.tty, &st, &e)) {
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
        rc = QK_EXIT_FAIL;
    } else {
        printf("candidates: %u variants in %s (%u compiled, %u from cache) in %.1f s\n",
               st.variants, st.path, st.compiled, st.cached, qk_now_s() - t_build);
        if (qkrt_bundle_load(ctx, bundle_dir, &b) != QKRT_OK ||
            !qk_tune_manifest_hashes(bundle_dir, &tr.names, &tr.hashes, &tr.nh, &e)) {
            fprintf(stderr, "qkgen tune: %s\n", b ? e.msg : qkrt_last_error(ctx));
            rc = QK_EXIT_FAIL;
        }
    }
    if (rc == QK_EXIT_OK && !qk_tune_db_load(dbpath, &tr.db, qk_stderr(a->cmd), &e)) {
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
        rc = QK_EXIT_FAIL;
    }
    if (rc == QK_EXIT_OK) {
        /* the records of this run's candidates: the others (other cases,
         * formats or activations) are neither resumed nor stale here */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < tr.db.count; i++)
            if (hash_of(&tr, tr.db.recs[i].variant)) tr.db.recs[kept++] = tr.db.recs[i];
        tr.db.count = kept;
        qk_tune_db_keep(&tr.db, &tr.dev, hash_of, &tr, stdout);
    }
    qk_bench_opts o = {.runs = (uint32_t)runs,
                       .warmup_s = warm_ms / 1e3,
                       .rewarm_s = warm_ms / 4e3,
                       .rotate_bytes = rotate_mb << 20,
                       .finalists = tr.exhaustive ? 0 : (uint32_t)finalists,
                       .halving = !tr.exhaustive,
                       .screen_warmup_s = screen_warm_ms / 1e3,
                       .warmup_steady_s = steady_ms / 1e3,
                       .seed = seed,
                       .prior = prior,
                       .record = record,
                       .user = &tr,
                       .phase_s = tr.phase_s};
    tr.t0 = qk_now_s();
    if (dry_run && rc == QK_EXIT_OK) { /* the candidates built, nothing timed */
        for (uint32_t c = 0; c < nc; c++) {
            char label[160];
            qk_tune_case_label(&cases[c], label, sizeof label);
            printf("%s: %u candidates (the fallback %s included)\n", label, per_case[c],
                   fb[c] ? fb[c] : "(none)");
        }
        nc = 0;
    }
    uint32_t no_winner = 0;
    uint32_t tuned = nc;
    for (uint32_t c = 0; c < nc && rc == QK_EXIT_OK; c++) {
        if (budget && qk_now_s() - tr.t0 >= (double)budget) { /* the rest for a later run */
            printf("budget of %llu s spent: %u cases%s%.*s left for a later run (it resumes)\n",
                   (unsigned long long)budget, nc - c, shard ? " of " : "",
                   shard ? (int)strlen(tr.shard) - 2 : 0, tr.shard);
            tuned = c;
            break;
        }
        qk_bench_case bc = {cases[c].op, cases[c].format, cases[c].format_variant,
                            cases[c].M,  cases[c].K,      cases[c].T,
                            cases[c].E,  cases[c].top_k};
        tr.c = &cases[c], tr.case_i = c, tr.case_done = 0;
        o.always = fb[c];
        o.activation = qk_tune_case_activations(&cases[c]);
        /* the budget left, shared among the cases left */
        double left = budget ? (double)budget - (qk_now_s() - tr.t0) : 0;
        o.deadline = budget ? qk_now_s() + fmax(left, 0) / (nc - c) : 0;
        qk_bench_result *res = NULL;
        uint32_t nres = 0;
        char err[512] = "";
        double tc = qk_now_s();
        memset(tr.phase_s, 0, sizeof tr.phase_s), tr.db_s = 0;
        tr.case_total = per_case[c];
        bar(&tr, "");
        qkrt_result r = qk_bench_case_run(ctx, b, &bc, &o, 0, &res, &nres, err, sizeof err);
        if (tr.tty) fputs("\r\033[K", stderr);
        /* the plan's count was an upper bound (the bench keeps the token
         * tiles that fit): what was not measured leaves the total */
        if (per_case[c] > tr.case_done) tr.total -= per_case[c] - tr.case_done;
        if (tr.failed_write) {
            fprintf(stderr, "qkgen tune: %s\n", tr.e.msg);
            rc = QK_EXIT_FAIL;
        }
        const qk_bench_result *best = NULL;
        uint32_t wrong = 0, failed = 0, skipped = 0, unsupported = 0;
        for (uint32_t i = 0; i < nres; i++) {
            const qk_bench_result *q = &res[i];
            wrong += !q->ok && !strncmp(q->error, "wrong", 5);
            skipped += q->skipped;
            unsupported += q->unsupported; /* the device's, not the kernel's, doing */
            failed += !q->ok && q->error[0] && strncmp(q->error, "wrong", 5) && !q->skipped &&
                      !q->unsupported;
            if (q->ok && q->timed && (!best || q->us < best->us)) best = q;
        }
        char shape[160];
        qk_tune_case_label(&cases[c], shape, sizeof shape);
        /* the fallback's time and ratio as --report prints them: at one
         * stage, from the records (a screen record is the first screen's,
         * not a halving round's) */
        double fb_us = 0;
        bool fb_full = false;
        const double fb_x =
            best ? case_speedup(&tr.db, &tr.dev, &cases[c], precision, fb[c], &fb_us, &fb_full) : 0;
        if (r != QKRT_OK) {
            fprintf(stderr, "qkgen tune: %s: %s\n", shape, err);
            if (r != QKRT_ERROR_ARGUMENT) rc = QK_EXIT_FAIL;
            no_winner++;
        } else if (best) {
            char fbs[64] = "fallback not measured";
            if (fb_x > 0)
                snprintf(fbs, sizeof fbs, "fallback %.2f%s us (%.2fx)", fb_us, fb_full ? "" : "s",
                         fb_x);
            const double *ph = tr.phase_s;
            printf("%-40s %3u candidates (%u wrong, %u failed, %u unsupported%s%.0u%s): %s %.2f "
                   "us; %s; %.1f s "
                   "(setup %.1f, pipelines %.1f, checks %.1f, screen %.1f, halving %.1f, "
                   "final %.1f; records %.1f)\n",
                   shape, nres, wrong, failed, unsupported, skipped ? ", " : "", skipped,
                   skipped ? " over budget" : "", best->kernel, best->us, fbs, qk_now_s() - tc,
                   ph[QK_PH_SETUP], ph[QK_PH_PIPELINES], ph[QK_PH_CHECK], ph[QK_PH_SCREEN],
                   ph[QK_PH_HALVING], ph[QK_PH_FINAL], tr.db_s);
        } else {
            printf("%-40s %3u candidates (%u wrong, %u failed, %u unsupported): no correct "
                   "candidate\n",
                   shape, nres, wrong, failed, unsupported);
            no_winner++;
        }
        fflush(stdout);
        free(res);
    }
    if (rc == QK_EXIT_OK && !dry_run)
        printf("tuned %u cases%s%s%s in %.1f s (device work and checks); database %s: %u records "
               "of these candidates\n",
               tuned, shard ? " (" : "", shard_of, shard ? ")" : "", qk_now_s() - tr.t0, dbpath,
               tr.db.count);
    if (ctx && qkrt_validation_errors(ctx)) {
        fprintf(stderr, "qkgen tune: the validation layer reported %u errors\n",
                qkrt_validation_errors(ctx));
        rc = QK_EXIT_FAIL;
    }
    if (rc == QK_EXIT_OK && no_winner) rc = QK_EXIT_FAIL;
    for (uint32_t i = 0; i < tr.nh; i++)
        free(tr.names[i]), free(tr.hashes[i]);
    free(tr.names), free(tr.hashes), free(want), free(fb), free(cases), free(bundle_dir);
    free(per_case);
    qk_tune_db_free(&tr.db);
    if (lock >= 0) close(lock);
    if (b) qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    qk_ref_declared_clear();
    return rc;
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
    qk_tune_db db;
    if (!qk_tune_db_load(dbpath, &db, qk_stderr(a->cmd), &e)) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        return QK_EXIT_FAIL;
    }
    if (!has_records("build", "--tuned", &db)) {
        qk_tune_db_free(&db);
        qk_plan_free(&plan);
        qk_spec_set_free(&specs);
        free(mc);
        return QK_EXIT_USAGE;
    }
    /* the content hashes the generator makes now, for every variant the
     * database names: records of others are stale */
    bool *want = qk_xcalloc(plan.variant_count + 1, sizeof *want);
    uint32_t named = 0;
    for (uint32_t i = 0; i < plan.variant_count; i++)
        for (uint32_t j = 0; j < db.count && !want[i]; j++)
            if (!strcmp(db.recs[j].variant, plan.variants[i].name)) want[i] = true, named++;
    tune_run tr = {0};
    qk_build_stats st;
    char check_name[300];
    snprintf(check_name, sizeof check_name, ".%s-hashes", name);
    char *check_dir = qk_path_join(out, check_name);
    int rc = QK_EXIT_OK;
    if (named &&
        (!qk_tune_build_subset(&specs, &plan, want, templates, out, check_name, quiet, &st, &e) ||
         !qk_tune_manifest_hashes(check_dir, &tr.names, &tr.hashes, &tr.nh, &e))) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        rc = QK_EXIT_FAIL;
    }
    qk_rmtree(check_dir);
    free(check_dir);
    qk_tune_db_keep(&db, NULL, hash_of, &tr, qk_stderr(a->cmd));
    qk_tune_drop_misfits(&db, &plan, dbpath, qk_stderr(a->cmd));
    if (rc == QK_EXIT_OK && !db.count && !model)
        rc = qk_usage_error(a->cmd,
                            "--tuned: %s: no record of a variant the generator makes for its "
                            "case (see above)",
                            dbpath);
    /* the winners (of the model's cases), and a fallback per operation */
    qk_tune_outcome *oc = NULL;
    uint32_t n = rc ? 0 : qk_tune_outcomes(&db, precision, fallback_name, &plan, &oc), kept = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!model || qk_tune_model_has(mc, nmc, &oc[i].c)) oc[kept++] = oc[i];
    n = kept;
    /* fewer kernels where one serves several cases within --within percent */
    if (within && n) qk_tune_consolidate(&db, oc, n, within / 100.0, precision);
    qk_tune_default *defs = qk_xcalloc(n + nmc + 1, sizeof *defs);
    uint32_t nd = 0, winners = 0;
    memset(want, 0, sizeof *want * plan.variant_count);
    bool any_q8 = false;
    for (uint32_t i = 0; i < n + nmc && rc == QK_EXIT_OK; i++) {
        qk_tune_case c = {0};
        if (i < n) {
            c = oc[i].c;
            if (oc[i].best) {
                for (uint32_t v = 0; v < plan.variant_count; v++)
                    if (!strcmp(plan.variants[v].name, oc[i].best->variant))
                        want[v] = true, winners++, any_q8 |= takes_q8(&plan.variants[v]);
            } else {
                char label[160];
                qk_tune_case_label(&c, label, sizeof label);
                fprintf(stderr,
                        "qkgen build: %s: no correct candidate in %s: the fallback serves it\n",
                        label, dbpath);
            }
        } else {
            snprintf(c.op, sizeof c.op, "%s", mc[i - n].family);
            snprintf(c.format, sizeof c.format, "%s", mc[i - n].format);
            snprintf(c.format_variant, sizeof c.format_variant, "%s",
                     qk_tune_format_variant(c.format));
        }
        bool dup = false;
        for (uint32_t d = 0; d < nd && !dup; d++)
            dup = !strcmp(defs[d].op, c.op) && !strcmp(defs[d].format, c.format) &&
                  !strcmp(defs[d].option, c.format_variant) &&
                  !strcmp(defs[d].activations, qk_tune_case_activations(&c));
        if (dup) continue;
        const char *act = qk_tune_case_activations(&c);
        const qk_variant *f = qk_tune_fallback(&plan, c.op, c.format, c.format_variant, act);
        if (!f && !strcmp(act, "f32")) {
            fprintf(stderr, "qkgen build: no %s kernel for %s in %s\n", c.op, c.format, spec_dir);
            rc = QK_EXIT_USAGE;
            break;
        }
        if (!f) /* f16 activations of a K-quant or mxfp4: its tuned rules only */
            fprintf(stderr,
                    "qkgen build: no %s kernel for %s on %s activations runs on every device: "
                    "no default rule for them (other devices' queries find none)\n",
                    c.op, c.format, act);
        if (f) want[f - plan.variants] = true, any_q8 |= takes_q8(f);
        qk_tune_default *d = &defs[nd++];
        snprintf(d->op, sizeof d->op, "%s", c.op);
        snprintf(d->format, sizeof d->format, "%s", c.format);
        snprintf(d->option, sizeof d->option, "%s", c.format_variant);
        snprintf(d->activations, sizeof d->activations, "%s", act);
        snprintf(d->kernel, sizeof d->kernel, "%s", f ? f->name : ""); /* "": none */
        snprintf(d->precision, sizeof d->precision, "%s", f ? qk_variant_precision(f) : "");
    }
    if (model && rc == QK_EXIT_OK) /* every case of the model is tuned, or says so */
        for (uint32_t i = 0; i < nmc; i++) {
            bool tuned = false;
            for (uint32_t j = 0; j < n && !tuned; j++)
                tuned = oc[j].best && !strcmp(qk_tune_case_activations(&oc[j].c), "f32") &&
                        !strcmp(oc[j].c.op, mc[i].family) &&
                        !strcmp(oc[j].c.format, mc[i].format) && oc[j].c.M == mc[i].m &&
                        oc[j].c.K == mc[i].k && oc[j].c.T == mc[i].tokens;
            if (!tuned)
                fprintf(stderr,
                        "qkgen build: %s %s m=%u k=%u t=%u of %s is not in %s: the "
                        "fallback serves it\n",
                        mc[i].family, mc[i].format, mc[i].m, mc[i].k, mc[i].tokens, model, dbpath);
        }
    for (uint32_t i = 0; any_q8 && i < plan.variant_count; i++)
        if (!strcmp(plan.variants[i].kernel->family, "quantize")) want[i] = true;
    /* A model with experts also gets what an engine runs around the tuned
     * products of its MoE layer (qkgen bench --layer records it so): the
     * router's top-k, the routing, the weighted sum and SwiGLU (a handful of
     * small kernels; those with weights in the model's formats only), and
     * each expert winner's swiglu-fused sibling, which computes gate and up
     * at once, and that sibling's ranked form, which ranks the router's
     * logits itself. */
    bool moe = false;
    for (uint32_t i = 0; i < nmc; i++)
        moe |= !strcmp(mc[i].family, "matvec_id") || !strcmp(mc[i].family, "matmul_id");
    for (uint32_t i = 0; moe && rc == QK_EXIT_OK && i < plan.variant_count; i++) {
        const qk_variant *v = &plan.variants[i];
        if (qk_tune_moe_aux(v->kernel->family) && qk_tune_runs_format(v, oc, n, defs, nd))
            want[i] = true;
        for (uint32_t j = 0; j < n && !want[i]; j++)
            want[i] = oc[j].best && (qk_tune_is_fused_sibling(v, oc[j].best->variant) ||
                                     qk_tune_is_ranked_sibling(v, oc[j].best->variant));
    }
    /* Rules for every other operation an engine records (docs/manifest.md,
     * "Selection"): each kept MoE-layer kernel, quantizer and fused sibling
     * under its op ("family" or "family/fusion") and format ("none" for
     * the kernels without weights), in plan order; a query takes the first
     * that its device runs and its shape fits. */
    const uint32_t nd_products = nd; /* the products' fallbacks, listed below */
    defs = qk_xrealloc(defs, sizeof *defs * (nd + plan.variant_count + 1));
    for (uint32_t i = 0; rc == QK_EXIT_OK && i < plan.variant_count; i++) {
        const qk_variant *v = &plan.variants[i];
        if (!want[i] || !(qk_tune_moe_aux(v->kernel->family) || v->fusion ||
                          !strcmp(v->kernel->family, "quantize")))
            continue;
        qk_tune_default *d = &defs[nd++];
        /* (family and fusion names are short: the spec loader bounds them) */
        snprintf(d->op, sizeof d->op, "%.23s%s%.23s", v->kernel->family, v->fusion ? "/" : "",
                 v->fusion ? v->fusion->name : "");
        snprintf(d->format, sizeof d->format, "%.63s", v->format->name);
        snprintf(d->option, sizeof d->option, "%.15s", v->format->variant);
        snprintf(d->activations, sizeof d->activations, "%s",
                 v->activation[0] ? v->activation : "f32");
        snprintf(d->kernel, sizeof d->kernel, "%s", v->name);
        snprintf(d->precision, sizeof d->precision, "%s", qk_variant_precision(v));
    }
    /* the table first, checked as libqkrt will check it when it loads the
     * bundle: a table it would refuse must not replace the bundle there */
    qk_str sel = {0};
    int version = 0;
    if (rc == QK_EXIT_OK) {
        version = qk_tune_select_json(&sel, oc, n, defs, nd);
        char err[512] = "";
        qkrt_json *t = qkrt_json_parse(sel.s, sel.len, err, sizeof err);
        if (!t || !qkrt_select_check(t, qk_tune_plan_kernel, &plan, err, sizeof err)) {
            fprintf(stderr, "qkgen build: the select table made from %s is not valid: %s\n", dbpath,
                    err);
            rc = QK_EXIT_FAIL;
        }
        qkrt_json_free(t);
    }
    /* the manifest lists the winners and the fallbacks, and what was built
     * besides them: the quantizer, a MoE layer's other kernels and the
     * winners' fused siblings (winners and fallbacks are unfused products);
     * not the variants built only because a module's SPIR-V starts with
     * them */
    const char **keep = qk_xcalloc(n + nd + plan.variant_count + 1, sizeof *keep);
    uint32_t nkeep = 0;
    for (uint32_t i = 0; i < n; i++)
        if (oc[i].best) keep[nkeep++] = oc[i].best->variant;
    for (uint32_t d = 0; d < nd_products; d++)
        if (defs[d].kernel[0]) keep[nkeep++] = defs[d].kernel;
    for (uint32_t i = 0; i < plan.variant_count; i++)
        if (want[i] &&
            (qk_tune_moe_aux(plan.variants[i].kernel->family) || plan.variants[i].fusion))
            keep[nkeep++] = plan.variants[i].name;
    /* rules for f16 activations (select version 2): schema 4, which a reader
     * of 3 refuses instead of answering f32 queries with them */
    qk_bundle_tuned tuned = {.select = sel.s,
                             .schema = version == 2 ? QK_BUNDLE_SCHEMA_ACT : QK_BUNDLE_SCHEMA,
                             .listed = keep,
                             .listed_count = nkeep};
    if (rc == QK_EXIT_OK &&
        !qk_tune_build_chosen(&specs, &plan, want, specialize, spec_dir, set_path, templates, out,
                              name, quiet, &tuned, &st, &e)) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        rc = QK_EXIT_FAIL;
    }
    free(keep);
    if (rc == QK_EXIT_OK && !quiet)
        printf(
            "built %s: %u variants (winners of %u of %u tuned cases, %u fallbacks) with a select "
            "table (precision %s), in %.2f s\n",
            st.path, st.variants, winners, n, nd_products, precision, qk_now_s() - t0);
    qk_str_free(&sel);
    for (uint32_t i = 0; i < tr.nh; i++)
        free(tr.names[i]), free(tr.hashes[i]);
    free(tr.names), free(tr.hashes), free(want), free(oc), free(defs), free(mc);
    qk_tune_db_free(&db);
    qk_plan_free(&plan);
    qk_spec_set_free(&specs);
    return rc;
}
