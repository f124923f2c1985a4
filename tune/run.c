/* The tuner's measurement run (qkgen tune): each case's candidates built,
 * checked and timed through the bench's timing path, every result appended
 * to the tuning database, with progress and a line per case. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "compile/compile.h"
#include "ops_matmul.h" /* QK_F16W */
#include "qk_util.h"
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
    tune_run *t = user;
    return qk_tune_hash_lookup(&t->names, &t->hashes, &t->nh, variant);
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

/* The device's identity as the database records it. */
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

bool qk_tune_takes_q8(const qk_variant *v) {
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t nb = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < nb; i++)
        if (!strcmp(b[i].role, "activations_q8") && !b[i].writable) return true;
    return false;
}

int qk_tune_lock(const char *dbpath, bool wait, FILE *log) {
    bool busy;
    qk_error e = {0};
    int fd = qk_tune_db_lock(dbpath, wait, log, &busy, &e);
    if (fd < 0 && busy)
        fprintf(stderr,
                "qkgen tune: %s is in use by another qkgen tune or --merge (%s); run this one "
                "when it ends, or pass --wait to wait for it\n",
                dbpath, e.msg);
    else if (fd < 0)
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
    return fd;
}

/* Whether v binds a scratch of its own (a split-K kernel). */
static bool has_scratch(const qk_variant *v) {
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t nb = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < nb; i++)
        if (!strcmp(b[i].role, "scratch")) return true;
    return false;
}

/* The two-pass candidates of tiled case c (the bench times each pair of a
 * first pass and a second as one candidate, "twopass:A+B"): marks in want
 * the first passes (the dequant kernels of c's format: dequant_id for MoE,
 * and dequant) and the seconds (c's operation on f16w blocks, unfused,
 * without a scratch of its own) that the space allows, a pair where the
 * filter, if any, matches its name; returns the number of pairs. */
static uint32_t two_pass_candidates(const qk_plan *plan, const qk_tune_case *c,
                                    const qk_tune_space *space, bool *want) {
    if (strcmp(c->op, "matmul") && strcmp(c->op, "matmul_id")) return 0;
    qk_tune_space any = *space, firsts = *space;
    any.filter = NULL;    /* the pair's name, below */
    firsts.filter = NULL; /* the first pass's class is not the product's */
    firsts.precision = NULL;
    qk_tune_case second = *c;
    snprintf(second.format, sizeof second.format, "%s", QK_F16W);
    second.format_variant[0] = 0;
    /* the first pass's shape: the weights', every expert of a MoE product */
    qk_tune_case first = {.M = c->M, .K = c->K, .T = 1, .E = c->E ? c->E : 1, .top_k = 1};
    memcpy(first.format, c->format, sizeof first.format);
    memcpy(first.format_variant, c->format_variant, sizeof first.format_variant);
    uint32_t pairs = 0;
    for (uint32_t i = 0; i < plan->variant_count; i++) {
        const qk_variant *a = &plan->variants[i];
        if (strcmp(a->kernel->family, "dequant") &&
            (!c->E || strcmp(a->kernel->family, "dequant_id")))
            continue;
        snprintf(first.op, sizeof first.op, "%.23s", a->kernel->family);
        if (!qk_tune_candidate(a, &first, &firsts)) continue;
        for (uint32_t j = 0; j < plan->variant_count; j++) {
            const qk_variant *b = &plan->variants[j];
            if (!qk_tune_candidate(b, &second, &any) || has_scratch(b)) continue;
            char name[600];
            snprintf(name, sizeof name, "%s%s+%s", QK_TWO_PASS_PREFIX, a->name, b->name);
            if (space->filter && !qk_filter_match(space->filter, name)) continue;
            want[i] = want[j] = true, pairs++;
        }
    }
    return pairs;
}

