/* Variant expansion. Every point of the search space is either a variant or a
 * dropped point with the reason, so `qkgen list --dropped` can explain a
 * missing kernel. */
#include "plan.h"

#include "../compile/features.h"

#include <ctype.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

uint32_t qk_variant_parts(const qk_variant *v) {
    const qk_format *f = v->format;
    if (f->layout != QK_LAYOUT_BLOCK || !f->elements || !v->nk || v->nk >= f->elements ||
        f->elements % v->nk)
        return 0;
    return f->elements / v->nk;
}

const char *qk_variant_precision(const qk_variant *v) {
    if (!strcmp(v->mma, "dot8")) return "q8";
    if (!strncmp(v->mma, "coopmat", 7) || !strcmp(v->kernel->template_name, "matmul.comp"))
        return "f16";
    return "f32";
}

uint32_t qk_variant_stage_vec(const qk_variant *v) {
    const qk_format *f = v->format;
    if (f->layout != QK_LAYOUT_BLOCK || !f->elements || !v->nk) return 0;
    uint32_t bytes;
    if (qk_variant_parts(v))
        /* a part of a block (qk_stage_part) loads from the block's start, in words
         * where blocks are not whole words (q6_K's 210 bytes start at 0 or 2 mod 4:
         * the format joins two loaded words) */
        bytes = f->block_bytes % 4 ? 4 : f->block_bytes;
    else if (v->nk % f->elements == 0)
        bytes = v->nk / f->elements * f->block_bytes;
    else
        return 0;
    return bytes % 16 == 0 ? 4 : bytes % 8 == 0 ? 2 : bytes % 4 == 0 ? 1 : 0;
}

static const qk_format_spec none_spec = {.path = "(none)", .name = "none"};
const qk_format qk_format_none = {
    .spec = &none_spec, .name = "none", .elements = 1, .sub_elements = 1, .full_search = true};

bool qk_variant_lookup(void *user, const char *name, size_t len, int64_t *value) {
    const qk_variant *v = user;
    const qk_format *f = v->format;
    struct {
        const char *name;
        int64_t value;
    } vars[] = {
        {"NR0", v->nr0},
        {"NR1", v->nr1},
        {"NK", v->nk},
        {"WG", v->wg},
        {"MIN_SG", v->kernel->min_subgroup_size},
        {"QK", f->elements},
        {"QK_SUB_N", f->sub_elements},
        {"QK_BYTES", f->block_bytes},
        {"NW", v->weights},
        {"TPR", v->tpr},
        {"SK", v->sk},
        {"QK_SUB_RUN", f->spec->sub_run ? f->spec->sub_run : 1},
        /* staged chunks: words per row chunk, and the widest aligned load */
        {"SW", f->elements ? (int64_t)v->nk / f->elements * f->block_bytes / 4 : 0},
        {"SV", qk_variant_stage_vec(v)},
        {"COOPMAT", !strcmp(v->mma, "coopmat") || !strcmp(v->mma, "coopmat_khr")},
        {"QK_DOT8", f->spec->int8_dot},
        {"QK_PARTS", f->spec->parts ? f->spec->parts : 1},
        /* a planar format (MLX): groups over planes, which no chunk of words stages */
        {"PLANAR", f->layout == QK_LAYOUT_PLANAR},
        /* a member of a format family that takes the whole search space */
        {"QK_FULL_SEARCH", f->full_search},
    };
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        if (strlen(vars[i].name) == len && !strncmp(vars[i].name, name, len)) {
            *value = vars[i].value;
            return true;
        }
    for (uint32_t i = 0; i < f->param_count; i++) {
        if (strlen(f->param_names[i]) != len || strncmp(f->param_names[i], name, len)) continue;
        char *end;
        *value = strtoll(f->param_values[i], &end, 10);
        return !*end;
    }
    return false;
}

/* Rewrites expr with the variant's constants in place of their names; the
 * shape variables (M, K, T, ...) stay for the engine to fill in. */
