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

/* The fields of a kernel that a select rule must agree with: its family
 * (the rule's op), format, format option ("" or NULL: none) and activation
 * type ("" or NULL: f32). */
typedef struct qkrt_select_kernel {
    const char *family, *format, *format_variant, *activation;
} qkrt_select_kernel;
/* Finds the kernel called name: true with its fields, false if there is none. */
typedef bool (*qkrt_select_kernel_fn)(void *user, const char *name, qkrt_select_kernel *out);
/* Checks the object table (docs/manifest.md, "Selection"): "version" 1 or 2;
 * "devices" an array of objects with integer vendor_id, device_id and
 * driver_version 0 .. 2^32-1, string cache_uuid and name where present, and
 * a rules array where present; "default" an array of rules. Each rule has
 * strings op, format, kernel, format_variant (may be absent) and
 * activations (version 2 only; absent: f32), names a kernel kernel_of finds
 * whose family is op and whose format, option and activation type are the
 * rule's, and has M, K and T ranges [lo, hi]: integers 0 <= lo <= hi, or
 * hi null (no bound). False with "LINE:COL: select: what" in err. */
bool qkrt_select_check(const qkrt_json *table, qkrt_select_kernel_fn kernel_of, void *user,
                       char *err, size_t err_size);

#endif
