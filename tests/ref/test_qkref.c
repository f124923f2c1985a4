/* test_qkref.c: checks the CPU references against values derived by hand
 * from docs/formats.md, and the f16 conversions against exhaustive round trips. */
#include "qkref.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int failures;

static void expect(const char *what, size_t i, double got, double want) {
    if (got != want) {
        printf("FAIL %s[%zu]: got %.17g, want %.17g\n", what, i, got, want);
        failures++;
    }
}

static void put_u16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}

static void test_q4_0(void) {
    uint8_t b[18];
    double y[32];
    memset(b, 0x88, sizeof b); /* nibble 8 is zero */
    put_u16(b, 0x3800);        /* d = 0.5 */
    b[2 + 0] = 0x1f;           /* element 0 is 15, element 16 is 1 */
    b[2 + 5] = 0x80;           /* element 5 is 0, element 21 is 8 */
    qkref_dequant_row(qkref_find("q4_0"), b, 32, y);
    expect("q4_0", 0, y[0], 3.5);
    expect("q4_0", 16, y[16], -3.5);
    expect("q4_0", 5, y[5], -4.0);
    expect("q4_0", 21, y[21], 0.0);
    expect("q4_0", 1, y[1], 0.0);
}

static void test_q8_0(void) {
    uint8_t b[34] = {0};
    double y[32];
    put_u16(b, 0xc000); /* d = -2 */
    b[2 + 3] = 0x80;    /* -128 */
    b[2 + 31] = 0x7f;   /* 127 */
    qkref_dequant_row(qkref_find("q8_0"), b, 32, y);
    expect("q8_0", 3, y[3], 256.0);
    expect("q8_0", 31, y[31], -254.0);
    expect("q8_0", 0, y[0], 0.0);
}

static void test_q3_K(void) {
    uint8_t b[110] = {0};
    double y[256];
    put_u16(b + 108, 0x3c00); /* d = 1 */
    /* Sub-block 9: low nibble from the high nibble of scales[1], top two
     * bits from bits 4..5 of scales[9]: 7 | 2 << 4 = 39, minus 32 is 7. */
    b[96 + 1] = 0x70;
    b[96 + 9] = 0x20;
    /* Element 146 = 128 + 16 + 2: half 1, shift 0, second sub-block, l = 2:
     * qs[32 + 16 + 2], hmask[18] bit 4. */
    b[32 + 50] = 0x02;
    b[18] = 0x10;
    b[32 + 51] = 0x03; /* element 147, its hmask bit clear: 3 - 4 */
    qkref_dequant_row(qkref_find("q3_K"), b, 256, y);
    expect("q3_K", 146, y[146], 14.0);
    expect("q3_K", 147, y[147], -7.0);
    expect("q3_K", 0, y[0], 128.0); /* scale 0 - 32, value 0 - 4 */
}

static void test_q4_K(void) {
    uint8_t b[144] = {0};
    double y[256];
    put_u16(b, 0x3c00);     /* d = 1 */
    put_u16(b + 2, 0x3800); /* dmin = 0.5 */
    uint8_t *s = b + 4, *qs = b + 16;
    s[0] = 0x05; /* sc0 = 5 */
    s[1] = 0xc3; /* sc1 = 3; its top bits make bits 4..5 of sc5 */
    s[4] = 0x86; /* mn0 = 6; its top bits make bits 4..5 of mn4 (32) */
    s[5] = 0x4a; /* mn1 = 10; top bits 1 make mn5 bit 4 */
    s[9] = 0x27; /* sc5 = 7 | 3 << 4 = 55, mn5 = 2 | 1 << 4 = 18 */
    qs[0] = 0xa0;
    qs[64 + 3] = 0xa0; /* chunk 2, l = 3: elements 131 and 163 */
    qkref_dequant_row(qkref_find("q4_K"), b, 256, y);
    expect("q4_K", 0, y[0], 5 * 0 - 0.5 * 6);
    expect("q4_K", 32, y[32], 3 * 10 - 0.5 * 10);
    expect("q4_K", 33, y[33], -0.5 * 10);
    expect("q4_K", 131, y[131], -0.5 * 32);
    expect("q4_K", 163, y[163], 55 * 10 - 0.5 * 18);
    expect("q4_K", 255, y[255], 0.0);
}

static void test_mlx3(void) {
    /* 32 values of 3 bits in 3 words. */
    uint32_t w[3];
    w[0] = 5u | 3u << 3 /* q0 = 5, q1 = 3 */ | 1u << 31; /* q10 bits 30..32 = 0,1,1 */
    w[1] = 1u | 1u << 31;                                /* q10 bit 2; q21 bits 63..65 = 1,1,0 */
    w[2] = 1u | 1u << 31;                                /* q21 bit 1; q31 = bits 93..95 = 0,0,1 */
    uint16_t scale = 0x3f00, bias = 0xbf80;              /* bf16 0.5 and -1 */
    double y[32];
    qkref_mlx_dequant_row(3, 32, "bf16", w, &scale, &bias, 32, y);
    expect("mlx3", 0, y[0], 5 * 0.5 - 1);
    expect("mlx3", 1, y[1], 3 * 0.5 - 1);
    expect("mlx3", 2, y[2], -1.0);
    expect("mlx3", 10, y[10], 6 * 0.5 - 1);
    expect("mlx3", 11, y[11], -1.0);
    expect("mlx3", 21, y[21], 3 * 0.5 - 1);
    expect("mlx3", 31, y[31], 4 * 0.5 - 1);
}

