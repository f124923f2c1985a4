/* What the fuzz harnesses share: libFuzzer's entry point, which the replay
 * program (replay.c) also calls, and a private folder for inputs read by path. */
#ifndef QK_FUZZ_H
#define QK_FUZZ_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Writes data to name inside this process's temporary folder (made on first
 * use, removed at exit) and returns its path, valid until the next call with
 * the same name. Aborts if the file cannot be written: a harness that cannot
 * store its input would silently test nothing. */
const char *qkfuzz_file(const char *name, const uint8_t *data, size_t size);
/* The temporary folder itself. */
const char *qkfuzz_dir(void);

/* Aborts with a message: a broken invariant is a finding, like a crash. */
_Noreturn void qkfuzz_fail(const char *what, const char *detail);

#endif
