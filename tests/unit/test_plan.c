/* Plan expansion and variant names: a small spec set with a parameterized
 * format family, rules and built-in legality checks, against exact results. */
#include "plan/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static const qk_variant *find(const qk_plan *p, const char *name) {
    for (uint32_t i = 0; i < p->variant_count; i++)
        if (!strcmp(p->variants[i].name, name)) return &p->variants[i];
    return NULL;
}

static const qk_dropped *find_dropped(const qk_plan *p, const char *name) {
    for (uint32_t i = 0; i < p->dropped_count; i++)
        if (!strcmp(p->dropped[i].name, name)) return &p->dropped[i];
    return NULL;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_plan SPEC_DIR\n");
        return 2;
    }
    qk_spec_set s;
    qk_plan p;
    qk_error e = {0};
    if (!qk_spec_set_load(argv[1], &s, &e) || !qk_plan_build(&s, &p, &e)) {
        printf("FAIL: %s\n", e.msg);
        return 1;
    }
    /* formats: blk plus 2 x 2 x 2 family members, names from the pattern */
    CHECK(p.format_count == 9, "format count %u", p.format_count);
    const qk_format *f = qk_plan_find_format(&p, "fam8_g64");
    CHECK(f && f->elements == 64 && f->planes[0].per_group == 16, "fam8_g64 layout");
    CHECK(f && f->layout == QK_LAYOUT_PLANAR && f->plane_count == 2, "fam8_g64 planes");
    CHECK(qk_plan_find_format(&p, "fam4_g32") != NULL, "fam4_g32 exists");

    /* 2 formats... fam8_g64 has two scale types: 3 format instances x 2 acts
     * x 2 NR0 x 1 NR1 x 2 NK x 2 WG = 48 points */
    CHECK(p.variant_count + p.dropped_count == 48, "points %u + %u", p.variant_count,
          p.dropped_count);
    const qk_variant *v = find(&p, "kk_blk_f32_nr1x2x16_wg32");
    CHECK(v != NULL, "kk_blk_f32_nr1x2x16_wg32 present");
    if (v) {
        CHECK(!strcmp(v->grid[0], "(M + 1 - 1) / 1"), "grid x '%s'", v->grid[0]);
        CHECK(!strcmp(v->grid[1], "(T + 2 - 1) / 2"), "grid y '%s'", v->grid[1]);
        CHECK(!strcmp(v->constraints[0], "K % 32 == 0"), "constraint '%s'", v->constraints[0]);
        CHECK(v->shared_memory == 1 * 2 * 32 * 4, "shared %u", v->shared_memory);
    }
    CHECK(find(&p, "kk_fam8_g64_f16_f16_nr1x2x16_wg32") != NULL, "scale type in the name");
    CHECK(find(&p, "kk_fam8_g64_f32_f32_nr4x2x16_wg32") != NULL, "f32 scale, f32 act");

    /* dropped: rule reasons and the built-in checks */
    const qk_dropped *d = find_dropped(&p, "kk_blk_f32_nr4x2x32_wg32");
    CHECK(d && strstr(d->reason, "too many registers"), "register rule: %s", d ? d->reason : "-");
    d = find_dropped(&p, "kk_blk_f32_nr1x2x16_wg40");
    CHECK(d && strstr(d->reason, "smallest subgroups"), "subgroup rule: %s", d ? d->reason : "-");
    CHECK(find(&p, "kk_blk_f32_nr1x2x16_wg40") == NULL, "dropped point is no variant");

    /* bindings: planar weights first, one per plane, then the kernel's */
    if (v) {
        qk_binding_info b[QK_MAX_BINDINGS];
        uint32_t n = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
        CHECK(n == 3 && !strcmp(b[0].name, "w") && b[2].binding == 2, "block bindings");
    }
    v = find(&p, "kk_fam8_g64_f16_f16_nr1x2x16_wg32");
    if (v) {
        qk_binding_info b[QK_MAX_BINDINGS];
        uint32_t n = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
        CHECK(n == 4 && !strcmp(b[1].name, "scales") && !strcmp(b[1].type, "f16") &&
                  !strcmp(b[2].type, "f16"),
              "planar bindings");
        const char *feat[8];
        uint32_t nf = qk_variant_features(v, feat, 8);
        CHECK(nf == 2 && !strcmp(feat[1], "storage_16bit"), "f16 activations need 16-bit storage");
    }

    /* representative selection: of each kernel x format x activation x mma x fusion,
     * its first variant in plan order, and every such path has one */
    uint32_t *sel = calloc(p.variant_count + 1, sizeof *sel);
    CHECK(sel && qk_plan_select(&p, NULL, false, sel) == p.variant_count, "all selected");
    uint32_t nsel = sel ? qk_plan_select(&p, NULL, true, sel) : 0, paths = 0;
    for (uint32_t i = 0; sel && i < p.variant_count; i++) {
        const qk_variant *a = &p.variants[i];
        uint32_t first = i, picked = 0;
        for (uint32_t j = 0; j < i && first == i; j++) {
            const qk_variant *b = &p.variants[j];
            if (b->kernel == a->kernel && b->format == a->format &&
                !strcmp(b->activation, a->activation) && !strcmp(b->mma, a->mma) &&
                b->fusion == a->fusion)
                first = j;
        }
        paths += first == i;
        for (uint32_t j = 0; j < nsel; j++)
            picked += sel[j] == i;
        CHECK(picked == (first == i), "%s: selected %u times", a->name, picked);
    }
    CHECK(paths == 6 && nsel == paths, "%u paths (3 formats x 2 activations), %u selected", paths,
          nsel);
    nsel = sel ? qk_plan_select(&p, "_f16_nr", true, sel) : 0;
    CHECK(nsel == 3, "a filter, then one tile a path: %u (3 formats at f16)", nsel);
    free(sel);

    /* an unknown format in a kernel is an error with the spec's position */
    qk_kernel_spec *k = &s.kernels[0];
    snprintf(k->formats[1], sizeof k->formats[1], "nope");
    qk_plan p2;
    qk_error e2 = {0};
    CHECK(!qk_plan_build(&s, &p2, &e2) &&
              strstr(e2.msg, "k.yaml:4:10: formats: unknown format 'nope'"),
          "unknown format message: %s", e2.msg);

    /* 2^32 points: counted in 32 bits they were 0 variants and no error */
    k->format_count = 1;
    k->activation_count = 1;
    k->nr0_count = k->nr1_count = k->nk_count = k->wg_count = k->tpr_count = k->sk_count = 32;
    k->mma_count = 4;
    for (int i = 0; i < 32; i++)
        k->nr0[i] = k->nr1[i] = k->nk[i] = k->wg[i] = k->tpr[i] = k->sk[i] = 1;
    for (int i = 0; i < 4; i++)
        snprintf(k->mma[i], sizeof k->mma[i], "scalar");
    e2 = (qk_error){0};
    CHECK(!qk_plan_build(&s, &p2, &e2) &&
              strstr(e2.msg, "k.yaml:6:7: tile: kernel 'kk' on format 'blk' has 4294967296 points "
                             "(1 activations x 32 NR0 x 32 NR1 x 32 NK x 32 WG x 4 mma x 1 "
                             "fusions x 32 TPR x 32 SK), more than the 1048576 a plan may have"),
          "search space message: %s", e2.msg);

    qk_plan_free(&p);
    qk_spec_set_free(&s);
    printf("%s: %d failures\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
