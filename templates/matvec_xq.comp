// matvec_xq: y[t][r] = sum_k W[r][k] * x[t][k] for up to NR1 tokens on 8-bit
// integer dot products (math path dot8), for the few-token decode where the
// f32 kernels spend an instruction per weight and token.
//
// The workgroup quantizes its activations, 8 * WG per token at a time, into
// shared memory as llama.cpp's q8_1 does: per 32-element group of a token,
// signed bytes xq = round(x * (127 / max|x|)), dx = max|x| / 127 and sx = dx *
// sum(xq). The weights are staged in registers as in matvec_staged.comp, and
// the format's int8 hooks give each 32-element group of a block as signed
// byte codes with w = a * code + b:
//     sum w * (dx * xq) = a * dx * sum(code * xq) + b * sx
// so a group of 32 weights costs eight dp4a per token, and its activations
// 40 bytes of shared memory instead of 128. The result is the product with
// the activations so rounded (cli/ops.c qk_round_x8 for the references); it
// differs from the f32 kernels' by NMSE ~1e-5 on uniform data.
//
// Format hooks (int8_dot: true in the format's YAML):
//   void qk_codes8(uint m, uint blk, uint g, out uint q[8])
//       word i: elements 4i .. 4i + 3 of group g of block blk, signed bytes
//       (where the format defines QK_DOT8_EVEN_ODD, words 2k and 2k + 1 hold
//       the even and the odd elements of 8k .. 8k + 7, and the workgroup
//       rounds its activations into the same order: MLX's nibbles);
//   vec3 qk_affine8(uint m, uint blk, uint g)
//       (a of elements 0-15, a of elements 16-31, b); the two scales differ
//       only where the format defines QK_DOT8_HALVES (q6_K's 16-element scales);
//   vec4 qk_affine8(uint m, uint blk, uint g), where it defines QK_DOT8_MINS
//       as well (q2_K's 16-element minima): (a, a', b, b'), b' for elements
//       16-31, whose activation sums the kernel then keeps apart.
//
// Without QK_STAGED (staged: false, matvec_xq_global) the hooks read the
// weights in place: MLX's planar formats.
//
// Lanes, rows and the final sums as in matvec_staged.comp
// (include/matvec_lanes.glsl); so are the MoE form (an ids binding, NR1 = 1)
// and the routed MoE form (ids and tpe bindings, family matmul_id: grid z is
// the expert, the NR1 columns its pairs, so each expert's rows are read once
// for up to NR1 of its pairs; include/matvec_cols.glsl).
//
// A chunk may be a part of a block (NK < QK: the format's `parts` in its YAML,
// QK_PART_N from the generator): lane by lane a row then has QK / NK times as
// many chunks, each of fewer staged words, which is what a short row (an
// expert's K = 2048 is 8 blocks of q4_K) needs to keep its lanes busy. The
// format's GLSL then defines
//   void qk_stage_part(uint slot, uint m, uint blk, uint p)
//       stages what part p (of QK_PART_N) of block blk of weight matrix m
//       needs into the first words of qk_stage[slot] (a block's words at most);
//   void qk_part_codes8(uint slot, uint p, uint g, out uint q[8])
//   vec3 qk_part_affine8(uint slot, uint p, uint g)
//       the int8 hooks for group g (0 .. NK / 32) of the staged part p.
//
// The swiglu fusion (the MoE decode form's gate and up): two weight matrices
// share each slab, an invocation stages and multiplies its rows of both
// (slots and accumulators s = m * NR0 + r) and the final sums store
// silu(gate) * up (include/matvec_lanes.glsl).
//
// Two more forms: pre-quantized activations (an xq binding, matvec_xq_pre:
// quantize_q8 wrote them as q8 rows, include/q8.glsl, and the slabs copy
// their codes instead of rounding floats), and split K (a scratch binding,
// matvec_xq_split: grid z is one of SK runs of K, and the splits' sums meet
// in qk_lanes_store).

