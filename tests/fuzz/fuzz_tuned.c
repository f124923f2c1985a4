/* Fuzz harness: build --tuned's table writer (qk_tune_select_json) on any
 * tuning database: the records loaded (tune/db.c), those whose variant
 * computes another case dropped (here a variant "OP_FORMAT..." computes
 * that op and format, as build --tuned asks the plan), each case's winner
 * and a fallback per group made into a select table, which must read back
 * as JSON and pass libqkrt's check (qkrt_select_check): no record makes a
 * table libqkrt refuses. */
#include "db.h"
#include "fuzz.h"
#include "qk_json.h"
#include "tune.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The case a variant computes by its name: the first record's that names it. */
typedef struct lookup_ctx {
    const qk_tune_db *db;
    const qk_tune_default *defs;
    uint32_t nd;
} lookup_ctx;

static bool computes(const char *variant, const qk_tune_case *c) {
    char prefix[128];
    snprintf(prefix, sizeof prefix, "%s_%s", c->op, c->format);
    return !strncmp(variant, prefix, strlen(prefix));
}

static bool lookup(void *user, const char *name, qkrt_select_kernel *out) {
    const lookup_ctx *l = user;
    for (uint32_t i = 0; i < l->nd; i++)
        if (!strcmp(l->defs[i].kernel, name)) {
            const qk_tune_default *d = &l->defs[i];
            return *out = (qkrt_select_kernel){d->op, d->format, d->option, d->activations, NULL},
                   true;
        }
    for (uint32_t i = 0; i < l->db->count; i++) {
        const qk_tune_record *r = &l->db->recs[i];
        if (strcmp(r->variant, name)) continue;
        *out = (qkrt_select_kernel){r->c.op, r->c.format, r->c.format_variant,
                                    qk_tune_case_activations(&r->c), NULL};
        return true;
    }
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *log;
    if (!log) log = fopen("/dev/null", "w");
    const char *path = qkfuzz_file("tuned.jsonl", data, size);
    qk_tune_db db;
    qk_error e = {0};
    if (!qk_tune_db_load(path, &db, log, &e)) {
        qk_tune_db_free(&db);
        return 0;
    }
    /* a variant is one kernel: the case of its first record is what it
     * computes, and the records of others are dropped (drop_misfits) */
    uint32_t kept = 0;
    for (uint32_t i = 0; i < db.count; i++) {
        const qk_tune_record *r = &db.recs[i];
        bool first = true, fits = computes(r->variant, &r->c);
        for (uint32_t j = 0; j < kept && first; j++)
            if (!strcmp(db.recs[j].variant, r->variant)) {
                first = false;
                fits &= !strcmp(db.recs[j].c.op, r->c.op) &&
                        !strcmp(db.recs[j].c.format, r->c.format) &&
                        !strcmp(db.recs[j].c.format_variant, r->c.format_variant) &&
                        !strcmp(qk_tune_case_activations(&db.recs[j].c),
                                qk_tune_case_activations(&r->c));
            }
        if (fits) db.recs[kept++] = *r;
    }
    db.count = kept;
    qk_tune_outcome *oc = NULL;
    uint32_t n = qk_tune_outcomes(&db, "any", NULL, NULL, &oc);
    qk_tune_default *defs = calloc(n + 1, sizeof *defs);
    uint32_t nd = 0;
    for (uint32_t i = 0; i < n; i++) {
        qk_tune_default *d = &defs[nd++];
        snprintf(d->op, sizeof d->op, "%s", oc[i].c.op);
        snprintf(d->format, sizeof d->format, "%s", oc[i].c.format);
        snprintf(d->option, sizeof d->option, "%s", oc[i].c.format_variant);
        snprintf(d->activations, sizeof d->activations, "%s", qk_tune_case_activations(&oc[i].c));
        snprintf(d->kernel, sizeof d->kernel, "%s_%s_fallback%u", d->op, d->format, i);
        snprintf(d->precision, sizeof d->precision, "f32");
    }
    qk_str sel = {0};
    qk_tune_select_json(&sel, oc, n, defs, nd);
    char err[512] = "";
    qkrt_json *t = qkrt_json_parse(sel.s, sel.len, err, sizeof err);
    if (!t) qkfuzz_fail("the select table written does not read back", err);
    lookup_ctx l = {&db, defs, nd};
    if (!qkrt_select_check(t, lookup, &l, err, sizeof err))
        qkfuzz_fail("the select table written fails libqkrt's check", err);
    qkrt_json_free(t);
    qk_str_free(&sel);
    free(defs);
    free(oc);
    qk_tune_db_free(&db);
    return 0;
}
