// matvec_mma: y[t][r] = sum_k W[r][k] * x[t][k] for a few tokens (NR1 <= 16)
// on the tensor cores (VK_NV_cooperative_matrix, or VK_KHR_cooperative_matrix
// under MMA_coopmat_khr; f16 x f16 + f32). The
// f32 mat-vec kernels spend a decode and NR1 FMAs per weight; here each
// weight costs its decode and one f16 store whatever NR1 is, and the token
// dimension rides in the 16 columns of a 16 x 16 x 16 product.
//
// A workgroup owns NR0 rows (16 or 32) and NR1 tokens; its WG / 32 subgroups
// split K and never wait for each other until the end:
// - a subgroup takes chunks of NK elements (whole blocks) of each row:
//   LPR = 32 / NR0 lanes share a row, lane (r, h) holds chunk c0 + h of row r
//   in registers (staged: true, aligned vector loads; without staging, as
//   matvec_mma_global for q6_K and MLX, the hooks read memory in place),
//   and with it its activations for the whole chunk, packed to f16 (one
//   wait on memory per chunk, not one per slice);
// - per slice of NR0 positions of the chunk, every lane dequantizes its
//   NR0 weights through the format hooks and stores them as f16 in the
//   subgroup's own 32-wide weight tile; 4 * NR1 lanes store the matching
//   activations (NR1 tokens x 32) in the activation tile; then two 16-deep
//   products per 16-row block accumulate in f32 matrices;
// - at the end each subgroup stores its sums over its own tiles, and one
//   workgroup barrier lets the invocations add the subgroups' parts.
//
// Tiles hold a slice in the hooks' order (include/tile_load.glsl explains
// why any order works when weights and activations agree): a hook call's
// QK_SUB_N values are contiguous, 8 f16 per 16-byte store. Rows are 40 f16
// (80 bytes: 16-byte aligned for coopMatLoadNV, and an odd number of 16-byte
// units, so the 8 lanes of a store phase hit distinct banks).
//
// f16 holds magnitudes up to 65504: past that a staged value is inf and so
// is the result, as in matmul.comp. Tokens past T and rows past M are
// clamped, computed and not stored; activation columns NR1..15 are zero.

#define CM           16u
#define NSG          (WG / 32u)  // subgroups of 32 (NVIDIA's; the spec's rule)
#define LPR          (32u / NR0) // lanes per row
#define SLW          NR0         // positions per lane and slice: LPR * SLW = 32
#define TSW          5u          // tile row stride in uvec4: 32 f16 + 8 padding
#define A_WORDS      (NR0 * TSW)
#define SG_WORDS     ((NR0 + CM) * TSW)
#define CHUNK_BLOCKS (NK / QK)
#define STEP         (NSG * LPR) // chunks a workgroup takes per step of a row
#include "include/coopmat.glsl"

// Per subgroup: the weight tile (NR0 rows), then the activation tile (16
// columns, column-major: column t is token t's 32 positions). After the loop
// the same words hold the subgroup's NR0 x 16 f32 sums, column-major.
shared uvec4 qk_tile[NSG * SG_WORDS];

