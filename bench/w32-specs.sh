#!/usr/bin/env bash
# Writes to DIR (default build-gpu/w32-specs) the restricted copy of specs/
# that runs 85-86 of bench/RESULTS.md benchmarked: copy and the int8-dot
# kernels (matvec_xq, matvec_xq_split, matvec_id_xq, matmul_id_xq) for the
# 32-element formats q4_0, q8_0 and iq4_nl with chunks of 64, 128 and 256
# (9 words, 9 uvec2s or 9 uvec4s of q4_0 staged a chunk), the routed tile at
# 128 or 256 invocations and 8 or 16 lanes a row:
#   bash bench/w32-specs.sh && bash bench/build-gpu.sh build-gpu/w32-specs
. "$(dirname "$0")/specs-copy.sh" build-gpu/w32-specs "$@"
cp specs/kernels/{copy,matvec_xq,matvec_xq_split,matvec_id_xq,matmul_id_xq}.yaml "$k/"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl]/; s/^fusions: .*/fusions: [none]/' "$k"/mat*.yaml
# every chunk of 64 to 256 for 32-element blocks, in place of the specs' own choice
sed -i -E 's/check: "QK == 32 && NK == 128[^|]*\|\| /check: "/' "$k"/mat*.yaml
sed -i 's/check: "(NK - 64) \* (NK - QK \/ 2)/check: "QK == 32 \&\& NK <= 256 || (NK - 64) * (NK - QK \/ 2)/' "$k"/mat*.yaml
sed -i 's/^  WG: \[128, 256, 512\] .*/  WG: [128, 256]/; s/^  TPR: \[4, 8, 16\] .*/  TPR: [8, 16]/' "$k"/matmul_id_xq.yaml
echo "wrote $dir"
