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

/* A positive finite number (the routed scaling factor). */
static bool load_positive(yw *w, ynode *n, const char *where, double *out) {
    char text[64], *end;
    if (!yw_str(w, n, where, text, sizeof text)) return false;
    *out = strtod(text, &end);
    if (end == text || *end || !(*out > 0) || *out > 1e6)
        return yw_fail(w, n, where, "expected a positive number, got '%s'", text);
    return true;
}

static bool load_shared(yw *w, ynode *n, qk_model_layer *l) {
    static const char *const keys[] = {"count", "ffn", "gated", NULL};
    static const char *const req[] = {"count", "ffn", NULL};
    ynode *v;
    return yw_check_map(w, n, "layer.shared_experts", keys, req) &&
           yw_uint(w, yw_get(w, n, "count"), "layer.shared_experts.count", 1, 64,
                   &l->shared_count) &&
           yw_uint(w, yw_get(w, n, "ffn"), "layer.shared_experts.ffn", 1, 1u << 20,
                   &l->shared_ffn) &&
           (!(v = yw_get(w, n, "gated")) ||
            yw_bool(w, v, "layer.shared_experts.gated", &l->shared_gated));
}

static bool load_biases(yw *w, ynode *n, qk_model_layer *l) {
    static const char *const keys[] = {"gate_up", "down", NULL};
    static const char *const req[] = {NULL};
    ynode *v;
    return yw_check_map(w, n, "layer.biases", keys, req) &&
           (!(v = yw_get(w, n, "gate_up")) ||
            yw_bool(w, v, "layer.biases.gate_up", &l->bias_gate_up)) &&
           (!(v = yw_get(w, n, "down")) || yw_bool(w, v, "layer.biases.down", &l->bias_down));
}

/* The layer's routing keys: the form, and what only some forms take. */
static bool load_routing(yw *w, ynode *n, const qk_model_spec *m, qk_model_layer *l) {
    ynode *v;
    if ((v = yw_get(w, n, "routing")) &&
        !yw_str(w, v, "layer.routing", l->routing, sizeof l->routing))
        return false;
    const bool sig = !strcmp(l->routing, "sigmoid_bias");
    if (!sig && strcmp(l->routing, "softmax_topk") && strcmp(l->routing, "topk_softmax"))
        return yw_fail(w, v, "layer.routing",
                       "'%s' is not a routing form (softmax_topk, topk_softmax, sigmoid_bias)",
                       l->routing);
    static const char *const sig_only[] = {"n_group", "topk_group", "scale"};
    for (int i = 0; i < 3; i++)
        if (!sig && (v = yw_get_key(w, n, sig_only[i])))
            return yw_fail(w, v, "layer", "%s: only routing sigmoid_bias takes it", sig_only[i]);
    if ((v = yw_get_key(w, n, "renorm")) && strcmp(l->routing, "softmax_topk"))
        return yw_fail(w, v, "layer",
                       "renorm: only routing softmax_topk takes it (%s's weights sum to 1 "
                       "before any scale)",
                       l->routing);
    if ((v = yw_get(w, n, "renorm")) && !yw_bool(w, v, "layer.renorm", &l->renorm)) return false;
    if ((v = yw_get(w, n, "n_group")) &&
        !yw_uint(w, v, "layer.n_group", 1, m->expert_count, &l->n_group))
        return false;
    if (m->expert_count % l->n_group)
        return yw_fail(w, v, "layer.n_group", "%u groups do not divide the %u experts", l->n_group,
                       m->expert_count);
    ynode *g = yw_get(w, n, "topk_group");
    if (g && !yw_uint(w, g, "layer.topk_group", 1, l->n_group, &l->topk_group)) return false;
    if (l->topk_group * (m->expert_count / l->n_group) < m->top_k)
        return yw_fail(w,
                       g   ? g
                       : v ? v
                           : n,
                       g ? "layer.topk_group" : "layer",
                       "%u of %u groups keep %u experts, fewer than top_k %u", l->topk_group,
                       l->n_group, l->topk_group * (m->expert_count / l->n_group), m->top_k);
    return !(v = yw_get(w, n, "scale")) || load_positive(w, v, "layer.scale", &l->scale);
}

static bool load_layer(yw *w, ynode *n, qk_model_spec *m) {
    static const char *const keys[] = {"routing",        "renorm",     "n_group", "topk_group",
                                       "scale",          "activation", "hidden",  "expert_ffn",
                                       "shared_experts", "biases",     NULL};
    static const char *const req[] = {"hidden", "expert_ffn", NULL};
    qk_model_layer *l = &m->layer;
    *l = (qk_model_layer){
        .present = true, .renorm = true, .n_group = 1, .topk_group = 1, .scale = 1};
    snprintf(l->routing, sizeof l->routing, "softmax_topk");
    snprintf(l->activation, sizeof l->activation, "swiglu");
    if (!yw_check_map(w, n, "layer", keys, req)) return false;
    if (!m->expert_count)
        return yw_fail(w, n, "layer", "the model declares no experts (experts: { count, top_k })");
    ynode *v;
    if (!yw_uint(w, yw_get(w, n, "hidden"), "layer.hidden", 1, 1u << 20, &l->hidden) ||
        !yw_uint(w, yw_get(w, n, "expert_ffn"), "layer.expert_ffn", 1, 1u << 20, &l->expert_ffn) ||
        !load_routing(w, n, m, l))
        return false;
    if ((v = yw_get(w, n, "activation")) &&
        !yw_str(w, v, "layer.activation", l->activation, sizeof l->activation))
        return false;
    if (strcmp(l->activation, "swiglu") && strcmp(l->activation, "swiglu_oai"))
        return yw_fail(w, v, "layer.activation", "'%s' is not an activation (swiglu, swiglu_oai)",
                       l->activation);
    if ((v = yw_get(w, n, "shared_experts")) && !load_shared(w, v, l)) return false;
    return !(v = yw_get(w, n, "biases")) || load_biases(w, v, l);
}

const char *qk_model_layer_router_fusion(const qk_model_layer *l) {
    if (strcmp(l->routing, "softmax_topk")) return l->routing;
    return l->renorm ? "renorm" : "none";
}

const char *qk_model_layer_combine_fusion(const qk_model_layer *l) {
    if (!l->shared_count) return "residual_rmsnorm";
    return l->shared_gated ? "gated_shared_rmsnorm" : "shared_rmsnorm";
}

static bool load_model(yw *w, qk_model_spec *m) {
    ynode *root = yw_root(w), *n;
    static const char *const keys[] = {"model", "description", "formats", "tokens", "experts",
                                       "layer", "kernels",     "ops",     NULL};
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
    if ((n = yw_get(w, root, "layer")) && !load_layer(w, n, m)) return false;
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
