#!/usr/bin/env bash
# Writes to DIR (default build-gpu/xq-specs) the restricted copy of specs/ that
# the int8-dot runs of bench/RESULTS.md (run 44 on) benchmarked: copy, the
# int8-dot mat-vec kernels (matvec_xq, matvec_id_xq) and the kernels they
# compete with at 1 to 8 tokens (matvec_xs at 1 and 2 tokens, matvec_mma at 2
# to 8, matvec_id_xs), on the formats that have the int8 hooks (iq4_nl since
# run 55), no fusion.
# Then:
#   bash bench/build-gpu.sh build-gpu/xq-specs
# and on the GPU machine (RESULTS.md, "Reproduce"):
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family matvec --m 4096 --k 14336 --tokens 4
. "$(dirname "$0")/specs-copy.sh" build-gpu/xq-specs "$@"
cp specs/kernels/{copy,matvec_xs,matvec_mma,matvec_xq,matvec_id_xs,matvec_id_xq}.yaml "$k/"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K]/; s/^fusions: .*/fusions: [none]/' "$k"/matvec_*.yaml
# MLX (run 48): mlx4_g64 (specs-copy.sh) on the in-place forms of both
cp specs/kernels/{matvec_xs_global,matvec_id_xs_global,matvec_xq_global,matvec_id_xq_global}.yaml "$k/"
echo "wrote $dir"
