/* Bundle writing. The bundle is built in a hidden folder beside its final
 * place and swapped in with one rename, so an interrupted build leaves either
 * the old bundle or the new one, never half of either. */
#define _GNU_SOURCE
#include "bundle.h"
#include "../compile/compile.h"
#include "../emit/emit.h"

#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <unistd.h>

const char *qk_generator_hash(void) {
    static char hex[65];
    if (hex[0]) return hex;
    size_t n;
    qk_error e = {0};
    char *exe = qk_read_file("/proc/self/exe", &n, &e);
    qk_sha256_hex(exe ? exe : QK_VERSION, exe ? n : strlen(QK_VERSION), hex);
    free(exe);
    return hex;
}

static void hash_path(qk_sha256 *h, const char *path) {
    size_t n;
    qk_error e = {0};
    char *text = qk_read_file(path, &n, &e);
    qk_sha256_update(h, path, strlen(path) + 1);
    if (text) qk_sha256_update(h, text, n);
    free(text);
}

/* The device extension a Vulkan 1.2 device needs for a feature (core from
 * 1.3 for the dot product, which engines on 1.3 need not enable). */
static const char *extension_of(const char *feature) {
    if (!strcmp(feature, "cooperative_matrix_nv")) return "VK_NV_cooperative_matrix";
    if (!strcmp(feature, "cooperative_matrix_khr")) return "VK_KHR_cooperative_matrix";
    if (!strcmp(feature, "cooperative_matrix2_nv")) return "VK_NV_cooperative_matrix2";
    if (!strcmp(feature, "integer_dot_product")) return "VK_KHR_shader_integer_dot_product";
    return NULL;
}

/* Whether v reads activations another kernel (the quantize family) wrote. */
static bool prepass(const qk_variant *v) {
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t nb = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < nb; i++)
        if (!strcmp(b[i].role, "activations_q8") && !b[i].writable) return true;
    return false;
}

/* The fields of a kernel's manifest entry besides its name, module and
 * specialization constants, in the order an entry lists them; a module's
 * entry holds those that every kernel of the module has alike
 * (docs/manifest.md, "Kernels and modules"). */
static const char *const FIELDS[] = {
    "family",
    "format",
    "format_variant",
    "activation",
    "kernel",
    "template",
    "precision",
    "prepass",
    "description",
    "tile",
    "mma",
    "fusion",
    "entry_point",
    "workgroup_size",
    "required_subgroup_size",
    "min_subgroup_size",
    "shared_memory_bytes",
    "vulkan_version",
    "extensions",
    "features",
    "weights",
    "bindings",
    "push_constants",
    "push_constant_size",
    "dispatch",
    "constraints",
};
#define N_FIELDS (uint32_t)(sizeof FIELDS / sizeof *FIELDS)

typedef struct entry {
    char *json[N_FIELDS]; /* each field's JSON value */
    char *spec;           /* the specialization constants' array */
} entry;

static char *fmt(const char *f, ...) QK_PRINTF(1, 2);
static char *fmt(const char *f, ...) {
    char buf[64];
    va_list ap;
    va_start(ap, f);
    vsnprintf(buf, sizeof buf, f, ap);
    va_end(ap);
    return qk_xstrdup(buf);
}

static char *json_string(const char *s) {
    qk_str o = {0};
    qk_json_string(&o, s);
    return qk_str_take(&o);
}

