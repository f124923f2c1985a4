/* The shipped model files (specs/models, every .yaml) load, and what each MoE
 * layer declares agrees with its ops and names the kernels' fusions it must. */
#include "spec/model.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int pass, fail;

static void check(bool ok, const char *file, const char *what) {
    if (!ok) printf("FAIL %s: %s\n", file, what);
    ok ? pass++ : fail++;
}

/* The op of that name, or NULL. */
static const qk_model_op *op_of(const qk_model_spec *m, const char *name) {
    for (uint32_t i = 0; i < m->op_count; i++)
        if (!strcmp(m->ops[i].name, name)) return &m->ops[i];
    return NULL;
}

/* A layer agrees with the products: the router is E x hidden, gate/up
 * expert_ffn x hidden, down hidden x expert_ffn, through the experts. */
static void check_layer(const char *f, const qk_model_spec *m) {
    const qk_model_layer *l = &m->layer;
    const qk_model_op *r = op_of(m, "router"), *gu = op_of(m, "ffn_gate_up"),
                      *dn = op_of(m, "ffn_down");
    check(r && r->m == m->expert_count && r->k == l->hidden, f, "router is not E x hidden");
    check(gu && gu->experts && gu->m == l->expert_ffn && gu->k == l->hidden, f,
          "ffn_gate_up is not expert_ffn x hidden through the experts");
    check(dn && dn->experts && dn->m == l->hidden && dn->k == l->expert_ffn, f,
          "ffn_down is not hidden x expert_ffn through the experts");
    if (l->shared_count) {
        const qk_model_op *sg = op_of(m, "shared_gate_up"), *sd = op_of(m, "shared_down");
        check(sg && sd && sg->m == l->shared_ffn && sd->k == l->shared_ffn, f,
              "shared_gate_up / shared_down are not of shared_ffn");
    }
}

/* What the three MoE files of issue 46 must say. */
static void check_known(const char *f, const qk_model_spec *m) {
    const qk_model_layer *l = &m->layer;
    const char *rf = qk_model_layer_router_fusion(l), *cf = qk_model_layer_combine_fusion(l);
    if (!strcmp(m->name, "gpt-oss-20b"))
        check(m->expert_count == 32 && m->top_k == 4 && l->hidden == 2880 &&
                  !strcmp(rf, "topk_softmax") && !strcmp(l->activation, "swiglu_oai") &&
                  !strcmp(cf, "residual_rmsnorm") && l->bias_gate_up && l->bias_down,
              f, "not gpt-oss-20b's layer");
    else if (!strcmp(m->name, "deepseek-v3"))
        check(m->expert_count == 256 && m->top_k == 8 && l->n_group == 8 && l->topk_group == 4 &&
                  l->scale == 2.5 && !strcmp(rf, "sigmoid_bias") && !strcmp(cf, "shared_rmsnorm") &&
                  l->shared_ffn == 2048,
              f, "not DeepSeek-V3's layer");
    else if (!strcmp(m->name, "qwen2-moe"))
        check(m->expert_count == 60 && m->top_k == 4 && !strcmp(rf, "none") &&
                  !strcmp(cf, "gated_shared_rmsnorm") && l->shared_ffn == 5632,
              f, "not Qwen2-MoE's layer");
    else
        return;
    check(l->present, f, "no layer");
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_models SPECS/models\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        printf("FAIL %s: cannot open\n", argv[1]);
        return 1;
    }
    uint32_t layers = 0;
    for (struct dirent *ent; (ent = readdir(d));) {
        size_t len = strlen(ent->d_name);
        if (len < 6 || strcmp(ent->d_name + len - 5, ".yaml")) continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/%s", argv[1], ent->d_name);
        qk_model_spec *m = malloc(sizeof *m);
        qk_error e = {0};
        const bool ok = qk_model_spec_load(path, m, &e);
        check(ok, path, ok ? "" : e.msg);
        if (ok && m->layer.present) check_layer(path, m), layers++;
        if (ok) check_known(path, m);
        free(m);
    }
    closedir(d);
    check(layers >= 3, argv[1], "fewer than three model files with a layer");
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
