/* The family language on tests/families/semantics.yaml, and the family specs
 * keep the search space of the kernel specs they replaced:
 * every name of tests/families/old_names.txt maps to one variant of a family
 * point with the same template, format, activation, tile, math path, fusion
 * and bindings, and no variant is new. Given the old spec folder too (a
 * checkout before the switch), it also compares the generated GLSL (less the
 * header comment) and the manifest's fields of every pair. */
#define _GNU_SOURCE /* memmem */
#include "emit/emit.h"
#include "plan/plan.h"

#include <fnmatch.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define FAIL(...)                                                                                  \
    do {                                                                                           \
        if (failures++ < 40) {                                                                     \
            printf("FAIL ");                                                                       \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
        }                                                                                          \
    } while (0)

/* Each old kernel spec: the family point that replaces it, its template and
 * the bindings after the weights. */
static const struct old_kernel {
    const char *name, *family, *axes, *template_name, *bindings;
} old_kernels[] = {
    {"copy", "", "", "copy.comp", "src,dst"},
    {"embed", "", "", "embed.comp", "ids,y"},
    {"moe_combine", "moe_combine", "slots=given", "moe_combine.comp", "slots,route_w,y"},
    {"moe_route", "", "", "moe_route.comp", "topk,tpe,ids,disp"},
    {"quantize_q8", "", "", "quantize_q8.comp", "x,xq"},
    {"router_topk", "router_topk", "logits=given", "router_topk.comp", "logits,ids,route_w"},
    {"swiglu", "", "", "swiglu.comp", "g,u,y"},
    {"matvec", "matvec", "routing=dense", "matvec.comp", "x,y"},
    {"matvec_id", "matvec", "routing=ids", "matvec.comp", "x,ids,y"},
    {"matvec_id_sep", "matvec", "routing=separate", "matvec_id_sep.comp", "x,ids,y"},
    {"matvec_shared", "matvec_shared", "routing=dense", "matvec_shared.comp", "x,y"},
    {"matvec_id_shared", "matvec_shared", "routing=ids", "matvec_shared.comp", "x,ids,y"},
    {"matvec_mma", "matvec_mma", "weights=registers", "matvec_mma.comp", "x,y"},
    {"matvec_mma_global", "matvec_mma", "weights=inplace", "matvec_mma.comp", "x,y"},
    {"matvec_staged", "matvec_lanes",
     "activation=direct routing=dense weights=registers split=none", "matvec_staged.comp", "x,y"},
    {"matvec_id_staged", "matvec_lanes",
     "activation=direct routing=ids weights=registers split=none", "matvec_staged.comp", "x,ids,y"},
    {"matvec_xs", "matvec_lanes", "activation=slab routing=dense weights=registers split=none",
     "matvec_xs.comp", "x,y"},
    {"matvec_xs_global", "matvec_lanes", "activation=slab routing=dense weights=inplace split=none",
     "matvec_xs.comp", "x,y"},
    {"matvec_xs_split", "matvec_lanes",
     "activation=slab routing=dense weights=registers split=splitk", "matvec_xs.comp",
     "x,y,scratch"},
    {"matvec_id_xs", "matvec_lanes", "activation=slab routing=ids weights=registers split=none",
     "matvec_xs.comp", "x,ids,y"},
    {"matvec_id_xs_global", "matvec_lanes",
     "activation=slab routing=ids weights=inplace split=none", "matvec_xs.comp", "x,ids,y"},
    {"matmul_id_xs", "matvec_lanes", "activation=slab routing=pairs weights=registers split=none",
     "matvec_xs.comp", "x,ids,tpe,y"},
    {"matvec_xq", "matvec_lanes", "activation=q8 routing=dense weights=registers split=none",
     "matvec_xq.comp", "x,y"},
    {"matvec_xq_global", "matvec_lanes", "activation=q8 routing=dense weights=inplace split=none",
     "matvec_xq.comp", "x,y"},
    {"matvec_xq_split", "matvec_lanes",
     "activation=q8 routing=dense weights=registers split=splitk", "matvec_xq.comp", "x,y,scratch"},
    {"matvec_xq_split_global", "matvec_lanes",
     "activation=q8 routing=dense weights=inplace split=splitk", "matvec_xq.comp", "x,y,scratch"},
    {"matvec_xq_pre", "matvec_lanes", "activation=q8pre routing=dense weights=registers split=none",
     "matvec_xq.comp", "xq,y"},
    {"matvec_xq_pre_global", "matvec_lanes",
     "activation=q8pre routing=dense weights=inplace split=none", "matvec_xq.comp", "xq,y"},
    {"matvec_id_xq", "matvec_lanes", "activation=q8 routing=ids weights=registers split=none",
     "matvec_xq.comp", "x,ids,y"},
    {"matvec_id_xq_global", "matvec_lanes", "activation=q8 routing=ids weights=inplace split=none",
     "matvec_xq.comp", "x,ids,y"},
    {"matvec_id_xq_pre", "matvec_lanes",
     "activation=q8pre routing=ids weights=registers split=none", "matvec_xq.comp", "xq,ids,y"},
    {"matmul_id_xq", "matvec_lanes", "activation=q8 routing=pairs weights=registers split=none",
     "matvec_xq.comp", "x,ids,tpe,y"},
    {"matmul_id_xq_global", "matvec_lanes",
     "activation=q8 routing=pairs weights=inplace split=none", "matvec_xq.comp", "x,ids,tpe,y"},
    {"matmul", "matmul", "routing=dense weights=inplace split=none", "matmul.comp", "x,y"},
    {"matmul_id", "matmul", "routing=pairs weights=inplace split=none", "matmul.comp",
     "x,ids,tpe,y"},
    {"matmul_shared", "matmul", "routing=dense weights=shared split=none", "matmul.comp", "x,y"},
    {"matmul_split", "matmul", "routing=dense weights=inplace split=splitk", "matmul.comp",
     "x,y,scratch"},
    {"matmul_shared_split", "matmul", "routing=dense weights=shared split=splitk", "matmul.comp",
     "x,y,scratch"},
    {"matmul_id_shared", "matmul", "routing=pairs weights=shared split=none", "matmul.comp",
     "x,ids,tpe,y"},
};
enum { OLD_COUNT = sizeof old_kernels / sizeof old_kernels[0] };

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static uint32_t index_of(const qk_plan *p, const char *name) {
    return (uint32_t)((const qk_variant *)(name - offsetof(qk_variant, name)) - p->variants);
}