// moe_combine's lanes form (slots: lanes in specs/kernels/moe_combine.yaml):
// the MoE form's down projection, its N rows weighted and summed over each
// token's top_k pairs, the residual added and the row normalised, all in the
// store (include/combine_lanes.glsl).
#ifdef AXIS_slots_lanes
#define QK_MV_M pc.N
#define QK_MV_NE11 pc.top_k
#endif

#include "include/dot8.glsl"
#include "include/q8.glsl"
#include "include/matvec_lanes.glsl"

#define XQ_TOKEN (8u * WG)             // activations per token and slab: 8 per invocation
#define XQ_CHUNKS (XQ_TOKEN / NK)       // chunks per token and slab
#define XQ_GROUPS (XQ_TOKEN / 32u)      // 32-element groups per token and slab
#define XQ_STRIDE (NK / 16u + 1u)       // uvec4s per chunk: padded, so the lanes' loads miss each other's banks
#ifdef QK_PART_N
#ifndef QK_STAGED
#error "a part of a block is staged by the format (qk_stage_part): in-place reads take whole blocks"
#endif
#define XQ_BLOCKS 1u // blocks a chunk touches
#define XQ_BLOCK_N NK // and their elements in it
#else
// A 32-element group is a block, a part of one, or (blocks of 16 read in
// place: MLX's nvfp4 groups) two blocks, whose hooks then take the first
// (XQ_BLOCK_STEP of them a group) and group 0.
#define XQ_BLOCK_N max(QK, 32u)
#define XQ_BLOCKS (NK / XQ_BLOCK_N)
#endif
#define XQ_BLOCK_STEP (XQ_BLOCK_N / QK)

// qk_red (include/matvec_lanes.glsl) holds the quantizer's per-run maxima
// during the slabs, rows 0 .. NR1 - 1: its partial sums come after the last.
shared uvec4 qk_xq[NR1][XQ_CHUNKS * XQ_STRIDE];
shared float qk_xdx[NR1][XQ_GROUPS]; // dx of each group
#ifdef BINDING_xq
#ifdef QK_DOT8_EVEN_ODD
#error "q8 rows (quantize_q8) are in K order: a format's QK_DOT8_EVEN_ODD must leave them out"
#endif
shared float qk_xsx[NR1][XQ_GROUPS]; // sx of each group

// Copies the slab of chunks c0 .. c0 + n of every column's q8 row (byte
// xrow[t]) into qk_xq, qk_xdx and qk_xsx: a uvec4 of codes and a group's
// (dx, sx) per invocation at most.
void load_slab(uint lid, const uint xrow[NR1], uint c0, uint n) {
    const uint nv = n * (NK / 16u), ng = n * (NK / 32u);
    [[unroll]] for (uint t = 0; t < NR1; t++) {
        if (lid < nv)
            qk_xq[t][lid / (NK / 16u) * XQ_STRIDE + lid % (NK / 16u)] = xq4[(xrow[t] + c0 * NK) / 16u + lid];
        if (lid < ng) {
            const uint s = (xrow[t] + pc.K) / 4u + 2u * (c0 * (NK / 32u) + lid);
            qk_xdx[t][lid] = uintBitsToFloat(xq[s]);
            qk_xsx[t][lid] = uintBitsToFloat(xq[s + 1u]);
        }
    }
}
#else
shared int qk_xsum[NR1][XQ_GROUPS];  // sum of its codes: sx = dx * sum

