/* Kernel sets (specs/sets/NAME.yaml): which kernels of a spec folder a bundle
 * takes, on which formats and fusions, less the family points a set names. */
#include "yamlw.h"

#include <stdlib.h>
#include <string.h>

typedef struct set_reader {
    yw *w;
    qk_spec_set *s;
    const char *dir;
    bool *keep_family; /* [family_count] */
    bool *keep_kernel; /* [kernel_count]: kernel specs named (family points follow their family) */
    bool has_base;
    qk_format_pick base; /* the set's formats (has_base; else every format) */
} set_reader;

static int find_family(const qk_spec_set *s, const char *name) {
    for (uint32_t i = 0; i < s->family_count; i++)
        if (!strcmp(s->families[i].name, name)) return (int)i;
    return -1;
}

static qk_format_pick *new_pick(qk_spec_set *s) {
    s->picks = qk_xrealloc(s->picks, sizeof *s->picks * (s->pick_count + 1));
    qk_format_pick *p = &s->picks[s->pick_count++];
    memset(p, 0, sizeof *p);
    return p;
}

/* kernels: [NAME, ...], each a family spec's family or a kernel spec's kernel */
static bool load_kernels(set_reader *r, ynode *n) {
    yw *w = r->w;
    const qk_spec_set *s = r->s;
    char names[QK_MAX_LIST][QK_MAX_NAME];
    uint32_t count;
    if (!yw_str_list(w, n, "kernels", names[0], sizeof names[0], QK_MAX_LIST, &count)) return false;
    if (!count) return yw_fail(w, n, "kernels", "the list is empty");
    for (uint32_t i = 0; i < count; i++) {
        int f = find_family(s, names[i]);
        bool found = f >= 0;
        if (found) r->keep_family[f] = true;
        for (uint32_t k = 0; k < s->kernel_count; k++)
            if (!s->kernels[k].origin[0] && !strcmp(s->kernels[k].name, names[i]))
                r->keep_kernel[k] = found = true;
        if (found) continue;
        qk_str known = {0};
        for (uint32_t j = 0; j < s->family_count; j++)
            qk_str_addf(&known, "%s%s", known.len ? ", " : "", s->families[j].name);
        for (uint32_t k = 0; k < s->kernel_count; k++)
            if (!s->kernels[k].origin[0])
                qk_str_addf(&known, "%s%s", known.len ? ", " : "", s->kernels[k].name);
        bool ok = yw_fail(w, yw_list_item(w, n, i), "kernels",
                          "'%s' is no family or kernel spec of %s/kernels (it has: %s)", names[i],
                          r->dir, known.s ? known.s : "none");
        qk_str_free(&known);
        return ok;
    }
    return true;
}

/* A list of format names into p; each must be one of the set's formats. */
static bool load_formats(set_reader *r, ynode *n, const char *where, qk_format_pick *p) {
    yw *w = r->w;
    snprintf(p->where, sizeof p->where, "%s", where);
    if (!yw_str_list(w, n, where, p->formats[0], sizeof p->formats[0], QK_MAX_PICK, &p->count))
        return false;
    if (!p->count) return yw_fail(w, n, where, "the list is empty");
    for (uint32_t i = 0; i < p->count; i++) {
        ynode *item = yw_list_item(w, n, i);
        p->marks[i] = yw_mark(item);
        if (!r->has_base) continue;
        bool in = false;
        for (uint32_t j = 0; j < r->base.count && !in; j++)
            in = !strcmp(r->base.formats[j], p->formats[i]);
        if (!in)
            return yw_fail(w, item, where, "'%s' is not one of the set's formats", p->formats[i]);
    }
    return true;
}

/* The family an exclude or restrict entry names: one the set keeps. */
static qk_family_spec *entry_family(set_reader *r, ynode *n, const char *where) {
    char name[QK_MAX_NAME];
    if (!yw_str(r->w, n, where, name, sizeof name)) return NULL;
    int f = find_family(r->s, name);
    if (f < 0 || !r->keep_family[f]) {
        yw_fail(r->w, n, where, "'%s' is not a family %s", name,
                f < 0 ? "spec of the folder" : "of this set (its kernels: list)");
        return NULL;
    }
    return &r->s->families[f];
}

/* exclude: [{ family, when, reason }]: the points where when holds are
 * excluded with the reason, as a family's own exclude: list would. */
