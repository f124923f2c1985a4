/* The autotuner's search space and selection: which variants of a plan are
 * candidates for a case on a device, the portable fallback of an operation,
 * each case's winner in a database, and the manifest's select table. */
#ifndef QK_TUNE_H
#define QK_TUNE_H

#include "db.h"
#include "bundle/bundle.h"
#include "plan/plan.h"
#include "qk_json.h" /* qkrt_select_kernel */
#include "qkrt.h"
#include "spec/model.h"

#include <stdio.h>

/* What narrows a case's candidates; zero fields narrow nothing. */
typedef struct qk_tune_space {
    uint32_t kernel_count; /* only variants of these kernel specs (a model's `kernels:`) */
    const char (*kernels)[QK_MAX_NAME];
    const char *precision;       /* "f32", "f16", "q8"; NULL or "any": every class */
    const qkrt_device_info *dev; /* drop what this device cannot run (features, limits) */
    const char *filter;          /* only names containing one of these (A,B) */
} qk_tune_space;

/* The format option a case of format takes: MLX scales in bf16, else "". */
const char *qk_tune_format_variant(const char *format);

/* Whether variant v is a candidate of case c: its family is c's op, its
 * format and activation type c's, no fusion, the shape meets its constraints,
 * and the space allows it (why not in why, when it is the device). */
bool qk_tune_candidate(const qk_variant *v, const qk_tune_case *c, const qk_tune_space *s);

/* The portable fallback of (op, format, option, activations): the variant
 * every device runs (none of one vendor's features) at any shape the format
 * allows (the fewest refused of a few probe shapes, odd numbers of blocks
 * among them), preferring f32 arithmetic, then the fewest features,
 * constraints and shared memory, then the name; NULL when the plan has none
 * (f16 activations of a K-quant or mxfp4: NVIDIA's cooperative-matrix-2
 * kernels only). */
const qk_variant *qk_tune_fallback(const qk_plan *p, const char *op, const char *format,
                                   const char *option, const char *activations);

/* A case's outcome in a database. */
typedef struct qk_tune_outcome {
    qk_tune_case c;
    qk_tune_device dev;
    const qk_tune_record *best;        /* fastest correct in full (else in the screen), or NULL */
    const qk_tune_record *fallback;    /* the fallback's record (full, else screen), or NULL */
    const qk_tune_record *best_screen; /* the winner's screen record, or NULL: a speedup over a
                                          fallback timed only in the screen compares screens */
    uint32_t candidates, wrong, failed;
    uint32_t unsupported; /* the device cannot run them: not the kernels' failures */
} qk_tune_outcome;

/* The fallback's time over the winner's, the ratio the tune's line and its
 * report both print: at one stage, both in full where the fallback was timed
 * in full, else both in the screen (the winner's first screen; where it has
 * none, its full time). 0: no winner, no fallback or no time. */
double qk_tune_outcome_speedup(const qk_tune_outcome *o);

/* The outcomes of every (device, case) of db: devices in first-seen order,
 * each one's cases sorted (op, format, option, activations, experts, top-k,
 * T, M, K), whatever order the records were written in; best among
 * the precision classes allowed ("any" or NULL: all). fallback_of names each
 * case's fallback (may be NULL). The caller frees *out. */
uint32_t qk_tune_outcomes(const qk_tune_db *db, const char *precision,
                          const char *(*fallback_of)(void *user, const qk_tune_case *c), void *user,
                          qk_tune_outcome **out);

/* The family_mask of every device entry a select table gets: its rules also
 * serve the devices of its vendor whose ids differ in their low 8 bits only
 * (docs/manifest.md, "Selection"), and then the vendor's others. PCI device
 * ids come in blocks of 256 per chip and its variants (NVIDIA's 0x233x: the
 * H100 and H200), where one tile tuning is a good guess for the others. */
#define QK_TUNE_FAMILY_MASK 0xffffff00u

/* The manifest's "select" object (docs/manifest.md) from the outcomes with a
 * winner, grouped by device, and the fallbacks (names[i] of ops[i]) as the
 * device-independent default (one with an empty kernel: none, no rule).
 * Returns the table's version (2 where a rule names f16 activations, 3
 * where one names a first pass: a two-pass winner). */
