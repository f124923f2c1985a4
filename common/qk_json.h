/* A small JSON reader (manifests, tuning databases): parses a whole document into
 * a tree whose nodes keep their line:column, so manifest errors can point there. */
#ifndef QKRT_JSON_H
#define QKRT_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum qkrt_json_type {
    QKRT_JSON_NULL,
    QKRT_JSON_BOOL,
    QKRT_JSON_NUMBER,
    QKRT_JSON_STRING,
    QKRT_JSON_ARRAY,
    QKRT_JSON_OBJECT,
} qkrt_json_type;

typedef struct qkrt_json {
    qkrt_json_type type;
    uint32_t line, column;
    bool boolean;
    double number;
    bool integral;           /* a number without fraction or exponent that fits int64 */
    int64_t integer;         /* exact when integral */
    char *string;            /* STRING: nul-terminated, escapes decoded */
    uint32_t count;          /* ARRAY, OBJECT: number of children */
    struct qkrt_json *items; /* ARRAY, OBJECT: the children */
    char **keys;             /* OBJECT: key of each child */
} qkrt_json;

/* Parses text[0..length); on failure returns NULL with "line:col: problem" in error. */
qkrt_json *qkrt_json_parse(const char *text, size_t length, char *error, size_t error_size);
void qkrt_json_free(qkrt_json *root);
/* The member called key of an object, or NULL (also when v is not an object). */
const qkrt_json *qkrt_json_get(const qkrt_json *object, const char *key);
const char *qkrt_json_type_name(qkrt_json_type type);
/* The first object of array whose "name" is the string name, or NULL (a
 * linear search: libqkrt's loader indexes a manifest's modules instead). */
const qkrt_json *qkrt_json_named(const qkrt_json *array, const char *name);
/* A kernel entry of a manifest with its module's fields (docs/manifest.md,
 * "Kernels and modules"): *view becomes kernel's members followed by those of
 * module (an object of "modules") but its "name" and
 * "specialization_constants". view's items and keys arrays are malloc'ed
 * (free them with qkrt_json_view_free), its children are the document's.
 * False when a member is in both (*twice: its key in kernel) or memory is short
 * (*twice NULL). */
bool qkrt_json_kernel_view(const qkrt_json *kernel, const qkrt_json *module, qkrt_json *view,
                           const char **twice);
void qkrt_json_view_free(qkrt_json *view);

/* ---- a manifest's "select" table (runtime/select.c): the one check of it,
 * which libqkrt runs when it loads a bundle, `qkgen build --tuned` before it
 * builds one and `qkgen export` before it writes one ---- */

/* The fields of a kernel that a select rule must agree with: its family and
 * fusion ("" or NULL: none; the rule's op is "family", or "family/fusion"
 * for a fused kernel), format ("" for kernels without weights), format
 * option ("" or NULL: none) and activation type ("" or NULL: f32). */
typedef struct qkrt_select_kernel {
    const char *family, *format, *format_variant, *activation, *fusion;
} qkrt_select_kernel;
/* Finds the kernel called name: true with its fields, false if there is none. */
typedef bool (*qkrt_select_kernel_fn)(void *user, const char *name, qkrt_select_kernel *out);
/* Checks the object table (docs/manifest.md, "Selection"): "version" 1 or 2;
 * "devices" an array of objects with integer vendor_id, device_id and
 * driver_version 0 .. 2^32-1 (family_mask too, where present), string
 * cache_uuid and name where present, and a rules array where present; "default" an array of rules.
 * Each rule has strings op, format, kernel, format_variant (may be absent) and activations (version
 * 2 only; absent: f32), names a kernel kernel_of finds whose family is op and whose format, option
 * and activation type are the rule's, and has M, K and T ranges [lo, hi]: integers 0 <= lo <= hi,
 * or hi null (no bound). False with "LINE:COL: select: what" in err. */
bool qkrt_select_check(const qkrt_json *table, qkrt_select_kernel_fn kernel_of, void *user,
                       char *err, size_t err_size);

/* The evaluation of a checked table, apart from a device, so that it can be
 * tested without one: qkrt_select_ex is these two over the context's device
 * and the bundle's kernels. */

/* The entries of table's "devices" that the device's levels read
 * (docs/manifest.md, "Selection"), in qkrt_select_level's order: [0] the
 * device's own (vendor and device id equal; the one with its driver version
 * first), [1] its family's (the first other device id of the vendor equal to
 * it under the entry's family_mask), [2] its vendor's (the first other of the
 * vendor with a family_mask, outside that family); NULL where none. */
void qkrt_select_entries(const qkrt_json *table, uint32_t vendor_id, uint32_t device_id,
                         uint32_t driver_version, const qkrt_json *entries[3]);

/* A query of qkrt_select_scan: the operation, the format without its option,
 * the option (NULL: any), the activations' type and the shape's M, K, T. */
typedef struct qkrt_select_query {
    const char *op, *format, *option, *activations;
    int64_t M, K, T;
} qkrt_select_query;
/* Whether the kernel a matching rule names can answer (the bundle has it, it
 * reads the activations asked, the device runs it, the shape meets its
 * constraints): true with its index. */
typedef bool (*qkrt_select_usable_fn)(void *user, const char *kernel, uint32_t *index);
/* Scans the rules of entries[0], [1], [2] (from qkrt_select_entries), then
 * table's "default", for the first that matches q and whose kernel is
 * usable (and its first pass, where the rule names one, first_usable; NULL:
 * such rules never answer): 1 with its index in *kernel, the first pass's
 * in *first_pass (-1: none) and the level (0 .. 3) it came from in *level,
 * 0 where none does, -1 with "select: ..." in err for a malformed rule. */
int qkrt_select_scan(const qkrt_json *table, const qkrt_json *const entries[3],
                     const qkrt_select_query *q, qkrt_select_usable_fn usable,
                     qkrt_select_usable_fn first_usable, void *user, uint32_t *kernel,
                     int64_t *first_pass, int *level, char *err, size_t err_size);

#endif
