#!/usr/bin/env bash
# Writes to DIR (default build-gpu/wide-specs) the restricted copy of specs/
# of run 65 in bench/RESULTS.md: the prefill kernels with workgroups of 512
# invocations beside 256 (16 warps per SM where the registers allow one
# workgroup), and the MoE prefill kernels over their whole tile space (NR0
# 32-128, NR1 16-64, NK 32 and 64, WG 128-512). Coopmat path only, no
# fusion. Then:
#   bash bench/build-gpu.sh build-gpu/wide-specs
# and on the GPU machine:
#   qkgen bench --bundle build-gpu/pkg/bundle --family matmul --all-variants
#   qkgen bench --bundle build-gpu/pkg/bundle --family moe_matmul --all-variants
. "$(dirname "$0")/specs-copy.sh" build-gpu/wide-specs "$@"
cp specs/kernels/{copy,matmul,matmul_shared,matmul_id,matmul_id_shared}.yaml "$k/"
sed -i 's/^mma: .*/mma: [coopmat]/; s/^fusions: .*/fusions: [none]/' "$k"/matmul*.yaml
sed -i 's/^  NK: .*/  NK: [64]/; s/^  NR0: .*/  NR0: [64, 128]/; s/^  NR1: .*/  NR1: [64, 128]/;
        s/^  WG: .*/  WG: [256, 512]/' "$k"/matmul.yaml "$k"/matmul_shared.yaml
sed -i 's/^  WG: .*/  WG: [128, 256, 512]/' "$k"/matmul_id.yaml "$k"/matmul_id_shared.yaml
sed -i 's/^formats: .*/formats: [q4_0, q4_K, q5_K, q6_K, mlx4_g64]/' "$k"/matmul.yaml
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl]/' "$k"/matmul_shared.yaml
sed -i 's/^formats: .*/formats: [q4_0, q4_K]/' "$k"/matmul_id.yaml
sed -i 's/^formats: .*/formats: [q4_0]/' "$k"/matmul_id_shared.yaml
echo "wrote $dir"
