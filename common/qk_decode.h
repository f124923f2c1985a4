/* qk_decode: a format's declared CPU reference (its YAML `reference:` and
 * `tables:`), compiled once and evaluated per element in float64, plus the
 * random blocks the checks feed it. Knows nothing of YAML, GLSL or Vulkan. */
#ifndef QK_DECODE_H
#define QK_DECODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Element types of fields, planes and tables (U64: tables only). */
typedef enum qk_dtype {
    QK_DT_NONE = 0,
    QK_DT_U8,
    QK_DT_I8,
    QK_DT_U16,
    QK_DT_I16,
    QK_DT_F16,
    QK_DT_BF16,
    QK_DT_U32,
    QK_DT_I32,
    QK_DT_F32,
    QK_DT_U64,
} qk_dtype;

uint32_t qk_dtype_size(qk_dtype t);
bool qk_dtype_is_float(qk_dtype t);

/* A field of a block (offset in bytes, count elements) or a plane of a
 * planar format (count = elements per group; offset unused). random: the
 * ranges random data takes (raw integers for integer types, values for float
 * types); without it, random bits, or for float types a magnitude in
 * [2^-10, 1) with a random sign. */
enum { QK_DECODE_MAX_RANGES = 4 };
typedef struct qk_decode_var {
    const char *name;
    qk_dtype type;
    uint32_t offset, count;
    uint32_t random_count; /* ranges [random_lo[i], random_hi[i]]; each element takes one */
    double random_lo[QK_DECODE_MAX_RANGES], random_hi[QK_DECODE_MAX_RANGES];
} qk_decode_var;

/* A constant table: ints for integer types (u64 as its bit pattern), reals
 * for f32. */
typedef struct qk_decode_table {
    const char *name;
    qk_dtype type;
    uint32_t count;
    const int64_t *ints;
    const double *reals;
} qk_decode_table;

typedef struct qk_decode_desc {
    bool planar;
    uint32_t elements;    /* per block or group */
    uint32_t block_bytes; /* block layout */
    uint32_t var_count;
    const qk_decode_var *vars;
    uint32_t table_count;
    const qk_decode_table *tables;
    uint32_t param_count; /* integer constants (a format's numeric parameters) */
    const char *const *param_names;
    const int64_t *param_values;
    uint32_t let_count; /* named sub-expressions, evaluated in order */
    const char *const *let_names;
    const char *const *let_exprs;
    const char *value; /* element e's value */
} qk_decode_desc;

/* Where compiling failed: expression `expr` (0 .. let_count - 1 a let,
 * let_count the value), `offset` bytes into its text. */
typedef struct qk_decode_error {
    int expr, offset;
    char msg[256];
} qk_decode_error;

typedef struct qk_decode qk_decode;

/* Compiles desc (copied: the caller's strings and tables may go). NULL with
 * err filled when an expression does not parse or names something unknown. */
qk_decode *qk_decode_new(const qk_decode_desc *desc, qk_decode_error *err);
void qk_decode_free(qk_decode *d);

bool qk_decode_planar(const qk_decode *d);
uint32_t qk_decode_elements(const qk_decode *d);
uint32_t qk_decode_block_bytes(const qk_decode *d);
/* Planes of a planar format, each one's elements per group and type. */
uint32_t qk_decode_plane_count(const qk_decode *d);
uint32_t qk_decode_plane_per_group(const qk_decode *d, uint32_t p);
qk_dtype qk_decode_plane_type(const qk_decode *d, uint32_t p);

/* y[0 .. elements-1] of one block (block layout) or of one group whose
 * planes start at planes[p] (planar layout). False with the element and the
 * cause in err when an index is out of range, a division is by zero or an
 * element is not finite. */
bool qk_decode_block(const qk_decode *d, const uint8_t *block, double *y, char *err,
                     size_t err_size);
bool qk_decode_group(const qk_decode *d, const uint8_t *const *planes, double *y, char *err,
                     size_t err_size);

/* Random data for one block / one group, from the splitmix64 state *rng. */
void qk_decode_random_block(const qk_decode *d, uint64_t *rng, uint8_t *block);
void qk_decode_random_group(const qk_decode *d, uint64_t *rng, uint8_t *const *planes);

/* The scalar decoders of the expression language, for tests and tools. */
double qk_decode_f16(uint32_t bits);
double qk_decode_e4m3(uint32_t bits);

#endif
