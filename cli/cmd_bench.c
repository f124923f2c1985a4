/* qkgen bench: the standard benchmark set (or chosen cases) on the chosen
 * device, printed as a table and optionally written as JSON. */
#define _POSIX_C_SOURCE 200809L
#include "bench.h"
#include "cli.h"
#include "qk_util.h"
#include "refs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* The standard shapes of dense mat-vec: m x k for 1, 2, 4 and 8 tokens. */
static const uint32_t std_matvec[][2] = {{4096, 14336}, {14336, 4096}};
static const uint32_t std_tokens[] = {1, 2, 4, 8};
/* MoE decode (mat-vec with expert ids): m, k, tokens, experts, top_k */
static const uint32_t std_moe[][5] = {
    {768, 2048, 1, 128, 8}, {768, 2048, 8, 128, 8}, {768, 2048, 32, 128, 8},
    {2048, 768, 1, 128, 8}, {2048, 768, 8, 128, 8}, {2048, 768, 32, 128, 8},
    {1792, 2048, 1, 32, 4}, {1792, 2048, 8, 32, 4},
};
/* MoE prefill (matmul with expert ids): m, k, tokens, experts, top_k */
static const uint32_t std_moe_mm[][5] = {
    {768, 2048, 32, 128, 8},  {768, 2048, 512, 128, 8}, {2048, 768, 32, 128, 8},
    {2048, 768, 512, 128, 8}, {1792, 2048, 512, 32, 4},
};
/* A layer's default formats: the standard set's seven. (The kernels' default
 * is every format the bundle holds: bundle_formats.) */
static const char *std_layer_formats = "q4_0,q8_0,q4_K,q5_K,q6_K,iq4_nl,mlx4_g64";

/* Every quantized format the bundle's kernels take, in bundle order and
 * once each, comma-separated into out: the standard cases' default, so that
 * a format added as YAML and GLSL is benchmarked without C naming it. */
static void bundle_formats(const qkrt_bundle *b, char *out, size_t size) {
    size_t n = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < qkrt_bundle_kernel_count(b); i++) {
        const char *f = qkrt_bundle_kernel(b, i)->format;
        if (!f || !f[0] || !strcmp(f, "none")) continue;
        bool seen = false;
        for (const char *p = out; (p = strstr(p, f)) && !seen; p++)
            seen = (p == out || p[-1] == ',') && (p[strlen(f)] == ',' || !p[strlen(f)]);
        if (seen || n + strlen(f) + 2 > size) continue;
        n += (size_t)snprintf(out + n, size - n, "%s%s", n ? "," : "", f);
    }
}

/* JSON members, every string and number through the one JSON writer
 * (kernel names and errors come from a manifest and a driver) */
static void jstr(qk_str *f, const char *key, const char *v) {
    qk_str_addf(f, ", \"%s\": ", key);
    qk_json_string(f, v);
}

static void jnum(qk_str *f, const char *key, double v) {
    qk_str_addf(f, ", \"%s\": ", key);
    qk_json_number(f, v);
}

static void jbool(qk_str *f, const char *key, bool v) {
    qk_str_addf(f, ", \"%s\": %s", key, v ? "true" : "false");
}

static void json_result(qk_str *f, const qk_bench_result *r, bool first) {
    qk_str_addf(f, "%s\n    { \"kernel\": ", first ? "" : ",");
    qk_json_string(f, r->kernel);
    jstr(f, "family", r->c.family);
    jstr(f, "format", r->c.format);
    qk_str_addf(f, ", \"M\": %u, \"K\": %u, \"T\": %u, \"E\": %u, \"top_k\": %u", r->c.M, r->c.K,
                r->c.T, r->c.E, r->c.top_k);
    jnum(f, "us", r->us), jnum(f, "us_span", r->us_span);
    jnum(f, "pct_copy_span", r->pct_copy_span), jnum(f, "us_min", r->us_min);
    jnum(f, "us_max", r->us_max), jnum(f, "us_quantize", r->us_pre), jnum(f, "bytes", r->bytes);
    jnum(f, "gbps", r->gbps), jnum(f, "pct_copy", r->pct_copy), jnum(f, "tflops", r->tflops);
    jnum(f, "size_copy_us", r->size_copy_us), jnum(f, "size_copy_span_us", r->size_copy_span);
    jnum(f, "screen_us", r->us_screen), jbool(f, "timed", r->timed), jnum(f, "nmse", r->nmse);
    jnum(f, "prepare_ms", r->prepare_ms), jstr(f, "pipeline", r->pipeline);
    jbool(f, "ok", r->ok), jbool(f, "best", r->best), jbool(f, "wrong", r->wrong);
    jstr(f, "error", r->error);
    qk_str_add(f, " }");
}

