#!/usr/bin/env bash
# Writes to DIR (default build-gpu/prefill-specs) the restricted copy of specs/
# that runs 22-27, 62 and 73 of bench/RESULTS.md benchmarked: copy and the six
# prefill kernels (matmul, matmul_shared, their split-K forms matmul_split and
# matmul_shared_split, matmul_id, matmul_id_shared), coopmat path only, NK =
# 64, tiles of 64 and 128 rows, 256 invocations (and 512 and 1024 for
# matmul, matmul_split and matmul_shared_split, since run 73), the seven formats
# of the standard set (MLX as mlx4_g64 with bf16 scales) and no fusion, so
# that one device call verifies and times all of it. Then:
#   bash bench/build-gpu.sh build-gpu/prefill-specs
# and on the GPU machine (RESULTS.md, "Reproduce"):
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family matmul --runs 20 --warmup-ms 500
. "$(dirname "$0")/specs-copy.sh" build-gpu/prefill-specs "$@"
cp specs/kernels/{copy,matmul,matmul_shared,matmul_split,matmul_shared_split,matmul_id,matmul_id_shared}.yaml "$k/"
sed -i 's/^mma: .*/mma: [coopmat]/; s/^fusions: .*/fusions: [none]/; s/^  NK: .*/  NK: [64]/;
        s/^  NR0: .*/  NR0: [64, 128]/; s/^  WG: .*/  WG: [256]/' "$k"/matmul*.yaml
sed -i 's/^  NR1: .*/  NR1: [64, 128]/' "$k"/matmul{,_shared}{,_split}.yaml
sed -i 's/^  WG: .*/  WG: [256, 512, 1024]/' "$k"/matmul.yaml "$k"/matmul_split.yaml "$k"/matmul_shared_split.yaml
sed -i 's/^  NR1: .*/  NR1: [16, 32, 64]/' "$k/matmul_id.yaml" "$k/matmul_id_shared.yaml"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K, mlx4_g64]/' "$k"/matmul.yaml "$k"/matmul_split.yaml "$k"/matmul_id.yaml
echo "wrote $dir"