// Quantizes the slab of chunks c0 .. c0 + n of every token into qk_xq, qk_xdx
// and qk_xsum: invocation lid takes elements 8 lid .. 8 lid + 7 of each
// token, and the four invocations of a group meet through shared memory.
// Elements past the slab's end are zeros.
void quantize_slab(uint lid, const uint toks[NR1], uint c0, uint n) {
    const uint e = 8u * lid, g = lid / 4u;
    const bool live = e < n * NK;
    const uint ec = c0 * NK + min(e, n * NK - 8u); // in bounds even when dead
    vec4 v[NR1][2];
    [[unroll]] for (uint t = 0; t < NR1; t++) {
        v[t][0] = live ? x4[(toks[t] + ec) / 4u] : vec4(0.0);
        v[t][1] = live ? x4[(toks[t] + ec) / 4u + 1u] : vec4(0.0);
        const vec4 a = max(abs(v[t][0]), abs(v[t][1]));
        qk_red[t][lid] = max(max(a.x, a.y), max(a.z, a.w));
        if ((lid & 3u) == 0u) qk_xsum[t][g] = 0;
    }
    barrier();
    const uint cl = e / NK, w = (e % NK) / 4u; // chunk, word in chunk (even)
    const uint slot = cl * XQ_STRIDE + w / 4u;
    [[unroll]] for (uint t = 0; t < NR1; t++) {
        const uint g0 = lid & ~3u;
        const float amax = max(max(qk_red[t][g0], qk_red[t][g0 + 1u]), max(qk_red[t][g0 + 2u], qk_red[t][g0 + 3u]));
        const float scale = qk_q8_scale(amax);
        // round(127 * x / amax) as signed bytes
#ifdef QK_DOT8_EVEN_ODD
        // the format's code order: the even elements of the eight, then the odd
        const uint lo = qk_pack_i8x4(vec4(v[t][0].xz, v[t][1].xz), scale);
        const uint hi = qk_pack_i8x4(vec4(v[t][0].yw, v[t][1].yw), scale);
#else
        const uint lo = qk_pack_i8x4(v[t][0], scale), hi = qk_pack_i8x4(v[t][1], scale);
#endif
        if ((w & 2u) == 0u) {
            qk_xq[t][slot].xy = uvec2(lo, hi);
        } else {
            qk_xq[t][slot].zw = uvec2(lo, hi);
        }
        atomicAdd(qk_xsum[t][g], qk_sdot4(lo, 0x01010101u, qk_sdot4(hi, 0x01010101u, 0)));
        if ((lid & 3u) == 0u) qk_xdx[t][g] = amax / 127.0;
    }
}

#endif

#ifdef QK_DOT8_MINS
#define QK_AFFINE8 vec4
#else
#define QK_AFFINE8 vec3
#endif

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint lid = gl_LocalInvocationID.x, lane = lid % TPR, nchunks = pc.K / NK;
    uint rowblk[NR0], toks[NR1], ncols;
    if (!qk_lanes_setup(lid, rowblk, toks, ncols)) return;

    // rows s = m * NR0 + r: weight matrix m's row r (QK_LANES_ROWS = NR0 but
    // under the swiglu fusion)
    float acc[QK_LANES_ROWS][NR1];
    [[unroll]] for (uint s = 0; s < QK_LANES_ROWS; s++)
        [[unroll]] for (uint t = 0; t < NR1; t++) acc[s][t] = 0.0;

#ifdef BINDING_xq
    uint xrow[NR1]; // each column's q8 row
    [[unroll]] for (uint t = 0; t < NR1; t++) xrow[t] = qk_q8_row(toks[t]);
#endif
#if defined(BINDING_scratch) && !defined(AXIS_slots_lanes)
    // split K: split z of SK takes an equal run of the chunks
    const uint per = (nchunks + SK - 1u) / SK, kbeg = min(gl_WorkGroupID.z * per, nchunks);
    const uint kend = min(kbeg + per, nchunks);
#else
    const uint kbeg = 0u, kend = nchunks;
