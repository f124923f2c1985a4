#!/usr/bin/env bash
# Writes to DIR (default build-gpu/diag8-specs) the restricted copy of specs/
# that run 100 of bench/RESULTS.md benchmarked: where the time of the
# 4- and 8-token mat-vec goes. Copy, quantize_q8 and the int8-dot kernels
# that win those cases (matvec_xq, matvec_xq_pre, matvec_xq_split) at token
# tiles of 4 and 8, for q4_0, q8_0 and q4_K, no fusion. Built three times:
# with the committed templates, with bench/diag-noslab.patch (no slab of
# activations: a workgroup neither rounds nor copies them) and with
# bench/diag-weights.patch (that, and no token's work: the codes and scales
# of each group folded into one accumulator). The two diagnostic bundles
# give wrong results by design; `qkgen bench --time-wrong` times them.
#   bash bench/diag8-specs.sh
#   for d in noslab weights; do
#     rm -rf build-gpu/$d && mkdir -p build-gpu/$d && cp -r templates build-gpu/$d/
#     patch -d build-gpu/$d -p1 < bench/diag-$d.patch
#     bash bench/build-gpu.sh build-gpu/diag8-specs build-gpu/$d/templates && mv build-gpu/pkg/bundle build-gpu/bundle-$d
#   done
#   bash bench/build-gpu.sh build-gpu/diag8-specs && mv build-gpu/bundle-noslab build-gpu/bundle-weights build-gpu/pkg/
#   strip build-gpu/pkg/qkgen
# and on the GPU machine, a case at a time on each bundle in turn:
#   qkgen bench --bundle build-gpu/pkg/BUNDLE --family matvec --m 4096 --k 14336 --tokens 8 \
#       --formats q4_0 --time-wrong --runs 30 --warmup-ms 1000 --seed 88 --json FILE
. "$(dirname "$0")/specs-copy.sh" build-gpu/diag8-specs "$@"
cp specs/kernels/{copy,quantize_q8,matvec_xq,matvec_xq_pre,matvec_xq_split}.yaml "$k/"
keep_formats q4_0 q8_0 q4_K
sed -i 's/^  NR1: .*/  NR1: [4, 8]/' "$k"/matvec_xq*.yaml
echo "wrote $dir"
