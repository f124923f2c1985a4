/* Fuzz harness: YAML text through the spec loaders (format, kernel, fusion,
 * family, model, and a kernel set applied to a small spec folder and
 * planned), which must either load it or fail with "path:..." in the error. */
#include "fuzz.h"
#include "plan/plan.h"
#include "spec/model.h"
#include "spec/spec.h"

#include <stdlib.h>
#include <string.h>

static qk_format_spec format;
static qk_kernel_spec kernel;
static qk_fusion_spec fusion;
static qk_family_spec family;
static qk_model_spec model;

/* Every failure is an error value with a message that starts with the file's
 * path, as the loaders promise (file:line:col: key.path: message). */
static void check(bool ok, const qk_error *e, const char *path) {
    if (ok) return;
    size_t n = strlen(path);
    if (!e->set || strncmp(e->msg, path, n) != 0 || e->msg[n] != ':')
        qkfuzz_fail("a spec was refused without a message that starts with its path", e->msg);
}

/* The folder kernel sets apply to: a block and a parameterized format, a
 * family with a spelled and an unspelled axis, a kernel spec and a fusion,
 * named as the repository's (the corpus's sets name those). */
static const char *const folder[][2] = {
    {"formats/q4_0.yaml", "format: q4_0\nblock: { elements: 32, bytes: 18 }\nfields:\n"
                          "  - { name: d, type: f16 }\n  - { name: qs, type: u8, count: 16 }\n"
                          "sub: { elements: 8 }\ndequant: q4_0.glsl\n"},
    {"formats/mlx.yaml",
     "format: \"mlx{bits}_g{group}\"\nlayout: planar\n"
     "params: { bits: [4], group: [64], scale_type: [bf16, f16] }\nblock: { elements: group }\n"
     "planes:\n  - { name: w, type: u32, per_group: \"group * bits / 32\" }\n"
     "  - { name: scales, type: scale_type, per_group: 1 }\nsub: { elements: 8 }\n"
     "dequant: mlx.glsl\n"},
    {"kernels/matvec.yaml",
     "family: matvec\ntemplate: matvec.comp\nformats: [q4_0, mlx4_g64]\nactivations: [f32]\n"
     "tile: { NR0: [1, 2], NR1: [1], NK: [32], WG: [64] }\nbindings:\n"
     "  - { name: x, role: activations, type: act, access: read }\n  - { axis: routing }\n"
     "  - { name: y, role: output, type: f32, access: write }\npush_constants: [M, K, T]\n"
     "grid: [\"(M + NR0 - 1) / NR0\", \"T\", \"1\"]\nfusions: [none, swiglu]\naxes:\n"
     "  routing:\n    meaning: m\n    values:\n"
     "      dense: { meaning: m, operation: matvec }\n"
     "      ids: { meaning: m, operation: matvec_id, bindings: [{ name: ids, role: ids, type: "
     "i32, access: read }] }\n"
     "      separate: { meaning: m, operation: matvec_id_sep, formats: [q4_0] }\n"
     "  mma:\n    meaning: m\n    spelled: false\n    values:\n"
     "      scalar: { meaning: m, mma: [scalar] }\n      coopmat: { meaning: m, mma: [coopmat] }\n"
     "exclude:\n  - { when: { routing: separate, mma: coopmat }, reason: r }\n"},
    {"kernels/copy.yaml", "kernel: copy\nfamily: copy\ntemplate: copy.comp\nformats: [none]\n"
                          "weights: 0\nactivations: [f32]\n"
                          "tile: { NR0: 1, NR1: 1, NK: [4, 8], WG: [256] }\nbindings:\n"
                          "  - { name: src, role: activations, type: f32, access: read }\n"
                          "  - { name: dst, role: output, type: f32, access: write }\n"
                          "push_constants: [N]\ngrid: [\"N\", \"1\", \"1\"]\n"},
    {"fusions/swiglu.yaml", "fusion: swiglu\nstage: swiglu.glsl\nweights: 2\n"},
};

/* The folder, written once into the harness's temporary folder. */
static const char *spec_folder(void) {
    static char *dir;
    if (dir) return dir;
    dir = qk_path_join(qkfuzz_dir(), "specs");
    for (size_t i = 0; i < sizeof folder / sizeof folder[0]; i++) {
        char *path = qk_path_join(dir, folder[i][0]), *slash = strrchr(path, '/');
        qk_error e = {0};
        *slash = 0;
        bool ok = qk_mkdirs(path, &e);
        *slash = '/';
        if (!ok || !qk_write_file(path, folder[i][1], strlen(folder[i][1]), &e))
            qkfuzz_fail("cannot write the spec folder", e.msg);
        free(path);
    }
    return dir;
}

/* The input as a kernel set on the folder, then planned. */
static void check_set(const char *path) {
    qk_spec_set s;
    qk_plan p = {0};
    qk_error e = {0};
    if (!qk_spec_set_load(spec_folder(), &s, &e))
        qkfuzz_fail("the spec folder does not load", e.msg);
    e = (qk_error){0};
    bool ok = qk_spec_set_apply(&s, spec_folder(), path, &e) && qk_plan_build(&s, &p, &e);
    check(ok, &e, path);
    qk_plan_free(&p);
    qk_spec_set_free(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    const char *path = qkfuzz_file("spec.yaml", data, size);
    qk_error e = {0};
    check(qk_format_spec_load(path, &format, &e), &e, path);
    e = (qk_error){0};
    check(qk_kernel_spec_load(path, &kernel, &e), &e, path);
    e = (qk_error){0};
    check(qk_fusion_spec_load(path, &fusion, &e), &e, path);
    e = (qk_error){0};
    check(qk_model_spec_load(path, &model, &e), &e, path);
    /* a family expands into kernels, appended to an array it grows */
    if (qk_is_family_file(path)) {
        qk_kernel_spec *kernels = NULL;
        uint32_t count = 0;
        e = (qk_error){0};
        check(qk_family_spec_load(path, &family, &kernels, &count, &e), &e, path);
        free(kernels);
        qk_family_spec_free(&family);
    }
    check_set(path);
    return 0;
}