static void kernel_entry(const qk_variant *v, entry *out) {
    const qk_kernel_spec *k = v->kernel;
    const qk_format *f = v->format;
    char **j = out->json;
    uint32_t n = 0;
    j[n++] = json_string(k->family);
    j[n++] = json_string(f->name);
    j[n++] = json_string(f->variant);
    j[n++] = json_string(v->activation);
    j[n++] = json_string(k->name);
    j[n++] = json_string(k->template_name);
    j[n++] = json_string(qk_variant_precision(v));
    j[n++] = qk_xstrdup(prepass(v) ? "\"quantize\"" : "null");
    j[n++] = json_string(k->description);
    j[n++] = fmt("{ \"NR0\": %u, \"NR1\": %u, \"NK\": %u }", v->nr0, v->nr1, v->nk);
    j[n++] = json_string(v->mma[0] ? v->mma : "scalar");
    j[n++] = json_string(v->fusion ? v->fusion->name : "none");
    j[n++] = qk_xstrdup("\"main\"");
    j[n++] = fmt("[%u, 1, 1]", v->wg);
    j[n++] = qk_xstrdup("0");
    j[n++] = fmt("%u", k->min_subgroup_size);
    j[n++] = fmt("%u", v->shared_memory);
    const char *features[16];
    uint32_t nf = qk_variant_features(v, features, 16);
    bool v13 = false; /* NV cooperative matrix 2 modules are SPIR-V 1.6 */
    for (uint32_t i = 0; i < nf; i++)
        v13 |= !strcmp(features[i], "cooperative_matrix2_nv");
    j[n++] = qk_xstrdup(v13 ? "\"1.3\"" : "\"1.2\"");
    qk_str s = {0};
    qk_str_add(&s, "[");
    for (uint32_t i = 0, ne = 0; i < nf; i++) {
        const char *ext = extension_of(features[i]);
        if (ext) qk_str_addf(&s, "%s\"%s\"", ne++ ? ", " : "", ext);
    }
    qk_str_add(&s, "]");
    j[n++] = qk_str_take(&s);
    qk_str_add(&s, "[");
    for (uint32_t i = 0; i < nf; i++) {
        qk_str_add(&s, i ? ", " : "");
        qk_json_string(&s, features[i]);
    }
    qk_str_add(&s, "]");
    j[n++] = qk_str_take(&s);
    if (v->weights > 0)
        qk_format_emit_json(f, &s);
    else
        qk_str_add(&s, "null");
    j[n++] = qk_str_take(&s);
    qk_str_add(&s, "[");
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t nb = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < nb; i++) {
        qk_str_addf(&s, "%s\n        { \"set\": 0, \"binding\": %u, \"count\": %u, \"name\": ",
                    i ? "," : "", b[i].binding, b[i].count);
        qk_json_string(&s, b[i].name);
        qk_str_add(&s, ", \"role\": ");
        qk_json_string(&s, b[i].role);
        qk_str_add(&s, ", \"type\": ");
        qk_json_string(&s, b[i].type);
        qk_str_addf(&s, ", \"access\": \"%s\"", b[i].writable ? "write" : "read");
        if (b[i].size[0]) {
            qk_str_add(&s, ", \"size\": ");
            qk_json_string(&s, b[i].size);
        }
        qk_str_add(&s, " }");
    }
    qk_str_add(&s, nb ? "\n      ]" : "]");
    j[n++] = qk_str_take(&s);
    qk_str_add(&s, "[");
    const char *push[QK_MAX_LIST + 8];
    uint32_t np = qk_variant_push(v, push, QK_MAX_LIST + 8);
    for (uint32_t i = 0; i < np; i++) {
        qk_str_addf(&s, "%s{ \"name\": ", i ? ", " : "");
        qk_json_string(&s, push[i]);
        qk_str_addf(&s, ", \"offset\": %u, \"type\": \"u32\" }", 4 * i);
    }
    qk_str_add(&s, "]");
    j[n++] = qk_str_take(&s);
    j[n++] = fmt("%u", 4 * np);
    qk_str_add(&s, "{ \"grid\": [");
    for (int i = 0; i < 3; i++) {
        if (i) qk_str_add(&s, ", ");
        qk_json_string(&s, v->grid[i]);
    }
    qk_str_add(&s, "] }");
    j[n++] = qk_str_take(&s);
    qk_str_add(&s, "[");
    for (uint32_t i = 0; i < v->constraint_count; i++) {
        if (i) qk_str_add(&s, ", ");
        qk_json_string(&s, v->constraints[i]);
    }
    qk_str_add(&s, "]");
    j[n++] = qk_str_take(&s);
    if (n != N_FIELDS) abort(); /* FIELDS and this function list the same fields */
    qk_str_add(&s, "[");
    uint32_t ids[QK_SPEC_COUNT], values[QK_SPEC_COUNT];
    uint32_t ns = qk_variant_specialization(v, ids, values);
    for (uint32_t i = 0; i < ns; i++)
        qk_str_addf(&s, "%s{ \"id\": %u, \"name\": \"%s\", \"type\": \"u32\", \"value\": %u }",
                    i ? ", " : "", ids[i], qk_tile_param_name((qk_tile_param)ids[i]), values[i]);
    qk_str_add(&s, "]");
    out->spec = qk_str_take(&s);
}