/* The old kernel an old variant name starts with: the longest "NAME_" prefix. */
static const struct old_kernel *old_kernel_of(const char *name) {
    const struct old_kernel *best = NULL;
    for (int i = 0; i < OLD_COUNT; i++) {
        size_t n = strlen(old_kernels[i].name);
        if (!strncmp(name, old_kernels[i].name, n) && name[n] == '_' &&
            (!best || n > strlen(best->name)))
            best = &old_kernels[i];
    }
    return best;
}

/* axes text "a=x b=y" names the point when every "k=v" of it is in want,
 * but for the math path (mma=...), which the name's suffix spells. */
static bool axes_match(const char *have, const char *want) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", have);
    for (char *tok = strtok(buf, " "); tok; tok = strtok(NULL, " ")) {
        if (!strncmp(tok, "mma=", 4)) continue;
        size_t n = strlen(tok);
        const char *p = strstr(want, tok);
        if (!p || (p != want && p[-1] != ' ') || (p[n] && p[n] != ' ')) return false;
    }
    return true;
}

/* An "@added-KIND" line of the old-names file: a point the specs took after
 * the family specs, whose variants no old name can map to (counted apart):
 *   @added-mma PATH               a math path, of any family
 *   @added-fusion FAMILY FUSION   a fusion of a family
 *   @added-wg FAMILY WG           a workgroup size of a family (or kernel)
 *   @added-axis FAMILY AXIS=VALUE an axis value of a family
 *   @added-activation FAMILY TYPE an activation type of a family
 *   @added-format NAME            a format, in every kernel that lists it
 *   @added-format FAMILY PATTERN  formats (a shell pattern) a family took
 *   @added-family FAMILY          a family, every variant of it */
typedef struct added_point {
    char kind[16], family[64], value[64];
} added_point;

