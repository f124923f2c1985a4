#!/usr/bin/env bash
# Writes to DIR (default build-gpu/standard-specs) the copy of specs/ that
# bench/standard.sh times: the committed kernels of the standard set's four
# operations for its seven formats (q4_0 q8_0 q4_K q5_K q6_K iq4_nl, mlx4_g64
# with bf16 scales), no fusion, less the kernels that every earlier run found
# slower in every standard case (bench/RESULTS.md, docs/kernel-notes.md):
#  - the portable f32 mat-vec (matvec) but for its ids routing on q6_K, the
#    lane-staged one with direct f32 activations (matvec_lanes, activation
#    direct), matvec_shared: 1.4-2.1x slower than the int8-dot kernels (runs
#    44-46, 58); matvec's ids routing stays for q6_K: at K = 768 (MoE
#    m = 2048, rows of 630 bytes) it was q6_K's only kernel up to 5d971ca
#    (runs 88-91), and from 43461ad on it is the yardstick of the half-block
#    kernels that run there;
#  - matvec_mma, mat-vec on cooperative matrices: 1.3-2x slower than the
#    int8-dot kernels at 2-8 tokens (runs 46-55);
#  - the scalar path of the tiled matmuls: 3-10x slower than their
#    cooperative-matrix path on the H100 (runs 8-18).
# The f32 slab kernels stay (iq4_nl's and q6_K's winners in runs 55 and 61).
# The bundle fits the GPU machine's 64 MiB carry. Then:
#   bash bench/build-gpu.sh build-gpu/standard-specs
. "$(dirname "$0")/specs-copy.sh" build-gpu/standard-specs "$@"
cp specs/kernels/{copy,quantize_q8,matvec,matvec_lanes,matmul}.yaml "$k/"
exclude_points matvec "routing: [dense, separate]" "not in the standard set"
exclude_points matvec_lanes "activation: direct" "not in the standard set"
exclude_points matmul "mma: scalar" "not in the standard set"
keep_formats q4_0 q8_0 q4_K q5_K q6_K iq4_nl mlx4_g64
# matvec's ids routing for q6_K only (its axis values' format lists)
sed -i 's/^        formats: .*/        formats: [q6_K]/' "$k/matvec.yaml"
echo "wrote $dir"
