#!/usr/bin/env bash
# Writes to DIR (default build-gpu/standard-specs) the copy of specs/ that
# bench/standard.sh times: the committed kernels of the standard set's four
# families for its seven formats (q4_0 q8_0 q4_K q5_K q6_K iq4_nl, mlx4_g64 with
# bf16 scales), no fusion, less the kernel families that every earlier run
# found slower in every standard case (bench/RESULTS.md):
#  - the f32 decode kernels matvec, matvec_staged, matvec_shared and their
#    `_id` forms: 1.4-2.1x slower than the int8-dot kernels (runs 44-46, 58);
#  - matvec_mma, mat-vec on cooperative matrices: 1.3-2x slower than the
#    int8-dot kernels at 2-8 tokens (runs 46-55);
#  - the scalar path of the tiled matmuls: 3-10x slower than their
#    cooperative-matrix path on the H100 (runs 8-18).
# The matvec_xs kernels stay (f32, but iq4_nl's and q6_K's winners in runs 55
# and 61), and so does matvec_id for q6_K: at K = 768 (MoE m = 2048, rows of
# 630 bytes) it was q6_K's only kernel up to 5d971ca (runs 88-91), and from
# 43461ad on it is the yardstick of the half-block kernels that run there.
# The bundle fits the GPU machine's 64 MiB carry. Then:
#   bash bench/build-gpu.sh build-gpu/standard-specs
. "$(dirname "$0")/specs-copy.sh" build-gpu/standard-specs "$@"
cp specs/kernels/{copy,quantize_q8}.yaml "$k/"
cp specs/kernels/{matvec_xq,matvec_xq_global,matvec_xq_split,matvec_xq_split_global}.yaml "$k/"
cp specs/kernels/{matvec_xq_pre,matvec_xq_pre_global,matvec_xs,matvec_xs_global,matvec_xs_split}.yaml "$k/"
cp specs/kernels/{matvec_id_xq,matvec_id_xq_global,matvec_id_xq_pre,matvec_id_xs,matvec_id_xs_global}.yaml "$k/"
cp specs/kernels/{matmul_id_xq,matmul_id_xq_global,matmul_id_xs}.yaml "$k/"
sed 's/^formats: .*/formats: [q6_K]/' specs/kernels/matvec_id.yaml > "$k/matvec_id.yaml"
cp specs/kernels/{matmul,matmul_shared,matmul_split,matmul_shared_split,matmul_id,matmul_id_shared}.yaml "$k/"
keep_formats q4_0 q8_0 q4_K q5_K q6_K iq4_nl mlx4_g64
sed -i 's/^mma: \[scalar, coopmat\]/mma: [coopmat]/' "$k"/*.yaml
echo "wrote $dir"
