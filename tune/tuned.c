/* What a tuned bundle holds besides the winners (qkgen build --tuned): the
 * MoE layer's other kernels, the winners' fused and ranked siblings; the
 * records whose variant computes their case; the build of the chosen ones. */
#include "tune.h"
#include "ops_moe.h" /* qk_ranked_name */
#include "qk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The operations of a MoE layer besides its products (docs/tune.md). */
bool qk_tune_moe_aux(const char *op) {
    return !strcmp(op, "router_topk") || !strcmp(op, "moe_route") || !strcmp(op, "moe_combine") ||
           !strcmp(op, "swiglu") || !strcmp(op, "quantize");
}

/* Whether v takes no weights, or weights of a format (and MLX scale type)
 * that one of the model's operations runs: its winner's or its fallback's.
 * The aux kernels that compute from weights (router_topk and moe_combine
 * computing their inputs) are kept for those formats only. */
bool qk_tune_runs_format(const qk_variant *v, const qk_tune_outcome *oc, uint32_t n,
                         const qk_tune_default *defs, uint32_t nd) {
    if (v->format == &qk_format_none) return true;
    for (uint32_t j = 0; j < n; j++)
        if (oc[j].best && !strcmp(oc[j].c.format, v->format->name) &&
            !strcmp(oc[j].c.format_variant, v->format->variant))
            return true;
    for (uint32_t d = 0; d < nd; d++)
        if (!strcmp(defs[d].format, v->format->name) && !strcmp(defs[d].option, v->format->variant))
            return true;
    return false;
}

/* Whether v is winner's swiglu-fused form (the name + "_swiglu"). */
bool qk_tune_is_fused_sibling(const qk_variant *v, const char *winner) {
    size_t n = strlen(winner);
    return v->fusion && !strcmp(v->fusion->name, "swiglu") && !strncmp(v->name, winner, n) &&
           !strcmp(v->name + n, "_swiglu");
}

/* Whether v is the ranked form of winner's swiglu-fused sibling (the
 * router's top-k inside, qk_ranked_name: `qkgen bench --layer --router
 * ranked` runs it). */
bool qk_tune_is_ranked_sibling(const qk_variant *v, const char *winner) {
    char name[300];
    return v->fusion && qk_ranked_name(winner, name, sizeof name) && !strcmp(v->name, name);
}

bool qk_tune_model_has(const qk_model_case *mc, uint32_t n, const qk_tune_case *c) {
    for (uint32_t i = 0; i < n; i++)
        if (!strcmp(mc[i].family, c->op) && !strcmp(mc[i].format, c->format) && mc[i].m == c->M &&
            mc[i].k == c->K && mc[i].tokens == c->T && mc[i].experts == c->E &&
            mc[i].top_k == c->top_k)
            return true;
    return false;
}

/* Builds the variants `want` marks of plan into out/name: as planned
 * (specialize), or each a module of its own with its tiles compiled in,
 * from a second plan of the same specs with no specialization (the variant
 * names are the same). */
bool qk_tune_build_chosen(const qk_spec_set *specs, const qk_plan *plan, const bool *want,
                          bool specialize, const char *spec_dir, const char *set_path,
                          const char *templates, const char *out, const char *name, bool quiet,
                          const qk_bundle_tuned *tuned, qk_build_stats *st, qk_error *e) {
    if (specialize)
        return qk_tune_build_tuned(specs, plan, want, templates, out, name, quiet, tuned, st, e);
    qk_spec_set fixed;
    qk_plan fixed_plan;
    if (!qk_plan_load(spec_dir, set_path, NULL, 0, true, &fixed, &fixed_plan, e)) return false;
    bool *take = qk_xcalloc(fixed_plan.variant_count + 1, sizeof *take);
    uint32_t asked = 0, found = 0;
    for (uint32_t i = 0; i < plan->variant_count; i++) {
        if (!want[i]) continue;
        asked++;
        for (uint32_t j = 0; j < fixed_plan.variant_count; j++)
            if (!strcmp(fixed_plan.variants[j].name, plan->variants[i].name)) {
                take[j] = true, found++;
                break;
            }
    }
    bool ok = found == asked;
    if (!ok)
        qk_error_set(e,
                     "%u of %u chosen variants are missing from the plan without "
                     "specialization constants",
                     asked - found, asked);
    ok = ok &&
         qk_tune_build_tuned(&fixed, &fixed_plan, take, templates, out, name, quiet, tuned, st, e);
    free(take);
    qk_plan_free(&fixed_plan);
    qk_spec_set_free(&fixed);
    return ok;
}

