#!/usr/bin/env bash
# Writes to DIR (default build-gpu/decode-specs) the restricted copy of specs/
# that the decode runs of bench/RESULTS.md (run 30 on) benchmarked: copy and
# the one-token mat-vec kernels (matvec_staged, matvec_xs, matvec_shared and
# their expert-id forms; the portable matvec for q6_K; matvec_xs_global and
# its expert-id form for mlx4_g64), the formats of the standard set that they
# take, and no fusion, so that one device call verifies and times all of it.
# Then:
#   bash bench/build-gpu.sh build-gpu/decode-specs
# and on the GPU machine (RESULTS.md, "Reproduce"):
#   qkgen verify --bundle build-gpu/pkg/bundle
#   qkgen bench --bundle build-gpu/pkg/bundle --family matvec --m 4096 --k 14336 --tokens 1
. "$(dirname "$0")/specs-copy.sh" build-gpu/decode-specs "$@"
cp specs/kernels/{copy,matvec_staged,matvec_xs,matvec_shared,matvec_id_staged,matvec_id_xs,matvec_id_shared}.yaml "$k/"
sed -i 's/^formats: .*/formats: [q4_0, q8_0, iq4_nl, q4_K, q5_K, q6_K]/; s/^fusions: .*/fusions: [none]/;
        s/^  NR1: .*/  NR1: [1]/' "$k"/matvec_*.yaml
# the portable kernel for q6_K, which the runs before 37 had on it
sed 's/^formats: .*/formats: [q6_K]/; s/^  NR1: .*/  NR1: [1]/' specs/kernels/matvec.yaml > "$k/matvec.yaml"
# MLX (runs 40-41): mlx4_g64 (specs-copy.sh) on the in-place forms of matvec_xs
cp specs/kernels/{matvec_xs_global,matvec_id_xs_global}.yaml "$k/"
echo "wrote $dir"
