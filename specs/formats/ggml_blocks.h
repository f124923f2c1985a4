/* The GGUF block structs exactly as ggml-common.h declares them for C (field order, the
 * anonymous d/m unions, sizes asserted as in docs/formats.md): the reference for the layout check,
 * shipped with the format specs (their c_struct: header) so that a copy of specs/ checks alone. */
#ifndef GGML_BLOCKS_H
#define GGML_BLOCKS_H

#include <assert.h>
#include <stdint.h>

/* ggml-common.h's C spelling of its portability macros: for C they leave the unions anonymous. */
#define GGML_EXTENSION __extension__
#define GGML_COMMON_AGGR_U
#define GGML_COMMON_AGGR_S

typedef uint16_t ggml_half;
typedef uint32_t ggml_half2;

#define QK_K         256
#define K_SCALE_SIZE 12

#define QK4_0 32
typedef struct {
    ggml_half d;           // delta
    uint8_t qs[QK4_0 / 2]; // nibbles / quants
} block_q4_0;
static_assert(sizeof(block_q4_0) == 18, "wrong q4_0 block size/padding");

#define QK4_1 32
typedef struct {
    GGML_EXTENSION union {
        struct {
            ggml_half d; // delta
            ggml_half m; // min
        } GGML_COMMON_AGGR_S;
        ggml_half2 dm;
    } GGML_COMMON_AGGR_U;
    uint8_t qs[QK4_1 / 2]; // nibbles / quants
} block_q4_1;
static_assert(sizeof(block_q4_1) == 20, "wrong q4_1 block size/padding");

#define QK_MXFP4 32
typedef struct {
    uint8_t e; // E8M0
    uint8_t qs[QK_MXFP4 / 2];
} block_mxfp4;
static_assert(sizeof(block_mxfp4) == 17, "wrong mxfp4 block size/padding");

#define QK5_0 32
typedef struct {
    ggml_half d;           // delta
    uint8_t qh[4];         // 5-th bit of quants
    uint8_t qs[QK5_0 / 2]; // nibbles / quants
} block_q5_0;
static_assert(sizeof(block_q5_0) == 22, "wrong q5_0 block size/padding");

#define QK5_1 32
typedef struct {
    GGML_EXTENSION union {
        struct {
            ggml_half d; // delta
            ggml_half m; // min
        } GGML_COMMON_AGGR_S;
        ggml_half2 dm;
    } GGML_COMMON_AGGR_U;
    uint8_t qh[4];         // 5-th bit of quants
    uint8_t qs[QK5_1 / 2]; // nibbles / quants
} block_q5_1;
static_assert(sizeof(block_q5_1) == 24, "wrong q5_1 block size/padding");

#define QK8_0 32
typedef struct {
    ggml_half d;      // delta
    int8_t qs[QK8_0]; // quants
} block_q8_0;
static_assert(sizeof(block_q8_0) == 34, "wrong q8_0 block size/padding");

// 2-bit quantization: 16 sub-blocks of 16, scales and mins in 4 bits each
typedef struct {
    uint8_t scales[QK_K / 16]; // scales and mins, quantized with 4 bits
    uint8_t qs[QK_K / 4];      // quants
    GGML_EXTENSION union {
        struct {
            ggml_half d;    // super-block scale for quantized scales
            ggml_half dmin; // super-block scale for quantized mins
        } GGML_COMMON_AGGR_S;
        ggml_half2 dm;
    } GGML_COMMON_AGGR_U;
} block_q2_K;
static_assert(sizeof(block_q2_K) == 84, "wrong q2_K block size/padding");

// 3-bit quantization: 16 sub-blocks of 16, scales in 6 bits
typedef struct {
    uint8_t hmask[QK_K / 8]; // quants - high bit
    uint8_t qs[QK_K / 4];    // quants - low 2 bits
    uint8_t scales[12];      // scales, quantized with 6 bits
    ggml_half d;             // super-block scale
} block_q3_K;
static_assert(sizeof(block_q3_K) == 110, "wrong q3_K block size/padding");