static void print_row(const qk_bench_result *r) {
    char shape[64];
    if (r->c.E)
        snprintf(shape, sizeof shape, "m=%u k=%u t=%u e=%u/%u", r->c.M, r->c.K, r->c.T, r->c.E,
                 r->c.top_k);
    else
        snprintf(shape, sizeof shape, "m=%u k=%u t=%u", r->c.M, r->c.K, r->c.T);
    if (!r->ok && !(r->wrong && r->timed)) /* timed wrong: --time-wrong */
        printf("%-46s %-22s %s\n", r->kernel, shape, r->error[0] ? r->error : "failed");
    else
        printf("%-46s %-22s %9.2f %8.1f %6.1f%% %7.3f %8.2f %6.1f%% %8.0f%s%s\n", r->kernel, shape,
               r->us, r->gbps, r->pct_copy, r->tflops, r->us_span, r->pct_copy_span, r->prepare_ms,
               r->best ? "  *" : "", r->wrong ? "  WRONG" : "");
}

/* The MoE layer's default problem: Qwen3-30B-A3B's (hidden 2048, expert ffn
 * 768, 128 experts, top-8) at 1, 8, 32 and 512 tokens. */
static const uint32_t layer_tokens[] = {1, 8, 32, 512};

/* The layer's kernels by role (-1: not on its path); gate is the plain
 * kernel that gate and up each run when there is no fused gate_up. */
static const char *const layer_roles[8] = {"router", "topk",   "route", "gate_up",
                                           "gate",   "swiglu", "down",  "combine"};

static void layer_kernels(const qk_moe_kernels *k, int ks[8]) {
    const int v[8] = {k->router, k->topk, k->route, k->gate_up,
                      k->gate,   k->glu,  k->down,  k->combine};
    memcpy(ks, v, sizeof v);
}

/* "role": "kernel" pairs (json) or role=kernel, comma-separated. */
static void layer_names(const qkrt_bundle *b, const qk_moe_kernels *k, bool json, qk_str *out) {
    int ks[8];
    layer_kernels(k, ks);
    for (int i = 0, n = 0; i < 8; i++) {
        if (ks[i] < 0) continue;
        const char *name = qkrt_bundle_kernel(b, (uint32_t)ks[i])->name;
        if (json) {
            qk_str_addf(out, "%s\"%s\": ", n++ ? ", " : "", layer_roles[i]);
            qk_json_string(out, name);
        } else {
            qk_str_addf(out, "%s%s=%s", n++ ? ", " : "", layer_roles[i], name);
        }
    }
}

static void json_layer(qk_str *f, const qkrt_bundle *b, const qk_bench_layer_result *r,
                       bool first) {
    const qk_moe_kernels *k = &r->k;
    qk_str_addf(f, "%s\n    { \"format\": ", first ? "" : ",");
    qk_json_string(f, r->d.format);
    jstr(f, "variant", r->d.variant);
    qk_str_addf(f, ", \"T\": %u, \"H\": %u, \"F\": %u, \"E\": %u, \"top_k\": %u", r->d.T, r->d.H,
                r->d.F, r->d.E, r->d.top_k);
    jstr(f, "path", k->routed ? "prefill" : "decode");
    jnum(f, "us", r->us), jnum(f, "us_min", r->us_min), jnum(f, "us_max", r->us_max);
    jnum(f, "us_chain", r->us_chain);
    qk_str_addf(f, ", \"runs\": %u, \"copies\": %u, \"dispatches\": %u, \"experts\": %u", r->runs,
                r->copies, r->dispatches, r->experts);
    jnum(f, "bytes", r->bytes), jnum(f, "gbps", r->gbps), jnum(f, "pct_copy", r->pct_copy);
    jnum(f, "nmse_logits", r->check.logits), jnum(f, "nmse_gate_up", r->check.act);
    jnum(f, "nmse_down", r->check.slots), jnum(f, "nmse_out", r->check.y);
    jnum(f, "nmse_normed", r->check.normed), jnum(f, "nmse_bound", r->check.bound);
    jbool(f, "ids_match", r->check.ids_match);
    jbool(f, "selected", k->selected[0] || k->selected[1] || k->selected[2]);
    jbool(f, "selected_router", k->selected[0]), jbool(f, "selected_gate_up", k->selected[1]);
    jbool(f, "selected_down", k->selected[2]), jbool(f, "ok", r->ok);
    jstr(f, "error", r->error);
    qk_str_add(f, ", \"kernels\": {");
    layer_names(b, k, true, f);
    qk_str_add(f, "}, \"stages\": [");
    for (uint32_t i = 0; r->timed && i < r->dispatches; i++) {
        qk_str_add(f, i ? ", { \"kernel\": " : "{ \"kernel\": ");
        qk_json_string(f, qkrt_bundle_kernel(b, r->stage_kernel[i])->name);
        jnum(f, "us", r->stage_us[i]);
        qk_str_add(f, " }");
    }
    qk_str_add(f, "] }");
}

/* qkgen bench --layer: the MoE layer for each format and token count; a
 * format the bundle lacks a kernel of is skipped (an error if named). */