static void substitute(const qk_variant *v, const char *expr, char *out, size_t size) {
    qk_str b = {0};
    for (const char *p = expr; *p;) {
        if (isalpha((unsigned char)*p) || *p == '_') {
            const char *s = p;
            while (isalnum((unsigned char)*p) || *p == '_')
                p++;
            int64_t val;
            if (qk_variant_lookup((void *)v, s, (size_t)(p - s), &val))
                qk_str_addf(&b, "%lld", (long long)val);
            else
                qk_str_addn(&b, s, (size_t)(p - s));
        } else {
            qk_str_addn(&b, p++, 1);
        }
    }
    snprintf(out, size, "%s", b.s ? b.s : "");
    qk_str_free(&b);
}

static void add_dropped(qk_plan *p, const char *name, const char *fmt, const char *a,
                        const char *b) {
    p->dropped = qk_grow(p->dropped, p->dropped_count, sizeof *p->dropped);
    qk_dropped *d = &p->dropped[p->dropped_count++];
    snprintf(d->name, sizeof d->name, "%s", name);
    snprintf(d->reason, sizeof d->reason, fmt, a, b);
}

/* The rules every variant obeys whatever its spec says; NULL if legal. */
static const char *builtin_rule(const qk_variant *v, char *buf, size_t n) {
    if (v->shared_memory > QK_PLAN_MAX_SHARED) {
        snprintf(buf, n, "needs %u bytes of shared memory; Vulkan devices commonly give 48 KiB",
                 v->shared_memory);
        return buf;
    }
    if (v->wg > QK_PLAN_MAX_WG) return "more than 1024 invocations per workgroup";
    if (v->wg % v->kernel->min_subgroup_size)
        return "the workgroup is not a whole number of the smallest subgroups it supports";
    /* a path the linked glslang cannot compile (Debian 12's knows no KHR
     * cooperative matrices): dropped, so the build still succeeds */
    if (!strcmp(v->mma, "coopmat_khr") && !qk_compile_has_extension("GL_KHR_cooperative_matrix"))
        return qk_compile_missing_reason("GL_KHR_cooperative_matrix", buf, (unsigned)n);
    if (!strcmp(v->mma, "coopmat2_nv") && !qk_compile_has_extension("GL_NV_cooperative_matrix2"))
        return qk_compile_missing_reason("GL_NV_cooperative_matrix2", buf, (unsigned)n);
    if (v->kernel->staged && v->kernel->staged != QK_STAGED_REFERENCE &&
        qk_variant_stage_vec(v) == 0)
        return "a staged chunk must be whole blocks filling whole 32-bit words (NK / QK * QK_BYTES "
               "% 4 == 0)";
    return NULL;
}

uint32_t qk_kernel_literal_names(const qk_kernel_spec *k, const char *out[QK_MAX_LITERAL_VALUES]) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < k->literal_count; i++)
        if (k->literals[i].name[0] != '_') out[n++] = k->literals[i].name;
    return n;
}

/* The lookup of a literal's expression: the literals before it, then the
 * variant's names. */
typedef struct literal_scope {
    const qk_variant *v;
    uint32_t count;
    int64_t values[QK_MAX_LITERALS];
} literal_scope;

static bool literal_lookup(void *user, const char *name, size_t len, int64_t *value) {
    const literal_scope *sc = user;
    for (uint32_t i = 0; i < sc->count; i++) {
        const char *n = sc->v->kernel->literals[i].name;
        if (strlen(n) == len && !strncmp(n, name, len)) {
            *value = sc->values[i];
            return true;
        }
    }
    return qk_variant_lookup((void *)sc->v, name, len, value);
}

