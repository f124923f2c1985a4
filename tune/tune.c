/* The autotuner's search space (candidates and fallbacks from a plan), each
 * case's winner in a database, and the select table built from them. */
#include "tune.h"
#include "bundle/bundle.h"
#include "compile/compile.h"
#include "qk_json.h" /* libqkrt's reader */

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *qk_tune_format_variant(const char *format) {
    return strncmp(format, "mlx", 3) ? "" : "bf16";
}

static bool lookup(void *user, const char *name, size_t len, int64_t *value) {
    const qk_tune_case *c = user;
    static const char *const names[] = {"M", "K", "T", "E", "top_k", "ne11", "max_per_expert"};
    int64_t vals[] = {c->M, c->K, c->T, c->E ? c->E : 1, c->top_k ? c->top_k : 1, 1, c->T};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strlen(names[i]) == len && !strncmp(names[i], name, len)) {
            *value = vals[i];
            return true;
        }
    return false;
}

/* Whether v's constraints take case c (a name the plan leaves to the
 * runtime, one they do not know, counts as taken: the bundle's check
 * decides). */
static bool takes(const qk_variant *v, const qk_tune_case *c) {
    for (uint32_t i = 0; i < v->constraint_count; i++) {
        int64_t ok = 1;
        qk_error e = {0};
        if (qk_expr_eval(v->constraints[i], lookup, (void *)c, &ok, &e) && !ok) return false;
    }
    return true;
}

/* Whether a device runs v, as far as the plan tells: its features and
 * limits (the runtime checks the rest when the bundle is loaded). */
static bool device_runs(const qk_variant *v, const qkrt_device_info *d) {
    const char *f[16];
    uint32_t nf = qk_variant_features(v, f, 16);
    for (uint32_t i = 0; i < nf; i++)
        if ((!strcmp(f[i], "cooperative_matrix_nv") && !d->cooperative_matrix_nv) ||
            (!strcmp(f[i], "integer_dot_product") && !d->integer_dot_product) ||
            (!strcmp(f[i], "float16") && !d->float16) || (!strcmp(f[i], "int8") && !d->int8) ||
            (!strcmp(f[i], "storage_8bit") && !d->storage_8bit) ||
            (!strcmp(f[i], "storage_16bit") && !d->storage_16bit) ||
            (!strcmp(f[i], "subgroup_arithmetic") && !d->subgroup_arithmetic))
            return false;
    return v->shared_memory <= d->max_shared_memory && v->wg <= d->max_workgroup_invocations &&
           v->kernel->min_subgroup_size <= d->max_subgroup_size;
}

bool qk_tune_candidate(const qk_variant *v, const qk_tune_case *c, const qk_tune_space *s) {
    if (strcmp(v->kernel->family, c->op) || strcmp(v->format->name, c->format) ||
        strcmp(v->format->variant, c->format_variant) ||
        strcmp(v->activation, qk_tune_case_activations(c)) || v->fusion)
        return false;
    bool listed = !s->kernel_count;
    for (uint32_t i = 0; i < s->kernel_count && !listed; i++) /* a kernel, or its family spec */
        listed =
            !strcmp(s->kernels[i], v->kernel->name) || !strcmp(s->kernels[i], v->kernel->origin);
    if (!listed) return false;
    if (s->precision && strcmp(s->precision, "any") &&
        strcmp(s->precision, qk_variant_precision(v)))
        return false;
    if (s->filter && !qk_filter_match(s->filter, v->name)) return false;
    if (s->dev && !device_runs(v, s->dev)) return false;
    return takes(v, c);
}

/* How many of v's features one vendor's devices alone have (NVIDIA's
 * cooperative matrices): a fallback is for every device. */
static int64_t vendor_features(const qk_variant *v) {
    const char *f[16];
    uint32_t n = qk_variant_features(v, f, 16);
    int64_t vendor = 0;
    for (uint32_t i = 0; i < n; i++)
        vendor += strlen(f[i]) > 3 && !strcmp(f[i] + strlen(f[i]) - 3, "_nv");
    return vendor;
}

static int precision_rank(const char *p) {
    return !strcmp(p, "f32") ? 0 : !strcmp(p, "f16") ? 1 : 2;
}