typedef struct qk_tune_default {
    /* op: a family, or "family/fusion" for a fused kernel (matvec_id/swiglu) */
    char op[48], format[64], option[16], activations[8], kernel[256], precision[8];
} qk_tune_default;
int qk_tune_select_json(qk_str *o, const qk_tune_outcome *oc, uint32_t n,
                        const qk_tune_default *defaults, uint32_t nd);

/* The content hash of variant among (*names)[i], (*hashes)[i] (*n of them),
 * or NULL; for a two-pass pair, the SHA-256 of its parts' hashes joined by
 * '+' (the pair is stale when either part is), appended to the lists so
 * that it lives as long as they do. */
const char *qk_tune_hash_lookup(char ***names, char ***hashes, uint32_t *n, const char *variant);

/* A case as the tuner and its report print it: "matmul q4_0 m=4096 k=14336
 * t=512", the format's option ("/bf16"), " e=E/top_k" for MoE and " x=f16"
 * for f16 activations. */
void qk_tune_case_label(const qk_tune_case *c, char *out, size_t size);

/* The report: per case the winner, its time, the fallback's and the speedup
 * (text on f), and an SVG plot of every candidate's time per case into svg
 * (winners marked, wrong and failed ones shown). */
void qk_tune_report_text(FILE *f, const qk_tune_outcome *oc, uint32_t n);
void qk_tune_report_svg(qk_str *svg, const qk_tune_db *db, const qk_tune_outcome *oc, uint32_t n);

/* ---- what a tuned bundle holds besides the winners (tuned.c) ---- */

/* The operations of a MoE layer besides its products (docs/tune.md). */
bool qk_tune_moe_aux(const char *op);
/* Whether v takes no weights, or weights of a format (and option) that one
 * of the outcomes' winners or the fallbacks runs. */
bool qk_tune_runs_format(const qk_variant *v, const qk_tune_outcome *oc, uint32_t n,
                         const qk_tune_default *defs, uint32_t nd);
/* Whether v is winner's swiglu-fused form, or that form's ranked one. */
bool qk_tune_is_fused_sibling(const qk_variant *v, const char *winner);
bool qk_tune_is_ranked_sibling(const qk_variant *v, const char *winner);
/* Whether the model's cases hold c. */
bool qk_tune_model_has(const qk_model_case *mc, uint32_t n, const qk_tune_case *c);
/* Builds the variants want marks into out/name: as planned (specialize), or
 * each a module of its own with its tiles compiled in. */
bool qk_tune_build_chosen(const qk_spec_set *specs, const qk_plan *plan, const bool *want,
                          bool specialize, const char *spec_dir, const char *set_path,
                          const char *templates, const char *out, const char *name, bool quiet,
                          const qk_bundle_tuned *tuned, qk_build_stats *st, qk_error *e);
/* Keeps the records whose variant computes their case; says on log how many
 * it drops (with an example) and returns that count. */
uint32_t qk_tune_drop_misfits(qk_tune_db *db, const qk_plan *plan, const char *dbpath, FILE *log);
/* A variant of the plan as qkrt_select_check sees a manifest's kernel. */
bool qk_tune_plan_kernel(void *user, const char *name, qkrt_select_kernel *out);

/* ---- the measurement run (run.c) ---- */

/* What qk_tune_run returns: the command's exit statuses (docs/cli.md). */
enum { QK_TUNE_DONE = 0, QK_TUNE_FAIL = 1, QK_TUNE_USAGE = 2 };

/* A tune run's settings (qkgen tune's options, docs/cli.md). */
typedef struct qk_tune_run_opts {
    const char *db;        /* the database appended to, locked while the run writes it */
    const char *out;       /* the candidates are built into out/tune */
    const char *templates; /* the GLSL templates */
    const char *device;    /* qkrt_desc.device (NULL: the first); a bad one: QK_TUNE_USAGE */
    uint32_t kernel_count; /* the search space (qk_tune_space; 0: every kernel spec) */
    const char (*kernels)[QK_MAX_NAME];
    const char *precision, *filter;
    bool exhaustive, dry_run, wait;
    uint64_t budget_s, runs, warm_ms, rotate_mb, finalists, seed, screen_warm_ms, steady_ms;
    uint32_t shard_k, shard_n; /* shard_n 0: the cases are the whole list */
    const char *shard_of;      /* "shard 2/4: 13 of 50 cases", under a shard */
    FILE *log;                 /* the libraries' messages */
} qk_tune_run_opts;