/* v's values of its kernel's literals, into v->literal. */
static bool eval_literals(qk_variant *v, qk_error *e) {
    const qk_kernel_spec *k = v->kernel;
    literal_scope sc = {v, 0, {0}};
    uint32_t out = 0;
    for (uint32_t i = 0; i < k->literal_count; i++) {
        const qk_literal_spec *l = &k->literals[i];
        qk_error ee = {0};
        int64_t val;
        if (!qk_expr_eval(l->value, literal_lookup, &sc, &val, &ee)) {
            qk_error_set(e, "%s:%d:%d: literals.%s: %s (at %s)", k->path, l->mark.line, l->mark.col,
                         l->name, ee.msg, v->name);
            return false;
        }
        if (val < 0 || val > UINT32_MAX) {
            qk_error_set(e, "%s:%d:%d: literals.%s: %lld at %s is not a u32", k->path, l->mark.line,
                         l->mark.col, l->name, (long long)val, v->name);
            return false;
        }
        sc.values[sc.count++] = val;
        if (l->name[0] != '_') v->literal[out++] = (uint32_t)val;
    }
    return true;
}

/* Each module's distinct sets of literals, in plan order (the first
 * variant's set is instance 0, the module's default), copied into every
 * variant of the module with the index of its own. */
static bool assign_instances(qk_plan *p, qk_error *e) {
    for (uint32_t i = 0; i < p->variant_count; i++) {
        qk_variant *v = &p->variants[i];
        qk_variant *first = &p->variants[v->module_first];
        const char *names[QK_MAX_LITERAL_VALUES];
        uint32_t nl = qk_kernel_literal_names(v->kernel, names);
        if (first == v) {
            v->instance_count = 1;
            v->instance = 0;
            memcpy(v->instances[0], v->literal, sizeof v->literal);
            continue;
        }
        uint32_t j = 0;
        while (j < first->instance_count &&
               memcmp(first->instances[j], v->literal, nl * sizeof v->literal[0]))
            j++;
        if (j == first->instance_count) {
            if (j == QK_MAX_INSTANCES) {
                qk_error_set(e,
                             "%s: module %s needs more than %d sets of its literals; specialize "
                             "fewer tile parameters or narrow the tile",
                             v->kernel->path, v->module, QK_MAX_INSTANCES);
                return false;
            }
            memcpy(first->instances[j], v->literal, sizeof v->literal);
            first->instance_count++;
        }
        v->instance = j;
    }
    for (uint32_t i = 0; i < p->variant_count; i++) { /* the table, in every variant */
        qk_variant *v = &p->variants[i];
        const qk_variant *first = &p->variants[v->module_first];
        v->instance_count = first->instance_count;
        memcpy(v->instances, first->instances, sizeof v->instances);
    }
    return true;
}

/* Evaluates the spec's rules and the built-in ones; false with e set on a
 * rule that cannot be evaluated, *legal false with the reason when dropped. */
static bool check_variant(qk_plan *p, qk_variant *v, bool *legal, qk_error *e) {
    const qk_kernel_spec *k = v->kernel;
    qk_error ee = {0};
    *legal = false;
    int64_t val;
    if (!qk_expr_eval(k->shared_memory, qk_variant_lookup, v, &val, &ee)) {
        qk_error_set(e, "%s: shared_memory: %s", k->path, ee.msg);
        return false;
    }
    /* the kernel's own, and what the format's dequant code declares (its
     * int8 hooks' own in the int8-dot kernels) */
    v->shared_memory = (uint32_t)val + v->format->spec->shared_memory +
                       (strcmp(v->mma, "dot8") ? 0 : v->format->spec->shared_memory_dot8);
    for (uint32_t i = 0; i < k->rule_count; i++) {
        const qk_rule_spec *r = &k->rules[i];
        if (!qk_expr_eval(r->check, qk_variant_lookup, v, &val, &ee)) {
            qk_error_set(e, "%s:%d:%d: rules[%u].check: %s", k->path, r->mark.line, r->mark.col, i,
                         ee.msg);
            return false;
        }
        if (!val) {
            add_dropped(p, v->name, "%s (rule '%s')", r->reason, r->check);
            return true;
        }
    }
    char buf[256];
    const char *why = builtin_rule(v, buf, sizeof buf);
    if (why) {
        add_dropped(p, v->name, "%s%s", why, "");
        return true;
    }
    if (!eval_literals(v, e)) return false;
    for (int i = 0; i < 3; i++)
        substitute(v, k->grid[i], v->grid[i], sizeof v->grid[i]);
    for (uint32_t i = 0; i < k->constraint_count; i++)
        substitute(v, k->constraints[i], v->constraints[v->constraint_count++],
                   sizeof v->constraints[0]);
    for (uint32_t i = 0; v->fusion && i < v->fusion->constraint_count; i++) {
        if (v->constraint_count == QK_MAX_RULES) {
            qk_error_set(e, "%s: %s: more than %d constraints with fusion %s", k->path, v->name,
                         QK_MAX_RULES, v->fusion->name);
            return false;
        }
        substitute(v, v->fusion->constraints[i], v->constraints[v->constraint_count++],
                   sizeof v->constraints[0]);
    }
    *legal = true;
    return true;
}