/* Parses line into *a; false if it is not one of the forms above. */
static bool parse_added(const char *line, added_point *a) {
    memset(a, 0, sizeof *a);
    if (sscanf(line, "@added-%15s %63s %63s", a->kind, a->family, a->value) < 2) return false;
    if (!strcmp(a->kind, "mma") || !strcmp(a->kind, "family") ||
        (!strcmp(a->kind, "format") && !a->value[0])) {
        /* one argument */
        if (a->value[0]) return false;
        memcpy(a->value, a->family, sizeof a->value);
        a->family[0] = 0;
        return true;
    }
    if (!strcmp(a->kind, "wg"))
        return a->value[0] && strspn(a->value, "0123456789") == strlen(a->value);
    return a->value[0] && (!strcmp(a->kind, "fusion") || !strcmp(a->kind, "axis") ||
                           !strcmp(a->kind, "activation") || !strcmp(a->kind, "format"));
}

/* Whether variant v is of the added point a. */
static bool is_added(const qk_variant *v, const added_point *a) {
    const qk_kernel_spec *k = v->kernel;
    if (!strcmp(a->kind, "mma")) return !strcmp(v->mma, a->value);
    if (!strcmp(a->kind, "format") && !a->family[0]) return !strcmp(v->format->name, a->value);
    if (!strcmp(a->kind, "family")) return !strcmp(k->origin[0] ? k->origin : k->name, a->value);
    if (strcmp(k->origin[0] ? k->origin : k->name, a->family)) return false;
    if (!strcmp(a->kind, "fusion")) return v->fusion && !strcmp(v->fusion->name, a->value);
    if (!strcmp(a->kind, "wg")) return v->wg == strtoul(a->value, NULL, 10);
    if (!strcmp(a->kind, "activation")) return !strcmp(v->activation, a->value);
    if (!strcmp(a->kind, "format")) return !fnmatch(a->value, v->format->name, 0);
    return axes_match(k->axes, a->value);
}

/* The name's part after the kernel, from the variant's fields (plan's scheme). */
static void rest_of(const qk_variant *v, char *out, size_t size) {
    qk_str r = {0};
    if (v->format != &qk_format_none) qk_str_addf(&r, "_%s", v->format->name);
    if (v->format->variant[0]) qk_str_addf(&r, "_%s", v->format->variant);
    qk_str_addf(&r, "_%s_nr%ux%ux%u_wg%u", v->activation, v->nr0, v->nr1, v->nk, v->wg);
    if (v->kernel->tpr_count) qk_str_addf(&r, "_tpr%u", v->tpr);
    if (v->kernel->sk_count) qk_str_addf(&r, "_sk%u", v->sk);
    if (v->mma[0]) qk_str_addf(&r, "_%s", v->mma);
    if (v->fusion) qk_str_addf(&r, "_%s", v->fusion->name);
    snprintf(out, size, "%s", r.s);
    qk_str_free(&r);
}

static void bindings_of(const qk_variant *v, char *out, size_t size) {
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t n = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    qk_str s = {0};
    for (uint32_t i = 0; i < n; i++) {
        qk_str_addf(&s, "%s%s/%s/%s/%d/%u/%u/%s", s.len ? "," : "", b[i].name, b[i].role, b[i].type,
                    b[i].writable, b[i].binding, b[i].count, b[i].size);
    }
    snprintf(out, size, "%s", s.s ? s.s : "");
    qk_str_free(&s);
}

/* The GLSL less the comments that name the spec files and the module. */
static char *glsl_of(const qk_variant *v, const char *templates) {
    qk_str src = {0};
    qk_error e = {0};
    if (!qk_emit_variant(v, templates, &src, NULL, NULL, &e)) {
        FAIL("%s: %s", v->name, e.msg);
        qk_str_free(&src);
        return NULL;
    }
    /* the comments and #line names that name spec files and the module */
    for (char *c = src.s; *c;) {
        char *nl = strchr(c, '\n');
        if (!nl) break;
        if ((!strncmp(c, "// ", 3) || !strncmp(c, "#line ", 6)) &&
            memmem(c, (size_t)(nl - c), "generated", 9))
            memmove(c, nl + 1, strlen(nl + 1) + 1);
        else
            c = nl + 1;
    }
    return src.s;
}