/* How many of a few shapes the format allows v's constraints refuse: depths
 * of one and three blocks (odd: not a multiple of any wider chunk), one and
 * 37 tokens, 37 rows, and 4 experts of which 2 per token for the _id forms. */
static int64_t shapes_refused(const qk_variant *v) {
    const uint32_t qk = v->format->elements, ks[] = {qk, 3 * qk}, ts[] = {1, 37};
    int64_t refused = 0;
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++)
            refused +=
                !takes(v, &(qk_tune_case){.M = 37, .K = ks[i], .T = ts[j], .E = 4, .top_k = 2});
    return refused;
}

const qk_variant *qk_tune_fallback(const qk_plan *p, const char *op, const char *format,
                                   const char *option, const char *activations) {
    const qk_variant *best = NULL;
    enum { KEYS = 10 };
    int64_t best_key[KEYS] = {0};
    for (uint32_t i = 0; i < p->variant_count; i++) {
        const qk_variant *v = &p->variants[i];
        if (strcmp(v->kernel->family, op) || strcmp(v->format->name, format) ||
            strcmp(v->format->variant, option) || strcmp(v->activation, activations) || v->fusion)
            continue;
        const char *f[16];
        /* no vendor's own features (f16 activations: the NV cooperative-
         * matrix-2 matmuls take more shapes, the staged ones every device),
         * then the fewest shapes refused; the family spec named after the
         * operation (matvec.yaml for matvec and matvec_id) is its plainest;
         * a few rows per workgroup (4) beat one on any device */
        int64_t key[KEYS] = {vendor_features(v),
                             shapes_refused(v),
                             precision_rank(qk_variant_precision(v)),
                             strncmp(v->kernel->origin, op, strlen(v->kernel->origin)) != 0,
                             qk_variant_features(v, f, 16),
                             v->constraint_count,
                             v->kernel->min_subgroup_size,
                             v->nr1,
                             v->nr0 > 4 ? v->nr0 : 4 - v->nr0,
                             v->shared_memory};
        int cmp = 0;
        for (int k = 0; best && k < KEYS && !cmp; k++)
            cmp = (key[k] > best_key[k]) - (key[k] < best_key[k]);
        if (best && !cmp) cmp = strcmp(v->name, best->name);
        if (!best || cmp < 0) best = v, memcpy(best_key, key, sizeof key);
    }
    /* only one vendor's (f16 activations of a K-quant or mxfp4, which no
     * staged kernel takes): none is portable */
    return best && best_key[0] ? NULL : best;
}

static bool allowed(const char *precision, const qk_tune_record *r) {
    return !precision || !strcmp(precision, "any") || !strcmp(precision, r->precision);
}

/* The faster of two records for a winner: full beats screen, then time. */
static bool better(const qk_tune_record *a, const qk_tune_record *b) {
    if (!b) return true;
    bool fa = !strcmp(a->stage, "full"), fb = !strcmp(b->stage, "full");
    return fa != fb ? fa : a->us < b->us;
}

/* The order of a device's cases in the outcomes: op, format, option and
 * activations (a select group), then experts, top-k and the shape. */
static int case_order(const qk_tune_case *a, const qk_tune_case *b) {
    int c = strcmp(a->op, b->op);
    if (!c) c = strcmp(a->format, b->format);
    if (!c) c = strcmp(a->format_variant, b->format_variant);
    if (!c) c = strcmp(qk_tune_case_activations(a), qk_tune_case_activations(b));
    const uint32_t x[] = {a->E, a->top_k, a->T, a->M, a->K};
    const uint32_t y[] = {b->E, b->top_k, b->T, b->M, b->K};
    for (int i = 0; !c && i < 5; i++)
        c = (x[i] > y[i]) - (x[i] < y[i]);
    return c;
}

static int outcome_order(const void *a, const void *b) {
    return case_order(&((const qk_tune_outcome *)a)->c, &((const qk_tune_outcome *)b)->c);
}

/* Sorts the outcomes: devices in first-seen order, each one's cases by
 * case_order. What is built from them (the select table, its default rules,
 * the consolidation's ties, the report) then depends on the records, not on
 * the order they were written in: shards' databases merged give the bundle
 * that one machine's database of the same records gives. */