static const qk_fusion_spec *find_fusion(const qk_spec_set *specs, const char *name) {
    for (uint32_t i = 0; i < specs->fusion_count; i++)
        if (!strcmp(specs->fusions[i].name, name)) return &specs->fusions[i];
    return NULL;
}

uint32_t qk_variant_tile(const qk_variant *v, qk_tile_param p) {
    switch (p) {
    case QK_TILE_WG:
        return v->wg;
    case QK_TILE_NR0:
        return v->nr0;
    case QK_TILE_NR1:
        return v->nr1;
    case QK_TILE_NK:
        return v->nk;
    case QK_TILE_TPR:
        return v->tpr;
    case QK_TILE_SK:
        return v->sk;
    case QK_SPEC_INSTANCE:
        return v->instance;
    default:
        return 0;
    }
}

uint32_t qk_variant_specialization(const qk_variant *v, uint32_t ids[QK_SPEC_COUNT],
                                   uint32_t values[QK_SPEC_COUNT]) {
    uint32_t n = 0;
    for (int p = 0; p < QK_TILE_COUNT; p++)
        if (v->kernel->specialize & (1u << p)) {
            ids[n] = (uint32_t)p;
            values[n++] = qk_variant_tile(v, (qk_tile_param)p);
        }
    if (v->instance_count > 1) {
        ids[n] = QK_SPEC_INSTANCE;
        values[n++] = v->instance;
    }
    return n;
}

/* The module's name: the variant's, less the tile parameters it specializes
 * ("matvec_xq_q4_0_f32_nk64_dot8" serves every NR0, NR1, WG and TPR). */
static void module_name(qk_variant *v) {
    const qk_kernel_spec *k = v->kernel;
    if (!k->specialize) {
        snprintf(v->module, sizeof v->module, "%s", v->name);
        return;
    }
    qk_str m = {0};
    qk_str_add(&m, k->name);
    if (v->format != &qk_format_none) qk_str_addf(&m, "_%s", v->format->name);
    if (v->format->variant[0]) qk_str_addf(&m, "_%s", v->format->variant);
    qk_str_addf(&m, "_%s", v->activation);
    static const qk_tile_param order[] = {QK_TILE_NR0, QK_TILE_NR1, QK_TILE_NK,
                                          QK_TILE_WG,  QK_TILE_TPR, QK_TILE_SK};
    for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
        qk_tile_param p = order[i];
        if ((k->specialize & (1u << p)) || (p == QK_TILE_TPR && !k->tpr_count) ||
            (p == QK_TILE_SK && !k->sk_count))
            continue;
        char low[8];
        snprintf(low, sizeof low, "%s", qk_tile_param_name(p));
        for (char *c = low; *c; c++)
            *c = (char)tolower((unsigned char)*c);
        qk_str_addf(&m, "_%s%u", low, qk_variant_tile(v, p));
    }
    if (v->mma[0]) qk_str_addf(&m, "_%s", v->mma);
    if (v->fusion) qk_str_addf(&m, "_%s", v->fusion->name);
    snprintf(v->module, sizeof v->module, "%s", m.s);
    qk_str_free(&m);
}