// 4-bit quantization: 8 sub-blocks of 32, scales and mins in 6 bits
typedef struct {
    GGML_EXTENSION union {
        struct {
            ggml_half d;    // super-block scale for quantized scales
            ggml_half dmin; // super-block scale for quantized mins
        } GGML_COMMON_AGGR_S;
        ggml_half2 dm;
    } GGML_COMMON_AGGR_U;
    uint8_t scales[K_SCALE_SIZE]; // scales and mins, quantized with 6 bits
    uint8_t qs[QK_K / 2];         // 4--bit quants
} block_q4_K;
static_assert(sizeof(block_q4_K) == 144, "wrong q4_K block size/padding");

// 5-bit quantization: as q4_K plus one high bit per weight
typedef struct {
    GGML_EXTENSION union {
        struct {
            ggml_half d;    // super-block scale for quantized scales
            ggml_half dmin; // super-block scale for quantized mins
        } GGML_COMMON_AGGR_S;
        ggml_half2 dm;
    } GGML_COMMON_AGGR_U;
    uint8_t scales[K_SCALE_SIZE]; // scales and mins, quantized with 6 bits
    uint8_t qh[QK_K / 8];         // quants, high bit
    uint8_t qs[QK_K / 2];         // quants, low 4 bits
} block_q5_K;
static_assert(sizeof(block_q5_K) == 176, "wrong q5_K block size/padding");

// 6-bit quantization: 16 sub-blocks of 16, scales in 8 bits
typedef struct {
    uint8_t ql[QK_K / 2];     // quants, lower 4 bits
    uint8_t qh[QK_K / 4];     // quants, upper 2 bits
    int8_t scales[QK_K / 16]; // scales, quantized with 8 bits
    ggml_half d;              // super-block scale
} block_q6_K;
static_assert(sizeof(block_q6_K) == 210, "wrong q6_K block size/padding");

// 4.25 bits: eight 32-element sub-blocks with 6-bit scales (4 low bits in
// scales_l, 2 high in scales_h), 4-bit indices into the iq4_nl table
typedef struct {
    ggml_half d;
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;
static_assert(sizeof(block_iq4_xs) == 136, "wrong iq4_xs block size/padding");

// NVIDIA fp4: 64 E2M1 codes, one UE4M3 scale per 16
#define QK_NVFP4 64
typedef struct {
    uint8_t d[QK_NVFP4 / 16];
    uint8_t qs[QK_NVFP4 / 2];
} block_nvfp4;
static_assert(sizeof(block_nvfp4) == 36, "wrong nvfp4 block size/padding");

// Non-linear 4-bit quantization
#define QK4_NL 32
typedef struct {
    ggml_half d;
    uint8_t qs[QK4_NL / 2];
} block_iq4_nl;
static_assert(sizeof(block_iq4_nl) == 18, "wrong iq4_nl block size/padding");

// 2.06-bit codebook quantization: 8 sub-blocks of 32, each 4 grid indices and a scale/sign word
typedef struct {
    ggml_half d;
    uint16_t qs[QK_K / 8];
} block_iq2_xxs;
static_assert(sizeof(block_iq2_xxs) == 66, "wrong iq2_xxs block size/padding");

// 3.06-bit codebook quantization: 64 grid indices, then 8 scale/sign words
typedef struct {
    ggml_half d;
    uint8_t qs[3 * QK_K / 8];
} block_iq3_xxs;
static_assert(sizeof(block_iq3_xxs) == 98, "wrong iq3_xxs block size/padding");

// f16w (qkgen's, not ggml's: GGUF's F16 weights as blocks of 32 plain halves), the
// operand of the two-pass prefill's pass 2
typedef struct {
    ggml_half v[32];
} block_f16w;
static_assert(sizeof(block_f16w) == 64, "wrong f16w block size/padding");

#endif