static void sort_outcomes(qk_tune_outcome *oc, uint32_t n) {
    if (n < 2) return;
    qk_tune_outcome *by_dev = qk_xcalloc(n + 1, sizeof *by_dev);
    bool *taken = qk_xcalloc(n + 1, sizeof *taken);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        if (taken[i]) continue;
        const uint32_t first = m; /* device i's outcomes together, then sorted */
        for (uint32_t j = i; j < n; j++)
            if (!taken[j] && qk_tune_same_device(&oc[j].dev, &oc[i].dev))
                by_dev[m++] = oc[j], taken[j] = true;
        qsort(by_dev + first, m - first, sizeof *by_dev, outcome_order);
    }
    memcpy(oc, by_dev, sizeof *oc * n);
    free(by_dev);
    free(taken);
}

uint32_t qk_tune_outcomes(const qk_tune_db *db, const char *precision,
                          const char *(*fallback_of)(void *user, const qk_tune_case *c), void *user,
                          qk_tune_outcome **out) {
    uint32_t n = 0;
    *out = NULL;
    for (uint32_t i = 0; i < db->count; i++) {
        const qk_tune_record *r = &db->recs[i];
        qk_tune_outcome *o = NULL;
        for (uint32_t j = 0; j < n && !o; j++)
            if (qk_tune_same_device(&(*out)[j].dev, &r->dev) &&
                qk_tune_same_case(&(*out)[j].c, &r->c))
                o = &(*out)[j];
        if (!o) {
            *out = qk_xrealloc(*out, sizeof **out * (n + 1));
            o = &(*out)[n++];
            memset(o, 0, sizeof *o);
            o->c = r->c, o->dev = r->dev;
        }
        /* a variant counts once, whatever its stages */
        bool seen = false;
        for (uint32_t j = 0; j < i && !seen; j++)
            seen = !strcmp(db->recs[j].variant, r->variant) &&
                   qk_tune_same_device(&db->recs[j].dev, &r->dev) &&
                   qk_tune_same_case(&db->recs[j].c, &r->c);
        o->candidates += !seen;
        o->wrong += !strcmp(r->status, "wrong");
        o->failed += !strcmp(r->status, "failed");
        o->unsupported += !strcmp(r->status, "unsupported");
        bool timed = !strcmp(r->status, "ok") && strcmp(r->stage, "check") && r->us > 0;
        if (timed && allowed(precision, r) && better(r, o->best)) o->best = r;
        const char *fb = fallback_of ? fallback_of(user, &r->c) : NULL;
        if (timed && fb && !strcmp(fb, r->variant) && better(r, o->fallback)) o->fallback = r;
    }
    for (uint32_t j = 0; j < n; j++) {
        qk_tune_outcome *o = &(*out)[j];
        for (uint32_t i = 0; o->best && i < db->count && !o->best_screen; i++) {
            const qk_tune_record *r = &db->recs[i];
            if (!strcmp(r->variant, o->best->variant) && !strcmp(r->stage, "screen") &&
                qk_tune_same_device(&r->dev, &o->dev) && qk_tune_same_case(&r->c, &o->c))
                o->best_screen = r;
        }
    }
    sort_outcomes(*out, n);
    return n;
}

const char *qk_tune_hash_lookup(char ***names, char ***hashes, uint32_t *n, const char *variant) {
    for (uint32_t i = 0; i < *n; i++)
        if (!strcmp((*names)[i], variant)) return (*hashes)[i];
    char a[256], b[256];
    if (!qk_tune_two_pass_parts(variant, a, b, sizeof a)) return NULL;
    const char *ha = qk_tune_hash_lookup(names, hashes, n, a);
    const char *hb = qk_tune_hash_lookup(names, hashes, n, b);
    if (!ha || !hb) return NULL;
    /* the pair's hash: of its parts' hashes, joined */
    char both[140], *joined = qk_xmalloc(65);
    snprintf(both, sizeof both, "%s+%s", ha, hb);
    qk_sha256_hex(both, strlen(both), joined);
    *names = qk_xrealloc(*names, sizeof **names * (*n + 1));
    *hashes = qk_xrealloc(*hashes, sizeof **hashes * (*n + 1));
    (*names)[*n] = qk_xstrdup(variant), (*hashes)[*n] = joined;
    return (*hashes)[(*n)++];
}