#endif
    for (uint c0 = kbeg; c0 < kend; c0 += XQ_CHUNKS) {
        const uint cend = min(c0 + XQ_CHUNKS, kend);
        barrier(); // every lane is done with the previous slab
#ifdef BINDING_xq
        load_slab(lid, xrow, c0, cend - c0);
#else
        quantize_slab(lid, toks, c0, cend - c0);
#endif
        barrier();
        for (uint c = c0 + lane; c < cend; c += TPR) {
#ifdef QK_PART_N
            // every row's part in flight before the first use
            const uint part = c % QK_PART_N;
            [[unroll]] for (uint s = 0; s < QK_LANES_ROWS; s++)
                qk_stage_part(s, s / NR0, rowblk[s % NR0] + c / QK_PART_N, part);
#elif defined(QK_STAGED)
            // every row's chunk in flight before the first use
            [[unroll]] for (uint s = 0; s < QK_LANES_ROWS; s++)
                qk_stage_load(s, s / NR0, (rowblk[s % NR0] + c * CHUNK_BLOCKS) * QK_BYTES);
#endif
            const uint cl = c - c0;
            [[unroll]] for (uint b = 0; b < XQ_BLOCKS; b++) {
                [[unroll]] for (uint g = 0; g < XQ_BLOCK_N / 32u; g++) {
                    const uint e = b * XQ_BLOCK_N + 32u * g; // element of the chunk
                    // the rows' codes once, then one token's activations at a time:
                    // 8 NR0 registers of codes, 8 of activations
                    uint q[QK_LANES_ROWS][8];
                    QK_AFFINE8 ab[QK_LANES_ROWS];
                    [[unroll]] for (uint s = 0; s < QK_LANES_ROWS; s++) {
#ifdef QK_PART_N
                        qk_part_codes8(s, part, g, q[s]); // slot s, group g of the part
                        ab[s] = qk_part_affine8(s, part, g);
#elif defined(QK_STAGED)
                        qk_codes8(s, b, g, q[s]); // slot s, block b of the chunk
                        ab[s] = qk_affine8(s, b, g);
#else
                        // read in place (matvec_xq_global): matrix s / NR0, the global block
                        const uint blk = rowblk[s % NR0] + c * CHUNK_BLOCKS + b * XQ_BLOCK_STEP;
                        qk_codes8(s / NR0, blk, g, q[s]);
                        ab[s] = qk_affine8(s / NR0, blk, g);
#endif
                    }
                    const uint gx = (cl * NK + e) / 32u;
                    [[unroll]] for (uint t = 0; t < NR1; t++) {
                        const uvec4 xa = qk_xq[t][cl * XQ_STRIDE + e / 16u];
                        const uvec4 xb = qk_xq[t][cl * XQ_STRIDE + e / 16u + 1u];
#ifdef BINDING_xq
                        const float dx = qk_xdx[t][gx], sx = qk_xsx[t][gx];
#else
                        const float dx = qk_xdx[t][gx], sx = dx * float(qk_xsum[t][gx]);
#endif
#ifdef QK_DOT8_MINS
                        // the first half's activation sum from its codes, the second's the rest
                        int h0 = 0;
                        [[unroll]] for (uint i = 0; i < 4u; i++) h0 = qk_sdot4(xa[i], 0x01010101u, h0);
                        const float sx0 = dx * float(h0), sx1 = sx - sx0;
#endif
                        [[unroll]] for (uint s = 0; s < QK_LANES_ROWS; s++) {
                            int s0 = 0, s1 = 0;
                            [[unroll]] for (uint i = 0; i < 4u; i++) s0 = qk_sdot4(q[s][i], xa[i], s0);
                            [[unroll]] for (uint i = 0; i < 4u; i++) s1 = qk_sdot4(q[s][4u + i], xb[i], s1);
#ifdef QK_DOT8_HALVES
                            const float dot = fma(ab[s].x, float(s0), ab[s].y * float(s1));
#else
                            const float dot = ab[s].x * float(s0 + s1);
#endif
#ifdef QK_DOT8_MINS
                            acc[s][t] = fma(dot, dx, fma(ab[s].z, sx0, fma(ab[s].w, sx1, acc[s][t])));
#else
                            acc[s][t] = fma(dot, dx, fma(ab[s].z, sx, acc[s][t]));
#endif
                        }
                    }
                }
            }
        }
    }

    qk_lanes_store(lid, acc, ncols);
}
