// MLX affine: y = q * scale + bias per group, q a QK_P_bits-bit value of an
// LSB-first bit stream of u32 words (planes w, scales, biases; see mlx.yaml).
// A hook call of QK_SUB_N (32) elements is exactly QK_P_bits whole words, read
// once; with QK_P_bits and i constant, every shift and straddle test folds.
#include "include/linear.glsl"

#define QK_MLX_WORDS (QK_SUB_N * QK_P_bits / 32)
#define QK_MLX_MASK ((1u << QK_P_bits) - 1u)

// One element (include/dequant_elem.glsl): bits e * QK_P_bits on of the
// group's stream, which may straddle two words (3, 5 and 6 bits).
#define QK_DEQUANT_ELEM 1
float qk_dequant_elem(uint m, uint g, uint e) {
    const uint p = e * QK_P_bits, o = p & 31u;
    uint q = qkp_w(m, g, p >> 5) >> o;
    if (o + QK_P_bits > 32u) q |= qkp_w(m, g, (p >> 5) + 1u) << (32u - o);
    return fma(float(q & QK_MLX_MASK), qkp_scales(m, g, 0u), qkp_biases(m, g, 0u));
}

void qk_dequant_sub(uint m, uint g, uint sub, out float y[QK_SUB_N]) {
    float s = qkp_scales(m, g, 0u), b = qkp_biases(m, g, 0u);
    uint w[QK_MLX_WORDS];
#if defined(QKP_w_VEC4) && QK_MLX_WORDS % 4 == 0
    // 4 and 8 bits: the call's words are whole aligned uvec4s (16-byte loads)
    for (uint v = 0u; v < QK_MLX_WORDS / 4u; v++) {
        const uvec4 u = qkp_w4(m, g, sub * (QK_MLX_WORDS / 4u) + v);
        for (uint k = 0u; k < 4u; k++) w[4u * v + k] = u[k];
    }
#else
    for (uint k = 0u; k < QK_MLX_WORDS; k++) w[k] = qkp_w(m, g, sub * QK_MLX_WORDS + k);
#endif
    for (uint i = 0u; i < QK_SUB_N; i++) {
        const uint p = i * QK_P_bits, o = p & 31u;
        uint q = w[p >> 5] >> o;
        // a value that straddles two words (3, 5 and 6 bits) takes its top bits from the next
        if (o + QK_P_bits > 32u) q |= w[(p >> 5) + 1u] << (32u - o);
        y[i] = fma(float(q & QK_MLX_MASK), s, b);
    }
}

#if QK_P_bits == 4
// int8-dot hooks (int8_dot: true; templates/matvec_xq.comp), 4-bit values
// only (a rule of matvec_xq_global keeps the other widths out): group g of
// block (MLX group) blk is words 4g .. 4g + 3 of w, eight values each.
//
// Where the kernel rounds its activations itself, it does so in the order of
// these codes (QK_DOT8_EVEN_ODD): word 2k of a group holds elements 8k, 8k +
// 2, 8k + 4, 8k + 6 and word 2k + 1 the odd ones, so that the low and the
// high nibbles of weight word k are code words 2k and 2k + 1 at one AND
// each. Run 74: 2-9% faster at 1-8 tokens (one token 19.86 -> 19.09 us, four
// 25.47 -> 23.28). Rows rounded by quantize_q8 (an xq binding) are in K
// order, and the codes spread four values to four bytes instead (five
// operations a word): reordering each copied slab cost those kernels
// 1.1-1.9x in the same run.
#ifndef BINDING_xq
#define QK_DOT8_EVEN_ODD 1
#endif
uint qk_mlx_spread4(uint h) { // 16 bits, four values -> four bytes
    h = (h | (h << 8)) & 0x00ff00ffu;
    return (h | (h << 4)) & 0x0f0f0f0fu;
}

// The group's four words come in one 16-byte load (qkp_w4): run 84, against
// four word loads, MoE 8 tokens 26.91 -> 23.04 us, its routed 32 tokens
// 60.98 -> 44.29 (with 8 lanes a row), one token 4096 x 14336 19.22 -> 18.05.
void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    const uvec4 u = qkp_w4(m, blk, g);
    for (uint k = 0u; k < 4u; k++) {
        const uint w = u[k];
#ifdef QK_DOT8_EVEN_ODD
        q[2u * k] = w & 0x0f0f0f0fu;
        q[2u * k + 1u] = (w >> 4) & 0x0f0f0f0fu;
#else
        q[2u * k] = qk_mlx_spread4(w & 0xffffu);
        q[2u * k + 1u] = qk_mlx_spread4(w >> 16);
#endif
    }
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    float s = qkp_scales(m, blk, 0u);
    return vec3(s, s, qkp_biases(m, blk, 0u));
}
#else
// int8-dot hooks of the other widths, in K order: group g of block (MLX
// group) blk is words QK_P_bits * g on of w, 32 values of QK_P_bits bits.
// 2 bits: a byte of four values spreads to four bytes in two shift-and-mask
// steps; 8 bits: the bytes are the values, offset by 128 to be signed (the
// offset goes to b); 3, 5 and 6 bits: each value is a bit-field of one word
// or of two (a funnel shift), with every offset a constant once unrolled.
#define QK_MLX_OFFSET8 (QK_P_bits == 8 ? 128.0 : 0.0)
uint qk_mlx_spread2(uint h) { // 8 bits, four values -> four bytes
    h = (h | (h << 12)) & 0x000f000fu;
    return (h | (h << 6)) & 0x03030303u;
}

void qk_codes8(uint m, uint blk, uint g, out uint q[8]) {
    uint w[QK_P_bits];
#if defined(QKP_w_VEC4) && QK_P_bits == 8
    // the group's eight words in two 16-byte loads
    for (uint v = 0u; v < 2u; v++) {
        const uvec4 u = qkp_w4(m, blk, 2u * g + v);
        for (uint k = 0u; k < 4u; k++) w[4u * v + k] = u[k];
    }
#else
    [[unroll]] for (uint k = 0u; k < QK_P_bits; k++) w[k] = qkp_w(m, blk, QK_P_bits * g + k);
#endif
#if QK_P_bits == 8
    [[unroll]] for (uint i = 0u; i < 8u; i++) q[i] = w[i] ^ 0x80808080u;
#elif QK_P_bits == 2
    [[unroll]] for (uint k = 0u; k < 2u; k++)
        [[unroll]] for (uint b = 0u; b < 4u; b++) q[4u * k + b] = qk_mlx_spread2(bitfieldExtract(w[k], int(8u * b), 8));
#else
    [[unroll]] for (uint i = 0u; i < 8u; i++) {
        uint c = 0u;
        [[unroll]] for (uint b = 0u; b < 4u; b++) {
            const uint p = (4u * i + b) * QK_P_bits, o = p & 31u;
            uint v = w[p >> 5] >> o;
            if (o + QK_P_bits > 32u) v |= w[(p >> 5) + 1u] << (32u - o);
            c = bitfieldInsert(c, v, int(8u * b), QK_P_bits);
        }
        q[i] = c;
    }
#endif
}

vec3 qk_affine8(uint m, uint blk, uint g) {
    float s = qkp_scales(m, blk, 0u);
    return vec3(s, s, fma(QK_MLX_OFFSET8, s, qkp_biases(m, blk, 0u)));
}
#endif
