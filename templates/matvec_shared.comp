// matvec_shared: y[t][r] = sum_k W[r][k] * x[t][k] for up to NR1 tokens, built
// so that every memory instruction of a warp touches as few cache lines as
// possible (on NVIDIA the L1 pays per line touched, and one-token mat-vec is
// bound there long before DRAM):
//
// - a workgroup owns NR0 rows and walks K in steps of KG = WG / NR0 chunks of
//   NK elements; each step it copies its NR0 x (KG chunks) tile to shared
//   memory with aligned vector loads that run contiguously along each row
//   (a warp reads 512 contiguous bytes per instruction where SV = 4);
// - invocation (row lr = id % NR0, group g = id / NR0) then dequantizes chunk
//   g of row lr from shared memory (include/bytes.glsl, QK_STAGE_SHARED): a
//   warp's lanes are consecutive rows at one offset, which an odd row stride
//   keeps on distinct banks, and they all want the same activations, which
//   the hardware broadcasts from one line;
// - the next step's tile is loaded into registers before this step's math,
//   so a step's DRAM reads overlap the previous step's arithmetic.
// Partial sums of the KG groups meet in shared memory.
//
// MoE form (an ids binding, NR1 = 1): column p of the grid is the pair
// p = token * top_k + slot (include/matvec_cols.glsl), writing row p of
// y [tokens, top_k, M]; as in matvec.comp.

#define KG (WG / NR0)
#define SW QK_STAGE_WORDS
#define SV QK_STAGE_VEC
#define NVEC (SW / SV) // vector loads per invocation per step

// The tile (include/bytes.glsl, QK_STAGE_SHARED): NR0 rows of WG / NR0 chunks
// each, a row's chunks side by side. The row stride in words is odd, so
// invocations reading one offset of consecutive rows hit distinct banks;
// qk_sh_base is the word of this invocation's chunk.
#define QK_SH_STRIDE ((WG / NR0 * QK_STAGE_WORDS) | 1u)
shared uint qk_sh[NR0 * QK_SH_STRIDE];
uint qk_sh_base;

uint qk_word(uint m, uint w) {
    return qk_sh[qk_sh_base + w];
}

#include "include/matvec_cols.glsl"

void main() {
#ifdef QK_FORMAT_INIT
    qk_format_init(); // the format's shared table (include/lut.glsl)
#endif
    const uint M = pc.M, K = pc.K;
    const uint id = gl_LocalInvocationID.x, lr = id % NR0, g = id / NR0;
    const uint row0 = gl_WorkGroupID.x * NR0, tok0 = gl_WorkGroupID.y * NR1;
    const uint nb = K / QK, nchunks = K / NK;
    const uint nsteps = (nchunks + KG - 1) / KG;

    uint toks[NR1], ncols;
    const uint expert_blk = qk_mv_columns(tok0, toks, ncols);

    // This invocation's share of each step's tile: vector i = id + WG * j of
    // the tile is vector col of row tr, contiguous along the row.
    uint gvec[NVEC], svec[NVEC], cols[NVEC];
    [[unroll]] for (uint j = 0; j < NVEC; j++) {
        const uint i = id + WG * j, tr = i / (KG * NVEC);
        cols[j] = i % (KG * NVEC);
        const uint rowblk = expert_blk + min(row0 + tr, M - 1u) * nb;
        gvec[j] = rowblk * QK_BYTES / (4u * SV) + cols[j];
        svec[j] = tr * QK_SH_STRIDE + cols[j] * SV;
    }
    const uint rowvecs = nchunks * NVEC; // vectors in one row's K
    QK_VEC next[NVEC]; // vector v of a row's step: words [row * QK_SH_STRIDE + v * SV, + SV)
    [[unroll]] for (uint j = 0; j < NVEC; j++)
        if (cols[j] < rowvecs) next[j] = QK_VLOAD(0u, gvec[j]);

    float acc[NR1];
    [[unroll]] for (uint t = 0; t < NR1; t++) acc[t] = 0.0;
    qk_sh_base = lr * QK_SH_STRIDE + g * SW;

    for (uint s = 0; s < nsteps; s++) {
        barrier(); // every group is done with the previous tile
        [[unroll]] for (uint j = 0; j < NVEC; j++)
            if (s * KG * NVEC + cols[j] < rowvecs) {
                QK_VSTORE(qk_sh, svec[j], next[j]);
            }
        barrier();
        const uint step_vecs = (s + 1u) * KG * NVEC;
        if (s + 1u < nsteps) {
            [[unroll]] for (uint j = 0; j < NVEC; j++)
                if (step_vecs + cols[j] < rowvecs) next[j] = QK_VLOAD(0u, gvec[j] + step_vecs);
        }

        const uint c = s * KG + g;
        if (c < nchunks) {
            [[unroll]] for (uint b = 0; b < NK / QK; b++) {
                const uint e0 = (c * (NK / QK) + b) * QK;
                [[unroll]] for (uint sub = 0; sub < QK_SUBS; sub++) {
                    float w[QK_SUB_N];
                    qk_dequant_sub(0u, b, sub, w);
                    [[unroll]] for (uint t = 0; t < NR1; t++) {
                        float xv[QK_SUB_N];
                        load_x(toks[t], e0, sub, xv);
                        [[unroll]] for (uint i = 0; i < QK_SUB_N; i++)
                            acc[t] = fma(w[i], xv[i], acc[t]);
                    }
                }
            }
        }
    }

    // The KG partial sums of each (row, token) meet in the tile's words
    // (SW >= NR1, so NR0 * KG * NR1 words fit).
    barrier();
    [[unroll]] for (uint t = 0; t < NR1; t++) qk_sh[(g * NR0 + lr) * NR1 + t] = floatBitsToUint(acc[t]);
    barrier();
    for (uint o = id; o < NR0 * NR1; o += WG) {
        float sum = 0.0;
        for (uint k = 0; k < KG; k++) sum += uintBitsToFloat(qk_sh[k * NR0 * NR1 + o]);
        const uint r = row0 + o / NR1, t = tok0 + o % NR1;
        if (r < M && t < ncols) y[t * M + r] = sum;
    }
}