int qk_tune_run(const qk_tune_run_opts *o, const qk_spec_set *specs, const qk_plan *plan,
                const qk_tune_case *cases, uint32_t nc) {
    /* held from before the database is loaded until the last record: a
     * second writer would measure the same candidates again, and a merge
     * would replace the file under this one's appends */
    int lock = o->dry_run ? -2 : qk_tune_lock(o->db, o->wait, o->log);
    if (lock == -1) return QK_TUNE_FAIL;
    qkrt_context *ctx = NULL;
    qkrt_desc desc = {.device = o->device};
    if (qkrt_create(&desc, &ctx) != QKRT_OK) {
        fprintf(stderr, "qkgen tune: %s\n", qkrt_create_error());
        if (lock >= 0) close(lock);
        return o->device ? QK_TUNE_USAGE : QK_TUNE_FAIL;
    }
    const qkrt_device_info *dev = qkrt_device(ctx);
    qk_tune_space space = {.kernel_count = o->kernel_count,
                           .kernels = o->kernels,
                           .precision = o->precision,
                           .dev = dev,
                           .filter = o->filter};
    /* every case's candidates and fallback, built at once */
    bool *want = qk_xcalloc(plan->variant_count + 1, sizeof *want);
    const char **fb = qk_xcalloc(nc + 1, sizeof *fb);
    uint32_t total = 0, *per_case = qk_xcalloc(nc + 1, sizeof *per_case);
    bool any_q8 = false;
    for (uint32_t c = 0; c < nc; c++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < plan->variant_count; i++)
            if (qk_tune_candidate(&plan->variants[i], &cases[c], &space))
                want[i] = true, n++, any_q8 |= qk_tune_takes_q8(&plan->variants[i]);
        n += two_pass_candidates(plan, &cases[c], &space, want);
        const qk_variant *f =
            qk_tune_fallback(plan, cases[c].op, cases[c].format, cases[c].format_variant,
                             qk_tune_case_activations(&cases[c]));
        if (f) want[f - plan->variants] = true, fb[c] = f->name;
        per_case[c] = n + 1;
        total += n + 1;
    }
    for (uint32_t i = 0; any_q8 && i < plan->variant_count; i++)
        if (!strcmp(plan->variants[i].kernel->family, "quantize")) want[i] = true;
    tune_run tr = {.exhaustive = o->exhaustive, .tty = isatty(2), .case_n = nc, .total = total};
    device_of(ctx, &tr.dev);
    if (o->shard_n) snprintf(tr.shard, sizeof tr.shard, "shard %u/%u, ", o->shard_k, o->shard_n);
    tr.warm_ms = (double)o->warm_ms, tr.screen_warm_ms = (double)o->screen_warm_ms;
    tr.steady_ms = (double)o->steady_ms;
    char count[112];
    if (o->shard_n)
        snprintf(count, sizeof count, "%s", o->shard_of);
    else
        snprintf(count, sizeof count, "%u cases", nc);
    printf("device %u: %s (vendor 0x%x, device 0x%x, driver %u), %s, seed %llu\n", dev->index,
           dev->name, tr.dev.vendor_id, tr.dev.device_id, tr.dev.driver_version, count,
           (unsigned long long)o->seed);
    qk_build_stats st;
    qk_error e = {0};
    double t_build = qk_now_s();
    int rc = QK_TUNE_DONE;
    qkrt_bundle *b = NULL;
    char *bundle_dir = qk_path_join(o->out, "tune");
    if (!qk_tune_build_subset(specs, plan, want, o->templates, o->out, "tune", !tr.tty, &st, &e)) {
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
        rc = QK_TUNE_FAIL;
    } else {
        printf("candidates: %u variants in %s (%u compiled, %u from cache) in %.1f s\n",
               st.variants, st.path, st.compiled, st.cached, qk_now_s() - t_build);
        if (qkrt_bundle_load(ctx, bundle_dir, &b) != QKRT_OK ||
            !qk_tune_manifest_hashes(bundle_dir, &tr.names, &tr.hashes, &tr.nh, &e)) {
            fprintf(stderr, "qkgen tune: %s\n", b ? e.msg : qkrt_last_error(ctx));
            rc = QK_TUNE_FAIL;
        }
    }
    if (rc == QK_TUNE_DONE && !qk_tune_db_load(o->db, &tr.db, o->log, &e)) {
        fprintf(stderr, "qkgen tune: %s\n", e.msg);
        rc = QK_TUNE_FAIL;
    }
    if (rc == QK_TUNE_DONE) {
        /* the records of this run's candidates: the others (other cases,
         * formats or activations) are neither resumed nor stale here */
        uint32_t kept = 0;
        for (uint32_t i = 0; i < tr.db.count; i++)
            if (hash_of(&tr, tr.db.recs[i].variant)) tr.db.recs[kept++] = tr.db.recs[i];
        tr.db.count = kept;
        qk_tune_db_keep(&tr.db, &tr.dev, hash_of, &tr, stdout);
    }
    qk_bench_opts bo = {.runs = (uint32_t)o->runs,
                        .warmup_s = o->warm_ms / 1e3,
                        .rewarm_s = o->warm_ms / 4e3,
                        .rotate_bytes = o->rotate_mb << 20,
                        .finalists = tr.exhaustive ? 0 : (uint32_t)o->finalists,
                        .halving = !tr.exhaustive,
                        .screen_warmup_s = o->screen_warm_ms / 1e3,
                        .warmup_steady_s = o->steady_ms / 1e3,
                        .seed = o->seed,
                        .two_pass = true, /* the pairs two_pass_candidates built */
                        .prior = prior,
                        .record = record,
                        .user = &tr,
                        .phase_s = tr.phase_s};
    tr.t0 = qk_now_s();
    if (o->dry_run && rc == QK_TUNE_DONE) { /* the candidates built, nothing timed */
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
    for (uint32_t c = 0; c < nc && rc == QK_TUNE_DONE; c++) {
        if (o->budget_s &&
            qk_now_s() - tr.t0 >= (double)o->budget_s) { /* the rest for a later run */
            printf("budget of %llu s spent: %u cases%s%.*s left for a later run (it resumes)\n",
                   (unsigned long long)o->budget_s, nc - c, o->shard_n ? " of " : "",
                   o->shard_n ? (int)strlen(tr.shard) - 2 : 0, tr.shard);
            tuned = c;
            break;
        }
        qk_bench_case bc = {cases[c].op, cases[c].format, cases[c].format_variant,
                            cases[c].M,  cases[c].K,      cases[c].T,
                            cases[c].E,  cases[c].top_k};
        tr.c = &cases[c], tr.case_i = c, tr.case_done = 0;
        bo.always = fb[c];
        bo.activation = qk_tune_case_activations(&cases[c]);
        /* the budget left, shared among the cases left */
        double left = o->budget_s ? (double)o->budget_s - (qk_now_s() - tr.t0) : 0;
        bo.deadline = o->budget_s ? qk_now_s() + fmax(left, 0) / (nc - c) : 0;
        qk_bench_result *res = NULL;
        uint32_t nres = 0;
        char err[512] = "";
        double tc = qk_now_s();
        memset(tr.phase_s, 0, sizeof tr.phase_s), tr.db_s = 0;
        tr.case_total = per_case[c];
        bar(&tr, "");
        qkrt_result r = qk_bench_case_run(ctx, b, &bc, &bo, 0, &res, &nres, err, sizeof err);
        if (tr.tty) fputs("\r\033[K", stderr);
        /* the plan's count was an upper bound (the bench keeps the token
         * tiles that fit): what was not measured leaves the total */
        if (per_case[c] > tr.case_done) tr.total -= per_case[c] - tr.case_done;
        if (tr.failed_write) {
            fprintf(stderr, "qkgen tune: %s\n", tr.e.msg);
            rc = QK_TUNE_FAIL;
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
            best ? case_speedup(&tr.db, &tr.dev, &cases[c], o->precision, fb[c], &fb_us, &fb_full)
                 : 0;
        if (r != QKRT_OK) {
            fprintf(stderr, "qkgen tune: %s: %s\n", shape, err);
            if (r != QKRT_ERROR_ARGUMENT) rc = QK_TUNE_FAIL;
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
    if (rc == QK_TUNE_DONE && !o->dry_run)
        printf("tuned %u cases%s%s%s in %.1f s (device work and checks); database %s: %u records "
               "of these candidates\n",
               tuned, o->shard_n ? " (" : "", o->shard_n ? o->shard_of : "", o->shard_n ? ")" : "",
               qk_now_s() - tr.t0, o->db, tr.db.count);
    if (ctx && qkrt_validation_errors(ctx)) {
        fprintf(stderr, "qkgen tune: the validation layer reported %u errors\n",
                qkrt_validation_errors(ctx));
        rc = QK_TUNE_FAIL;
    }
    if (rc == QK_TUNE_DONE && no_winner) rc = QK_TUNE_FAIL;
    for (uint32_t i = 0; i < tr.nh; i++)
        free(tr.names[i]), free(tr.hashes[i]);
    free(tr.names), free(tr.hashes), free(want), free(fb), free(bundle_dir);
    free(per_case);
    qk_tune_db_free(&tr.db);
    if (lock >= 0) close(lock);
    if (b) qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    return rc;
}
