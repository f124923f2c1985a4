/* bundle: turns a plan into a bundle folder (one .spv per variant and
 * manifest.json), atomically, with a content-hash cache so that unchanged
 * variants are never compiled twice. Knows nothing of GLSL itself. */
#ifndef QK_BUNDLE_H
#define QK_BUNDLE_H

#include "../plan/plan.h"

#define QK_BUNDLE_SCHEMA "qkgen-bundle/3"
/* A tuned bundle whose select table has rules for f16 activations (select
 * version 2): a reader of 3 would take them for f32 ones, so it must refuse
 * the bundle (docs/manifest.md, "Versioning"). */
#define QK_BUNDLE_SCHEMA_ACT "qkgen-bundle/4"
#define QK_VERSION           "0.1.0"

/* What a tuned build (`qkgen build --tuned`) adds to its bundle's manifest,
 * which the writer, not the tuner, puts there (docs/manifest.md,
 * "Selection"). */
typedef struct qk_bundle_tuned {
    const char *select; /* the "select" object as JSON text, checked by the caller */
    const char *schema; /* the schema the table needs (QK_BUNDLE_SCHEMA_ACT); NULL: the usual */
    /* The variants the manifest lists, by name; a variant built besides them
     * is there only because a listed one's module starts with it (a module's
     * first variant gives its SPIR-V and hash), and has no entry. */
    const char *const *listed;
    uint32_t listed_count;
} qk_bundle_tuned;

typedef struct qk_build_opts {
    const char *templates_dir; /* GLSL templates and includes */
    const char *out_dir;       /* the bundle goes to out_dir/name */
    const char *name;          /* bundle name; default "default" */
    const char *filter;        /* only variants whose name contains this; NULL: all */
    bool representative;       /* of those, one tile per path (qk_plan_select) */
    bool force;                /* ignore the caches */
    /* called before each variant is compiled (not for cache hits) */
    void (*progress)(void *user, uint32_t done, uint32_t total, const char *variant);
    /* called now and then while each variant is checked in its specialized form */
    void (*check_progress)(void *user, uint32_t done, uint32_t total, const char *variant);
    void *user;
    FILE *log; /* where a build that waits for another's lock of the bundle says so; NULL: not */
    const qk_bundle_tuned *tuned; /* NULL: an untuned bundle that lists every variant built */
} qk_build_opts;

typedef struct qk_build_stats {
    uint32_t variants; /* the kernels the manifest lists */
    uint32_t modules, compiled, cached, dropped;
    bool up_to_date; /* the bundle was current: nothing written */
    char path[1024]; /* the bundle folder */
} qk_build_stats;

bool qk_bundle_build(const qk_spec_set *specs, const qk_plan *plan, const qk_build_opts *o,
                     qk_build_stats *st, qk_error *e);

/* SHA-256 of the running executable: the generator's identity in manifests and cache keys. */
const char *qk_generator_hash(void);

#endif
