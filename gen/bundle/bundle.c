/* Bundle writing. The bundle is built in a hidden folder beside its final
 * place and swapped in with one rename, so an interrupted build leaves either
 * the old bundle or the new one, never half of either. */
#define _GNU_SOURCE
#include "bundle.h"
#include "../compile/compile.h"
#include "../emit/emit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

void qk_json_string(qk_str *o, const char *s) {
    qk_str_add(o, "\"");
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            qk_str_addf(o, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            qk_str_addf(o, "\\u%04x", *s);
        else
            qk_str_addn(o, s, 1);
    }
    qk_str_add(o, "\"");
}

static void hash_path(qk_sha256 *h, const char *path) {
    size_t n;
    qk_error e = {0};
    char *text = qk_read_file(path, &n, &e);
    qk_sha256_update(h, path, strlen(path) + 1);
    if (text) qk_sha256_update(h, text, n);
    free(text);
}

static bool selected(const qk_build_opts *o, const qk_variant *v) {
    return !o->filter || strstr(v->name, o->filter);
}

static void manifest_kernel(qk_str *m, const qk_variant *v, const char *spv_hash, bool first) {
    const qk_kernel_spec *k = v->kernel;
    const qk_format *f = v->format;
    qk_str_addf(m, "%s\n    {\n      \"name\": ", first ? "" : ",");
    qk_json_string(m, v->name);
    qk_str_addf(m,
                ",\n      \"family\": \"%s\", \"format\": \"%s\", \"format_variant\": \"%s\", "
                "\"activation\": \"%s\",\n",
                k->family, f->name, f->variant, v->activation);
    qk_str_addf(m,
                "      \"tile\": { \"NR0\": %u, \"NR1\": %u, \"NK\": %u }, \"mma\": \"%s\", "
                "\"fusion\": \"%s\",\n",
                v->nr0, v->nr1, v->nk, v->mma[0] ? v->mma : "scalar",
                v->fusion ? v->fusion->name : "none");
    qk_str_addf(m,
                "      \"spv\": \"%s.spv\", \"spv_sha256\": \"%s\", \"entry_point\": \"main\",\n",
                v->name, spv_hash);
    qk_str_addf(m,
                "      \"workgroup_size\": [%u, 1, 1], \"required_subgroup_size\": 0, "
                "\"min_subgroup_size\": %u, \"shared_memory_bytes\": %u,\n",
                v->wg, k->min_subgroup_size, v->shared_memory);
    const char *features[16];
    uint32_t nf = qk_variant_features(v, features, 16);
    qk_str_add(m, "      \"vulkan_version\": \"1.2\", \"extensions\": [");
    for (uint32_t i = 0; i < nf; i++)
        if (!strcmp(features[i], "cooperative_matrix_nv"))
            qk_str_add(m, "\"VK_NV_cooperative_matrix\"");
    qk_str_add(m, "], \"features\": [");
    for (uint32_t i = 0; i < nf; i++)
        qk_str_addf(m, "%s\"%s\"", i ? ", " : "", features[i]);
    qk_str_add(m, "],\n      \"weights\": ");
    if (v->weights > 0)
        qk_format_emit_json(f, m);
    else
        qk_str_add(m, "null");
    qk_str_add(m, ",\n      \"bindings\": [");
    qk_binding_info b[QK_MAX_BINDINGS];
    uint32_t nb = qk_variant_bindings(v, b, QK_MAX_BINDINGS);
    for (uint32_t i = 0; i < nb; i++) {
        qk_str_addf(m,
                    "%s\n        { \"set\": 0, \"binding\": %u, \"count\": %u, \"name\": \"%s\", "
                    "\"role\": \"%s\", \"type\": \"%s\", \"access\": \"%s\"",
                    i ? "," : "", b[i].binding, b[i].count, b[i].name, b[i].role, b[i].type,
                    b[i].writable ? "write" : "read");
        if (b[i].size[0]) {
            qk_str_add(m, ", \"size\": ");
            qk_json_string(m, b[i].size);
        }
        qk_str_add(m, " }");
    }
    qk_str_add(m, "\n      ],\n      \"push_constants\": [");
    const char *push[QK_MAX_LIST + 8];
    uint32_t np = qk_variant_push(v, push, QK_MAX_LIST + 8);
    for (uint32_t i = 0; i < np; i++)
        qk_str_addf(m, "%s{ \"name\": \"%s\", \"offset\": %u, \"type\": \"u32\" }", i ? ", " : "",
                    push[i], 4 * i);
    qk_str_addf(m, "], \"push_constant_size\": %u,\n", 4 * np);
    qk_str_add(m, "      \"specialization_constants\": [],\n      \"dispatch\": { \"grid\": [");
    for (int i = 0; i < 3; i++) {
        if (i) qk_str_add(m, ", ");
        qk_json_string(m, v->grid[i]);
    }
    qk_str_add(m, "] },\n      \"constraints\": [");
    for (uint32_t i = 0; i < v->constraint_count; i++) {
        if (i) qk_str_add(m, ", ");
        qk_json_string(m, v->constraints[i]);
    }
    qk_str_add(m, "]\n    }");
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

typedef struct unit {
    const qk_variant *v;
    char *glsl;
    char key[65];
} unit;

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
    unit *units = qk_xcalloc(plan->variant_count, sizeof *units);
    uint32_t nu = 0;
    bool ok = true;
    for (uint32_t i = 0; ok && i < plan->variant_count; i++) {
        if (!selected(o, &plan->variants[i])) continue;
        unit *u = &units[nu++];
        u->v = &plan->variants[i];
        qk_str src = {0};
        ok = qk_emit_variant(u->v, o->templates_dir, &src, NULL, NULL, e);
        u->glsl = qk_str_take(&src);
        qk_sha256 k;
        qk_sha256_init(&k);
        qk_sha256_update(&k, qk_generator_hash(), 64);
        qk_sha256_update(&k, u->glsl, strlen(u->glsl));
        qk_sha256_final_hex(&k, u->key);
        qk_sha256_update(&inputs, u->key, 64);
    }
    char inputs_hash[65];
    qk_sha256_final_hex(&inputs, inputs_hash);
    st->variants = nu;
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

    /* 3. Compile what the cache lacks, into a hidden folder. */
    qk_str tmp = {0};
    qk_str_addf(&tmp, "%s/.%s.tmp.%ld", o->out_dir, name, (long)getpid());
    if (ok) ok = qk_mkdirs(cache_dir, e) && qk_mkdirs(tmp.s, e);
    qk_str manifest = {0};
    qk_str_addf(&manifest,
                "{\n  \"schema\": \"%s\",\n  \"generator\": { \"name\": \"qkgen\", \"version\": "
                "\"%s\", \"hash\": \"%s\" },\n  \"inputs_hash\": \"%s\",\n  \"target\": { "
                "\"vulkan\": \"1.2\", \"spirv\": \"1.5\" },\n  \"kernels\": [",
                QK_BUNDLE_SCHEMA, QK_VERSION, qk_generator_hash(), inputs_hash);
    for (uint32_t i = 0; ok && i < nu; i++) {
        unit *u = &units[i];
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
            if (o->progress) o->progress(o->user, i, nu, u->v->name);
            qk_spirv m = {0};
            ok = qk_compile_all(u->v->name, u->glsl, &m, e);
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
        if (!ok) break;
        /* the manifest's shared_memory_bytes is what runtimes check against
         * the device's limit: a template declaring more than its spec's
         * expression counts would launch past it (on the H100: device lost) */
        qk_spirv sm = {(uint32_t *)(void *)spv, n / 4};
        int64_t declared = qk_spirv_shared_bytes(&sm);
        if (declared > (int64_t)u->v->shared_memory) {
            qk_error_set(e,
                         "%s: its SPIR-V declares %lld bytes of shared memory, more than the %u of "
                         "the spec's shared_memory expression (%s): the expression must count "
                         "every shared variable of the template",
                         u->v->name, (long long)declared, u->v->shared_memory, u->v->kernel->path);
            free(spv);
            ok = false;
            break;
        }
        char spv_hash[65];
        qk_sha256_hex(spv, n, spv_hash);
        char file[300];
        snprintf(file, sizeof file, "%s/%s.spv", tmp.s, u->v->name);
        ok = qk_write_file(file, spv, n, e);
        free(spv);
        manifest_kernel(&manifest, u->v, spv_hash, i == 0);
    }
    qk_str_add(&manifest, "\n  ]\n}\n");
    if (ok) {
        char *mpath = qk_path_join(tmp.s, "manifest.json");
        ok = qk_write_file(mpath, manifest.s, manifest.len, e);
        free(mpath);
    }
    if (ok) ok = swap_in(tmp.s, bundle_dir, e);
    if (!ok) qk_rmtree(tmp.s);
    qk_str_free(&tmp);
    qk_str_free(&manifest);
done:
    for (uint32_t i = 0; i < nu; i++)
        free(units[i].glsl);
    free(units);
    free(bundle_dir);
    free(cache_dir);
    return ok;
}