static void entry_free(entry *e) {
    for (uint32_t i = 0; i < N_FIELDS; i++)
        free(e->json[i]);
    free(e->spec);
}

/* A selected variant. The first unit of each module (owner == itself)
 * carries the module's source, SPIR-V and hash; the others point at it. */
typedef struct unit {
    const qk_variant *v;
    uint32_t owner;
    char *glsl;
    char key[65];
    char *spv;
    size_t spv_bytes;
    char spv_hash[65];
} unit;

/* The "kernels" and "modules" arrays of the units listed[] marks. A module's
 * entry holds each SPIR-V file once with the specialization constants it
 * leaves open and the values the bundle's kernels give them; where the module
 * serves two kernels or more, also every field that all of them have alike,
 * which their own entries then leave out (docs/manifest.md, "Kernels and
 * modules"). A module whose first variant is not listed (built for its
 * SPIR-V alone) takes its fields from its first listed kernel. */
static void manifest_entries(qk_str *m, const unit *units, const bool *listed, uint32_t nu) {
    entry *es = qk_xcalloc(nu + 1, sizeof *es);
    uint32_t *shared = qk_xcalloc(nu + 1, sizeof *shared);   /* by owner: bit f, FIELDS[f] */
    uint32_t *kernels = qk_xcalloc(nu + 1, sizeof *kernels); /* by owner: its listed kernels */
    uint32_t *first = qk_xcalloc(nu + 1, sizeof *first);     /* by owner: its first listed */
    for (uint32_t i = 0; i < nu; i++) {
        if (!listed[i]) continue;
        kernel_entry(units[i].v, &es[i]);
        if (!kernels[units[i].owner]++) first[units[i].owner] = i;
    }
    for (uint32_t i = 0; i < nu; i++) {
        uint32_t o = units[i].owner;
        if (!listed[i] || kernels[o] < 2) continue;
        if (first[o] == i) {
            shared[o] = (1u << N_FIELDS) - 1;
            continue;
        }
        for (uint32_t f = 0; f < N_FIELDS; f++)
            if (strcmp(es[i].json[f], es[first[o]].json[f])) shared[o] &= ~(1u << f);
    }
    bool first_kernel = true;
    for (uint32_t i = 0; i < nu; i++) {
        const unit *u = &units[i];
        if (!listed[i]) continue;
        uint32_t own = ~shared[u->owner];
        bool one_line = shared[u->owner] != 0;
        const char *sep = one_line ? ", " : ",\n      ";
        qk_str_addf(m, "%s\n    { \"name\": ", first_kernel ? "" : ",");
        first_kernel = false;
        qk_json_string(m, u->v->name);
        qk_str_add(m, ", \"module\": ");
        qk_json_string(m, u->v->module);
        for (uint32_t f = 0; f < N_FIELDS; f++)
            if (own & (1u << f)) qk_str_addf(m, "%s\"%s\": %s", sep, FIELDS[f], es[i].json[f]);
        qk_str_addf(m, "%s\"specialization_constants\": %s }", sep, es[i].spec);
    }
    qk_str_add(m, "\n  ],\n  \"modules\": [");
    bool first_module = true;
    for (uint32_t i = 0; i < nu; i++) {
        const unit *u = &units[i];
        if (u->owner != i || !kernels[i]) continue;
        char spv[300];
        snprintf(spv, sizeof spv, "%s.spv", u->v->module);
        qk_str_addf(m, "%s\n    { \"name\": ", first_module ? "" : ",");
        qk_json_string(m, u->v->module);
        qk_str_add(m, ", \"spv\": ");
        qk_json_string(m, spv);
        qk_str_addf(m, ", \"spv_sha256\": \"%s\",", u->spv_hash);
        first_module = false;
        for (uint32_t f = 0; f < N_FIELDS; f++)
            if (shared[i] & (1u << f))
                qk_str_addf(m, "\n      \"%s\": %s,", FIELDS[f], es[first[i]].json[f]);
        qk_str_add(m, "\n      \"specialization_constants\": [");
        uint32_t ids[QK_SPEC_COUNT], values[QK_SPEC_COUNT];
        uint32_t ns = qk_variant_specialization(u->v, ids, values);
        for (uint32_t s = 0; s < ns; s++) {
            qk_str_addf(
                m, "%s\n        { \"id\": %u, \"name\": \"%s\", \"type\": \"u32\", \"values\": [",
                s ? "," : "", ids[s], qk_tile_param_name((qk_tile_param)ids[s]));
            /* each value a kernel of this module gives it, once, in order of first use */
            uint32_t seen[64], nseen = 0;
            for (uint32_t j = i; j < nu; j++) {
                if (units[j].owner != i || !listed[j]) continue;
                uint32_t val = qk_variant_tile(units[j].v, (qk_tile_param)ids[s]);
                bool dup = false;
                for (uint32_t q = 0; q < nseen; q++)
                    dup |= seen[q] == val;
                if (dup || nseen == 64) continue;
                seen[nseen++] = val;
                qk_str_addf(m, "%s%u", nseen > 1 ? ", " : "", val);
            }
            qk_str_add(m, "] }");
        }
        qk_str_add(m, ns ? "\n      ] }" : "] }");
    }
    qk_str_add(m, "\n  ]");
    for (uint32_t i = 0; i < nu; i++)
        if (listed[i]) entry_free(&es[i]);
    free(es);
    free(shared);
    free(kernels);
    free(first);
}

