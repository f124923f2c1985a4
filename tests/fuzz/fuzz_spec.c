/* Fuzz harness: YAML text through the spec loaders (format, kernel, fusion,
 * family, model), which must either load it or fail with "path:..." in the error. */
#include "fuzz.h"
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
    return 0;
}
