/* emit: builds the GLSL source of one variant by composing a header of
 * defines, the format's generated accessors and dequant code, the kernel's
 * interface and its template; #include lines are inlined so that the source
 * (and its hash) is complete. Knows nothing of compilers. */
#ifndef QK_EMIT_H
#define QK_EMIT_H

#include "../plan/plan.h"

/* Appends the complete GLSL of v to out. Files are looked up next to the
 * including file, then in templates_dir. Each path read is reported to
 * on_file (may be NULL), for input hashes. */
bool qk_emit_variant(const qk_variant *v, const char *templates_dir, qk_str *out,
                     void (*on_file)(void *user, const char *path, const char *text), void *user,
                     qk_error *e);

/* Checks that kernel k's template is a readable file, next to its spec or in
 * templates_dir, as qk_emit_variant looks it up; else false with
 * "spec:line:col: template: ..." in e, before anything is compiled. */
bool qk_emit_check_template(const qk_kernel_spec *k, const char *templates_dir, qk_error *e);

/* The GLSL extensions the features need, one "#extension ... : require" line each. */
void qk_emit_extensions(const char *const *features, uint32_t n, qk_str *out);

#endif
