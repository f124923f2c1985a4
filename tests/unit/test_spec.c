/* The malformed-spec corpus: each tests/specs_bad/{format,kernel,family,model}_*.yaml
 * states on its first line the message it must produce
 * ("# expect: :4:3: block.bytes: ..."), which must appear in the error after
 * the file name, and loading must fail. The good specs of specs/ must load. */
#include "spec/model.h"
#include "spec/spec.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: test_spec CORPUS_DIR\n");
        return 2;
    }
    DIR *d = opendir(argv[1]);
    if (!d) {
        printf("FAIL: cannot open %s\n", argv[1]);
        return 1;
    }
    int pass = 0, fail = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        const char *n = ent->d_name;
        size_t len = strlen(n);
        if (len < 6 || strcmp(n + len - 5, ".yaml")) continue;
        bool format = !strncmp(n, "format_", 7), model = !strncmp(n, "model_", 6);
        bool family = !strncmp(n, "family_", 7);
        if (!format && !model && !family && strncmp(n, "kernel_", 7)) {
            printf("FAIL %s: corpus files start with format_, kernel_, family_ or model_\n", n);
            fail++;
            continue;
        }
        char *path = qk_path_join(argv[1], n);
        qk_error re = {0};
        char *text = qk_read_file(path, NULL, &re);
        char expect[512] = "";
        if (!text || sscanf(text, "# expect: %511[^\n]", expect) != 1) {
            printf("FAIL %s: no '# expect:' first line\n", n);
            fail++;
            free(text);
            free(path);
            continue;
        }
        qk_error e = {0};
        bool ok;
        if (format) {
            qk_format_spec *fs = malloc(sizeof *fs);
            ok = qk_format_spec_load(path, fs, &e);
            free(fs);
        } else if (family) {
            qk_family_spec fs;
            qk_kernel_spec *ks = NULL;
            uint32_t nk = 0;
            ok = qk_family_spec_load(path, &fs, &ks, &nk, &e);
            qk_family_spec_free(&fs);
            free(ks);
        } else if (model) {
            qk_model_spec *ms = malloc(sizeof *ms);
            ok = qk_model_spec_load(path, ms, &e);
            free(ms);
        } else {
            qk_kernel_spec *ks = malloc(sizeof *ks);
            ok = qk_kernel_spec_load(path, ks, &e);
            free(ks);
        }
        /* the message starts with the path; the expectation follows it */
        char want[1200];
        snprintf(want, sizeof want, "%s%s", path, expect);
        if (ok) {
            printf("FAIL %s: loaded without error\n", n);
            fail++;
        } else if (strncmp(e.msg, want, strlen(want))) {
            printf("FAIL %s:\n  got:    %s\n  wanted: %s\n", n, e.msg, want);
            fail++;
        } else {
            pass++;
        }
        free(text);
        free(path);
    }
    closedir(d);
    if (pass + fail < 10) {
        printf("FAIL: the corpus has only %d cases\n", pass + fail);
        fail++;
    }
    printf("%d passed, %d failed\n", pass, fail);
    return fail ? 1 : 0;
}