/* Adds every tile, activation, math path and fusion point of kernel k on format f. */
static bool expand_points(qk_plan *p, const qk_spec_set *specs, const qk_kernel_spec *k,
                          const qk_format *f, qk_error *e) {
    /* one flat index over activation x NR0 x NR1 x NK x WG x mma x fusion x TPR x SK,
     * last fastest */
    uint32_t dims[9] = {k->activation_count,
                        k->nr0_count,
                        k->nr1_count,
                        k->nk_count,
                        k->wg_count,
                        k->mma_count ? k->mma_count : 1,
                        k->fusion_count ? k->fusion_count : 1,
                        k->tpr_count ? k->tpr_count : 1,
                        k->sk_count ? k->sk_count : 1};
    uint64_t total = 1, before = (uint64_t)p->variant_count + p->dropped_count;
    for (int d = 0; d < 9; d++)
        if (__builtin_mul_overflow(total, (uint64_t)dims[d], &total)) total = UINT64_MAX;
    if (total > QK_PLAN_MAX_POINTS - before) {
        qk_error_set(e,
                     "%s:%d:%d: tile: kernel '%s' on format '%s' has %llu points (%u activations "
                     "x %u NR0 x %u NR1 x %u NK x %u WG x %u mma x %u fusions x %u TPR x %u SK), "
                     "more than the %u a plan may have (%llu before it)",
                     k->path, k->tile_mark.line, k->tile_mark.col, k->name, f->name,
                     (unsigned long long)total, dims[0], dims[1], dims[2], dims[3], dims[4],
                     dims[5], dims[6], dims[7], dims[8], QK_PLAN_MAX_POINTS,
                     (unsigned long long)before);
        return false;
    }
    for (uint64_t n = 0; n < total; n++) {
        uint32_t ix[9];
        uint64_t rest = n;
        for (int d = 8; d >= 0; d--)
            ix[d] = (uint32_t)(rest % dims[d]), rest /= dims[d];
        qk_variant v = {.kernel = k, .format = f, .weights = k->weights};
        snprintf(v.activation, sizeof v.activation, "%s", k->activations[ix[0]]);
        v.nr0 = k->nr0[ix[1]], v.nr1 = k->nr1[ix[2]], v.nk = k->nk[ix[3]], v.wg = k->wg[ix[4]];
        v.tpr = k->tpr_count ? k->tpr[ix[7]] : 1;
        v.sk = k->sk_count ? k->sk[ix[8]] : 1;
        if (k->mma_count) snprintf(v.mma, sizeof v.mma, "%s", k->mma[ix[5]]);
        const char *fusion = k->fusion_count ? k->fusions[ix[6]] : "none";
        if (strcmp(fusion, "none")) {
            v.fusion = find_fusion(specs, fusion);
            if (!v.fusion) {
                qk_error_set(e, "%s:%d:%d: fusions: unknown fusion '%s' (no fusions/%s.yaml)",
                             k->path, k->fusions_mark.line, k->fusions_mark.col, fusion, fusion);
                return false;
            }
            if (v.fusion->weights > v.weights) v.weights = v.fusion->weights;
        }
        qk_str name = {0};
        qk_str_add(&name, k->name);
        if (f != &qk_format_none) qk_str_addf(&name, "_%s", f->name);
        if (f->variant[0]) qk_str_addf(&name, "_%s", f->variant);
        qk_str_addf(&name, "_%s_nr%ux%ux%u_wg%u", v.activation, v.nr0, v.nr1, v.nk, v.wg);
        if (k->tpr_count) qk_str_addf(&name, "_tpr%u", v.tpr);
        if (k->sk_count) qk_str_addf(&name, "_sk%u", v.sk);
        if (v.mma[0]) qk_str_addf(&name, "_%s", v.mma);
        if (v.fusion) qk_str_addf(&name, "_%s", v.fusion->name);
        snprintf(v.name, sizeof v.name, "%s", name.s);
        qk_str_free(&name);
        module_name(&v);
        bool legal;
        if (!check_variant(p, &v, &legal, e)) return false;
        if (!legal) continue;
        p->variants = qk_grow(p->variants, p->variant_count, sizeof *p->variants);
        p->variants[p->variant_count++] = v;
    }
    return true;
}

