// Activations rounded to signed bytes per 32-element group, as llama.cpp's
// q8_1: xq = round(x * (127 / max|x|)), dx = max|x| / 127 and sx = dx *
// sum(xq), so that for weights w = a * code + b
//     sum w * (dx * xq) = a * dx * sum(code * xq) + b * sx.
// matvec_xq.comp rounds them per workgroup into shared memory;
// quantize_q8.comp rounds them once into global memory as q8 rows, which the
// int8-dot kernels with an xq binding read (cli/ops.c qk_round_x8 is the
// host's copy of the rounding).
//
// q8 rows: row r of K activations (K % 64 == 0) takes 5 K / 4 bytes from
// byte 5 K / 4 * r: its K codes, signed bytes in order, then per group g the
// floats (dx, sx) at byte K + 8 g of the row. Every row and its codes start
// on 16 bytes, so a group's codes are two aligned uvec4 loads.

// x * s for four floats (|x * s| <= 127.5) rounded to nearest (even) as
// signed bytes: 1.5 * 2^23 + p holds round(p) in the low bits of its
// mantissa. The product is `precise`, rounded to f32 before the add (no fma
// contraction), as cli/ops.c qk_round_x8 computes it. Run 49: 1-7% faster at
// 4 and 8 tokens than packSnorm4x8.
uint qk_pack_i8x4(vec4 x, float s) {
    precise vec4 p = x * s;
    const uvec4 b = floatBitsToUint(p + 12582912.0) & 0xffu;
    return b.x | (b.y << 8) | (b.z << 16) | (b.w << 24);
}

// 127 / max|x| of a group, 0 for a group of zeros
float qk_q8_scale(float amax) {
    return amax > 0.0 ? 127.0 * (1.0 / amax) : 0.0;
}

// Byte of q8 row data for the activation row starting at element xo = r * K.
uint qk_q8_row(uint xo) {
    return xo + xo / 4u;
}
