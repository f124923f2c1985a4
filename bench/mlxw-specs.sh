#!/usr/bin/env bash
# Writes to DIR (default build-gpu/mlxw-specs) the restricted copy of specs/
# that run 84 of bench/RESULTS.md benchmarked: copy and mlx4_g64's int8-dot
# kernels that read the weights in place (matvec_xq_global, its split form,
# matvec_id_xq_global, matmul_id_xq_global), with chunks of 128 beside 64 and
# 8 lanes a row allowed at both. Run 84 built it twice, with the templates of
# commit 4a64342 (codes by four word loads) and with those of the commit that
# reads them by one 16-byte load (qkp_w4):
#   bash bench/mlxw-specs.sh && bash bench/build-gpu.sh build-gpu/mlxw-specs [TEMPLATES]
. "$(dirname "$0")/specs-copy.sh" build-gpu/mlxw-specs "$@"
cp specs/kernels/{copy,matvec_xq_global,matvec_xq_split_global,matvec_id_xq_global,matmul_id_xq_global}.yaml "$k/"
sed -i 's/^formats: \[.*mlx4_g64.*\]/formats: [mlx4_g64]/; s/^fusions: .*/fusions: [none]/' "$k"/*.yaml
sed -i 's/^  NK: \[64\]/  NK: [64, 128]/; s/check: "TPR > 8"/check: "TPR > 8 || NK > 64"/' "$k"/mat*.yaml
sed -i 's/^  TPR: \[16\].*/  TPR: [8, 16]/' "$k"/matmul_id_xq_global.yaml "$k"/matvec_xq_split_global.yaml
echo "wrote $dir"