/* Whether format f is one of the n that only names (none: every format). */
static bool wanted(const qk_format *f, const char *const *only, uint32_t n) {
    if (!only) return true;
    for (uint32_t i = 0; i < n; i++)
        if (qk_format_pick_names(only[i], f->name, f->variant)) return true;
    return false;
}

static bool expand_kernel(qk_plan *p, const qk_spec_set *specs, const qk_kernel_spec *k,
                          const char *const *only, uint32_t n_only, qk_error *e) {
    for (uint32_t fi = 0; fi < k->format_count; fi++) {
        if (!strcmp(k->formats[fi], "none")) {
            if (!expand_points(p, specs, k, &qk_format_none, e)) return false;
            continue;
        }
        /* a name matches a format, or every instance of a format family
         * ("mlx" matches the spec whose pattern starts mlx{...}); "all" every
         * format, which the kernel's rules then keep or drop by the formats'
         * declared properties (QK_DOT8, PLANAR, ...), each drop with its reason */
        const bool all = !strcmp(k->formats[fi], "all");
        bool any = false;
        for (uint32_t i = 0; i < p->format_count; i++) {
            const qk_format *f = &p->formats[i];
            if (!all && strcmp(f->name, k->formats[fi]) && strcmp(f->spec->name, k->formats[fi]))
                continue;
            any = true;
            if (!wanted(f, only, n_only) || !qk_spec_set_keeps(specs, k, f->name, f->variant))
                continue;
            if (!expand_points(p, specs, k, f, e)) return false;
        }
        if (!any) {
            qk_error_set(e, "%s:%d:%d: formats: unknown format '%s'", k->path, k->formats_mark.line,
                         k->formats_mark.col, k->formats[fi]);
            return false;
        }
    }
    return true;
}

/* Every format a kernel set picks is one of the plan's (a name, or a name
 * and option). */
static bool check_picks(const qk_plan *p, const qk_spec_set *specs, qk_error *e) {
    for (uint32_t i = 0; i < specs->pick_count; i++) {
        const qk_format_pick *pk = &specs->picks[i];
        for (uint32_t j = 0; j < pk->count; j++) {
            bool found = false;
            for (uint32_t f = 0; f < p->format_count && !found; f++)
                found =
                    qk_format_pick_names(pk->formats[j], p->formats[f].name, p->formats[f].variant);
            if (!found) {
                qk_error_set(e, "%s:%d:%d: %s: no format '%s' in the specs (qkgen list --formats)",
                             specs->set_path, pk->marks[j].line, pk->marks[j].col, pk->where,
                             pk->formats[j]);
                return false;
            }
        }
    }
    return true;
}

/* qsort's order of variant indices: by the string field at sort_field of
 * sort_variants[i] (name or module), then by index. */
static const qk_variant *sort_variants;
static size_t sort_field;
static int by_field(const void *a, const void *b) {
    const uint32_t i = *(const uint32_t *)a, j = *(const uint32_t *)b;
    int c = strcmp((const char *)&sort_variants[i] + sort_field,
                   (const char *)&sort_variants[j] + sort_field);
    return c ? c : (i > j) - (i < j);
}

/* ix[0 .. n) = the variant indices in the order of field */
static void sort_by(const qk_plan *p, size_t field, uint32_t *ix) {
    for (uint32_t i = 0; i < p->variant_count; i++)
        ix[i] = i;
    sort_variants = p->variants, sort_field = field;
    qsort(ix, p->variant_count, sizeof *ix, by_field);
}

bool qk_plan_build(const qk_spec_set *specs, qk_plan *out, qk_error *e) {
    return qk_plan_build_only(specs, NULL, 0, out, e);
}

bool qk_plan_load(const char *spec_dir, const char *set_path, const char *const *only, uint32_t n,
                  bool compiled_in, qk_spec_set *specs, qk_plan *out, qk_error *e) {
    if (!qk_spec_set_load(spec_dir, specs, e)) return false;
    bool ok = !set_path || qk_spec_set_apply(specs, spec_dir, set_path, e);
    for (uint32_t i = 0; ok && compiled_in && i < specs->kernel_count; i++)
        specs->kernels[i].specialize = 0;
    if (ok && qk_plan_build_only(specs, only, n, out, e)) return true;
    qk_spec_set_free(specs);
    return false;
}