static int bench_layers(qkrt_context *ctx, const qkrt_bundle *b, const qk_bench_opts *o,
                        const char *formats, const char *std, const uint32_t *tokens,
                        uint32_t ntokens, const qk_moe_layer_desc *shape, double copy_gbps,
                        qk_str *json) {
    char fmts[512];
    snprintf(fmts, sizeof fmts, "%s", formats ? formats : std);
    printf("MoE layer: hidden %u, expert ffn %u, %u experts top-%u; router, top-k, [route,] "
           "gate/up+SwiGLU, down, sum+residual+RMSNorm in one command buffer a run\n",
           shape->H, shape->F, shape->E, shape->top_k);
    printf("%-10s %6s %-8s %10s %10s %10s %8s %7s %5s %6s %9s\n", "format", "tokens", "path",
           "us/layer", "us min", "chain us", "GB/s", "copy", "disp", "copies", "NMSE out");
    int rc = QK_EXIT_OK, done = 0;
    bool fatal = false; /* the device failed: no more layers (a wrong one, the next) */
    qk_str_addf(json,
                "\"layer\": { \"H\": %u, \"F\": %u, \"E\": %u, \"top_k\": %u },\n  "
                "\"results\": [",
                shape->H, shape->F, shape->E, shape->top_k);
    for (char *save = NULL, *fmt = strtok_r(fmts, ",", &save); fmt && !fatal;
         fmt = strtok_r(NULL, ",", &save)) {
        const char *variant = !strncmp(fmt, "mlx", 3) ? "bf16" : "";
        for (uint32_t ti = 0; ti < ntokens && !fatal; ti++) {
            qk_moe_layer_desc d = *shape;
            d.format = fmt, d.variant = variant, d.T = tokens[ti];
            uint64_t rng = o->seed ^ ((uint64_t)d.T << 32) ^ 0x1a7e4;
            d.rng = &rng;
            if (o->progress) fprintf(o->progress, "\r\033[Klayer %s t=%u", fmt, d.T);
            qk_bench_layer_result r;
            qkrt_result cr = qk_bench_layer(ctx, b, &d, o, copy_gbps, &r);
            if (o->progress) fputs("\r\033[K", stderr);
            if (cr == QKRT_ERROR_ARGUMENT && !formats) { /* the standard set skips it */
                fprintf(stderr, "qkgen bench: skipped: layer %s t=%u: %s\n", fmt, d.T, r.error);
                continue;
            }
            json_layer(json, b, &r, done++ == 0);
            if (cr != QKRT_OK || !r.ok) {
                printf("%-10s %6u %-8s %s\n", fmt, d.T, r.k.routed ? "prefill" : "decode",
                       r.error[0] ? r.error : "failed");
                fatal = cr != QKRT_OK && cr != QKRT_ERROR_ARGUMENT;
                if (rc != QK_EXIT_FAIL)
                    rc = cr == QKRT_ERROR_ARGUMENT ? QK_EXIT_USAGE : QK_EXIT_FAIL;
                continue;
            }
            printf("%-10s %6u %-8s %10.2f %10.2f %10.2f %8.1f %6.1f%% %5u %6u %9.2g\n", fmt, d.T,
                   r.k.routed ? "prefill" : "decode", r.us, r.us_min, r.us_chain, r.gbps,
                   r.pct_copy, r.dispatches, r.copies, fmax(r.check.y, r.check.normed));
            qk_str names = {0};
            layer_names(b, &r.k, false, &names);
            /* which products the select table chose (the others: the CLI's choice) */
            const char *product[3] = {"router", "gate/up", "down"};
            char how[64] = "";
            int nsel = r.k.selected[0] + r.k.selected[1] + r.k.selected[2];
            for (int i = 0; i < 3 && nsel && nsel < 3; i++)
                if (!r.k.selected[i])
                    snprintf(how + strlen(how), sizeof how - strlen(how), ", %s not", product[i]);
            printf("  kernels (%s%s): %s\n", nsel ? "select table" : "fallback choice", how,
                   names.s);
            double sum = 0;
            printf("  stages (us, each dispatch alone between timestamps):");
            for (uint32_t i = 0; i < r.dispatches; i++) {
                printf("%s %s %.2f", i ? "," : "", qkrt_bundle_kernel(b, r.stage_kernel[i])->family,
                       r.stage_us[i]);
                sum += fmax(r.stage_us[i], 0);
            }
            printf("; sum %.2f\n", sum);
            qk_str_free(&names);
            fflush(stdout);
        }
    }
    qk_str_add(json, "\n  ]");
    if (!done && rc == QK_EXIT_OK) {
        fprintf(stderr, "qkgen bench: no format of '%s' has every kernel of the layer\n",
                formats ? formats : std);
        rc = QK_EXIT_USAGE;
    }
    return rc;
}

/* The end of both modes: the JSON (when asked) written whole or not at
 * all, the validation layer's verdict, the context released. */
