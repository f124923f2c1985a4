/* qk_f16_from_f32, the activations of kernels on f16 activations, against
 * every f16 value: each converts to itself; the points halfway between two
 * neighbours go to the even one, those a float step either side to the
 * nearer one; past 65504 (from 65520 on) is inf, NaN stays NaN, signs are
 * kept; subnormals round as the normal range does. */
#include "ops_matmul.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static int fails;

/* The value of f16 bits h (finite), exact in a float. */
static float f16_value(uint16_t h) {
    const int e = (h >> 10) & 31, m = h & 1023;
    const float v = e ? ldexpf((float)(1024 + m), e - 25) : ldexpf((float)m, -24);
    return h & 0x8000 ? -v : v;
}

static void expect(float x, uint16_t want, const char *what) {
    uint16_t got;
    qk_f16_from_f32(&x, 1, &got);
    if (got != want && fails++ < 20)
        fprintf(stderr, "FAIL %s: %.9g -> 0x%04x, want 0x%04x\n", what, x, got, want);
}

int main(void) {
    unsigned checked = 0;
    for (uint32_t s = 0; s < 2; s++)
        for (uint32_t u = 0; u < 0x7c00; u++) { /* every finite f16 of each sign */
            const uint16_t h = (uint16_t)(u | s << 15);
            const float v = f16_value(h);
            expect(v, h, "exact");
            if (u + 1 < 0x7c00) {
                /* halfway to the next magnitude: exact in a float */
                const float next = f16_value((uint16_t)(h + 1)), mid = (v + next) / 2;
                expect(mid, (u & 1) ? (uint16_t)(h + 1) : h, "halfway, to even");
                expect(nextafterf(mid, 0), h, "below halfway");
                expect(nextafterf(mid, s ? -INFINITY : INFINITY), (uint16_t)(h + 1),
                       "above halfway");
            }
            checked++;
        }
    expect(65504.0f, 0x7bff, "largest");
    expect(65519.99f, 0x7bff, "below the overflow point");
    expect(65520.0f, 0x7c00, "overflow point");
    expect(-1e30f, 0xfc00, "far past");
    expect(INFINITY, 0x7c00, "inf");
    expect(-INFINITY, 0xfc00, "-inf");
    expect(1e-30f, 0x0000, "underflow");
    expect(ldexpf(1.0f, -25), 0x0000, "half the smallest subnormal, to even");
    expect(nextafterf(ldexpf(1.0f, -25), 1.0f), 0x0001, "past half the smallest");
    expect(-0.0f, 0x8000, "-0");
    uint16_t nan;
    const float qnan = NAN;
    qk_f16_from_f32(&qnan, 1, &nan);
    if ((nan & 0x7c00) != 0x7c00 || !(nan & 0x3ff)) {
        fprintf(stderr, "FAIL NaN -> 0x%04x\n", nan);
        fails++;
    }
    printf("%u f16 values, their midpoints and neighbours: %s\n", checked, fails ? "FAIL" : "ok");
    return fails ? 1 : 0;
}
