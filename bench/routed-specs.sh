#!/usr/bin/env bash
# Writes to DIR (default build-gpu/routed-specs) the restricted copy of specs/
# that the routed MoE runs of bench/RESULTS.md (run 52 on) benchmarked: copy;
# the mat-vec tiles over routed pairs (matmul_id_xq, matmul_id_xq_global,
# matmul_id_xs; NR1 up to 16, TPR up to 32); the MoE kernels they compete
# with: the per-pair mat-vec forms (matvec_id_xq, matvec_id_xq_global,
# matvec_id_xs, matvec_id_xs_global) and the tiled matmul_id /
# matmul_id_shared restricted as in prefill-specs.sh; the seven formats of the
# standard set, no fusion. Then:
#   bash bench/build-gpu.sh build-gpu/routed-specs
# and on the GPU machine (RESULTS.md, "Reproduce"):
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family moe_matmul --m 768 --k 2048 --experts 128 --top-k 8 --tokens 32
. "$(dirname "$0")/specs-copy.sh" build-gpu/routed-specs "$@"
cp specs/kernels/{copy,matvec_id_xq,matvec_id_xq_global,matvec_id_xs,matvec_id_xs_global}.yaml "$k/"
cp specs/kernels/{matmul_id_xq,matmul_id_xq_global,matmul_id_xs,matmul_id,matmul_id_shared}.yaml "$k/"
sed -i 's/^fusions: .*/fusions: [none]/' "$k"/*.yaml
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K, mlx4_g64]/' "$k/matmul_id.yaml" "$k/matvec_id_xs.yaml"
sed -i 's/^formats: .*/formats: [iq4_nl]/' "$k/matmul_id_xs.yaml"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl]/' "$k/matmul_id_shared.yaml"
# run 52's wider search (the committed specs keep its winners' neighbourhood)
sed -i 's/^  NR1: \[2, 4\] .*/  NR1: [2, 4, 8, 16]/; s/^  TPR: \[8, 16\] .*/  TPR: [8, 16, 32]/' "$k/matmul_id_xq.yaml"
sed -i 's/^  NR1: \[2, 4\] .*/  NR1: [2, 4, 8, 16]/; s/^  TPR: \[16\] .*/  TPR: [16, 32]/' "$k/matmul_id_xq_global.yaml"
sed -i 's/^mma: .*/mma: [coopmat]/; s/^  NK: .*/  NK: [64]/; s/^  NR0: .*/  NR0: [64, 128]/;
        s/^  WG: .*/  WG: [256]/; s/^  NR1: .*/  NR1: [16, 32, 64]/' "$k/matmul_id.yaml" "$k/matmul_id_shared.yaml"
echo "wrote $dir"