bool qk_plan_build_only(const qk_spec_set *specs, const char *const *only, uint32_t n_only,
                        qk_plan *out, qk_error *e) {
    memset(out, 0, sizeof *out);
    for (uint32_t i = 0; i < specs->format_count; i++) {
        qk_format *fs;
        uint32_t n;
        if (!qk_format_expand(&specs->formats[i], &fs, &n, e)) {
            qk_plan_free(out);
            return false;
        }
        out->formats = qk_xrealloc(out->formats, sizeof *out->formats * (out->format_count + n));
        for (uint32_t j = 0; j < n; j++) {
            if (qk_plan_find_format(out, fs[j].name) && !fs[j].variant[0]) {
                qk_error_set(e, "%s: format '%s' is declared twice", fs[j].spec->path, fs[j].name);
                free(fs);
                qk_plan_free(out);
                return false;
            }
            out->formats[out->format_count++] = fs[j];
        }
        free(fs);
    }
    if (!check_picks(out, specs, e)) {
        qk_plan_free(out);
        return false;
    }
    for (uint32_t i = 0; i < specs->kernel_count; i++)
        if (!expand_kernel(out, specs, &specs->kernels[i], only, n_only, e)) {
            qk_plan_free(out);
            return false;
        }
    /* each variant's module's first variant, and no name twice: sorted
     * indices (by module or name, then plan order), not pairs */
    const uint32_t n = out->variant_count;
    uint32_t *ix = qk_xcalloc(n ? n : 1, sizeof *ix);
    sort_by(out, offsetof(qk_variant, module), ix);
    for (uint32_t i = 0; i < n; i++)
        out->variants[ix[i]].module_first =
            i && !strcmp(out->variants[ix[i]].module, out->variants[ix[i - 1]].module)
                ? out->variants[ix[i - 1]].module_first
                : ix[i];
    if (!assign_instances(out, e)) {
        free(ix);
        qk_plan_free(out);
        return false;
    }
    sort_by(out, offsetof(qk_variant, name), ix);
    for (uint32_t i = 1; i < n; i++)
        if (!strcmp(out->variants[ix[i]].name, out->variants[ix[i - 1]].name)) {
            qk_error_set(e, "%s: two variants are both named '%s'",
                         out->variants[ix[i]].kernel->path, out->variants[ix[i]].name);
            free(ix);
            qk_plan_free(out);
            return false;
        }
    free(ix);
    return true;
}

void qk_plan_free(qk_plan *p) {
    free(p->formats);
    free(p->variants);
    free(p->dropped);
    memset(p, 0, sizeof *p);
}

const qk_format *qk_plan_find_format(const qk_plan *p, const char *name) {
    for (uint32_t i = 0; i < p->format_count; i++)
        if (!strcmp(p->formats[i].name, name)) return &p->formats[i];
    return NULL;
}

/* Two variants on one path: they differ at most in their tile (NR0, NR1, NK,
 * WG, TPR, SK). Keyed on the variant's fields, not its name, so that kernels
 * may be renamed or regrouped freely. */
static bool same_path(const qk_variant *a, const qk_variant *b) {
    return a->kernel == b->kernel && a->format == b->format &&
           !strcmp(a->activation, b->activation) && !strcmp(a->mma, b->mma) &&
           a->fusion == b->fusion;
}

uint32_t qk_plan_select(const qk_plan *p, const char *filter, bool representative, uint32_t *out) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->variant_count; i++) {
        const qk_variant *v = &p->variants[i];
        if (filter && !qk_filter_match(filter, v->name)) continue;
        bool seen = false;
        /* a kernel's variants are contiguous in plan order: look back only
         * over this kernel's */
        for (uint32_t j = n;
             representative && !seen && j-- > 0 && p->variants[out[j]].kernel == v->kernel;)
            seen = same_path(&p->variants[out[j]], v);
        if (!seen) out[n++] = i;
    }
    return n;
}

