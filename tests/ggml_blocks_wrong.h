/* Deliberately WRONG copies of a few ggml block structs, for the layout-check test: each
 * drifts from specs/formats/ggml_blocks.h as hand-written structs do (a count, an order, padding, a
 * type). */
#ifndef GGML_BLOCKS_WRONG_H
#define GGML_BLOCKS_WRONG_H

#include <stdint.h>

typedef uint16_t ggml_half;

/* Wrong: qs has 15 bytes instead of 16 (the size stays 18: d's alignment pads it). */
typedef struct {
    ggml_half d;
    uint8_t qs[15];
} block_q4_0;

/* Wrong: d comes after qs (same 34 bytes, but d at 32 and qs at 0). */
typedef struct {
    int8_t qs[32];
    ggml_half d;
} block_q8_0;

/* Wrong: a 4-byte alignment pads the 17-byte block to 20 (fields as ggml has them). */
typedef struct {
    _Alignas(4) uint8_t e;
    uint8_t qs[16];
} block_mxfp4;

/* Wrong: d is a float, not a half (212 bytes with padding, not 210). */
typedef struct {
    uint8_t ql[128];
    uint8_t qh[64];
    int8_t scales[16];
    float d;
} block_q6_K;

#endif
