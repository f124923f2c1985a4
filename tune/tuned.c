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