/* Keeps the records whose variant computes their case (the tuner's own
 * test of a candidate: its family, format, option and activations the
 * case's, unfused, the shape within its constraints): a record of a q8_0
 * kernel for a q4_0 case would become a rule that runs it over q4_0 blocks.
 * Says on log how many it drops, with an example; returns that count. */
uint32_t qk_tune_drop_misfits(qk_tune_db *db, const qk_plan *plan, const char *dbpath, FILE *log) {
    uint32_t kept = 0, dropped = 0;
    char example[1024] = "";
    for (uint32_t i = 0; i < db->count; i++) {
        const qk_tune_record *r = &db->recs[i];
        const qk_variant *v = NULL;
        for (uint32_t j = 0; j < plan->variant_count && !v; j++)
            if (!strcmp(plan->variants[j].name, r->variant)) v = &plan->variants[j];
        if (!v || qk_tune_candidate(v, &r->c, &(qk_tune_space){0})) {
            db->recs[kept++] = *r;
            continue;
        }
        if (!dropped++) {
            char label[160];
            qk_tune_case_label(&r->c, label, sizeof label);
            snprintf(example, sizeof example, "%s for %s: a %s %s%s%s kernel on %s activations%s",
                     r->variant, label, v->kernel->family, v->format->name,
                     v->format->variant[0] ? "/" : "", v->format->variant, v->activation,
                     v->fusion ? ", fused" : "");
        }
    }
    db->count = kept;
    if (dropped)
        fprintf(log,
                "%s: %u records whose kernel does not compute their case ignored "
                "(e.g. %s)\n",
                dbpath, dropped, example);
    return dropped;
}

/* A variant of the plan as qkrt_select_check sees a manifest's kernel. */
bool qk_tune_plan_kernel(void *user, const char *name, qkrt_select_kernel *out) {
    const qk_plan *plan = user;
    for (uint32_t i = 0; i < plan->variant_count; i++) {
        const qk_variant *v = &plan->variants[i];
        if (strcmp(v->name, name)) continue;
        *out = (qkrt_select_kernel){v->kernel->family, v->format ? v->format->name : "",
                                    v->format ? v->format->variant : "", v->activation,
                                    v->fusion ? v->fusion->name : "none"};
        return true;
    }
    return false;
}

/* The spv_sha256 of each variant the generator makes now (qk_tune_db_keep's
 * hash_of): the records of others are stale. */
typedef struct hashes {
    char **names, **hashes;
    uint32_t nh;
} hashes;

static const char *hash_of(void *user, const char *variant) {
    hashes *t = user;
    return qk_tune_hash_lookup(&t->names, &t->hashes, &t->nh, variant);
}

/* Whether a record of `recorded` measured variant: it, or a two-pass pair
 * of which it is a part. */
static bool measured(const char *recorded, const char *variant) {
    char a[256], b[256];
    if (!strcmp(recorded, variant)) return true;
    return qk_tune_two_pass_parts(recorded, a, b, sizeof a) &&
           (!strcmp(a, variant) || !strcmp(b, variant));
}

static const char *fallback_name(void *user, const qk_tune_case *c) {
    const qk_variant *v =
        qk_tune_fallback(user, c->op, c->format, c->format_variant, qk_tune_case_activations(c));
    return v ? v->name : NULL;
}

