/* qkref.c: the GGUF block formats of docs/formats.md read literally, in float64,
 * plus the random source and the f16 conversions the tests share. */
#include "qkref.h"

#include <math.h>
#include <string.h>

/* ---- random numbers and half floats ---- */

uint64_t qkref_rand(uint64_t *state) {
    uint64_t z = (*state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

double qkref_uniform(uint64_t *state) {
    /* 53 random bits scaled to [0, 2): exact, so the result is reproducible. */
    return (double)(qkref_rand(state) >> 11) * 0x1p-52 - 1.0;
}

float qkref_f16_to_f32(uint16_t h) {
    uint32_t e = (h >> 10) & 31, m = h & 1023;
    float v;
    if (e == 0)
        v = ldexpf((float)m, -24);
    else if (e == 31)
        v = m ? NAN : INFINITY;
    else
        v = ldexpf((float)(m | 1024), (int)e - 25);
    return (h & 0x8000) ? -v : v;
}

uint16_t qkref_f32_to_f16(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
    uint32_t a = u & 0x7fffffff;
    if (a > 0x7f800000) return sign | 0x7e00;
    /* 65520 is the midpoint between 65504 and 2^16; ties go to even, i.e. inf. */
    if (a >= 0x477ff000) return sign | 0x7c00;
    uint32_t exp = a >> 23;
    if (exp < 113) {
        /* Below 2^-14 the result is subnormal: round the mantissa shifted to
         * units of 2^-24. Anything at or below 2^-25 rounds to zero. */
        if (exp < 102) return sign;
        uint32_t mant = (a & 0x7fffff) | 0x800000, shift = 126 - exp;
        uint32_t r = mant >> shift, rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (r & 1))) r++;
        return sign | (uint16_t)r;
    }
    uint32_t h = (a >> 13) - (112u << 10), rem = a & 0x1fff;
    if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) h++;
    return sign | (uint16_t)h;
}

/* ---- little-endian field readers ---- */

static double f16_at(const uint8_t *p) {
    return qkref_f16_to_f32((uint16_t)(p[0] | p[1] << 8));
}

static uint32_t u32_at(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* ---- 32-element blocks ---- */

static void dq_q4_0(const uint8_t *b, double *y) {
    double d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * ((b[2 + j] & 15) - 8);
        y[j + 16] = d * ((b[2 + j] >> 4) - 8);
    }
}

static void dq_q4_1(const uint8_t *b, double *y) {
    double d = f16_at(b), m = f16_at(b + 2);
    for (int j = 0; j < 16; j++) {
        y[j] = d * (b[4 + j] & 15) + m;
        y[j + 16] = d * (b[4 + j] >> 4) + m;
    }
}

/* The 5-bit values of q5_0 and q5_1: qh holds the fifth bit of element j at bit j. */
static void q5_values(const uint8_t *qh, const uint8_t *qs, int *v) {
    uint32_t h = u32_at(qh);
    for (int j = 0; j < 16; j++) {
        v[j] = (qs[j] & 15) | (int)(((h >> j) & 1) << 4);
        v[j + 16] = (qs[j] >> 4) | (int)(((h >> (j + 16)) & 1) << 4);
    }
}

static void dq_q5_0(const uint8_t *b, double *y) {
    double d = f16_at(b);
    int v[32];
    q5_values(b + 2, b + 6, v);
    for (int j = 0; j < 32; j++)
        y[j] = d * (v[j] - 16);
}

static void dq_q5_1(const uint8_t *b, double *y) {
    double d = f16_at(b), m = f16_at(b + 2);
    int v[32];
    q5_values(b + 4, b + 8, v);
    for (int j = 0; j < 32; j++)
        y[j] = d * v[j] + m;
}

static void dq_q8_0(const uint8_t *b, double *y) {
    double d = f16_at(b);
    for (int j = 0; j < 32; j++)
        y[j] = d * (int8_t)b[2 + j];
}

static void dq_iq4_nl(const uint8_t *b, double *y) {
    static const int T[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                              1,    13,   25,  38,  53,  69,  89,  113};
    double d = f16_at(b);
    for (int j = 0; j < 16; j++) {
        y[j] = d * T[b[2 + j] & 15];
        y[j + 16] = d * T[b[2 + j] >> 4];
    }
}

static void dq_mxfp4(const uint8_t *b, double *y) {
    /* Twice the E2M1 values, paired with half the E8M0 scale. */
    static const int T[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};
    double s = ldexp(1.0, (int)b[0] - 128);
    for (int j = 0; j < 16; j++) {
        y[j] = s * T[b[1 + j] & 15];
        y[j + 16] = s * T[b[1 + j] >> 4];
    }
}

