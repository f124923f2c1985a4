/* qkref_mlx.c: MLX affine (planar) weights as docs/formats.md defines them: an
 * LSB-first bit stream of b-bit values, one scale and one bias per group. */
#include "qkref.h"

#include <math.h>
#include <string.h>

typedef enum scale_kind { SCALE_BAD, SCALE_BF16, SCALE_F16, SCALE_F32 } scale_kind;

static scale_kind scale_kind_of(const char *name) {
    if (strcmp(name, "bf16") == 0) return SCALE_BF16;
    if (strcmp(name, "f16") == 0) return SCALE_F16;
    if (strcmp(name, "f32") == 0) return SCALE_F32;
    return SCALE_BAD;
}

static int params_ok(uint32_t bits, uint32_t group) {
    int bits_ok = bits == 2 || bits == 3 || bits == 4 || bits == 5 || bits == 6 || bits == 8;
    return bits_ok && (group == 32 || group == 64 || group == 128);
}

static double scale_at(scale_kind kind, const void *p, size_t i) {
    if (kind == SCALE_F32) {
        float f;
        memcpy(&f, (const uint8_t *)p + 4 * i, sizeof f);
        return f;
    }
    uint16_t h;
    memcpy(&h, (const uint8_t *)p + 2 * i, sizeof h);
    if (kind == SCALE_F16) return qkref_f16_to_f32(h);
    /* bf16 is the top half of an f32. */
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* Bits [i*b, i*b + b) of the row's stream; a value may straddle two words. */
static uint32_t stream_value(const uint32_t *w, uint32_t bits, size_t i) {
    size_t pos = i * bits, word = pos / 32;
    uint32_t off = (uint32_t)(pos % 32);
    uint64_t v = w[word] >> off;
    if (off + bits > 32) v |= (uint64_t)w[word + 1] << (32 - off);
    return (uint32_t)(v & ((1u << bits) - 1));
}

void qkref_mlx_dequant_row(uint32_t bits, uint32_t group, const char *scale_type, const uint32_t *w,
                           const void *scales, const void *biases, size_t k, double *out) {
    scale_kind kind = scale_kind_of(scale_type);
    if (kind == SCALE_BAD || !params_ok(bits, group)) {
        /* NaN makes any comparison against bad parameters fail loudly. */
        for (size_t i = 0; i < k; i++)
            out[i] = NAN;
        return;
    }
    for (size_t i = 0; i < k; i++) {
        double s = scale_at(kind, scales, i / group), b = scale_at(kind, biases, i / group);
        out[i] = stream_value(w, bits, i) * s + b;
    }
}

/* A float of magnitude in [2^-10, 2^0), random sign, and only as many
 * mantissa bits as the target type keeps, so the conversion is exact. */
static float random_scale(uint64_t *rng, int mant_bits) {
    uint64_t r = qkref_rand(rng);
    uint32_t exp = (uint32_t)(127 - 10 + (r >> 32) % 10);
    uint32_t mant = (uint32_t)(r >> 1) & 0x7fffff & ~((1u << (23 - mant_bits)) - 1);
    uint32_t u = (uint32_t)(r & 1) << 31 | exp << 23 | mant;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static void store_scale(scale_kind kind, uint64_t *rng, void *p, size_t i) {
    if (kind == SCALE_F32) {
        float f = random_scale(rng, 23);
        memcpy((uint8_t *)p + 4 * i, &f, sizeof f);
        return;
    }
    uint16_t h;
    if (kind == SCALE_F16) {
        h = qkref_f32_to_f16(random_scale(rng, 10));
    } else {
        float f = random_scale(rng, 7);
        uint32_t u;
        memcpy(&u, &f, sizeof u);
        h = (uint16_t)(u >> 16);
    }
    memcpy((uint8_t *)p + 2 * i, &h, sizeof h);
}

void qkref_mlx_random(uint32_t bits, uint32_t group, const char *scale_type, uint64_t *rng,
                      size_t m, size_t k, uint32_t *w, void *scales, void *biases) {
    scale_kind kind = scale_kind_of(scale_type);
    if (kind == SCALE_BAD || !params_ok(bits, group)) return;
    for (size_t i = 0; i < m * k * bits / 32; i++)
        w[i] = (uint32_t)qkref_rand(rng);
    for (size_t i = 0; i < m * (k / group); i++) {
        store_scale(kind, rng, scales, i);
        store_scale(kind, rng, biases, i);
    }
}
