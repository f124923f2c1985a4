/* The declared references of a spec folder's formats (their `reference:`),
 * for the CLI's verify, bench, tune and dequant and for the GPU tests. */
#ifndef QK_REFS_H
#define QK_REFS_H

/* Registers the declared reference (`reference:`) of every format under
 * specs_dir/formats with the host operations (host/ops.h), for verify, bench,
 * tune and dequant; the built-in formats keep their C references. On a
 * spec error prints "qkgen CMD: file:line:col: ..." and returns 2 (usage);
 * 0 otherwise. qk_ref_declared_clear frees them. */
enum { QK_REFS_BAD_SPEC = 2 }; /* the CLI's exit status for bad input */
int qk_declare_refs(const char *cmd, const char *specs_dir);

#endif