/* Tunes cases[0 .. nc) (each checked against its CPU reference first: the
 * caller declares the references): builds every case's candidates and
 * fallback at once, then per case checks, screens, halves and times them
 * (or all in full: exhaustive), resuming from and appending to the database;
 * prints a progress bar on a terminal, a line per case and a summary.
 * dry_run builds and lists the candidates, times nothing. */
int qk_tune_run(const qk_tune_run_opts *o, const qk_spec_set *specs, const qk_plan *plan,
                const qk_tune_case *cases, uint32_t nc);
/* The database's lock (docs/tuning-db.md: one tune or merge writes it at a
 * time), or -1 with the message on stderr; wait: until the holder ends. */
int qk_tune_lock(const char *dbpath, bool wait, FILE *log);
/* Whether v reads q8 activations (the quantize pre-pass runs before it). */
bool qk_tune_takes_q8(const qk_variant *v);

/* A tuned bundle's settings (qkgen build --tuned, docs/cli.md). */
typedef struct qk_tune_bundle_opts {
    const char *db;             /* the tuning database */
    const char *model;          /* its path, or NULL: every case of db */
    const qk_model_case *cases; /* the model's cases (case_count of them) */
    uint32_t case_count;
    const char *precision;  /* the classes that may win ("any": all) */
    double within;          /* qk_tune_consolidate's (0.03: 3%; 0: off) */
    bool specialize, quiet; /* qk_tune_build_chosen's */
    const char *spec_dir, *set_path, *templates, *out, *name; /* built into out/name */
    double t0; /* when the command started (its summary's time) */
    FILE *log; /* the libraries' messages */
} qk_tune_bundle_opts;

/* Writes out/name: each case's winner (among the precision classes allowed;
 * one kernel for several cases where within allows), a fallback per
 * operation, format and activation type, what a MoE layer runs around its
 * products, and the select table (docs/manifest.md, "Selection"), checked
 * as libqkrt checks it. Records of variants the generator no longer makes,
 * or that do not compute their case, are dropped with a message. Returns
 * QK_TUNE_DONE, QK_TUNE_FAIL or QK_TUNE_USAGE (no usable records). */
int qk_tune_build_bundle(const qk_tune_bundle_opts *o, const qk_spec_set *specs,
                         const qk_plan *plan);

#endif

/* The spv_sha256 of each kernel of a bundle's manifest.json: *names and
 * *hashes (n entries each, malloc'd strings in malloc'd arrays). */
bool qk_tune_manifest_hashes(const char *bundle_dir, char ***names, char ***hashes, uint32_t *n,
                             qk_error *e);

/* The plan's variants flagged in want[], each with its module's first variant
 * (whose values are the module's defaults, so the SPIR-V and its hash are
 * those of a whole build), built into out_dir/name through the content-hash
 * cache. */
bool qk_tune_build_subset(const qk_spec_set *specs, const qk_plan *plan, const bool *want,
                          const char *templates, const char *out_dir, const char *name, bool quiet,
                          qk_build_stats *st, qk_error *e);
/* qk_tune_build_subset with what a tuned bundle's manifest adds (its select
 * table, schema and the kernels it lists; NULL: nothing), which the bundle
 * writer puts into the manifest it writes. */
bool qk_tune_build_tuned(const qk_spec_set *specs, const qk_plan *plan, const bool *want,
                         const char *templates, const char *out_dir, const char *name, bool quiet,
                         const qk_bundle_tuned *tuned, qk_build_stats *st, qk_error *e);

/* Fewer distinct kernels: within each device's (op, format, option), a case
 * takes a kernel that already serves other cases where its time there is
 * within `within` (0.03: 3%) of the case's best, comparing the times of one
 * stage (the screen's where the case's best has one, else the full
 * timing's); greedily, the kernel acceptable to the most cases first.
 * Re-points oc[].best; returns the number of distinct winners left. */
uint32_t qk_tune_consolidate(const qk_tune_db *db, qk_tune_outcome *oc, uint32_t n, double within,
                             const char *precision);