/* Replaces dst by src in one step where the kernel can (renameat2 exchange),
 * else with two renames; the old folder is removed afterwards. */
static bool swap_in(const char *src, const char *dst, qk_error *e) {
    if (!qk_is_dir(dst)) {
        if (rename(src, dst) == 0) return true;
        qk_error_set(e, "%s: cannot rename to %s: %s", src, dst, strerror(errno));
        return false;
    }
#ifdef SYS_renameat2
    if (syscall(SYS_renameat2, AT_FDCWD, src, AT_FDCWD, dst, 2 /* RENAME_EXCHANGE */) == 0) {
        qk_rmtree(src);
        return true;
    }
#endif
    qk_str old = {0};
    qk_str_addf(&old, "%s.old.%ld", dst, (long)getpid());
    bool ok = rename(dst, old.s) == 0 && rename(src, dst) == 0;
    if (!ok) qk_error_set(e, "%s: cannot replace: %s", dst, strerror(errno));
    qk_rmtree(old.s);
    qk_str_free(&old);
    return ok;
}

static bool already_current(const char *bundle_dir, const char *inputs_hash) {
    char *path = qk_path_join(bundle_dir, "manifest.json");
    qk_error e = {0};
    char *text = qk_read_file(path, NULL, &e);
    free(path);
    char key[128];
    snprintf(key, sizeof key, "\"inputs_hash\": \"%s\"", inputs_hash);
    bool same = text && strstr(text, key);
    free(text);
    return same;
}

/* Shared-memory bytes of v's module specialized to v's tile, from the
 * module's own specialization-constant operations; where one is beyond
 * that evaluator (none in today's templates), the module is specialized by
 * SPIRV-Tools and checked by spirv-val in that form. -1 with e set on
 * failure. */
static int64_t variant_shared_bytes(const unit *mod, const qk_variant *v, qk_error *e) {
    qk_spirv m = {(uint32_t *)(void *)mod->spv, mod->spv_bytes / 4};
    uint32_t ids[QK_SPEC_COUNT], values[QK_SPEC_COUNT];
    uint32_t n = qk_variant_specialization(v, ids, values);
    int64_t bytes = qk_spirv_shared_bytes_spec(&m, ids, values, n);
    if (n == 0 || bytes >= 0) return bytes;
    qk_spirv sp = {0};
    bytes = -1;
    if (qk_specialize(v->name, &m, ids, values, n, &sp, e) && qk_validate(v->name, &sp, e))
        bytes = qk_spirv_shared_bytes(&sp);
    qk_spirv_free(&sp);
    return bytes;
}