static bool load_exclusions(set_reader *r, ynode *seq) {
    yw *w = r->w;
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "exclude", "expected a list of exclusions");
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i);
        char where[64], wf[80], ww[80];
        snprintf(where, sizeof where, "exclude[%zu]", i);
        snprintf(wf, sizeof wf, "%s.family", where);
        snprintf(ww, sizeof ww, "%s.when", where);
        static const char *const keys[] = {"family", "when", "reason", NULL};
        char reason[256];
        uint32_t when[QK_MAX_AXES];
        if (!yw_check_map(w, m, where, keys, keys)) return false;
        qk_family_spec *f = entry_family(r, yw_get(w, m, "family"), wf);
        if (!f || !qk_spec_when(w, yw_get(w, m, "when"), ww, f, when) ||
            !yw_str(w, yw_get(w, m, "reason"), where, reason, sizeof reason))
            return false;
        uint32_t hit = 0, left = 0;
        for (uint32_t p = 0; p < f->point_count; p++) {
            qk_family_point *pt = &f->points[p];
            if (pt->excluded[0]) continue;
            if (qk_spec_when_matches(when, pt->value, f->axis_count)) {
                snprintf(pt->excluded, sizeof pt->excluded, "%s", reason);
                hit++;
            } else {
                left++;
            }
        }
        if (!hit)
            return yw_fail(w, yw_get(w, m, "when"), ww,
                           "no point of family '%s' left to exclude (qkgen list --axes %s)",
                           f->name, f->name);
        if (!left)
            return yw_fail(w, yw_get(w, m, "when"), ww,
                           "excludes every point of family '%s' left: leave it out of kernels",
                           f->name);
    }
    return true;
}

/* restrict: [{ family, when, formats, reason }]: the points where when holds
 * (every point without when) keep only those of the set's formats. */
static bool load_restrictions(set_reader *r, ynode *seq) {
    yw *w = r->w;
    if (!yw_is_seq(seq)) return yw_fail(w, seq, "restrict", "expected a list of restrictions");
    for (size_t i = 0; i < yw_seq_len(seq); i++) {
        ynode *m = yw_seq_at(w, seq, i), *wn = NULL;
        char where[64], wf[80], ww[80], wl[80], reason[256];
        snprintf(where, sizeof where, "restrict[%zu]", i);
        snprintf(wf, sizeof wf, "%s.family", where);
        snprintf(ww, sizeof ww, "%s.when", where);
        snprintf(wl, sizeof wl, "%s.formats", where);
        static const char *const keys[] = {"family", "when", "formats", "reason", NULL};
        static const char *const req[] = {"family", "formats", "reason", NULL};
        uint32_t when[QK_MAX_AXES] = {0};
        qk_format_pick pick = {0};
        if (!yw_check_map(w, m, where, keys, req)) return false;
        qk_family_spec *f = entry_family(r, yw_get(w, m, "family"), wf);
        if (!f || ((wn = yw_get(w, m, "when")) && !qk_spec_when(w, wn, ww, f, when)) ||
            !load_formats(r, yw_get(w, m, "formats"), wl, &pick) ||
            !yw_str(w, yw_get(w, m, "reason"), where, reason, sizeof reason))
            return false;
        uint32_t hit = 0;
        for (uint32_t p = 0; p < f->point_count; p++) {
            const qk_family_point *pt = &f->points[p];
            if (pt->excluded[0] || !qk_spec_when_matches(when, pt->value, f->axis_count)) continue;
            qk_format_pick *np = new_pick(r->s);
            *np = pick;
            snprintf(np->kernel, sizeof np->kernel, "%s", pt->kernel);
            qk_str axes = {0};
            qk_family_point_axes(f, pt->value, &axes);
            snprintf(np->axes, sizeof np->axes, "%s", axes.s);
            qk_str_free(&axes);
            hit++;
        }
        if (!hit)
            return yw_fail(w, wn ? wn : m, wn ? ww : where,
                           "no point of family '%s' that the set keeps (qkgen list --axes %s)",
                           f->name, f->name);
    }
    return true;
}

/* fusions: [NAME, ...]: "none" or fusion specs of the folder */
static bool load_fusions(set_reader *r, ynode *n, char (*names)[QK_MAX_NAME], uint32_t *count) {
    yw *w = r->w;
    if (!yw_str_list(w, n, "fusions", names[0], sizeof names[0], 8, count)) return false;
    if (!*count) return yw_fail(w, n, "fusions", "the list is empty");
    for (uint32_t i = 0; i < *count; i++) {
        bool found = !strcmp(names[i], "none");
        for (uint32_t j = 0; j < r->s->fusion_count && !found; j++)
            found = !strcmp(r->s->fusions[j].name, names[i]);
        if (!found)
            return yw_fail(w, yw_list_item(w, n, i), "fusions",
                           "'%s' is not none or a fusion of %s/fusions", names[i], r->dir);
    }
    return true;
}

/* Keeps of k's fusions those named (a kernel without fusions has none);
 * false when none is left. */
static bool narrow_fusions(qk_kernel_spec *k, char (*names)[QK_MAX_NAME], uint32_t count) {
    if (!k->fusion_count) {
        k->fusion_count = 1;
        snprintf(k->fusions[0], sizeof k->fusions[0], "none");
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < k->fusion_count; i++)
        for (uint32_t j = 0; j < count; j++)
            if (!strcmp(k->fusions[i], names[j])) {
                memmove(k->fusions[n++], k->fusions[i], sizeof k->fusions[0]);
                break;
            }
    k->fusion_count = n;
    return n > 0;
}

