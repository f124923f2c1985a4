// Half-precision pairs: two adjacent f16 fields of a block (d and m, d and
// dmin) come from one word read instead of two.

// The f16 values at byte b (even) and b + 2 of matrix m, as (first, second).
vec2 qk_f16x2(uint m, uint b) {
    return unpackHalf2x16(qk_u32(m, b));
}