typedef struct check_job {
    const unit *units;
    uint32_t count;
    int64_t *declared; /* -1: failed, with errors[i] */
    qk_error *errors;
    uint32_t done; /* atomic: variants checked so far */
    const qk_build_opts *o;
} check_job;

static void check_variants(void *arg, uint32_t t, uint32_t n) {
    check_job *j = arg;
    for (uint32_t i = t; i < j->count; i += n) {
        const unit *u = &j->units[i];
        j->declared[i] = variant_shared_bytes(&j->units[u->owner], u->v, &j->errors[i]);
        uint32_t done = __atomic_add_fetch(&j->done, 1, __ATOMIC_RELAXED);
        /* the calling thread (share 0) reports for all */
        if (t == 0 && j->o->check_progress)
            j->o->check_progress(j->o->user, done, j->count, u->v->name);
    }
}

/* An exclusive lock on out_dir/.NAME.lock, held until the descriptor is
 * closed (or the process dies: a killed build never leaves it held); a build
 * that waits for another says so on log. */
static int lock_bundle(const char *out_dir, const char *name, FILE *log, qk_error *e) {
    if (!qk_mkdirs(out_dir, e)) return -1;
    qk_str path = {0};
    qk_str_addf(&path, "%s/.%s.lock", out_dir, name);
    bool busy;
    int fd = qk_lock_file(path.s, true, log, &busy, e);
    qk_str_free(&path);
    return fd;
}

/* listed[i]: whether unit i gets a kernel entry: every unit, or those the
 * tuned build names (each name must be a unit's). */
static bool list_units(const qk_bundle_tuned *t, const unit *units, uint32_t nu, bool *listed,
                       qk_error *e) {
    for (uint32_t i = 0; i < nu; i++)
        listed[i] = !t || !t->listed;
    for (uint32_t j = 0; t && t->listed && j < t->listed_count; j++) {
        bool found = false;
        for (uint32_t i = 0; i < nu; i++)
            if (!strcmp(units[i].v->name, t->listed[j])) listed[i] = found = true;
        if (!found) {
            qk_error_set(e, "%s: listed for the manifest but not built", t->listed[j]);
            return false;
        }
    }
    return true;
}

