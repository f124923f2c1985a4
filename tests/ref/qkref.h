/* qkref: independent CPU references for the tests: dequantizers for every
 * quant format (float64 results) and random valid weight data. Written from
 * docs/formats.md alone; shares no code with the generator or the GLSL. */
#ifndef QKREF_H
#define QKREF_H

#include <stddef.h>
#include <stdint.h>

/* Interleaved block formats (GGUF). */
typedef struct qkref_format {
    const char *name;     /* "q4_0", "q4_K", ... */
    uint32_t elements;    /* elements per block (32 or 256) */
    uint32_t block_bytes; /* bytes per block */
} qkref_format;

/* NULL if the name is not a block format this file knows. */
const qkref_format *qkref_find(const char *name);
/* All known block formats, for loops in tests; count in *n. */
const qkref_format *qkref_formats(size_t *n);

/* Dequantizes one row of k elements (k a multiple of the block size) from
 * k/elements consecutive blocks. */
void qkref_dequant_row(const qkref_format *f, const uint8_t *blocks, size_t k, double *out);

/* Fills nblocks blocks with random valid data: any bits in quant and scale
 * fields, floating scales finite and of modest magnitude (|d| roughly 1e-3..1),
 * mxfp4 exponents in 110..140. rng is a splitmix64 state (qkref_rand). */
void qkref_random_blocks(const qkref_format *f, uint64_t *rng, uint8_t *out, size_t nblocks);

/* MLX affine (planar). scale_type: "bf16", "f16" or "f32"; scales and
 * biases point to [k/group] elements of that type for this row; w points to
 * the row's k*bits/32 u32 words. */
void qkref_mlx_dequant_row(uint32_t bits, uint32_t group, const char *scale_type, const uint32_t *w,
                           const void *scales, const void *biases, size_t k, double *out);
/* Random valid MLX data for m rows of k: w [m, k*bits/32] any bits; scales and
 * biases [m, k/group] finite, modest. Element size of scales/biases: 2 or 4. */
void qkref_mlx_random(uint32_t bits, uint32_t group, const char *scale_type, uint64_t *rng,
                      size_t m, size_t k, uint32_t *w, void *scales, void *biases);

/* splitmix64 */
uint64_t qkref_rand(uint64_t *state);
/* uniform in [-1, 1) */
double qkref_uniform(uint64_t *state);
/* f16 / bf16 helpers (round to nearest even) */
uint16_t qkref_f32_to_f16(float f);
float qkref_f16_to_f32(uint16_t h);

#endif
