/* The paths of a plan: which (operation, math path, fusion) each format has
 * a variant on, and for one it lacks, the reason the plan gives. */
#include "plan.h"

#include <stdio.h>
#include <string.h>

static void path_of(const qk_variant *v, qk_path *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->operation, sizeof p->operation, "%s", v->kernel->family);
    snprintf(p->mma, sizeof p->mma, "%s", v->mma);
    snprintf(p->fusion, sizeof p->fusion, "%s", v->fusion ? v->fusion->name : "");
}

static bool path_eq(const qk_path *a, const qk_path *b) {
    return !strcmp(a->operation, b->operation) && !strcmp(a->mma, b->mma) &&
           !strcmp(a->fusion, b->fusion);
}

uint32_t qk_plan_paths(const qk_plan *p, qk_path *out, uint32_t cap) {
    uint32_t n = 0;
    for (uint32_t i = 0; i < p->variant_count; i++) {
        const qk_variant *v = &p->variants[i];
        /* the products of a quantized format: kernels of a math path */
        if (!v->mma[0] || !strcmp(v->format->name, "none")) continue;
        qk_path q;
        path_of(v, &q);
        bool seen = false;
        for (uint32_t j = 0; j < n && j < cap && !seen; j++)
            seen = path_eq(&out[j], &q);
        if (seen) continue;
        if (n < cap) out[n] = q;
        n++;
    }
    return n;
}

/* Variant or dropped point `name` of kernel k on format f: the name is the
 * kernel's, then the format's, then the rest. */
static bool name_of(const char *name, const char *kernel, const char *format) {
    size_t kl = strlen(kernel), fl = strlen(format);
    return !strncmp(name, kernel, kl) && name[kl] == '_' && !strncmp(name + kl + 1, format, fl) &&
           name[kl + 1 + fl] == '_';
}

/* Whether `word` ("dot8", "swiglu") is a word of the name after its first
 * underscore. */
static bool has_word(const char *name, const char *word) {
    size_t wl = strlen(word);
    for (const char *s = strchr(name, '_'); s; s = strchr(s + 1, '_'))
        if (!strncmp(s + 1, word, wl) && (s[1 + wl] == '_' || !s[1 + wl])) return true;
    return false;
}

bool qk_plan_format_path(const qk_plan *p, const char *format, const qk_path *path, char *why,
                         size_t why_size) {
    /* the kernels of the path: those with a variant on it */
    const qk_kernel_spec *kernels[64];
    uint32_t nk = 0;
    for (uint32_t i = 0; i < p->variant_count; i++) {
        const qk_variant *v = &p->variants[i];
        qk_path q;
        path_of(v, &q);
        if (!path_eq(&q, path)) continue;
        if (!strcmp(v->format->name, format)) return true;
        bool seen = false;
        for (uint32_t j = 0; j < nk && !seen; j++)
            seen = kernels[j] == v->kernel;
        if (!seen && nk < 64) kernels[nk++] = v->kernel;
    }
    /* none: the reason that dropped most of the format's points of those
     * kernels on the path's math path and fusion (a few distinct reasons) */
    struct {
        const char *reason;
        uint32_t n;
    } seen[64];
    uint32_t ns = 0, best = 0;
    const char *reason = NULL;
    for (uint32_t i = 0; i < p->dropped_count; i++) {
        const qk_dropped *d = &p->dropped[i];
        bool ours = false;
        for (uint32_t j = 0; j < nk && !ours; j++)
            ours = name_of(d->name, kernels[j]->name, format);
        if (!ours || (path->mma[0] && !has_word(d->name, path->mma)) ||
            (path->fusion[0] && !has_word(d->name, path->fusion)))
            continue;
        uint32_t j = 0;
        while (j < ns && strcmp(seen[j].reason, d->reason))
            j++;
        if (j == ns) {
            if (ns == 64) continue;
            seen[ns].reason = d->reason;
            seen[ns++].n = 0;
        }
        if (++seen[j].n > best) {
            best = seen[j].n;
            reason = seen[j].reason;
        }
    }
    if (reason)
        snprintf(why, why_size, "%s", reason);
    else
        snprintf(why, why_size, "no kernel of this path lists the format (formats: of its spec)");
    return false;
}
