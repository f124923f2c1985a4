#!/usr/bin/env bash
# Writes to DIR (default build-gpu/split-specs) the restricted copy of specs/
# that runs 59-61 of bench/RESULTS.md benchmarked: copy, the int8-dot mat-vec
# matvec_xq and its split-K form matvec_xq_split (the committed tiles and SK
# 8), formats q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K; and (run 61) the f32
# matvec_xs and matvec_xs_split for iq4_nl and q6_K, and for mlx4_g64 the
# in-place forms matvec_xs_global, matvec_xq_global, matvec_xq_split_global
# (run 61 also timed a matvec_xs_split_global, which won nothing and was
# removed after it: commit efb2771 has it); no fusion. The split specs get
# run 61's wider tiles back.
# Then:
#   bash bench/build-gpu.sh build-gpu/split-specs
# and on the GPU machine (RESULTS.md, "Reproduce"):
#   qkgen verify --bundle build-gpu/pkg/bundle --filter split
#   qkgen bench --bundle build-gpu/pkg/bundle --family matvec --m 4096 --k 14336 --tokens 4
. "$(dirname "$0")/specs-copy.sh" build-gpu/split-specs "$@"
cp specs/kernels/{copy,matvec_xq,matvec_xq_split}.yaml "$k/"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K]/; s/^fusions: .*/fusions: [none]/' \
    "$k"/matvec_*.yaml
# run 59 also timed SK 8 (the committed specs keep SK 2 and 4)
sed -i 's/^  SK: .*/  SK: [2, 4, 8]/' "$k"/matvec_xq_split.yaml
cp specs/kernels/{matvec_xs,matvec_xs_split}.yaml "$k/"
sed -i 's/^formats: .*/formats: [iq4_nl, q6_K]/' "$k"/matvec_xs{,_split}.yaml
sed -i 's/^  NR0: .*/  NR0: [1, 2]/; s/^  NR1: .*/  NR1: [1, 2]/; s/^  NK: .*/  NK: [64, 256, 512]/;
        s/^  TPR: .*/  TPR: [8, 16, 32]/' "$k"/matvec_xs_split.yaml
cp specs/kernels/{matvec_xs_global,matvec_xq_global,matvec_xq_split_global}.yaml "$k/"
sed -i 's/^  NR1: .*/  NR1: [1, 2, 4, 8]/; s/^  WG: .*/  WG: [128, 256, 512]/; s/^  TPR: .*/  TPR: [8, 16, 32]/' \
    "$k"/matvec_xq_split_global.yaml
echo "wrote $dir"
