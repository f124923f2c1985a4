#!/usr/bin/env bash
# Writes to DIR (default build-gpu/kquant-specs) the restricted copy of specs/
# that run 81 of bench/RESULTS.md benchmarked: the committed decode kernels of
# the K-quants, as the default bundle has them (parts of a block included):
# copy and quantize_q8, the int8-dot kernels (matvec_xq, matvec_xq_split,
# matvec_xq_pre, matvec_id_xq, matvec_id_xq_pre, matmul_id_xq) and the f32
# kernels they compete with (matvec_xs, matvec_xs_split, matvec_id_xs);
# formats q4_K, q5_K and q6_K, no fusion. Then:
#   bash bench/build-gpu.sh build-gpu/kquant-specs
. "$(dirname "$0")/specs-copy.sh" build-gpu/kquant-specs "$@"
cp specs/kernels/{copy,quantize_q8,matvec_xq,matvec_xq_split,matvec_xq_pre,matvec_id_xq,matvec_id_xq_pre,matmul_id_xq}.yaml "$k/"
cp specs/kernels/{matvec_xs,matvec_xs_split,matvec_id_xs}.yaml "$k/"
sed -i 's/^formats: \[.*q4_K.*\]/formats: [q4_K, q5_K, q6_K]/; s/^fusions: .*/fusions: [none]/' "$k"/*.yaml
echo "wrote $dir"