bool qk_bundle_build(const qk_spec_set *specs, const qk_plan *plan, const qk_build_opts *o,
                     qk_build_stats *st, qk_error *e) {
    memset(st, 0, sizeof *st);
    const char *name = o->name ? o->name : "default";
    char *bundle_dir = qk_path_join(o->out_dir, name);
    char *cache_dir = qk_path_join(o->out_dir, ".cache");
    snprintf(st->path, sizeof st->path, "%s", bundle_dir);
    /* killed builds leave their hidden folders and files; nothing else would remove them */
    qk_remove_stale_temps(o->out_dir);
    qk_remove_stale_temps(cache_dir);
    st->dropped = plan->dropped_count;

    /* 1. Emit every variant; hash the sources, the specs and the generator. */
    qk_sha256 inputs;
    qk_sha256_init(&inputs);
    qk_sha256_update(&inputs, qk_generator_hash(), 64);
    qk_sha256_update(&inputs, name, strlen(name) + 1);
    if (o->filter) qk_sha256_update(&inputs, o->filter, strlen(o->filter) + 1);
    for (uint32_t i = 0; i < specs->format_count; i++) {
        hash_path(&inputs, specs->formats[i].path);
        if (specs->formats[i].c_header[0]) {
            char *dir = qk_path_dir(specs->formats[i].path);
            char *h = qk_path_join(dir, specs->formats[i].c_header);
            hash_path(&inputs, h);
            free(h);
            free(dir);
        }
    }
    for (uint32_t i = 0; i < specs->kernel_count; i++)
        hash_path(&inputs, specs->kernels[i].path);
    for (uint32_t i = 0; i < specs->fusion_count; i++)
        hash_path(&inputs, specs->fusions[i].path);
    uint32_t *picked = qk_xcalloc(plan->variant_count + 1, sizeof *picked);
    uint32_t np = qk_plan_select(plan, o->filter, o->representative, picked);
    unit *units = qk_xcalloc(np + 1, sizeof *units);
    uint32_t nu = 0;
    bool ok = true;
    /* the unit that owns each module, by the plan index of its first variant */
    uint32_t *owner_of = qk_xcalloc(plan->variant_count + 1, sizeof *owner_of);
    for (uint32_t i = 0; ok && i < np; i++) {
        unit *u = &units[nu];
        u->v = &plan->variants[picked[i]];
        u->owner = nu++;
        qk_sha256_update(&inputs, u->v->name, strlen(u->v->name) + 1);
        uint32_t first = u->v->module_first;
        if (owner_of[first]) {
            u->owner = owner_of[first] - 1;
            memcpy(u->key, units[u->owner].key, sizeof u->key);
            continue;
        }
        owner_of[first] = u->owner + 1;
        /* one source per module: its first variant's values are the defaults */
        qk_str src = {0};
        ok = qk_emit_variant(&plan->variants[first], o->templates_dir, &src, NULL, NULL, e);
        u->glsl = qk_str_take(&src);
        qk_sha256 k;
        qk_sha256_init(&k);
        qk_sha256_update(&k, qk_generator_hash(), 64);
        qk_sha256_update(&k, u->glsl, strlen(u->glsl));
        qk_sha256_final_hex(&k, u->key);
        qk_sha256_update(&inputs, u->key, 64);
    }
    free(owner_of);
    bool *listed = qk_xcalloc(nu + 1, sizeof *listed);
    if (ok) ok = list_units(o->tuned, units, nu, listed, e);
    /* a tuned bundle's table, schema and listing are inputs too: a bundle
     * built before with another table is not current */
    if (o->tuned) {
        const qk_bundle_tuned *t = o->tuned;
        qk_sha256_update(&inputs, "tuned", 6);
        qk_sha256_update(&inputs, t->select ? t->select : "",
                         strlen(t->select ? t->select : "") + 1);
        qk_sha256_update(&inputs, t->schema ? t->schema : "",
                         strlen(t->schema ? t->schema : "") + 1);
        for (uint32_t i = 0; i < nu; i++)
            qk_sha256_update(&inputs, listed[i] ? "1" : "0", 1);
    }
    char inputs_hash[65];
    qk_sha256_final_hex(&inputs, inputs_hash);
    st->variants = 0; /* the kernels the manifest lists */
    for (uint32_t i = 0; i < nu; i++)
        st->variants += listed[i];
    if (ok && nu == 0) {
        qk_error_set(e, "no variant to build%s%s", o->filter ? " matches " : "",
                     o->filter ? o->filter : "");
        ok = false;
    }
    if (ok && !o->force && already_current(bundle_dir, inputs_hash)) {
        st->up_to_date = true;
        goto done;
    }

    /* 2. Layout checks against C structs, where formats name one. */
    for (uint32_t i = 0; ok && i < plan->format_count; i++)
        ok = qk_format_check_c(&plan->formats[i], e);

    /* 3. Compile what the cache lacks, into a hidden folder; one build of a
     * bundle at a time (a second waits), so two never interleave their swaps. */
    int lock = ok ? lock_bundle(o->out_dir, name, o->log, e) : -1;
    ok = ok && lock >= 0;
    qk_str tmp = {0};
    qk_str_addf(&tmp, "%s/.%s.tmp.%ld", o->out_dir, name, (long)getpid());
    if (ok) ok = qk_mkdirs(cache_dir, e) && qk_mkdirs(tmp.s, e);
    qk_str manifest = {0};
    qk_str_addf(&manifest,
                "{\n  \"schema\": \"%s\",\n  \"generator\": { \"name\": \"qkgen\", \"version\": "
                "\"%s\", \"hash\": \"%s\" },\n  \"inputs_hash\": \"%s\",\n  \"target\": { "
                "\"vulkan\": \"1.2\", \"spirv\": \"1.5\" },",
                o->tuned && o->tuned->schema ? o->tuned->schema : QK_BUNDLE_SCHEMA, QK_VERSION,
                qk_generator_hash(), inputs_hash);
    if (o->tuned && o->tuned->select)
        qk_str_addf(&manifest, "\n  \"select\": %s,", o->tuned->select);
    qk_str_add(&manifest, "\n  \"kernels\": [");
    for (uint32_t i = 0; ok && i < nu; i++) {
        unit *u = &units[i];
        if (u->owner == i) { /* the module's first variant: compile or take it from the cache */
            char cache_name[80];
            snprintf(cache_name, sizeof cache_name, "%s.spv", u->key);
            char *cpath = qk_path_join(cache_dir, cache_name);
            size_t n = 0;
            qk_error ce = {0};
            char *spv = o->force ? NULL : qk_read_file(cpath, &n, &ce);
            if (spv && (n % 4 || n == 0)) {
                free(spv);
                spv = NULL;
            }
            if (spv) {
                st->cached++;
            } else {
                if (o->progress) o->progress(o->user, i, nu, u->v->module);
                qk_spirv m = {0};
                ok = qk_compile_all(u->v->module, u->glsl, &m, e);
                if (ok) {
                    n = m.count * 4;
                    spv = qk_xmalloc(n);
                    memcpy(spv, m.words, n);
                    ok = qk_write_file(cpath, spv, n, e);
                    st->compiled++;
                }
                qk_spirv_free(&m);
            }
            free(cpath);
            if (!ok) {
                free(spv);
                break;
            }
            u->spv = spv;
            u->spv_bytes = n;
            qk_sha256_hex(spv, n, u->spv_hash);
            bool any = false; /* a module no listed kernel uses has no file */
            for (uint32_t j = i; j < nu && !any; j++)
                any = units[j].owner == i && listed[j];
            if (!any) continue;
            char file[300];
            snprintf(file, sizeof file, "%s/%s.spv", tmp.s, u->v->module);
            ok = qk_write_file(file, spv, n, e);
            st->modules++;
            if (!ok) break;
        }
    }
    /* 4. Each variant as the driver sees it (its module specialized), in
     * parallel: validated, and its shared memory measured. The manifest's
     * shared_memory_bytes is what runtimes check against the device's limit:
     * a template declaring more than its spec's expression counts would
     * launch past it (on the H100: device lost). */
    if (ok) {
        check_job job = {.units = units,
                         .count = nu,
                         .declared = qk_xcalloc(nu + 1, sizeof *job.declared),
                         .errors = qk_xcalloc(nu + 1, sizeof *job.errors),
                         .o = o};
        qk_parallel(qk_cores(), check_variants, &job);
        for (uint32_t i = 0; ok && i < nu; i++) {
            const unit *u = &units[i];
            if (job.declared[i] < 0) {
                *e = job.errors[i];
                if (!e->set) qk_error_set(e, "%s: cannot size its shared memory", u->v->name);
                ok = false;
            } else if (job.declared[i] > (int64_t)u->v->shared_memory) {
                qk_error_set(e,
                             "%s: its SPIR-V declares %lld bytes of shared memory, more than the "
                             "%u of the spec's shared_memory expression (%s): the expression must "
                             "count every shared variable of the template",
                             u->v->name, (long long)job.declared[i], u->v->shared_memory,
                             u->v->kernel->path);
                ok = false;
            }
        }
        free(job.declared);
        free(job.errors);
    }
    if (ok) manifest_entries(&manifest, units, listed, nu);
    qk_str_add(&manifest, "\n}\n");
    if (ok) {
        char *mpath = qk_path_join(tmp.s, "manifest.json");
        ok = qk_write_file(mpath, manifest.s, manifest.len, e);
        free(mpath);
    }
    if (ok) ok = swap_in(tmp.s, bundle_dir, e);
    if (!ok) qk_rmtree(tmp.s);
    qk_str_free(&tmp);
    qk_str_free(&manifest);
    if (lock >= 0) close(lock); /* releases the lock */
done:
    for (uint32_t i = 0; i < nu; i++)
        free(units[i].glsl), free(units[i].spv);
    free(units);
    free(listed);
    free(picked);
    free(bundle_dir);
    free(cache_dir);
    return ok;
}