static void test_mlx6(void) {
    /* 64 values of 6 bits in 12 words, two groups of 32, f32 scales. */
    uint32_t w[12] = {0};
    w[0] = 1u << 30; /* q5 = 45 = 0b101101: bits 30..35 = 1,0,1,1,0,1 */
    w[1] = 0xb;
    w[7] = 63u << 16; /* q40: bits 240..245 */
    float scales[2] = {0.25f, -2.0f}, biases[2] = {1.0f, 0.5f};
    double y[64];
    qkref_mlx_dequant_row(6, 32, "f32", w, scales, biases, 64, y);
    expect("mlx6", 5, y[5], 45 * 0.25 + 1);
    expect("mlx6", 40, y[40], 63 * -2.0 + 0.5);
    expect("mlx6", 0, y[0], 1.0);
    expect("mlx6", 63, y[63], 0.5);
}

static void test_f16(void) {
    /* Every finite or infinite half survives f16 -> f32 -> f16. */
    for (uint32_t h = 0; h < 0x10000; h++) {
        float f = qkref_f16_to_f32((uint16_t)h);
        if (isnan(f) != (((h >> 10) & 31) == 31 && (h & 1023))) expect("f16 nan", h, 0, 1);
        if (!isnan(f)) expect("f16 round trip", h, qkref_f32_to_f16(f), h);
    }
    expect("f16 value", 0x3c00, qkref_f16_to_f32(0x3c00), 1.0);
    expect("f16 value", 0x0001, qkref_f16_to_f32(0x0001), ldexp(1, -24));
    expect("f16 value", 0x7bff, qkref_f16_to_f32(0x7bff), 65504.0);
    /* Rounding: ties to even in the normal and subnormal ranges, overflow. */
    struct {
        float f;
        uint16_t h;
    } cases[] = {
        {1.0f + 0x1p-11f, 0x3c00},
        {1.0f + 0x3p-11f, 0x3c02},
        {1.0f + 0x1.2p-11f, 0x3c01},
        {65519.0f, 0x7bff},
        {65520.0f, 0x7c00},
        {-1e30f, 0xfc00},
        {0x1p-25f, 0x0000},
        {0x1.01p-25f, 0x0001},
        {0x3p-25f, 0x0002},
        {0x1p-14f - 0x1p-26f, 0x0400},
        {-0x1p-24f, 0x8001},
        {0x1.ffcp-15f, 0x0400},
        {0x1p-14f - 0x1.8p-25f, 0x03ff},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        expect("f32->f16", i, qkref_f32_to_f16(cases[i].f), cases[i].h);
#ifdef __FLT16_MAX__
    /* Where the compiler has a native half, it is a second opinion. */
    uint64_t rng = 1;
    for (int i = 0; i < 1000000; i++) {
        uint32_t u = (uint32_t)qkref_rand(&rng);
        if (i & 1) u = (u & 0x8fffffff) | 0x30000000; /* exponents near the f16 range */
        float f;
        memcpy(&f, &u, sizeof f);
        if (isnan(f)) continue;
        __extension__ _Float16 n = (_Float16)f;
        uint16_t want;
        memcpy(&want, &n, sizeof want);
        if (qkref_f32_to_f16(f) != want)
            expect("f32->f16 vs _Float16", u, qkref_f32_to_f16(f), want);
    }
#endif
}

static void test_random(void) {
    size_t n;
    const qkref_format *f = qkref_formats(&n);
    uint64_t rng = 42;
    for (size_t i = 0; i < n; i++) {
        uint8_t blocks[16 * 210];
        double y[16 * 256];
        qkref_random_blocks(&f[i], &rng, blocks, 16);
        qkref_dequant_row(&f[i], blocks, 16 * f[i].elements, y);
        for (size_t j = 0; j < 16 * f[i].elements; j++)
            if (!isfinite(y[j]) || fabs(y[j]) > 1e4) expect(f[i].name, j, y[j], 0);
        if (qkref_find(f[i].name) != &f[i]) expect("qkref_find", i, 0, 1);
    }
    static const uint32_t bits[] = {2, 3, 4, 5, 6, 8};
    static const char *types[] = {"bf16", "f16", "f32"};
    for (int b = 0; b < 6; b++) {
        for (int t = 0; t < 3; t++) {
            uint32_t w[4 * 128 * 8 / 32];
            float s[4 * 128 / 32], bias[4 * 128 / 32];
            double y[128];
            qkref_mlx_random(bits[b], 32, types[t], &rng, 4, 128, w, s, bias);
            for (int r = 0; r < 4; r++) {
                size_t stride = strcmp(types[t], "f32") == 0 ? 4 : 2;
                qkref_mlx_dequant_row(bits[b], 32, types[t], w + r * 128 * bits[b] / 32,
                                      (uint8_t *)s + r * 4 * stride,
                                      (uint8_t *)bias + r * 4 * stride, 128, y);
                for (int j = 0; j < 128; j++)
                    if (!isfinite(y[j]) || fabs(y[j]) > 300) expect("mlx random", j, y[j], 0);
            }
        }
    }
}

int main(void) {
    test_q4_0();
    test_q8_0();
    test_q3_K();
    test_q4_K();
    test_mlx3();
    test_mlx6();
    test_f16();
    test_random();
    if (failures) {
        printf("test_qkref: %d failures\n", failures);
        return 1;
    }
    printf("test_qkref: ok\n");
    return 0;
}