/* Bucket i of the sorted distinct values v[0 .. n): from the integer after
 * the geometric mean with the one before (1 for the first) to the geometric
 * mean with the one after (no bound for the last), rounded down. */
static void bucket(const uint32_t *v, uint32_t n, uint32_t i, qk_str *o, const char *key) {
    uint64_t lo = i ? (uint64_t)floor(sqrt((double)v[i - 1] * v[i])) + 1 : 1;
    qk_str_addf(o, "\"%s\": [%llu, ", key, (unsigned long long)lo);
    if (i + 1 < n)
        qk_str_addf(o, "%llu]", (unsigned long long)floor(sqrt((double)v[i] * v[i + 1])));
    else
        qk_str_add(o, "null]");
}

static int cmp_u32(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The distinct values of dimension d (0 M, 1 K, 2 T) of the outcomes in
 * sel[0 .. n) that match the fixed dimensions (want[d] 0: any), sorted. */
static uint32_t distinct(const qk_tune_outcome *const *sel, uint32_t n, int d, const uint32_t *want,
                         uint32_t *out) {
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t dims[3] = {sel[i]->c.M, sel[i]->c.K, sel[i]->c.T}, v = dims[d];
        bool ok = true;
        for (int j = 0; j < 3; j++)
            ok &= !want[j] || dims[j] == want[j];
        bool dup = false;
        for (uint32_t j = 0; j < m && !dup; j++)
            dup = out[j] == v;
        if (ok && !dup) out[m++] = v;
    }
    qsort(out, m, sizeof *out, cmp_u32);
    return m;
}

/* Whether two cases fall under one group of select rules: op, format,
 * option and activations (the shape picks the rule within it). */
static bool same_rules(const qk_tune_case *a, const qk_tune_case *b) {
    return !strcmp(a->op, b->op) && !strcmp(a->format, b->format) &&
           !strcmp(a->format_variant, b->format_variant) &&
           !strcmp(qk_tune_case_activations(a), qk_tune_case_activations(b));
}

static void rule_json(qk_str *o, const char *op, const char *format, const char *option,
                      const char *activations, const char *kernel, const char *precision,
                      bool first) {
    /* a two-pass winner: its second pass answers, after its first */
    char pass1[256], pass2[256];
    const bool two = qk_tune_two_pass_parts(kernel, pass1, pass2, sizeof pass1);
    qk_str_addf(o, "%s\n        { \"op\": ", first ? "" : ",");
    qk_json_string(o, op);
    qk_str_add(o, ", \"format\": ");
    qk_json_string(o, format);
    qk_str_add(o, ", \"format_variant\": ");
    qk_json_string(o, option);
    if (strcmp(activations, "f32")) { /* f32 where absent (version 1) */
        qk_str_add(o, ", \"activations\": ");
        qk_json_string(o, activations);
    }
    qk_str_add(o, ", \"kernel\": ");
    qk_json_string(o, two ? pass2 : kernel);
    if (two) {
        qk_str_add(o, ", \"first_pass\": ");
        qk_json_string(o, pass1);
    }
    qk_str_add(o, ", \"precision\": ");
    qk_json_string(o, precision);
    qk_str_add(o, ", ");
}

/* The rules of one device's (op, format, option, activations) group: T buckets, M
 * buckets within each, K buckets within those; each leaf a tuned case. */
