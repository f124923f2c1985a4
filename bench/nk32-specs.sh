#!/usr/bin/env bash
# Writes to DIR (default build-gpu/nk32-specs) the restricted copy of specs/
# of run 67 in bench/RESULTS.md: the unstaged matmul at NK 32 (two sets of
# tiles, one barrier a step) and 64, with workgroups of 256, 512 and 1024
# invocations, tiles of 64 and 128 rows and columns; the split-K forms with
# the same workgroups for 128 tokens. Coopmat path only, no fusion. Then:
#   bash bench/build-gpu.sh build-gpu/nk32-specs
# and on the GPU machine:
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family matmul --all-variants
. "$(dirname "$0")/specs-copy.sh" build-gpu/nk32-specs "$@"
cp specs/kernels/{copy,matmul,matmul_split,matmul_shared_split}.yaml "$k/"
sed -i 's/^mma: .*/mma: [coopmat]/; s/^fusions: .*/fusions: [none]/; s/^  NR0: .*/  NR0: [64, 128]/;
        s/^  NR1: .*/  NR1: [64, 128]/; s/^  WG: .*/  WG: [256, 512, 1024]/' "$k"/matmul*.yaml
sed -i 's/^  NK: .*/  NK: [32, 64]/' "$k"/matmul.yaml
sed -i 's/(WG != 256)/(WG < 256)/' "$k"/matmul_split.yaml "$k"/matmul_shared_split.yaml
sed -i 's/^formats: .*/formats: [q4_0, q4_K, q6_K, mlx4_g64]/' "$k"/matmul.yaml "$k"/matmul_split.yaml
sed -i 's/^formats: .*/formats: [q4_0]/' "$k"/matmul_shared_split.yaml
echo "wrote $dir"