/* What the manifest says of v beside its name and module, as text. */
static void manifest_of(const qk_variant *v, char *out, size_t size) {
    const char *c[QK_MAX_RULES], *feat[16], *push[QK_MAX_LIST + 8];
    for (uint32_t i = 0; i < v->constraint_count; i++)
        c[i] = v->constraints[i];
    qsort(c, v->constraint_count, sizeof c[0], cmp_str);
    uint32_t nf = qk_variant_features(v, feat, 16), np = qk_variant_push(v, push, QK_MAX_LIST + 8);
    uint32_t ids[QK_SPEC_COUNT], vals[QK_SPEC_COUNT];
    uint32_t ns = qk_variant_specialization(v, ids, vals);
    char b[2048];
    bindings_of(v, b, sizeof b);
    qk_str s = {0};
    qk_str_addf(&s, "family %s weights %u smem %u minsg %u grid %s|%s|%s bindings %s",
                v->kernel->family, v->weights, v->shared_memory, v->kernel->min_subgroup_size,
                v->grid[0], v->grid[1], v->grid[2], b);
    for (uint32_t i = 0; i < v->constraint_count; i++)
        qk_str_addf(&s, " c:%s", c[i]);
    for (uint32_t i = 0; i < nf; i++)
        qk_str_addf(&s, " f:%s", feat[i]);
    for (uint32_t i = 0; i < np; i++)
        qk_str_addf(&s, " p:%s", push[i]);
    for (uint32_t i = 0; i < ns; i++)
        qk_str_addf(&s, " s:%u=%u", ids[i], vals[i]);
    snprintf(out, size, "%s", s.s);
    qk_str_free(&s);
}

/* tests/families/semantics.yaml expands as the language says (its comment). */
static void check_semantics(const char *path) {
    qk_family_spec f;
    qk_kernel_spec *ks = NULL;
    uint32_t n = 0;
    qk_error e = {0};
    if (!qk_family_spec_load(path, &f, &ks, &n, &e)) {
        FAIL("%s", e.msg);
        return;
    }
    static const struct {
        const char *name, *axes, *template_name, *family, *bindings, *push, *grid, *smem;
        uint32_t rules, nr0, sk;
    } want[] = {
        {"fam", "route=dense split=none math=narrow", "narrow.comp", "op", "x,y", "M,K", "M|1|1",
         "NR0 * 4", 1, 2, 0},
        {"fam", "route=dense split=none math=wide", "wide.comp", "op", "x,y", "M,K", "M|1|1",
         "NR0 * 8", 1, 2, 0},
        {"fam-k", "route=dense split=k math=narrow", "narrow.comp", "op", "x,y,scratch", "M,K",
         "M|1|SK", "NR0 * 4 + 4", 1, 2, 1},
        {"fam-k", "route=dense split=k math=wide", "wide.comp", "op", "x,y,scratch", "M,K",
         "M|1|SK", "NR0 * 8 + 4", 1, 2, 1},
        {"fam-ids", "route=ids split=none math=wide", "wide.comp", "op_id", "x,ids,y", "M,K,E",
         "M|E|1", "NR0 * 8", 2, 1, 0},
        {"fam-ids-k", "route=ids split=k math=narrow", "case.comp", "op_id", "x,ids,y,scratch",
         "M,K,E", "M|E|SK", "NR0 * 4 + 4", 1, 1, 1},
        {"fam-ids-k", "route=ids split=k math=wide", "case.comp", "op_id", "x,ids,y,scratch",
         "M,K,E", "M|E|SK", "NR0 * 8 + 4", 2, 1, 1},
    };
    if (n != sizeof want / sizeof want[0] || f.point_count != 8 ||
        strcmp(f.points[4].excluded, "no such kernel") || strcmp(f.points[4].kernel, "fam-ids"))
        FAIL("semantics: %u kernels, %u points, point 4 '%s' excluded '%s'", n, f.point_count,
             f.point_count > 4 ? f.points[4].kernel : "",
             f.point_count > 4 ? f.points[4].excluded : "");
    for (uint32_t i = 0; i < n && i < sizeof want / sizeof want[0]; i++) {
        const qk_kernel_spec *k = &ks[i];
        char b[256] = "", pc[256] = "", g[512];
        for (uint32_t j = 0; j < k->binding_count; j++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", j ? "," : "",
                     k->bindings[j].name);
        for (uint32_t j = 0; j < k->push_count; j++)
            snprintf(pc + strlen(pc), sizeof pc - strlen(pc), "%s%s", j ? "," : "", k->push[j]);
        snprintf(g, sizeof g, "%s|%s|%s", k->grid[0], k->grid[1], k->grid[2]);
        bool sk = (k->specialize >> QK_TILE_SK) & 1;
        if (strcmp(k->name, want[i].name) || strcmp(k->axes, want[i].axes) ||
            strcmp(k->origin, "fam") || strcmp(k->template_name, want[i].template_name) ||
            strcmp(k->family, want[i].family) || strcmp(b, want[i].bindings) ||
            strcmp(pc, want[i].push) || strcmp(g, want[i].grid) ||
            strcmp(k->shared_memory, want[i].smem) || k->rule_count != want[i].rules ||
            k->nr0_count != want[i].nr0 || k->sk_count != want[i].sk || sk != (want[i].sk > 0))
            FAIL("semantics: kernel %u is %s (%s) %s %s [%s] [%s] %s '%s' %u rules, %u NR0, %u SK",
                 i, k->name, k->axes, k->template_name, k->family, b, pc, g, k->shared_memory,
                 k->rule_count, k->nr0_count, k->sk_count);
    }
    free(ks);
    qk_family_spec_free(&f);
}