static void group_rules(qk_str *o, const qk_tune_outcome *const *sel, uint32_t n, bool *first) {
    uint32_t *ts = malloc(sizeof *ts * n), *ms = malloc(sizeof *ms * n),
             *ks = malloc(sizeof *ks * n);
    uint32_t want[3] = {0, 0, 0};
    uint32_t nt = distinct(sel, n, 2, want, ts);
    for (uint32_t ti = 0; ti < nt; ti++) {
        uint32_t wt[3] = {0, 0, ts[ti]};
        uint32_t nm = distinct(sel, n, 0, wt, ms);
        for (uint32_t mi = 0; mi < nm; mi++) {
            uint32_t wm[3] = {ms[mi], 0, ts[ti]};
            uint32_t nk = distinct(sel, n, 1, wm, ks);
            for (uint32_t ki = 0; ki < nk; ki++) {
                const qk_tune_outcome *oc = NULL;
                for (uint32_t i = 0; i < n && !oc; i++)
                    if (sel[i]->c.M == ms[mi] && sel[i]->c.K == ks[ki] && sel[i]->c.T == ts[ti])
                        oc = sel[i];
                rule_json(o, oc->c.op, oc->c.format, oc->c.format_variant,
                          qk_tune_case_activations(&oc->c), oc->best->variant, oc->best->precision,
                          *first);
                *first = false;
                bucket(ms, nm, mi, o, "M");
                qk_str_add(o, ", ");
                bucket(ks, nk, ki, o, "K");
                qk_str_add(o, ", ");
                bucket(ts, nt, ti, o, "T");
                qk_str_addf(o, ", \"at\": [%u, %u, %u], \"us\": ", oc->c.M, oc->c.K, oc->c.T);
                qk_json_number(o, oc->best->us);
                qk_str_add(o, " }");
            }
        }
    }
    free(ts), free(ms), free(ks);
}

int qk_tune_select_json(qk_str *o, const qk_tune_outcome *oc, uint32_t n,
                        const qk_tune_default *defaults, uint32_t nd) {
    /* version 2 where a rule names activations other than f32 (the bundle
     * then says schema 4, which readers of 3 refuse: cmd_build_tuned) */
    bool v2 = false;
    for (uint32_t i = 0; i < n; i++)
        v2 |= oc[i].best && strcmp(qk_tune_case_activations(&oc[i].c), "f32");
    for (uint32_t i = 0; i < nd; i++)
        v2 |= defaults[i].kernel[0] && strcmp(defaults[i].activations, "f32") != 0;
    /* version 3 where a winner runs in two passes (a rule names its first) */
    bool v3 = false;
    char pa[256], pb[256];
    for (uint32_t i = 0; i < n; i++)
        v3 |= oc[i].best && qk_tune_two_pass_parts(oc[i].best->variant, pa, pb, sizeof pa);
    const int version = v3 ? 3 : v2 ? 2 : 1;
    qk_str_addf(o, "{\n    \"version\": %d,\n    \"devices\": [", version);
    bool *done = calloc(n ? n : 1, sizeof *done);
    const qk_tune_outcome **sel = malloc(sizeof *sel * (n ? n : 1));
    bool first_dev = true;
    for (uint32_t i = 0; i < n; i++) {
        if (done[i] || !oc[i].best) continue;
        const qk_tune_device *d = &oc[i].dev;
        qk_str_addf(o,
                    "%s\n      { \"vendor_id\": %u, \"device_id\": %u, \"driver_version\": %u, "
                    "\"family_mask\": %u, \"cache_uuid\": ",
                    first_dev ? "" : ",", d->vendor_id, d->device_id, d->driver_version,
                    QK_TUNE_FAMILY_MASK);
        qk_json_string(o, d->cache_uuid);
        qk_str_add(o, ", \"name\": ");
        qk_json_string(o, d->name);
        qk_str_add(o, ",\n        \"rules\": [");
        first_dev = false;
        bool first = true;
        for (uint32_t j = i; j < n; j++) { /* each (op, format, option, activations) group */
            if (done[j] || !oc[j].best || !qk_tune_same_device(&oc[j].dev, d)) continue;
            uint32_t ns = 0;
            for (uint32_t k = j; k < n; k++)
                if (!done[k] && oc[k].best && qk_tune_same_device(&oc[k].dev, d) &&
                    same_rules(&oc[k].c, &oc[j].c))
                    sel[ns++] = &oc[k], done[k] = true;
            group_rules(o, sel, ns, &first);
        }
        qk_str_add(o, "\n        ] }");
    }
    qk_str_add(o, "\n    ],\n    \"default\": [");
    bool first_default = true;
    for (uint32_t i = 0; i < nd; i++) {
        const qk_tune_default *d = &defaults[i];
        if (!d->kernel[0]) continue; /* no portable kernel (qk_tune_fallback) */
        rule_json(o, d->op, d->format, d->option, d->activations, d->kernel, d->precision,
                  first_default);
        qk_str_add(o, "\"M\": [1, null], \"K\": [1, null], \"T\": [1, null] }");
        first_default = false;
    }
    qk_str_add(o, "\n    ]\n  }");
    free(done);
    free(sel);
    return version;
}

