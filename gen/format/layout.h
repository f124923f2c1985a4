/* Layout check of the format module: reads a quant block struct from a C header with libclang
 * and compares it with the layout a format's YAML declares, so the two cannot drift apart. */
#ifndef QK_FORMAT_LAYOUT_H
#define QK_FORMAT_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* One field of a block, in declaration order. type is one of u8 i8 u16 i16 u32 i32 f16 bf16 f32;
 * count is 1 for a scalar, the element count (product of all dimensions) for an array; offset is
 * in bytes from the start of the block. */
typedef struct qk_layout_field {
    char name[64];
    char type[16];
    uint32_t offset;
    uint32_t count;
} qk_layout_field;

/* A block layout. source says where it came from (the header path for qk_layout_read, the YAML
 * file for a spec); it only serves error messages and may be empty. */
typedef struct qk_layout {
    char name[128];
    uint32_t size;
    uint32_t field_count;
    qk_layout_field fields[64];
    char source[256];
} qk_layout;

/* Parses header with libclang as C11 (the header's folder on the include path) and fills out with
 * the size of struct_name (a struct tag or a typedef name) and its fields in order. Anonymous
 * structs and unions are flattened: a union contributes its first member, recursively, and every
 * field gets its absolute offset. Returns 0, or -1 with a message in err such as
 * "specs/formats/ggml_blocks.h: no struct named 'block_q9_0'", the first clang error as
 * "file:line:col: message", or "file:line:col: field X of struct Y has unsupported type T". */
/* QK_LAYOUT_NO_LIBCLANG (-2): libclang could not be loaded (err says so). */
enum { QK_LAYOUT_NO_LIBCLANG = -2 };
int qk_layout_read(const char *header, const char *struct_name, qk_layout *out, char *err,
                   size_t err_size);

/* Writes l in the spec language: a comment with the offsets, "block: { bytes: N }", then
 * "fields:" and one line per field such as "  - { name: qs, type: u8, count: 16 }". */
void qk_layout_print_yaml(const qk_layout *l, FILE *f);

/* Bytes of one element of a layout type name ("f16" is 2), or 0 for a name that is not one. */
uint32_t qk_layout_type_bytes(const char *type);

/* Checks the layout a C header gives (from_c) against the one a YAML declares. The YAML lists
 * no offsets, so the expected offsets are those of a packed block (each field right after the
 * previous one, as docs/formats.md's blocks are); expected_from_yaml's offset members are ignored.
 * Types are compared by element size only (u16 and f16 agree). Returns 0 when the field count,
 * each field's offset, count and element size, and the total size all agree; else -1 with the
 * first difference in err, e.g. "block_q4_0 in tests/ggml_blocks_wrong.h: field qs: count 15,
 * the YAML says 16" or "block_mxfp4 in h.h: size 20 bytes, the YAML says 17". */
int qk_layout_compare(const qk_layout *expected_from_yaml, const qk_layout *from_c, char *err,
                      size_t err_size);

#endif