int qk_tune_build_bundle(const qk_tune_bundle_opts *o, const qk_spec_set *specs,
                         const qk_plan *plan) {
    qk_tune_db db;
    qk_error e = {0};
    if (!qk_tune_db_load(o->db, &db, o->log, &e)) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        return QK_TUNE_FAIL;
    }
    if (!db.count) { /* the lines it had (if any) were reported as ignored */
        fprintf(stderr, "qkgen build: --tuned: %s: no records%s\n", o->db,
                db.bad || db.torn ? " (every line ignored: see above)" : "");
        qk_tune_db_free(&db);
        return QK_TUNE_USAGE;
    }
    /* the content hashes the generator makes now, for every variant the
     * database names: records of others are stale */
    bool *want = qk_xcalloc(plan->variant_count + 1, sizeof *want);
    uint32_t named = 0;
    for (uint32_t i = 0; i < plan->variant_count; i++)
        for (uint32_t j = 0; j < db.count && !want[i]; j++)
            if (measured(db.recs[j].variant, plan->variants[i].name)) want[i] = true, named++;
    hashes tr = {0};
    qk_build_stats st;
    char check_name[300];
    snprintf(check_name, sizeof check_name, ".%s-hashes", o->name);
    char *check_dir = qk_path_join(o->out, check_name);
    int rc = QK_TUNE_DONE;
    if (named && (!qk_tune_build_subset(specs, plan, want, o->templates, o->out, check_name,
                                        o->quiet, &st, &e) ||
                  !qk_tune_manifest_hashes(check_dir, &tr.names, &tr.hashes, &tr.nh, &e))) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        rc = QK_TUNE_FAIL;
    }
    qk_rmtree(check_dir);
    free(check_dir);
    qk_tune_db_keep(&db, NULL, hash_of, &tr, o->log);
    qk_tune_drop_misfits(&db, plan, o->db, o->log);
    if (rc == QK_TUNE_DONE && !db.count && !o->model)
        fprintf(stderr,
                "qkgen build: --tuned: %s: no record of a variant the generator makes for its "
                "case (see above)\n",
                o->db),
            rc = QK_TUNE_USAGE;
    /* the winners (of the model's cases), and a fallback per operation */
    qk_tune_outcome *oc = NULL;
    uint32_t n = rc ? 0 : qk_tune_outcomes(&db, o->precision, fallback_name, (void *)plan, &oc),
             kept = 0;
    for (uint32_t i = 0; i < n; i++)
        if (!o->model || qk_tune_model_has(o->cases, o->case_count, &oc[i].c)) oc[kept++] = oc[i];
    n = kept;
    /* fewer kernels where one serves several cases within --within percent */
    if (o->within && n) qk_tune_consolidate(&db, oc, n, o->within, o->precision);
    qk_tune_default *defs = qk_xcalloc(n + o->case_count + 1, sizeof *defs);
    uint32_t nd = 0, winners = 0;
    memset(want, 0, sizeof *want * plan->variant_count);
    bool any_q8 = false;
    for (uint32_t i = 0; i < n + o->case_count && rc == QK_TUNE_DONE; i++) {
        qk_tune_case c = {0};
        if (i < n) {
            c = oc[i].c;
            if (oc[i].best) {
                for (uint32_t v = 0; v < plan->variant_count; v++)
                    if (measured(oc[i].best->variant, plan->variants[v].name))
                        want[v] = true, any_q8 |= qk_tune_takes_q8(&plan->variants[v]);
                winners++;
            } else {
                char label[160];
                qk_tune_case_label(&c, label, sizeof label);
                fprintf(stderr,
                        "qkgen build: %s: no correct candidate in %s: the fallback serves it\n",
                        label, o->db);
            }
        } else {
            snprintf(c.op, sizeof c.op, "%s", o->cases[i - n].family);
            snprintf(c.format, sizeof c.format, "%s", o->cases[i - n].format);
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
        const qk_variant *f = qk_tune_fallback(plan, c.op, c.format, c.format_variant, act);
        if (!f && !strcmp(act, "f32")) {
            fprintf(stderr, "qkgen build: no %s kernel for %s in %s\n", c.op, c.format,
                    o->spec_dir);
            rc = QK_TUNE_USAGE;
            break;
        }
        if (!f) /* f16 activations of a K-quant or mxfp4: its tuned rules only */
            fprintf(stderr,
                    "qkgen build: no %s kernel for %s on %s activations runs on every device: "
                    "no default rule for them (other devices' queries find none)\n",
                    c.op, c.format, act);
        if (f) want[f - plan->variants] = true, any_q8 |= qk_tune_takes_q8(f);
        qk_tune_default *d = &defs[nd++];
        snprintf(d->op, sizeof d->op, "%s", c.op);
        snprintf(d->format, sizeof d->format, "%s", c.format);
        snprintf(d->option, sizeof d->option, "%s", c.format_variant);
        snprintf(d->activations, sizeof d->activations, "%s", act);
        snprintf(d->kernel, sizeof d->kernel, "%s", f ? f->name : ""); /* "": none */
        snprintf(d->precision, sizeof d->precision, "%s", f ? qk_variant_precision(f) : "");
    }
    if (o->model && rc == QK_TUNE_DONE) /* every case of the model is tuned, or says so */
        for (uint32_t i = 0; i < o->case_count; i++) {
            bool tuned = false;
            for (uint32_t j = 0; j < n && !tuned; j++)
                tuned = oc[j].best && !strcmp(qk_tune_case_activations(&oc[j].c), "f32") &&
                        !strcmp(oc[j].c.op, o->cases[i].family) &&
                        !strcmp(oc[j].c.format, o->cases[i].format) && oc[j].c.M == o->cases[i].m &&
                        oc[j].c.K == o->cases[i].k && oc[j].c.T == o->cases[i].tokens;
            if (!tuned)
                fprintf(stderr,
                        "qkgen build: %s %s m=%u k=%u t=%u of %s is not in %s: the "
                        "fallback serves it\n",
                        o->cases[i].family, o->cases[i].format, o->cases[i].m, o->cases[i].k,
                        o->cases[i].tokens, o->model, o->db);
        }
    for (uint32_t i = 0; any_q8 && i < plan->variant_count; i++)
        if (!strcmp(plan->variants[i].kernel->family, "quantize")) want[i] = true;
    /* A model with experts also gets what an engine runs around the tuned
     * products of its MoE layer (qkgen bench --layer records it so): the
     * router's top-k, the routing, the weighted sum and SwiGLU (a handful of
     * small kernels; those with weights in the model's formats only), and
     * each expert winner's swiglu-fused sibling, which computes gate and up
     * at once, and that sibling's ranked form, which ranks the router's
     * logits itself. */
    bool moe = false;
    for (uint32_t i = 0; i < o->case_count; i++)
        moe |= !strcmp(o->cases[i].family, "matvec_id") || !strcmp(o->cases[i].family, "matmul_id");
    for (uint32_t i = 0; moe && rc == QK_TUNE_DONE && i < plan->variant_count; i++) {
        const qk_variant *v = &plan->variants[i];
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
    defs = qk_xrealloc(defs, sizeof *defs * (nd + plan->variant_count + 1));
    for (uint32_t i = 0; rc == QK_TUNE_DONE && i < plan->variant_count; i++) {
        const qk_variant *v = &plan->variants[i];
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
    if (rc == QK_TUNE_DONE) {
        version = qk_tune_select_json(&sel, oc, n, defs, nd);
        char err[512] = "";
        qkrt_json *t = qkrt_json_parse(sel.s, sel.len, err, sizeof err);
        if (!t || !qkrt_select_check(t, qk_tune_plan_kernel, (void *)plan, err, sizeof err)) {
            fprintf(stderr, "qkgen build: the select table made from %s is not valid: %s\n", o->db,
                    err);
            rc = QK_TUNE_FAIL;
        }
        qkrt_json_free(t);
    }
    /* the manifest lists the winners and the fallbacks, and what was built
     * besides them: the quantizer, a MoE layer's other kernels and the
     * winners' fused siblings (winners and fallbacks are unfused products);
     * not the variants built only because a module's SPIR-V starts with
     * them */
    const char **keep = qk_xcalloc(2 * n + nd + plan->variant_count + 1, sizeof *keep);
    uint32_t nkeep = 0;
    for (uint32_t i = 0; i < n; i++) /* a two-pass winner: both of its passes */
        for (uint32_t v = 0; oc[i].best && v < plan->variant_count; v++)
            if (measured(oc[i].best->variant, plan->variants[v].name))
                keep[nkeep++] = plan->variants[v].name;
    for (uint32_t d = 0; d < nd_products; d++)
        if (defs[d].kernel[0]) keep[nkeep++] = defs[d].kernel;
    for (uint32_t i = 0; i < plan->variant_count; i++)
        if (want[i] &&
            (qk_tune_moe_aux(plan->variants[i].kernel->family) || plan->variants[i].fusion))
            keep[nkeep++] = plan->variants[i].name;
    /* rules for f16 activations or two passes (select version 2, 3): schema
     * 4, which a reader of 3 refuses instead of answering f32 queries with
     * them (a reader of select version 2 refuses 3: its rules' kernels read
     * what their first pass writes) */
    qk_bundle_tuned tuned = {.select = sel.s,
                             .schema = version >= 2 ? QK_BUNDLE_SCHEMA_ACT : QK_BUNDLE_SCHEMA,
                             .listed = keep,
                             .listed_count = nkeep};
    if (rc == QK_TUNE_DONE &&
        !qk_tune_build_chosen(specs, plan, want, o->specialize, o->spec_dir, o->set_path,
                              o->templates, o->out, o->name, o->quiet, &tuned, &st, &e)) {
        fprintf(stderr, "qkgen build: %s\n", e.msg);
        rc = QK_TUNE_FAIL;
    }
    free(keep);
    if (rc == QK_TUNE_DONE && !o->quiet)
        printf(
            "built %s: %u variants (winners of %u of %u tuned cases, %u fallbacks) with a select "
            "table (precision %s), in %.2f s\n",
            st.path, st.variants, winners, n, nd_products, o->precision, qk_now_s() - o->t0);
    qk_str_free(&sel);
    for (uint32_t i = 0; i < tr.nh; i++)
        free(tr.names[i]), free(tr.hashes[i]);
    free(tr.names), free(tr.hashes), free(want), free(oc), free(defs);
    qk_tune_db_free(&db);
    return rc;
}