static int bench_finish(qkrt_context *ctx, qkrt_bundle *b, const char *json, qk_str *j, int rc) {
    qk_error e = {0};
    if (json && !qk_write_file(json, j->s ? j->s : "", j->len, &e)) {
        fprintf(stderr, "qkgen bench: %s\n", e.msg);
        rc = QK_EXIT_FAIL;
    }
    qk_str_free(j);
    if (qkrt_validation_errors(ctx)) {
        fprintf(stderr, "qkgen bench: the validation layer reported %u errors\n",
                qkrt_validation_errors(ctx));
        rc = QK_EXIT_FAIL;
    }
    qkrt_bundle_destroy(ctx, b);
    qkrt_destroy(ctx);
    qk_ref_declared_clear();
    return rc;
}

/* --gate-up, --router and --down: auto (also when not given), fused or split,
 * and for --router ranked; -1 for anything else. */
static int fusion_mode(const char *s, bool router) {
    return !s || !strcmp(s, "auto")         ? QK_FUSE_AUTO
           : !strcmp(s, "fused")            ? QK_FUSE_ALWAYS
           : !strcmp(s, "split")            ? QK_FUSE_NEVER
           : router && !strcmp(s, "ranked") ? QK_FUSE_RANKED
                                            : -1;
}

int cmd_bench(qk_args *a) {
    const char *bundle = qk_default_bundle(), *device = NULL, *json = NULL, *formats = NULL;
    const char *filter = NULL, *family = "all", *tokens_s = NULL, *gate_up = NULL, *router = NULL,
               *down = NULL, *activation = "f32", *specs_dir = qk_default_specs();
    uint64_t m = 0, k = 0, t = 0, runs = 50, seed = (uint64_t)time(NULL), copy_mb = 1024;
    uint64_t warm_ms = 1000, rotate_mb = 200, experts = 0, topk = 0;
    uint64_t finalists = 3, decode_max = 0; /* 0: QK_MOE_DECODE_TOKENS */
    bool all = false, best_only = false, time_wrong = false, layer = false;
    while (a->i < a->argc) {
        if (qk_flag(a, "--help") || qk_flag(a, "-h")) {
            puts("usage: qkgen bench [--bundle DIR] [--device N] [--family F] [--formats A,B]\n"
                 "                   [--m M --k K --tokens T1,T2,... [--experts E --top-k N]]\n"
                 "                   [--filter A,B] [--all-variants]\n"
                 "                   [--runs N] [--warmup-ms MS] [--rotate-mb MB] [--copy-mb MB]\n"
                 "                   [--finalists N] [--best] [--json FILE] [--seed N]\n"
                 "                   [--time-wrong] [--activations f32|f16]\n"
                 "       qkgen bench --layer [--formats A,B] [--tokens T1,T2,...] [--m F --k H]\n"
                 "                   [--experts E --top-k N] [--runs N] [--warmup-ms MS]\n"
                 "                   [--decode-tokens N] [--gate-up auto|fused|split]\n"
                 "                   [--router auto|fused|split|ranked] [--down auto|fused|split]\n"
                 "                   [--rotate-mb MB] [--json FILE] [--seed N]\n"
                 "       (either form: [--specs DIR], where the formats' declared references\n"
                 "       are read, default specs/; docs/new-format.md)\n\n"
                 "Times the kernels of a bundle on the device. Default: the standard set (dense\n"
                 "mat-vec m=4096 k=14336 and m=14336 k=4096, 1, 2, 4 and 8 tokens; matmul\n"
                 "m=4096 k=14336, 512 tokens; MoE mat-vec with expert ids, 128 experts top-8\n"
                 "m=768 k=2048 and m=2048 k=768 for 1, 8, 32 tokens, 32 experts top-4 m=1792\n"
                 "k=2048 for 1 and 8; MoE matmul with expert ids for 32 and 512 tokens of\n"
                 "those shapes, 512 for 32 experts) for every format that the bundle\n"
                 "holds (MLX configurations with bf16 scales). --family matvec, matmul,\n"
                 "moe (mat-vec with ids) or moe_matmul (matmul with ids) runs one part; --m,\n"
                 "--k and --tokens (one count or a list: a case each) replace its shapes.\n"
                 "Each variant is first checked against the CPU reference (a wrong result is\n"
                 "reported and not timed); weights rotate among copies larger than --rotate-mb\n"
                 "(default 200 MB, four times the H100's L2); the GPU is kept busy for\n"
                 "--warmup-ms (default 1000) before each case; times are the median of --runs\n"
                 "(default 50, at least 20) Vulkan timestamp intervals. The device's copy\n"
                 "bandwidth is measured first over --copy-mb (default 1024) and every row\n"
                 "gives its percentage. '*' marks the fastest variant of each case.\n\n"
                 "A case with more variants than --finalists (default 3) screens them first:\n"
                 "each correct one is timed over 10 dispatches (one per weight copy where\n"
                 "there are more) after a 30 ms warm-up, and the N fastest of those are then\n"
                 "timed as above; the table lists those, the JSON every variant with its\n"
                 "screen time (screen_us; timed: false for the ones not timed in full).\n"
                 "--finalists 0 times every variant in full.\n\n"
                 "Two times per variant: 'us', each dispatch alone between barriers (what a\n"
                 "chain of dependent kernels sees, launch included), and 'b2b us', the same\n"
                 "dispatches back to back without barriers (launch gaps overlapped). The\n"
                 "'dispatch floor' line gives both for a one-workgroup copy, and the line\n"
                 "'(copy of the same bytes)' under each case both for a copy moving as many\n"
                 "bytes as the case counts: the most a kernel of that size could reach.\n"
                 "Kernels on pre-quantized activations (matvec_lanes-q8pre) run after the\n"
                 "bundle's quantizer, and both times include it (JSON: us_quantize, its own\n"
                 "part).\n"
                 "--filter A,B keeps the variants whose name contains A or B.\n"
                 "--activations f16 times the kernels on f16 activations (an engine's f16\n"
                 "hidden state) instead of f32 ones (the default), with --family matmul or\n"
                 "moe_matmul (the prefill matmuls have them): x is uploaded as f16, the\n"
                 "reference stays the f32 one; bytes and GB/s count x at 2 bytes.\n"
                 "--time-wrong, for diagnostics of modified kernels (a step left out to see\n"
                 "what it costs): a variant whose result is wrong is timed as well, marked\n"
                 "WRONG (JSON: wrong: true); the exit status is still 1.\n\n"
                 "--layer times a whole MoE feed-forward layer as an engine records it, in one\n"
                 "command buffer a run: the router product (mat-vec; matmul past 8 tokens;\n"
                 "its weights in the layer's format, qkgen having no float weight format),\n"
                 "router_topk (softmax, top-k, renormalised; up to 8 tokens inside gate/up\n"
                 "or with the router's mat-vec inside, where the bundle has them: --router),\n"
                 "past 8 tokens moe_route and the\n"
                 "expert products as matmul_id through indirect dispatch (else mat-vecs with\n"
                 "ids), gate/up with SwiGLU (one fused kernel where the bundle has it, else\n"
                 "gate, up and the swiglu kernel), down, and moe_combine with the residual\n"
                 "and RMSNorm; barriers only where a dispatch reads another's output. Kernels\n"
                 "come from the bundle's select table (qkrt_select), else the CLI's default\n"
                 "choice. Default: Qwen3-30B-A3B's layer, hidden --k 2048, expert ffn --m 768,\n"
                 "--experts 128 --top-k 8, at --tokens 1,8,32,512. Each layer is first\n"
                 "checked against the float64 reference (NMSE out; a wrong one fails and is\n"
                 "not timed); then weight copies rotate past --rotate-mb by the bytes a run\n"
                 "reads, --warmup-ms of runs, and the median of --runs timestamp intervals\n"
                 "around each run's command buffer. The table gives us per layer, GB/s of\n"
                 "the weights and activations a run reads, and the kernels used; 'chain us'\n"
                 "is per layer of the --runs layers back to back in one command buffer, a\n"
                 "barrier between layers, as a model's layers follow one another; 'stages'\n"
                 "times each dispatch of a run alone between two timestamps (median over\n"
                 "the runs): their sum against us/layer shows what the barriers cost.\n"
                 "--decode-tokens N moves the change-over from the mat-vec path to the\n"
                 "routed matmul path (default: past 8 tokens), to compare the two.\n"
                 "--gate-up fused runs gate and up as one swiglu-fused kernel (the selected\n"
                 "kernel's _swiglu sibling, else the best fused one), split as the plain\n"
                 "product twice and the swiglu kernel; auto (the default) as said above.\n"
                 "--router fused runs the router's mat-vec inside router_topk (axis\n"
                 "logits=computed: one dispatch instead of two), split as the router product\n"
                 "and router_topk; ranked runs the router product and then the gate/up\n"
                 "kernel's ranked form (routing=ranked), which ranks the logits itself and\n"
                 "writes the ids and routing weights: no top-k dispatch; auto (the default),\n"
                 "on the decode path, ranked where the bundle has the ranked form, else fused\n"
                 "where it has the fused kernel for the format.\n"
                 "--down fused runs the down projection inside moe_combine on the decode path\n"
                 "(axis slots=computed, or lanes on the int8-dot lanes, the down product's\n"
                 "precision class first: one dispatch instead of two, the slots never in\n"
                 "memory), split as the down product and moe_combine; auto (the default)\n"
                 "keeps them apart.");
            return QK_EXIT_OK;
        }
        if (qk_opt(a, "--bundle", &bundle) || qk_opt(a, "--device", &device) ||
            qk_opt(a, "--json", &json) || qk_opt(a, "--formats", &formats) ||
            qk_opt(a, "--filter", &filter) || qk_opt(a, "--family", &family) ||
            qk_opt_range(a, "--m", 1, QK_ARG_MAX_ROWS, &m) ||
            qk_opt_range(a, "--k", 1, QK_ARG_MAX_ROWS, &k) || qk_opt(a, "--tokens", &tokens_s) ||
            qk_opt_range(a, "--runs", 20, QK_ARG_MAX_RUNS, &runs) ||
            qk_opt_range(a, "--seed", 0, UINT64_MAX, &seed) ||
            qk_opt_range(a, "--copy-mb", 1, 8192, &copy_mb) ||
            qk_opt_range(a, "--warmup-ms", 0, QK_ARG_MAX_MS, &warm_ms) ||
            qk_opt_range(a, "--rotate-mb", 0, 65536, &rotate_mb) ||
            qk_opt_range(a, "--experts", 1, 512, &experts) ||
            qk_opt_range(a, "--top-k", 1, 64, &topk) ||
            qk_opt_range(a, "--finalists", 0, 64, &finalists) ||
            qk_opt_range(a, "--decode-tokens", 0, 65535, &decode_max) ||
            qk_opt(a, "--gate-up", &gate_up) || qk_opt(a, "--router", &router) ||
            qk_opt(a, "--down", &down) || qk_opt(a, "--activations", &activation) ||
            qk_opt(a, "--specs", &specs_dir))
            continue;
        if (qk_flag(a, "--all-variants")) {
            all = true;
            continue;
        }
        if (qk_flag(a, "--time-wrong")) {
            time_wrong = true;
            continue;
        }
        if (qk_flag(a, "--best")) {
            best_only = true;
            continue;
        }
        if (qk_flag(a, "--layer")) {
            layer = true;
            continue;
        }
        return qk_bad_arg(a);
    }
    /* --tokens: a count, or with --layer a list of them */
    uint32_t tokens[16], ntokens = 0;
    for (const char *p = tokens_s; p && (p == tokens_s || p[-1]);) {
        char count[24] = "";
        const size_t n = strcspn(p, ",");
        uint64_t v = 0;
        qk_error te = {0};
        if (n < sizeof count) memcpy(count, p, n);
        if (n >= sizeof count || ntokens == 16 || !qk_parse_u64(count, 1, 65535, &v, &te))
            return qk_usage_error(a->cmd,
                                  "--tokens: '%s' is not a list of 1 to 16 counts of 1 "
                                  "to 65535 tokens",
                                  tokens_s);
        tokens[ntokens++] = (uint32_t)v;
        p += n + 1;
    }
    t = ntokens ? tokens[0] : 0;
    if ((decode_max || gate_up || router || down) && !layer)
        return qk_usage_error(a->cmd,
                              "--decode-tokens, --gate-up, --router and --down are for --layer");
    const int rt = fusion_mode(router, true), gu = fusion_mode(gate_up, false);
    const int dn = fusion_mode(down, false);
    if (dn < 0) return qk_usage_error(a->cmd, "--down: '%s' is not auto, fused or split", down);
    if (rt < 0)
        return qk_usage_error(a->cmd, "--router: '%s' is not auto, fused, split or ranked", router);
    if (gu < 0)
        return qk_usage_error(a->cmd, "--gate-up: '%s' is not auto, fused or split", gate_up);
    if (strcmp(activation, "f32") && strcmp(activation, "f16"))
        return qk_usage_error(a->cmd, "--activations: '%s' is not f32 or f16", activation);
    if (!layer && strcmp(activation, "f32") && strcmp(family, "matmul") &&
        strcmp(family, "moe_matmul"))
        return qk_usage_error(a->cmd,
                              "--activations %s: the prefill matmuls have it (--family "
                              "matmul or moe_matmul), the mat-vecs f32 only",
                              activation);
    if (layer && (strcmp(family, "all") || filter || all || best_only || time_wrong ||
                  strcmp(activation, "f32")))
        return qk_usage_error(a->cmd, "--layer times whole layers: without --family, --filter, "
                                      "--all-variants, --best, --time-wrong and --activations");
    if (layer) {
        if (!m) m = 768;
        if (!k) k = 2048;
        if (!experts) experts = 128;
        if (!topk) topk = 8;
        if (!ntokens) {
            memcpy(tokens, layer_tokens, sizeof layer_tokens);
            ntokens = sizeof layer_tokens / sizeof layer_tokens[0];
        }
        if (m > 65535 || k > 65535 || topk > 16)
            return qk_usage_error(a->cmd, "--layer: --m and --k up to 65535, --top-k up to 16");
        t = tokens[0];
    }
    if ((m || k || t) && !(m && k && t))
        return qk_usage_error(a->cmd, "--m, --k and --tokens go together");
    if ((experts || topk) && !(experts && topk && m))
        return qk_usage_error(a->cmd, "--experts and --top-k go together, with --m --k --tokens");
    if (topk > experts)
        return qk_usage_error(a->cmd, "--top-k %llu is more than --experts %llu",
                              (unsigned long long)topk, (unsigned long long)experts);
    if (strcmp(family, "matvec") && strcmp(family, "matmul") && strcmp(family, "moe") &&
        strcmp(family, "moe_matmul") && strcmp(family, "all"))
        return qk_usage_error(
            a->cmd, "--family: '%s' is not benchmarked (matvec, matmul, moe, moe_matmul, all)",
            family);

    const qk_input in[] = {{"bundle", bundle}};
    int out_rc = json ? qk_check_output(a->cmd, "--json", json, false, in, 1) : 0;
    if (out_rc) return out_rc;
    qkrt_context *ctx;
    qkrt_bundle *b;
    int open_rc = qk_declare_refs(a->cmd, specs_dir);
    if (open_rc) return open_rc;
    open_rc = qk_open(a->cmd, device, false, true, bundle, &ctx, &b);
    if (open_rc) {
        qk_ref_declared_clear();
        return open_rc;
    }
    qk_bench_opts o = {.runs = (uint32_t)runs,
                       .warmup_s = warm_ms / 1e3,
                       .rewarm_s = warm_ms / 4e3,
                       .rotate_bytes = rotate_mb << 20,
                       .copy_bytes = copy_mb << 20,
                       .filter = filter,
                       .all_variants = all,
                       .finalists = (uint32_t)finalists,
                       .time_wrong = time_wrong,
                       .activation = activation,
                       .two_pass = true, /* matmul cases: the two-pass path too */
                       .seed = seed,
                       .progress = isatty(2) ? stderr : NULL};
    const qkrt_device_info *dev = qkrt_device(ctx);
    printf("device %u: %s, driver %s, seed %llu\n", dev->index, dev->name, dev->driver,
           (unsigned long long)seed);
    double copy_gbps = 0, copy_us = 0;
    int rc = QK_EXIT_OK;
    if (qk_bench_copy(ctx, b, &o, &copy_gbps, &copy_us) != QKRT_OK) {
        fprintf(stderr, "qkgen bench: copy: %s\n", qkrt_last_error(ctx));
        rc = QK_EXIT_FAIL;
    }
    printf("copy bandwidth: %.1f GB/s (%llu MiB copied in %.1f us; bytes read + written)\n",
           copy_gbps, (unsigned long long)copy_mb, copy_us);
    if (layer) {
        /* weight copies past --rotate-mb, within a quarter of the device's memory */
        qk_moe_layer_desc shape = {.H = (uint32_t)k,
                                   .F = (uint32_t)m,
                                   .E = (uint32_t)experts,
                                   .top_k = (uint32_t)topk,
                                   .rotate_bytes = o.rotate_bytes,
                                   .max_bytes = dev->device_local_bytes / 4,
                                   .decode_max = (uint32_t)decode_max,
                                   .gate_up = (qk_fuse)gu,
                                   .router = (qk_fuse)rt,
                                   .down = (qk_fuse)dn};
        qk_str j = {0};
        qk_str_add(&j, "{\n  \"device\": ");
        qk_json_string(&j, dev->name);
        jstr(&j, "driver", dev->driver);
        jnum(&j, "copy_gbps", copy_gbps);
        qk_str_addf(&j, ", \"seed\": %llu, \"runs\": %u,\n  ", (unsigned long long)seed, o.runs);
        if (rc == QK_EXIT_OK)
            rc = bench_layers(ctx, b, &o, formats, std_layer_formats, tokens, ntokens, &shape,
                              copy_gbps, &j);
        qk_str_add(&j, "\n}\n");
        return bench_finish(ctx, b, json, &j, rc);
    }

    /* the cases: formats the bundle holds x shapes */
    char fmts[2048];
    if (formats)
        snprintf(fmts, sizeof fmts, "%s", formats);
    else
        bundle_formats(b, fmts, sizeof fmts);
    qk_bench_result *res = NULL;
    uint32_t nres = 0;
    double floor_us = 0, floor_span = 0;
    if (rc == QK_EXIT_OK && qk_bench_floor(ctx, b, &o, &floor_us, &floor_span) != QKRT_OK) {
        fprintf(stderr, "qkgen bench: floor: %s\n", qkrt_last_error(ctx));
        rc = QK_EXIT_FAIL;
    }
    printf(
        "dispatch floor: %.2f us between barriers, %.2f us back to back (a one-workgroup copy)\n",
        floor_us, floor_span);
    printf("%-46s %-22s %9s %8s %7s %7s %8s %7s %8s\n", "kernel", "shape", "us", "GB/s", "copy",
           "TFLOP/s", "b2b us", "b2b", "prep ms");
    for (char *fmt = strtok(fmts, ","); fmt && rc == QK_EXIT_OK; fmt = strtok(NULL, ",")) {
        qk_weights probe = {.format = fmt, .variant = ""};
        char variant[16] = "";
        if (!strncmp(fmt, "mlx", 3)) snprintf(variant, sizeof variant, "bf16");
        probe.variant = variant;
        char err[512] = "";
        /* does the bundle hold the format, in the family benchmarked? */
        const char *probe_family = !strcmp(family, "matmul")       ? "matmul"
                                   : !strcmp(family, "moe")        ? "matvec_id"
                                   : !strcmp(family, "moe_matmul") ? "matmul_id"
                                                                   : "matvec";
        if (qk_pick_kernel(ctx, b, probe_family, &probe, activation, 0, 1, err, sizeof err) < 0) {
            if (formats) {
                fprintf(stderr, "qkgen bench: %s\n", err);
                rc = QK_EXIT_USAGE;
            }
            continue; /* the standard set skips formats the bundle lacks */
        }
        /* the cases of this format: the chosen shape, or the standard set */
        qk_bench_case cases[40];
        uint32_t nc = 0;
        bool all_f = !strcmp(family, "all");
        bool mv = all_f || !strcmp(family, "matvec"), mm = all_f || !strcmp(family, "matmul");
        bool moe = all_f || !strcmp(family, "moe"), moe_mm = all_f || !strcmp(family, "moe_matmul");
        if (m) {
            const char *fam = experts     ? (moe_mm && !moe ? "matmul_id" : "matvec_id")
                              : mm && !mv ? "matmul"
                                          : "matvec";
            for (uint32_t ti = 0; ti < ntokens; ti++)
                cases[nc++] =
                    (qk_bench_case){fam,         fmt,        variant,           (uint32_t)m,
                                    (uint32_t)k, tokens[ti], (uint32_t)experts, (uint32_t)topk};
        } else {
            for (uint32_t s = 0; mv && s < 2; s++)
                for (uint32_t ti = 0; ti < 4; ti++)
                    cases[nc++] = (qk_bench_case){
                        "matvec",       fmt, variant, std_matvec[s][0], std_matvec[s][1],
                        std_tokens[ti], 0,   0};
            if (mm) cases[nc++] = (qk_bench_case){"matmul", fmt, variant, 4096, 14336, 512, 0, 0};
            for (uint32_t i = 0; moe && i < sizeof std_moe / sizeof std_moe[0]; i++)
                cases[nc++] =
                    (qk_bench_case){"matvec_id",   fmt,           variant,       std_moe[i][0],
                                    std_moe[i][1], std_moe[i][2], std_moe[i][3], std_moe[i][4]};
            for (uint32_t i = 0; moe_mm && i < sizeof std_moe_mm / sizeof std_moe_mm[0]; i++)
                cases[nc++] = (qk_bench_case){"matmul_id",      fmt,
                                              variant,          std_moe_mm[i][0],
                                              std_moe_mm[i][1], std_moe_mm[i][2],
                                              std_moe_mm[i][3], std_moe_mm[i][4]};
        }
        for (uint32_t ci = 0; ci < nc && rc == QK_EXIT_OK; ci++) {
            uint32_t first = nres;
            err[0] = 0;
            qkrt_result cr =
                qk_bench_case_run(ctx, b, &cases[ci], &o, copy_gbps, &res, &nres, err, sizeof err);
            if (cr != QKRT_OK) {
                if (o.progress) fputs("\r\033[K", stderr);
                /* a standard case that no kernel of the bundle fits is
                 * skipped and the others run; a shape asked for is an error */
                bool skip = cr == QKRT_ERROR_ARGUMENT && !m;
                fprintf(stderr, "qkgen bench: %s%s\n", skip ? "skipped: " : "", err);
                if (!skip) rc = cr == QKRT_ERROR_ARGUMENT ? QK_EXIT_USAGE : QK_EXIT_FAIL;
            }
            if (o.progress) fputs("\r\033[K", stderr);
            uint32_t screened = 0;
            for (uint32_t i = first; i < nres; i++) {
                screened += res[i].ok && !res[i].timed;
                if (!res[i].ok || (res[i].timed && (!best_only || res[i].best))) print_row(&res[i]);
            }
            if (screened)
                printf("  (%u more correct variants screened out: slower over %u dispatches)\n",
                       screened, QK_BENCH_SCREEN_RUNS);
            for (uint32_t i = first; i < nres; i++)
                if (res[i].best && res[i].size_copy_us > 0)
                    printf("%-46s %-22s %9.2f %8.1f %6.1f%% %7s %8.2f %6.1f%%\n",
                           "  (copy of the same bytes)", "", res[i].size_copy_us,
                           res[i].bytes / (res[i].size_copy_us * 1e3),
                           100.0 * res[i].bytes / (res[i].size_copy_us * 1e3) / copy_gbps, "",
                           res[i].size_copy_span,
                           100.0 * res[i].bytes / (res[i].size_copy_span * 1e3) / copy_gbps);
            fflush(stdout);
        }
    }
    for (uint32_t i = 0; i < nres; i++)
        if (!res[i].ok && !strstr(res[i].error, "lacks") && !strstr(res[i].error, "needs"))
            rc = QK_EXIT_FAIL;
    qk_str j = {0};
    if (json) {
        qk_str_add(&j, "{\n  \"device\": ");
        qk_json_string(&j, dev->name);
        jstr(&j, "driver", dev->driver);
        jnum(&j, "copy_gbps", copy_gbps), jnum(&j, "floor_us", floor_us);
        jnum(&j, "floor_span_us", floor_span);
        qk_str_addf(&j, ", \"seed\": %llu, \"finalists\": %u,\n  \"results\": [",
                    (unsigned long long)seed, o.finalists);
        for (uint32_t i = 0; i < nres; i++)
            json_result(&j, &res[i], i == 0);
        qk_str_add(&j, "\n  ]\n}\n");
    }
    free(res);
    return bench_finish(ctx, b, json, &j, rc);
}
