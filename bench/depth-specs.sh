#!/usr/bin/env bash
# Writes to DIR (default build-gpu/depth-specs) the restricted copy of specs/
# of run 66 in bench/RESULTS.md: run 65's kernels and formats
# (bench/wide-specs.sh) with deeper steps (NK 128 beside 64: half the steps,
# twice the bytes in flight per step) and workgroups of 256, 512 and 1024
# invocations, tiles of 64 and 128 rows; the MoE ones with 32 and 64 columns
# and 256 or 512 invocations. Then:
#   bash bench/build-gpu.sh build-gpu/depth-specs
# and on the GPU machine:
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family matmul --all-variants
#   qkgen bench --bundle build-gpu/pkg/bundle --family moe_matmul --all-variants
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:-build-gpu/depth-specs}
bash bench/wide-specs.sh "$dir" >/dev/null
k=$dir/kernels
sed -i 's/^  NR0: .*/  NR0: [64, 128]/; s/^  NK: .*/  NK: [64, 128]/' "$k"/matmul*.yaml
sed -i 's/^  WG: .*/  WG: [256, 512, 1024]/' "$k"/matmul.yaml "$k"/matmul_shared.yaml
sed -i 's/^  NR1: .*/  NR1: [32, 64]/; s/^  WG: .*/  WG: [256, 512]/' "$k"/matmul_id.yaml "$k"/matmul_id_shared.yaml
echo "wrote $dir"