/* ---- 256-element K-quant super-blocks ---- */

static void dq_q2_K(const uint8_t *b, double *y) {
    const uint8_t *scales = b, *qs = b + 16;
    double d = f16_at(b + 80), dmin = f16_at(b + 82);
    int is = 0;
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = qs + 32 * h;
        for (int j = 0; j < 4; j++) {
            int shift = 2 * j;
            for (int half = 0; half < 2; half++) {
                uint8_t sc = scales[is++];
                double dl = d * (sc & 15), ml = dmin * (sc >> 4);
                for (int l = 0; l < 16; l++)
                    *y++ = dl * ((q[l + 16 * half] >> shift) & 3) - ml;
            }
        }
    }
}

static void dq_q3_K(const uint8_t *b, double *y) {
    const uint8_t *hmask = b, *qs = b + 32, *packed = b + 96;
    double d = f16_at(b + 108);
    const uint32_t k1 = 0x03030303, k2 = 0x0f0f0f0f;
    uint32_t a0 = u32_at(packed), a1 = u32_at(packed + 4), t = u32_at(packed + 8);
    uint32_t w[4] = {
        (a0 & k2) | (((t >> 0) & k1) << 4),
        (a1 & k2) | (((t >> 2) & k1) << 4),
        ((a0 >> 4) & k2) | (((t >> 4) & k1) << 4),
        ((a1 >> 4) & k2) | (((t >> 6) & k1) << 4),
    };
    int sc[16];
    for (int i = 0; i < 16; i++)
        sc[i] = (int8_t)(uint8_t)(w[i / 4] >> (8 * (i % 4))) - 32;
    int is = 0;
    unsigned m = 1;
    for (int h = 0; h < 2; h++) {
        const uint8_t *q = qs + 32 * h;
        for (int j = 0; j < 4; j++) {
            int shift = 2 * j;
            for (int half = 0; half < 2; half++) {
                double dl = d * sc[is++];
                for (int l = 16 * half; l < 16 * half + 16; l++)
                    *y++ = dl * (((q[l] >> shift) & 3) - ((hmask[l] & m) ? 0 : 4));
            }
            m <<= 1;
        }
    }
}

/* 6-bit scale and min of sub-block j of q4_K / q5_K. */
static void k4_scale_min(const uint8_t *s, int j, int *sc, int *mn) {
    if (j < 4) {
        *sc = s[j] & 63;
        *mn = s[j + 4] & 63;
    } else {
        *sc = (s[j + 4] & 15) | ((s[j - 4] >> 6) << 4);
        *mn = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
    }
}

/* q4_K is q5_K without the fifth bit: qh == NULL. */
static void dq_q45_K(const uint8_t *b, const uint8_t *qh, const uint8_t *qs, double *y) {
    double d = f16_at(b), dmin = f16_at(b + 2);
    const uint8_t *scales = b + 4;
    for (int c = 0; c < 4; c++) {
        int sc1, mn1, sc2, mn2;
        k4_scale_min(scales, 2 * c, &sc1, &mn1);
        k4_scale_min(scales, 2 * c + 1, &sc2, &mn2);
        double d1 = d * sc1, m1 = dmin * mn1, d2 = d * sc2, m2 = dmin * mn2;
        const uint8_t *q = qs + 32 * c;
        unsigned u1 = 1u << (2 * c), u2 = 2u << (2 * c);
        for (int l = 0; l < 32; l++) {
            int lo = q[l] & 15, hi = q[l] >> 4;
            if (qh) {
                lo += (qh[l] & u1) ? 16 : 0;
                hi += (qh[l] & u2) ? 16 : 0;
            }
            y[64 * c + l] = d1 * lo - m1;
            y[64 * c + 32 + l] = d2 * hi - m2;
        }
    }
}

static void dq_q4_K(const uint8_t *b, double *y) {
    dq_q45_K(b, NULL, b + 16, y);
}

static void dq_q5_K(const uint8_t *b, double *y) {
    dq_q45_K(b, b + 16, b + 48, y);
}