/* The subgroup grid of the matmul's cooperative-matrix paths, worked out
 * step by step as docs/matmul.md states it, against the spec's literals
 * (QK_WR, QK_WC, QK_BUSY: one expression each there): as many rows of
 * 16 x 16 blocks as there are subgroups, halved at most twice while that
 * cuts the matrices a subgroup loads per slice. */
static void grid_of(const qk_variant *v, uint32_t out[3]) {
    uint32_t nsg = v->wg / 32, ctr = v->nr0 / 16, ctc = v->nr1 / 16;
    uint32_t r = ctr < nsg ? ctr : nsg;
    for (int h = 0; h < 2; h++) {
        uint32_t half = r / 2;
        if (r < 2 || nsg / half > ctc || ctr / half + ctc * half / nsg >= ctr / r + ctc * r / nsg)
            break;
        r = half;
    }
    uint32_t sgc = nsg / r, wc = ctc > sgc ? ctc / sgc : 1;
    out[0] = ctr / r;
    out[1] = wc;
    out[2] = sgc * wc <= ctc;
}

/* The instance regions: each matmul variant's literals are its subgroup
 * grid; the variants of a module that share them share an instance, the
 * others do not; INSTANCE is a specialization constant exactly where a
 * module holds several; its GLSL defines one function per instance. */