bool qk_tune_manifest_hashes(const char *bundle_dir, char ***names, char ***hashes, uint32_t *n,
                             qk_error *e) {
    *names = *hashes = NULL;
    *n = 0;
    char *path = qk_path_join(bundle_dir, "manifest.json");
    size_t len = 0;
    char *text = qk_read_file(path, &len, e);
    char err[256] = "";
    qkrt_json *doc = text ? qkrt_json_parse(text, len, err, sizeof err) : NULL;
    const qkrt_json *ks = doc ? qkrt_json_get(doc, "kernels") : NULL;
    if (text && (!ks || ks->type != QKRT_JSON_ARRAY))
        qk_error_set(e, "%s: %s", path, err[0] ? err : "no kernels array");
    /* a kernel's hash is its module's (docs/manifest.md, "Kernels and modules") */
    const qkrt_json *mods = doc ? qkrt_json_get(doc, "modules") : NULL;
    for (uint32_t i = 0; ks && ks->type == QKRT_JSON_ARRAY && i < ks->count; i++) {
        const qkrt_json *name = qkrt_json_get(&ks->items[i], "name");
        const qkrt_json *mod = qkrt_json_get(&ks->items[i], "module");
        const qkrt_json *h = mod && mod->type == QKRT_JSON_STRING
                                 ? qkrt_json_get(qkrt_json_named(mods, mod->string), "spv_sha256")
                                 : NULL;
        if (!name || !h || name->type != QKRT_JSON_STRING || h->type != QKRT_JSON_STRING) continue;
        *names = qk_xrealloc(*names, sizeof **names * (*n + 1));
        *hashes = qk_xrealloc(*hashes, sizeof **hashes * (*n + 1));
        (*names)[*n] = qk_xstrdup(name->string);
        (*hashes)[(*n)++] = qk_xstrdup(h->string);
    }
    bool ok = ks && ks->type == QKRT_JSON_ARRAY;
    qkrt_json_free(doc);
    free(text);
    free(path);
    return ok;
}

static void build_progress(void *user, uint32_t done, uint32_t total, const char *variant) {
    (void)user;
    if (isatty(2)) fprintf(stderr, "\r\033[K[%u/%u] compiling %s", done + 1, total, variant);
}

bool qk_tune_build_subset(const qk_spec_set *specs, const qk_plan *plan, const bool *want,
                          const char *templates, const char *out_dir, const char *name, bool quiet,
                          qk_build_stats *st, qk_error *e) {
    return qk_tune_build_tuned(specs, plan, want, templates, out_dir, name, quiet, NULL, st, e);
}

bool qk_tune_build_tuned(const qk_spec_set *specs, const qk_plan *plan, const bool *want,
                         const char *templates, const char *out_dir, const char *name, bool quiet,
                         const qk_bundle_tuned *tuned, qk_build_stats *st, qk_error *e) {
    bool *take = qk_xcalloc(plan->variant_count + 1, sizeof *take);
    for (uint32_t i = 0; i < plan->variant_count; i++)
        if (want[i]) take[i] = take[plan->variants[i].module_first] = true;
    qk_plan sub = *plan;
    sub.variants = qk_xcalloc(plan->variant_count + 1, sizeof *sub.variants);
    sub.variant_count = 0;
    uint32_t *at = qk_xcalloc(plan->variant_count + 1, sizeof *at); /* plan index -> sub index */
    for (uint32_t i = 0; i < plan->variant_count; i++) {
        if (!take[i]) continue;
        at[i] = sub.variant_count;
        sub.variants[sub.variant_count] = plan->variants[i];
        sub.variants[sub.variant_count++].module_first = at[plan->variants[i].module_first];
    }
    qk_build_opts o = {.templates_dir = templates,
                       .out_dir = out_dir,
                       .name = name,
                       .progress = quiet ? NULL : build_progress,
                       .log = stderr, /* a tune waiting for another's build of DIR says so */
                       .tuned = tuned};
    qk_compile_init();
    bool ok = qk_bundle_build(specs, &sub, &o, st, e);
    qk_compile_finish();
    if (!quiet && isatty(2)) fputs("\r\033[K", stderr);
    free(sub.variants), free(take), free(at);
    return ok;
}

