/* Model shape sets: the schema of specs/models/NAME.yaml through the strict
 * YAML reader, and their expansion into the cases the autotuner times. */
#include "model.h"
#include "yamlw.h"

#include <stdlib.h>
#include <string.h>

static bool load_tokens(yw *w, ynode *n, const char *where, uint32_t *out, uint32_t *count) {
    return yw_uint_list(w, n, where, 1, 65536, out, QK_MAX_TOKENS, count);
}

static bool load_op(yw *w, ynode *n, size_t i, qk_model_spec *m) {
    static const char *const keys[] = {"name", "m", "k", "experts", "tokens", NULL};
    static const char *const req[] = {"name", "m", "k", NULL};
    char where[48], wk[80];
    snprintf(where, sizeof where, "ops[%zu]", i);
    qk_model_op *op = &m->ops[m->op_count++];
    op->mark = yw_mark(n);
    if (!yw_check_map(w, n, where, keys, req)) return false;
    snprintf(wk, sizeof wk, "%s.name", where);
    if (!yw_str(w, yw_get(w, n, "name"), wk, op->name, sizeof op->name)) return false;
    snprintf(wk, sizeof wk, "%s.m", where);
    if (!yw_uint(w, yw_get(w, n, "m"), wk, 1, 1u << 20, &op->m)) return false;
    snprintf(wk, sizeof wk, "%s.k", where);
    if (!yw_uint(w, yw_get(w, n, "k"), wk, 1, 1u << 20, &op->k)) return false;
    ynode *v;
    snprintf(wk, sizeof wk, "%s.experts", where);
    if ((v = yw_get(w, n, "experts")) && !yw_bool(w, v, wk, &op->experts)) return false;
    if (op->experts && !m->expert_count)
        return yw_fail(w, v, wk, "the model declares no experts (experts: { count, top_k })");
    snprintf(wk, sizeof wk, "%s.tokens", where);
    if ((v = yw_get(w, n, "tokens")) && !load_tokens(w, v, wk, op->tokens, &op->token_count))
        return false;
    snprintf(wk, sizeof wk, "%s.name", where);
    for (uint32_t j = 0; j + 1 < m->op_count; j++)
        if (!strcmp(m->ops[j].name, op->name))
            return yw_fail(w, yw_get(w, n, "name"), wk, "duplicate op '%s'", op->name);
    return true;
}

static bool load_model(yw *w, qk_model_spec *m) {
    ynode *root = yw_root(w), *n;
    static const char *const keys[] = {"model",   "description", "formats", "tokens",
                                       "experts", "kernels",     "ops",     NULL};
    static const char *const req[] = {"model", "formats", "tokens", "ops", NULL};
    if (!yw_check_map(w, root, "", keys, req) ||
        !yw_str(w, yw_get(w, root, "model"), "model", m->name, sizeof m->name))
        return false;
    if ((n = yw_get(w, root, "description")) &&
        !yw_str(w, n, "description", m->description, sizeof m->description))
        return false;
    if (!yw_str_list(w, yw_get(w, root, "formats"), "formats", m->formats[0], sizeof m->formats[0],
                     QK_MAX_LIST, &m->format_count))
        return false;
    if (!m->format_count)
        return yw_fail(w, yw_get(w, root, "formats"), "formats", "the list is empty");
    n = yw_get(w, root, "tokens");
    static const char *const tkeys[] = {"decode", "prefill", NULL};
    static const char *const treq[] = {NULL};
    if (!yw_check_map(w, n, "tokens", tkeys, treq)) return false;
    ynode *t;
    if ((t = yw_get(w, n, "decode")) &&
        !load_tokens(w, t, "tokens.decode", m->decode, &m->decode_count))
        return false;
    if ((t = yw_get(w, n, "prefill")) &&
        !load_tokens(w, t, "tokens.prefill", m->prefill, &m->prefill_count))
        return false;
    if (!m->decode_count && !m->prefill_count)
        return yw_fail(w, n, "tokens", "neither decode nor prefill token counts");
    for (uint32_t i = 0; i < m->decode_count; i++)
        if (m->decode[i] > 8)
            return yw_fail(w, yw_list_item(w, yw_get(w, n, "decode"), i), "tokens.decode",
                           "%u tokens: decode runs the mat-vec kernels, 1 to 8 tokens",
                           m->decode[i]);
    if ((n = yw_get(w, root, "experts"))) {
        static const char *const ekeys[] = {"count", "top_k", NULL};
        static const char *const ereq[] = {"count", "top_k", NULL};
        if (!yw_check_map(w, n, "experts", ekeys, ereq) ||
            !yw_uint(w, yw_get(w, n, "count"), "experts.count", 1, 4096, &m->expert_count) ||
            !yw_uint(w, yw_get(w, n, "top_k"), "experts.top_k", 1, 64, &m->top_k))
            return false;
        if (m->top_k > m->expert_count)
            return yw_fail(w, yw_get(w, n, "top_k"), "experts.top_k",
                           "%u is more than the %u experts", m->top_k, m->expert_count);
    }
    if ((n = yw_get(w, root, "kernels")) &&
        !yw_str_list(w, n, "kernels", m->kernels[0], sizeof m->kernels[0], QK_MAX_LIST,
                     &m->kernel_count))
        return false;
    for (uint32_t i = 0; n && i < m->kernel_count; i++)
        m->kernel_marks[i] = yw_mark(yw_list_item(w, n, i));
    n = yw_get(w, root, "ops");
    if (!yw_is_seq(n)) return yw_fail(w, n, "ops", "expected a list of ops");
    if (!yw_seq_len(n)) return yw_fail(w, n, "ops", "the list is empty");
    if (yw_seq_len(n) > QK_MAX_MODEL_OPS) return yw_fail(w, n, "ops", "too many ops");
    for (size_t i = 0; i < yw_seq_len(n); i++)
        if (!load_op(w, yw_seq_at(w, n, i), i, m)) return false;
    return true;
}