#include "include/matvec_cols.glsl"
#include "include/pack.glsl"

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint M = pc.M, K = pc.K;
    const uint lid = gl_LocalInvocationID.x, sg = lid / 32u, lane = lid % 32u;
    const uint r = lane % NR0, h = lane / NR0;
    const uint row0 = gl_WorkGroupID.x * NR0, tok0 = gl_WorkGroupID.y * NR1;
    const uint nb = K / QK, nchunks = K / NK;
    const uint sgbase = sg * SG_WORDS;

    uint toks[NR1], ncols;
    const uint expert_blk = qk_mv_columns(tok0, toks, ncols);
    const uint rowblk = expert_blk + min(row0 + r, M - 1u) * nb;
    // this lane's activation unit of each slice: token xt, tile positions
    // xp0 .. xp0 + 7, which come from chunk c + xp0 / SLW at position
    // s * SLW + xp0 % SLW (lanes past 4 * NR1 units have none)
    const uint xt = min(lane / 4u, NR1 - 1u), xp0 = (lane % 4u) * 8u;
    const uint xrow = toks[xt];

    const uint abase = sgbase, bbase = sgbase + A_WORDS;
    for (uint i = lane; i < (CM - NR1) * TSW; i += 32u)
        qk_tile[bbase + NR1 * TSW + i] = uvec4(0u);

    QK_F32MAT acc[NR0 / CM];
    [[unroll]] for (uint i = 0; i < NR0 / CM; i++) acc[i] = QK_F32MAT(0.0);

    for (uint c0 = sg * LPR; c0 < nchunks; c0 += STEP) { // uniform in the subgroup
        const bool have = c0 + h < nchunks;              // false only in a last, partial step
#ifdef QK_STAGED
        if (have) qk_stage_load(0u, 0u, (rowblk + (c0 + h) * CHUNK_BLOCKS) * QK_BYTES);
        const uint wblk0 = 0u;
#else
        const uint wblk0 = rowblk + min(c0 + h, nchunks - 1u) * CHUNK_BLOCKS;
#endif
        // this lane's activations of every slice of the chunk, loaded with the
        // weights so that one wait covers both (a load per slice would wait
        // on the cache once per slice)
        uvec4 xpk[NK / SLW];
        [[unroll]] for (uint s = 0; s < NK / SLW; s++) {
            const uint q = s * SLW + xp0 % SLW;
            const uint c = min(c0 + xp0 / SLW, nchunks - 1u);
            const uint xb = xrow + c * NK + (q / QK) * QK;
            const uint sub = (q % QK) / QK_SUB_N, i0 = q % QK_SUB_N;
            xpk[s] = qk_pack8_x(xb, 0u, sub, i0);
        }
        [[unroll]] for (uint s = 0; s < NK / SLW; s++) {
            [[unroll]] for (uint j = 0; j < SLW / QK_SUB_N; j++) {
                const uint q = s * SLW + j * QK_SUB_N; // position in the chunk
                float w[QK_SUB_N];
                qk_dequant_sub(0u, wblk0 + q / QK, (q % QK) / QK_SUB_N, w);
                [[unroll]] for (uint i = 0; i < QK_SUB_N; i += 8u) {
                    // packed before the select: a ?: with a call in it becomes
                    // a branch (include/tile_load.glsl)
                    const uvec4 v = qk_pack8_w(w, i);
                    qk_tile[abase + r * TSW + (h * SLW + j * QK_SUB_N + i) / 8u] = have ? v : uvec4(0u);
                }
            }
            if (lane < 4u * NR1) qk_tile[bbase + xt * TSW + xp0 / 8u] = xpk[s];
            subgroupMemoryBarrierShared();
            subgroupBarrier();
            [[unroll]] for (uint kk = 0; kk < 2u; kk++) { // two 16-deep products
                QK_BMAT b;
                QK_LOAD_COLS(b, qk_tile, bbase + 2u * kk, TSW);
                [[unroll]] for (uint i = 0; i < NR0 / CM; i++) {
                    QK_AMAT a;
                    QK_LOAD_ROWS(a, qk_tile, abase + i * CM * TSW + 2u * kk, TSW);
                    acc[i] = QK_MULADD(a, b, acc[i]);
                }
            }
            subgroupBarrier(); // the tiles are read before the next slice
        }
    }

    // sums of rows i * 16.. at float (sgbase * 4) + t * NR0 + i * 16 + row
    [[unroll]] for (uint i = 0; i < NR0 / CM; i++)
        QK_STORE_COLS(acc[i], qk_tile, sgbase + i * 4u, NR0 / 4u);
    barrier();
    for (uint o = lid; o < NR0 * NR1; o += WG) {
        const uint rr = o % NR0, t = o / NR0, f = t * NR0 + rr;
        float sum = 0.0;
        for (uint g = 0; g < NSG; g++) sum += uintBitsToFloat(qk_tile[g * SG_WORDS + f / 4u][f % 4u]);
        if (row0 + rr < M && tok0 + t < ncols) y[(tok0 + t) * M + row0 + rr] = sum;
    }
}