/* Whether family point kernel k survived the set: its family kept, the
 * point not excluded. Points are told apart by their axes, not their names
 * (matmul's math path is not spelled in the kernel name). */
static bool point_kept(const set_reader *r, const qk_kernel_spec *k) {
    int f = find_family(r->s, k->origin);
    if (f < 0 || !r->keep_family[f]) return false;
    const qk_family_spec *fs = &r->s->families[f];
    bool kept = false;
    for (uint32_t p = 0; p < fs->point_count; p++) {
        qk_str axes = {0};
        qk_family_point_axes(fs, fs->points[p].value, &axes);
        bool same = axes.s && !strcmp(axes.s, k->axes);
        qk_str_free(&axes);
        if (same) {
            kept = !fs->points[p].excluded[0];
            break;
        }
    }
    return kept;
}

static bool load_set(set_reader *r, char (*fusions)[QK_MAX_NAME], uint32_t *fusion_count) {
    yw *w = r->w;
    ynode *root = yw_root(w), *n;
    static const char *const keys[] = {"set",     "description", "kernels",  "formats",
                                       "fusions", "exclude",     "restrict", NULL};
    static const char *const req[] = {"set", NULL};
    char name[QK_MAX_NAME], description[256];
    if (!yw_check_map(w, root, "", keys, req) ||
        !yw_str(w, yw_get(w, root, "set"), "set", name, sizeof name))
        return false;
    if ((n = yw_get(w, root, "description")) &&
        !yw_str(w, n, "description", description, sizeof description))
        return false;
    if ((n = yw_get(w, root, "kernels"))) {
        if (!load_kernels(r, n)) return false;
    } else {
        for (uint32_t i = 0; i < r->s->family_count; i++)
            r->keep_family[i] = true;
        for (uint32_t i = 0; i < r->s->kernel_count; i++)
            r->keep_kernel[i] = true;
    }
    if ((n = yw_get(w, root, "formats"))) {
        if (!load_formats(r, n, "formats", &r->base)) return false;
        *new_pick(r->s) = r->base;
        r->has_base = true;
    }
    if ((n = yw_get(w, root, "fusions")) && !load_fusions(r, n, fusions, fusion_count))
        return false;
    /* exclusions first, so that a restriction names only points left */
    if ((n = yw_get(w, root, "exclude")) && !load_exclusions(r, n)) return false;
    if ((n = yw_get(w, root, "restrict")) && !load_restrictions(r, n)) return false;
    return true;
}

bool qk_spec_set_apply(qk_spec_set *s, const char *dir, const char *set_path, qk_error *e) {
    set_reader r = {.s = s, .dir = dir};
    yw w;
    r.w = &w;
    if (!yw_open(&w, set_path, e)) {
        qk_spec_set_free(s);
        return false;
    }
    snprintf(s->set_path, sizeof s->set_path, "%s", set_path);
    r.keep_family = qk_xcalloc(s->family_count + 1, sizeof *r.keep_family);
    r.keep_kernel = qk_xcalloc(s->kernel_count + 1, sizeof *r.keep_kernel);
    char fusions[8][QK_MAX_NAME];
    uint32_t fusion_count = 0;
    bool ok = load_set(&r, fusions, &fusion_count);
    yw_close(&w);
    /* the kernels kept, in folder order; then the families */
    uint32_t nk = 0;
    for (uint32_t i = 0; ok && i < s->kernel_count; i++) {
        qk_kernel_spec *k = &s->kernels[i];
        bool keep = k->origin[0] ? point_kept(&r, k) : r.keep_kernel[i];
        if (keep && fusion_count) keep = narrow_fusions(k, fusions, fusion_count);
        if (keep && nk != i) s->kernels[nk] = *k;
        nk += keep;
    }
    uint32_t nf = 0;
    for (uint32_t i = 0; ok && i < s->family_count; i++) {
        if (!r.keep_family[i]) {
            qk_family_spec_free(&s->families[i]);
            continue;
        }
        if (nf != i) s->families[nf] = s->families[i];
        nf++;
    }
    if (ok) s->kernel_count = nk, s->family_count = nf;
    free(r.keep_family);
    free(r.keep_kernel);
    if (!ok) qk_spec_set_free(s);
    return ok;
}

bool qk_format_pick_names(const char *entry, const char *name, const char *option) {
    size_t n = strlen(name);
    if (strncmp(entry, name, n)) return false;
    return !entry[n] || (option[0] && entry[n] == '_' && !strcmp(entry + n + 1, option));
}

bool qk_spec_set_keeps(const qk_spec_set *s, const qk_kernel_spec *k, const char *name,
                       const char *option) {
    for (uint32_t i = 0; i < s->pick_count; i++) {
        const qk_format_pick *p = &s->picks[i];
        if (p->kernel[0] && (!k || strcmp(p->kernel, k->name) || strcmp(p->axes, k->axes)))
            continue;
        bool named = false;
        for (uint32_t j = 0; j < p->count && !named; j++)
            named = qk_format_pick_names(p->formats[j], name, option);
        if (!named) return false;
    }
    return true;
}