static void dq_q6_K(const uint8_t *b, double *y) {
    double d = f16_at(b + 208);
    for (int h = 0; h < 2; h++) {
        const uint8_t *ql = b + 64 * h, *qh = b + 128 + 32 * h;
        const int8_t *s = (const int8_t *)(b + 192 + 8 * h);
        for (int l = 0; l < 32; l++) {
            int is = l / 16;
            int q1 = ((ql[l] & 15) | (((qh[l] >> 0) & 3) << 4)) - 32;
            int q2 = ((ql[l + 32] & 15) | (((qh[l] >> 2) & 3) << 4)) - 32;
            int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
            int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
            y[128 * h + l] = d * s[is + 0] * q1;
            y[128 * h + l + 32] = d * s[is + 2] * q2;
            y[128 * h + l + 64] = d * s[is + 4] * q3;
            y[128 * h + l + 96] = d * s[is + 6] * q4;
        }
    }
}

/* ---- the format table ---- */

typedef void (*dequant_block_fn)(const uint8_t *block, double *y);

/* Byte offsets of the f16 scale fields, which random data must keep finite;
 * -1 ends the list. mxfp4 has none: its E8M0 byte is handled apart. */
typedef struct format_impl {
    dequant_block_fn dequant;
    int f16_fields[3];
} format_impl;

static const qkref_format formats[] = {
    {"q4_0", 32, 18},   {"q4_1", 32, 20},   {"q5_0", 32, 22},   {"q5_1", 32, 24},
    {"q8_0", 32, 34},   {"iq4_nl", 32, 18}, {"mxfp4", 32, 17},  {"q2_K", 256, 84},
    {"q3_K", 256, 110}, {"q4_K", 256, 144}, {"q5_K", 256, 176}, {"q6_K", 256, 210},
};

static const format_impl impls[] = {
    {dq_q4_0, {0, -1}},   {dq_q4_1, {0, 2, -1}}, {dq_q5_0, {0, -1}},    {dq_q5_1, {0, 2, -1}},
    {dq_q8_0, {0, -1}},   {dq_iq4_nl, {0, -1}},  {dq_mxfp4, {-1}},      {dq_q2_K, {80, 82, -1}},
    {dq_q3_K, {108, -1}}, {dq_q4_K, {0, 2, -1}}, {dq_q5_K, {0, 2, -1}}, {dq_q6_K, {208, -1}},
};

#define NFORMATS (sizeof formats / sizeof formats[0])

const qkref_format *qkref_find(const char *name) {
    for (size_t i = 0; i < NFORMATS; i++)
        if (strcmp(formats[i].name, name) == 0) return &formats[i];
    return NULL;
}

const qkref_format *qkref_formats(size_t *n) {
    *n = NFORMATS;
    return formats;
}

/* Callers may hold a copy of a table entry, so fall back to the name. */
static const format_impl *impl_of(const qkref_format *f) {
    if (f < formats || f >= formats + NFORMATS) f = qkref_find(f->name);
    return f ? &impls[f - formats] : NULL;
}

void qkref_dequant_row(const qkref_format *f, const uint8_t *blocks, size_t k, double *out) {
    const format_impl *impl = impl_of(f);
    if (!impl) {
        /* Unknown format: NaN makes any comparison fail loudly. */
        for (size_t i = 0; i < k; i++)
            out[i] = NAN;
        return;
    }
    for (size_t i = 0; i < k / f->elements; i++)
        impl->dequant(blocks + i * f->block_bytes, out + i * f->elements);
}

/* f16 of magnitude in [2^-10, 2^0) with random sign and mantissa. */
static uint16_t random_f16_scale(uint64_t *rng) {
    uint64_t r = qkref_rand(rng);
    uint16_t sign = (uint16_t)((r & 1) << 15), mant = (uint16_t)((r >> 1) & 1023);
    uint16_t exp = (uint16_t)(15 - 10 + (r >> 11) % 10);
    return sign | (uint16_t)(exp << 10) | mant;
}

void qkref_random_blocks(const qkref_format *f, uint64_t *rng, uint8_t *out, size_t nblocks) {
    const format_impl *impl = impl_of(f);
    for (size_t i = 0; i < nblocks * f->block_bytes; i++)
        out[i] = (uint8_t)qkref_rand(rng);
    if (!impl) return;
    for (size_t i = 0; i < nblocks; i++) {
        uint8_t *b = out + i * f->block_bytes;
        for (const int *o = impl->f16_fields; *o >= 0; o++) {
            uint16_t h = random_f16_scale(rng);
            b[*o] = (uint8_t)h;
            b[*o + 1] = (uint8_t)(h >> 8);
        }
        if (impl->dequant == dq_mxfp4) b[0] = (uint8_t)(110 + qkref_rand(rng) % 31);
    }
}