bool qk_model_spec_load(const char *path, qk_model_spec *out, qk_error *e) {
    memset(out, 0, sizeof *out);
    snprintf(out->path, sizeof out->path, "%s", path);
    yw w;
    if (!yw_open(&w, path, e)) return false;
    bool ok = load_model(&w, out);
    yw_close(&w);
    return ok;
}

bool qk_model_spec_check_kernels(const qk_model_spec *m, const qk_spec_set *specs, qk_error *e) {
    for (uint32_t i = 0; i < m->kernel_count; i++) {
        bool known = false;
        for (uint32_t j = 0; j < specs->kernel_count && !known; j++)
            known = !strcmp(m->kernels[i], specs->kernels[j].name) ||
                    !strcmp(m->kernels[i], specs->kernels[j].origin);
        if (!known) {
            qk_error_set(e, "%s:%d:%d: kernels: no kernel or family '%s' in the specs", m->path,
                         m->kernel_marks[i].line, m->kernel_marks[i].col, m->kernels[i]);
            return false;
        }
    }
    return true;
}

static void add_case(qk_model_case **out, uint32_t *n, const qk_model_case *c) {
    for (uint32_t i = 0; i < *n; i++)
        if (!memcmp(&(*out)[i], c, sizeof *c)) return;
    *out = qk_xrealloc(*out, sizeof **out * (*n + 1));
    (*out)[(*n)++] = *c;
}

uint32_t qk_model_cases(const qk_model_spec *m, const char *formats, qk_model_case **out) {
    char fl[QK_MAX_LIST][QK_MAX_NAME];
    uint32_t nf = 0;
    if (formats)
        for (const char *p = formats; *p && nf < QK_MAX_LIST;) {
            size_t len = strcspn(p, ",");
            if (len) snprintf(fl[nf++], QK_MAX_NAME, "%.*s", (int)len, p);
            p += len + (p[len] == ',');
        }
    else
        for (nf = 0; nf < m->format_count; nf++)
            snprintf(fl[nf], QK_MAX_NAME, "%s", m->formats[nf]);
    uint32_t n = 0;
    *out = NULL;
    for (uint32_t f = 0; f < nf; f++)
        for (uint32_t o = 0; o < m->op_count; o++) {
            const qk_model_op *op = &m->ops[o];
            uint32_t tok[2 * QK_MAX_TOKENS], nt = 0;
            if (op->token_count) {
                memcpy(tok, op->tokens, sizeof op->tokens[0] * op->token_count);
                nt = op->token_count;
            } else {
                for (uint32_t i = 0; i < m->decode_count; i++)
                    tok[nt++] = m->decode[i];
                for (uint32_t i = 0; i < m->prefill_count; i++)
                    tok[nt++] = m->prefill[i];
            }
            for (uint32_t t = 0; t < nt; t++) {
                qk_model_case c = {0};
                bool mv = tok[t] <= 8;
                snprintf(c.family, sizeof c.family, "%s%s", mv ? "matvec" : "matmul",
                         op->experts ? "_id" : "");
                snprintf(c.format, sizeof c.format, "%s", fl[f]);
                c.m = op->m, c.k = op->k, c.tokens = tok[t];
                if (op->experts) c.experts = m->expert_count, c.top_k = m->top_k;
                add_case(out, &n, &c);
            }
        }
    return n;
}