uint32_t qk_variant_bindings(const qk_variant *v, qk_binding_info *out, uint32_t cap) {
    const qk_format *f = v->format;
    const qk_kernel_spec *k = v->kernel;
    uint32_t n = 0, b = 0;
    if (v->weights > 0) {
        if (f->layout == QK_LAYOUT_BLOCK) {
            out[n++] =
                (qk_binding_info){"w", "weights", "u32", QK_TYPE_U32, false, b++, v->weights, ""};
        } else {
            for (uint32_t i = 0; i < f->plane_count && n < cap; i++) {
                qk_binding_info *bi = &out[n++];
                *bi = (qk_binding_info){
                    .glsl_type = QK_TYPE_U32, .binding = b++, .count = v->weights};
                snprintf(bi->name, sizeof bi->name, "%s", f->planes[i].name);
                snprintf(bi->role, sizeof bi->role, "weights");
                snprintf(bi->type, sizeof bi->type, "%s", qk_type_name(f->planes[i].type));
                if (f->planes[i].type == QK_TYPE_F32) bi->glsl_type = QK_TYPE_F32;
            }
        }
    }
    uint32_t nk = k->binding_count, nf = v->fusion ? v->fusion->binding_count : 0;
    for (uint32_t i = 0; i < nk + nf && n < cap; i++) {
        const qk_binding_spec *s = i < nk ? &k->bindings[i] : &v->fusion->bindings[i - nk];
        qk_binding_info *bi = &out[n++];
        *bi = (qk_binding_info){.writable = s->writable, .binding = b++, .count = s->count};
        snprintf(bi->name, sizeof bi->name, "%s", s->name);
        snprintf(bi->role, sizeof bi->role, "%s", s->role);
        snprintf(bi->type, sizeof bi->type, "%s", strcmp(s->type, "act") ? s->type : v->activation);
        bi->glsl_type = qk_type_parse(bi->type);
        substitute(v, s->size, bi->size, sizeof bi->size);
    }
    return n;
}

uint32_t qk_variant_features(const qk_variant *v, const char **out, uint32_t cap) {
    uint32_t n = 0;
    const char *want[24];
    uint32_t nw = 0;
    for (uint32_t i = 0; i < v->kernel->feature_count; i++)
        want[nw++] = v->kernel->features[i];
    for (uint32_t i = 0; v->fusion && i < v->fusion->feature_count; i++)
        want[nw++] = v->fusion->features[i];
    if (!strcmp(v->activation, "f16")) want[nw++] = "storage_16bit";
    if (!strcmp(v->mma, "coopmat") || !strcmp(v->mma, "coopmat_khr")) {
        /* f16 matrices on the Vulkan memory model */
        want[nw++] = strcmp(v->mma, "coopmat") ? "cooperative_matrix_khr" : "cooperative_matrix_nv";
        want[nw++] = "float16";
        want[nw++] = "vulkan_memory_model";
    }
    if (!strcmp(v->mma, "coopmat2_nv")) {
        /* workgroup-scope matrices, tensor-addressed loads with decode
         * callbacks (whose block references need buffer device addresses) */
        want[nw++] = "cooperative_matrix_khr";
        want[nw++] = "cooperative_matrix2_nv";
        want[nw++] = "float16";
        want[nw++] = "vulkan_memory_model";
    }
    if (!strcmp(v->mma, "dot8")) want[nw++] = "integer_dot_product";
    for (uint32_t i = 0; i < nw; i++) { /* each once, in order of first mention */
        bool seen = false;
        for (uint32_t j = 0; j < n; j++)
            seen |= !strcmp(out[j], want[i]);
        if (!seen && n < cap) out[n++] = want[i];
    }
    return n;
}

uint32_t qk_variant_push(const qk_variant *v, const char **out, uint32_t cap) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < v->kernel->push_count && n < cap; i++)
        out[n++] = v->kernel->push[i];
    for (uint32_t i = 0; v->fusion && i < v->fusion->push_count && n < cap; i++)
        out[n++] = v->fusion->push[i];
    return n;
}
