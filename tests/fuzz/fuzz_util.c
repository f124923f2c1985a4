/* The private temporary folder of a fuzz harness and its failure report;
 * linked into both the libFuzzer binaries and the replay programs. */
#include "fuzz.h"
#include "qk_util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char dir[256];

static void remove_dir(void) {
    if (dir[0]) qk_rmtree(dir);
}

const char *qkfuzz_dir(void) {
    if (!dir[0]) {
        /* memory rather than a disk where there is one: every input is a file */
        const char *tmp = getenv("TMPDIR");
        if (!tmp || !tmp[0]) tmp = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
        snprintf(dir, sizeof dir, "%s/qkfuzz.XXXXXX", tmp);
        if (!mkdtemp(dir)) qkfuzz_fail("cannot create a temporary folder", dir);
        atexit(remove_dir);
    }
    return dir;
}

const char *qkfuzz_file(const char *name, const uint8_t *data, size_t size) {
    static char paths[4][300];
    static char names[4][32];
    int slot = 0;
    while (slot < 3 && names[slot][0] && strcmp(names[slot], name) != 0)
        slot++;
    snprintf(names[slot], sizeof names[slot], "%s", name);
    snprintf(paths[slot], sizeof paths[slot], "%s/%s", qkfuzz_dir(), name);
    FILE *f = fopen(paths[slot], "wb");
    if (!f || fwrite(data, 1, size, f) != size || fclose(f) != 0)
        qkfuzz_fail("cannot write the input", paths[slot]);
    return paths[slot];
}

_Noreturn void qkfuzz_fail(const char *what, const char *detail) {
    fprintf(stderr, "qkfuzz: %s: %s\n", what, detail ? detail : "");
    abort();
}
