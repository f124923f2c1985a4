#!/usr/bin/env bash
# Writes to DIR (default build-gpu/parts-specs) the restricted copy of specs/
# that runs 79-80 of bench/RESULTS.md benchmarked: copy and the int8-dot
# decode kernels of the K-quants (matvec_xq, matvec_xq_split, matvec_id_xq,
# matmul_id_xq) with chunks of a quarter and a half block (the formats'
# parts) beside whole blocks in every one of them and at every token tile,
# and 4 lanes a row for the dense two-block chunks, with the f32 kernels they
# compete with (matvec_xs, matvec_xs_split); formats q4_K, q5_K and q6_K, no
# fusion. Run 79 built it before q6_K had parts (its q6_K kernels were whole
# blocks), run 80 for q4_K and q6_K:
#   bash bench/parts-specs.sh && bash bench/build-gpu.sh build-gpu/parts-specs
#   FORMATS="q4_K, q6_K" bash bench/parts-specs.sh && bash bench/build-gpu.sh build-gpu/parts-specs
. "$(dirname "$0")/specs-copy.sh" build-gpu/parts-specs "$@"
cp specs/kernels/{copy,matvec_xq,matvec_xq_split,matvec_id_xq,matmul_id_xq,matvec_xs,matvec_xs_split}.yaml "$k/"
sed -i "s/^formats: \[.*\]/formats: [${FORMATS:-q4_K, q5_K, q6_K}]/; s/^fusions: .*/fusions: [none]/" "$k"/*.yaml
sed -i 's/^formats: \[.*\]/formats: [none]/' "$k/copy.yaml"
# parts everywhere: the committed specs keep them where they won (the rule
# of matvec_xq whose reason starts "parts of a block", q6_K's halves only in
# matvec_xq_split and matmul_id_xq)
sed -i '/reason: "parts of a block:/d' "$k/matvec_xq.yaml"
sed -i 's/QK \/ NK <= QK_PARTS \&\& QK_BYTES % 4 > 0/QK \/ NK <= QK_PARTS/' "$k/matvec_xq_split.yaml" "$k/matmul_id_xq.yaml"
# 4 lanes a row for the dense kernels' two-block chunks too (K = 14336: q6_K's
# 28 chunks of 512 split 4-4-4-4-3-3-3-3 over 8 lanes)
for f in matvec_xq matvec_xq_split matvec_xs matvec_xs_split; do
  sed -i 's/^  TPR: \[8/  TPR: [4, 8/' "$k/$f.yaml"
  echo '  - { check: "(TPR > 4) + (NK > 256) > 0", reason: "TPR 4 for the two-block chunks" }' >> "$k/$f.yaml"
done
sed -i 's/^  NR1: .*/  NR1: [1, 4, 8]/' "$k/matvec_xq.yaml"
sed -i 's/^  NR1: .*/  NR1: [1, 4]/' "$k/matvec_xq_split.yaml"
echo "wrote $dir"