static void check_instances(const qk_plan *p, const char *templates) {
    uint32_t checked = 0, modules = 0, most = 0;
    for (uint32_t i = 0; i < p->variant_count; i++) {
        const qk_variant *v = &p->variants[i];
        if (strcmp(v->kernel->template_name, "matmul.comp")) continue;
        const char *names[QK_MAX_LITERAL_VALUES];
        if (qk_kernel_literal_names(v->kernel, names) != 3 || strcmp(names[0], "QK_WR") ||
            strcmp(names[1], "QK_WC") || strcmp(names[2], "QK_BUSY")) {
            FAIL("%s: literals are not QK_WR, QK_WC, QK_BUSY", v->name);
            return;
        }
        uint32_t want[3] = {0, 0, 0};
        if (!strcmp(v->mma, "coopmat") || !strcmp(v->mma, "coopmat_khr")) grid_of(v, want);
        if (memcmp(want, v->literal, sizeof want))
            FAIL("%s: literals %u %u %u, the grid is %u %u %u", v->name, v->literal[0],
                 v->literal[1], v->literal[2], want[0], want[1], want[2]);
        const qk_variant *first = &p->variants[v->module_first];
        if (v->instance >= v->instance_count ||
            memcmp(v->instances[v->instance], v->literal, sizeof want))
            FAIL("%s: instance %u of %u does not hold its literals", v->name, v->instance,
                 v->instance_count);
        for (uint32_t j = 0; j < v->instance_count; j++)
            if (j != v->instance && !memcmp(v->instances[j], v->literal, sizeof want))
                FAIL("%s: its literals are instances %u and %u of %s", v->name, v->instance, j,
                     v->module);
        if (v->instance_count != first->instance_count) FAIL("%s: instance count", v->name);
        uint32_t ids[QK_SPEC_COUNT], vals[QK_SPEC_COUNT];
        uint32_t ns = qk_variant_specialization(v, ids, vals);
        bool has = ns && ids[ns - 1] == QK_SPEC_INSTANCE && vals[ns - 1] == v->instance;
        if (has != (v->instance_count > 1))
            FAIL("%s: INSTANCE %s among its specialization constants", v->name,
                 has ? "wrongly" : "missing");
        checked++;
        if (v->module_first != i) continue;
        modules++;
        most = v->instance_count > most ? v->instance_count : most;
        if (modules % 16) continue; /* the GLSL of every 16th module */
        char *g = glsl_of(v, templates);
        uint32_t fns = 0;
        for (const char *c = g; c && (c = strstr(c, "void QK_INSTANCE_MAIN()")); c++)
            fns++;
        uint32_t defs = 0;
        for (const char *c = g; c && (c = strstr(c, "#define QK_INSTANCE_MAIN qk_instance_")); c++)
            defs++;
        if (fns != v->instance_count || defs != v->instance_count)
            FAIL("%s: %u copies of the instance region, %u definitions; %u instances", v->module,
                 fns, defs, v->instance_count);
        free(g);
    }
    if (!checked || most < 2)
        FAIL("instances: %u matmul variants, at most %u instances", checked, most);
    printf("instances: %u matmul variants in %u modules, at most %u instances a module\n", checked,
           modules, most);
}

