#!/usr/bin/env bash
# Writes to DIR (default build-gpu/pre-specs) the restricted copy of specs/
# that the runs of bench/RESULTS.md on pre-quantized activations (runs 56-58)
# benchmarked: copy, the quantizer (quantize_q8), the int8-dot mat-vec on
# pre-quantized activations (matvec_xq_pre, matvec_xq_pre_global) and the
# kernels they compete with at 1 to 8 tokens (matvec_xq, matvec_mma,
# matvec_xs and their in-place forms for mlx4_g64), and the same for MoE
# decode (matvec_id_xq_pre against matvec_id_xq and matvec_id_xs), no fusion.
# Then:
#   bash bench/build-gpu.sh build-gpu/pre-specs
# and on the GPU machine (RESULTS.md, "Reproduce"):
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family matvec --m 4096 --k 14336 --tokens 4
. "$(dirname "$0")/specs-copy.sh" build-gpu/pre-specs "$@"
cp specs/kernels/{copy,quantize_q8,matvec_xs,matvec_mma,matvec_xq,matvec_xq_pre}.yaml "$k/"
cp specs/kernels/{matvec_id_xs,matvec_id_xq,matvec_id_xq_pre}.yaml "$k/"
cp specs/kernels/{matvec_xs_global,matvec_xq_global,matvec_xq_pre_global}.yaml "$k/"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K]/; s/^fusions: .*/fusions: [none]/' \
    "$k"/matvec_{xs,mma,xq,xq_pre,id_xs,id_xq,id_xq_pre}.yaml
# the wider tiles that runs 57-58 searched (the committed specs keep the winners)
sed -i 's/^  NK: .*/  NK: [64, 256, 512]/; s/^  WG: .*/  WG: [128, 256, 512]/' "$k"/matvec_{xq_pre,id_xq_pre}.yaml
sed -i 's/^  NR0: .*/  NR0: [1, 2]/; s/^  WG: .*/  WG: [128, 256, 512]/' "$k"/matvec_xq_pre_global.yaml
echo "wrote $dir"