/* The record of variant in the outcome's case at stage, or NULL. */
static const qk_tune_record *record_at(const qk_tune_db *db, const qk_tune_outcome *o,
                                       const char *variant, const char *stage) {
    for (uint32_t i = 0; i < db->count; i++) {
        const qk_tune_record *r = &db->recs[i];
        if (!strcmp(r->variant, variant) && !strcmp(r->stage, stage) && !strcmp(r->status, "ok") &&
            qk_tune_same_device(&r->dev, &o->dev) && qk_tune_same_case(&r->c, &o->c))
            return r;
    }
    return NULL;
}

/* The case's time of variant in the stage its best is compared at; 0: none. */
static double time_at(const qk_tune_db *db, const qk_tune_outcome *o, const char *variant) {
    const char *stage = record_at(db, o, o->best->variant, "screen") ? "screen" : "full";
    const qk_tune_record *r = record_at(db, o, variant, stage);
    return r ? r->us : 0;
}

uint32_t qk_tune_consolidate(const qk_tune_db *db, qk_tune_outcome *oc, uint32_t n, double within,
                             const char *precision) {
    bool *done = qk_xcalloc(n + 1, 1), *covered = qk_xcalloc(n + 1, 1);
    uint32_t distinct = 0;
    for (uint32_t g = 0; g < n; g++) {
        if (done[g] || !oc[g].best) continue;
        /* the group of g: same device, op, format, option and activations,
         * with a winner */
        uint32_t *grp = qk_xcalloc(n, sizeof *grp), ng = 0;
        for (uint32_t i = g; i < n; i++)
            if (!done[i] && oc[i].best && qk_tune_same_device(&oc[i].dev, &oc[g].dev) &&
                same_rules(&oc[i].c, &oc[g].c))
                grp[ng++] = i, done[i] = true;
        /* each case's best time at its comparison stage */
        double *best = qk_xcalloc(ng, sizeof *best);
        for (uint32_t a = 0; a < ng; a++)
            best[a] = time_at(db, &oc[grp[a]], oc[grp[a]].best->variant);
        for (uint32_t left = ng; left;) {
            /* the winner of some case acceptable to the most uncovered cases */
            const char *pick = NULL;
            uint32_t pick_n = 0;
            double pick_sum = 0;
            for (uint32_t a = 0; a < ng; a++) {
                if (covered[grp[a]]) continue;
                const char *v = oc[grp[a]].best->variant;
                uint32_t cnt = 0;
                double sum = 0;
                for (uint32_t b = 0; b < ng; b++) {
                    if (covered[grp[b]]) continue;
                    double t = time_at(db, &oc[grp[b]], v);
                    if (t > 0 && best[b] > 0 && t <= best[b] * (1 + within))
                        cnt++, sum += t / best[b];
                }
                if (!pick || cnt > pick_n || (cnt == pick_n && sum < pick_sum))
                    pick = v, pick_n = cnt, pick_sum = sum;
            }
            for (uint32_t b = 0; b < ng; b++) {
                qk_tune_outcome *o = &oc[grp[b]];
                double t = covered[grp[b]] ? 0 : time_at(db, o, pick);
                bool own = !strcmp(o->best->variant, pick); /* a case's own winner serves it */
                if (covered[grp[b]] ||
                    !(own || (t > 0 && best[b] > 0 && t <= best[b] * (1 + within))))
                    continue;
                const qk_tune_record *r = record_at(db, o, pick, "full");
                if (!r) r = record_at(db, o, pick, "screen");
                if (r && allowed(precision, r)) o->best = r;
                covered[grp[b]] = true;
                left--;
            }
            distinct++;
        }
        free(best);
        free(grp);
    }
    free(done);
    free(covered);
    return distinct;
}