static bool load(const char *dir, qk_spec_set *s, qk_plan *p) {
    qk_error e = {0};
    if (!qk_spec_set_load(dir, s, &e) || !qk_plan_build(s, p, &e)) {
        printf("FAIL %s\n", e.msg);
        return false;
    }
    return true;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: test_families SPEC_DIR TEMPLATES_DIR OLD_NAMES [OLD_SPEC_DIR]\n");
        return 2;
    }
    /* the language itself, on a family next to the old names */
    char *fdir = qk_path_dir(argv[3]), *sem = qk_path_join(fdir, "semantics.yaml");
    check_semantics(sem);
    free(fdir);
    free(sem);
    qk_spec_set s, os;
    qk_plan p, op = {0};
    if (!load(argv[1], &s, &p) || (argc == 5 && !load(argv[4], &os, &op))) return 1;
    check_instances(&p, argv[2]);
    qk_error re = {0};
    char *names = qk_read_file(argv[3], NULL, &re);
    if (!names) {
        printf("FAIL %s\n", re.msg);
        return 1;
    }
    uint8_t *used = calloc(p.variant_count + 1, 1);
    const char **sorted = malloc(sizeof *sorted * (p.variant_count + 1));
    for (uint32_t i = 0; i < p.variant_count; i++)
        sorted[i] = p.variants[i].name;
    qsort(sorted, p.variant_count, sizeof *sorted, cmp_str);
    uint32_t old_count = 0, compared = 0, modules = 0, old_modules = 0, added = 0;
    added_point later_pts[64]; /* the file's "@added-KIND" lines */
    uint32_t nlater = 0;
    for (char *line = names, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        if (!line[0] || line[0] == '#') continue;
        if (!strncmp(line, "@added-", 7)) {
            if (nlater < 64 && parse_added(line, &later_pts[nlater]))
                nlater++;
            else
                FAIL("%s: expected @added-mma PATH or @added-fusion|wg|axis|activation|format "
                     "FAMILY VALUE",
                     line);
            continue;
        }
        old_count++;
        const struct old_kernel *ok = old_kernel_of(line);
        if (!ok) {
            FAIL("%s: no old kernel spec of that name in the table", line);
            continue;
        }
        const char *rest = line + strlen(ok->name);
        /* the new variant: the name of a kernel of the family point (or the
         * same auxiliary kernel) plus the rest, with fields that spell it */
        const qk_variant *v = NULL;
        uint32_t vi = 0;
        for (uint32_t i = 0; i < s.kernel_count && !v; i++) {
            const qk_kernel_spec *k = &s.kernels[i];
            if (strcmp(k->origin, ok->family) ||
                (ok->family[0] ? !axes_match(k->axes, ok->axes) : strcmp(k->name, ok->name)))
                continue;
            char want[512];
            snprintf(want, sizeof want, "%s%s", k->name, rest);
            const char *key = want;
            const char **hit = bsearch(&key, sorted, p.variant_count, sizeof *sorted, cmp_str);
            if (!hit) continue;
            vi = index_of(&p, *hit);
            v = &p.variants[vi];
        }
        if (!v) {
            FAIL("%s: no variant of %s %s with the same format, activation, tile, mma and fusion",
                 line, ok->family[0] ? ok->family : ok->name, ok->axes);
            continue;
        }
        char r[256];
        rest_of(v, r, sizeof r);
        if (strcmp(r, rest) || strcmp(v->kernel->origin, ok->family) ||
            (ok->family[0] && !axes_match(v->kernel->axes, ok->axes)))
            FAIL("%s -> %s: its fields spell %s at %s %s", line, v->name, r, v->kernel->origin,
                 v->kernel->axes);
        if (used[vi]++) FAIL("%s: maps to %s, which an earlier old name maps to", line, v->name);
        char b[1024] = "";
        for (uint32_t i = 0; i < v->kernel->binding_count; i++)
            snprintf(b + strlen(b), sizeof b - strlen(b), "%s%s", i ? "," : "",
                     v->kernel->bindings[i].name);
        if (strcmp(v->kernel->template_name, ok->template_name) || strcmp(b, ok->bindings))
            FAIL("%s -> %s: template %s, bindings %s; expected %s, %s", line, v->name,
                 v->kernel->template_name, b, ok->template_name, ok->bindings);
        if (argc != 5) continue;
        const qk_variant *ov = NULL;
        for (uint32_t i = 0; i < op.variant_count && !ov; i++)
            if (!strcmp(op.variants[i].name, line)) ov = &op.variants[i];
        if (!ov) {
            FAIL("%s: not a variant of the old spec folder", line);
            continue;
        }
        char *g = glsl_of(v, argv[2]), *og = glsl_of(ov, argv[2]);
        if (g && og && strcmp(g, og)) {
            FAIL("%s -> %s: the GLSL differs", line, v->name);
            if (getenv("QK_DUMP")) {
                FILE *f = fopen("/tmp/h8-new.glsl", "w"), *o = fopen("/tmp/h8-old.glsl", "w");
                fputs(g, f);
                fputs(og, o);
                fclose(f);
                fclose(o);
                exit(1);
            }
        }
        char m[8192], om[8192];
        manifest_of(v, m, sizeof m);
        manifest_of(ov, om, sizeof om);
        if (strcmp(m, om))
            FAIL("%s -> %s: manifest fields differ:\n  new %s\n  old %s", line, v->name, m, om);
        free(g);
        free(og);
        compared++;
        modules += v->module_first == vi;
        old_modules += ov->module_first == (uint32_t)(ov - op.variants);
    }
    for (uint32_t i = 0; i < p.variant_count; i++) {
        bool later = false;
        for (uint32_t j = 0; j < nlater && !later; j++)
            later = is_added(&p.variants[i], &later_pts[j]);
        if (later && !used[i])
            added++;
        else if (!used[i])
            FAIL("%s: a variant no old name maps to", p.variants[i].name);
    }
    printf(
        "%u old names, %u variants (%u on math paths, fusions, tiles or axis values added since)",
        old_count, p.variant_count, added);
    if (argc == 5)
        printf("; %u compared with the old specs' (GLSL and manifest fields), modules %u vs %u",
               compared, modules, old_modules);
    printf("\n%s (%d failures)\n", failures ? "FAIL" : "ok", failures);
    free(used);
    free(sorted);
    free(names);
    qk_plan_free(&p);
    qk_spec_set_free(&s);
    if (argc == 5) {
        qk_plan_free(&op);
        qk_spec_set_free(&os);
    }
    return failures ? 1 : 0;
}
