/* Replays inputs through a fuzz harness without libFuzzer, so the regression
 * inputs of tests/fuzz/regress run in every build: replay FILE|FOLDER... */
#include "fuzz.h"
#include "qk_util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void replay_file(const char *path, unsigned *count) {
    qk_error e = {0};
    size_t n = 0;
    char *data = qk_read_file(path, &n, &e);
    if (!data) {
        fprintf(stderr, "replay: %s\n", e.msg);
        exit(2);
    }
    /* a copy of exactly n bytes, so ASan sees reads past the input's end */
    uint8_t *copy = qk_xmalloc(n ? n : 1);
    memcpy(copy, data, n);
    free(data);
    printf("%s (%zu bytes)\n", path, n);
    fflush(stdout);
    LLVMFuzzerTestOneInput(copy, n);
    free(copy);
    (*count)++;
}

/* Every file of a folder in name order; files whose name starts with '.' or
 * that end in ".md" (notes on an input) are skipped. */
static void replay_dir(const char *dir, unsigned *count) {
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open %s\n", dir);
        exit(2);
    }
    char **names = NULL;
    size_t n = 0;
    struct dirent *ent;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (ent->d_name[0] == '.' || (len > 3 && !strcmp(ent->d_name + len - 3, ".md"))) continue;
        names = qk_xrealloc(names, sizeof *names * (n + 1));
        names[n++] = qk_path_join(dir, ent->d_name);
    }
    closedir(d);
    if (n) qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n; i++) {
        if (qk_is_file(names[i])) replay_file(names[i], count);
        free(names[i]);
    }
    free(names);
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s FILE|FOLDER...\n", argv[0]);
        return 2;
    }
    unsigned count = 0;
    for (int i = 1; i < argc; i++) {
        if (qk_is_dir(argv[i]))
            replay_dir(argv[i], &count);
        else
            replay_file(argv[i], &count);
    }
    if (count == 0) {
        fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    printf("replayed %u inputs\n", count);
    return 0;
}
