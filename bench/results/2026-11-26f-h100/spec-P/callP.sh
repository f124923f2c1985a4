#!/usr/bin/env bash
# next session, first call: issue 25, experiment P. N: tiles compiled in;
# A: specialized; P: N with the tile loads' trip counts through a
# specialization constant (default WG, never specialized), products literal
# (/work/notes/exp-P-loads-specialized.diff). Bundles prebuilt in build-gpu/pkg/b-P.txz (2026-11-26e);
#   F=$(cat build-gpu/pkg/filter2.txt); for b in N A P; do ... (see callJ.sh)
set -u
P=build-gpu/pkg
mkdir -p /tmp/pk && tar xJf $P/b-P.txz -C /tmp/pk && cp $P/qkgen $P/standard.sh $P/commit.txt /tmp/pk/
R=/tmp/resP; rm -rf $R; mkdir -p $R
start=$(date +%s)
F=$(cat $P/filter2.txt)
one() {
  FILTER=$F FORMATS="q8_0 mlx4_g64" BUNDLES="$1" OUT=$R/mm-$2 SEED=88 DEADLINE=$((start + 300)) bash /tmp/pk/standard.sh prefill-matmul > $R/mm-$2.log 2>&1
  FILTER=$F FORMATS="q8_0" BUNDLES="$1" OUT=$R/moe-$2 SEED=88 DEADLINE=$((start + 300)) bash /tmp/pk/standard.sh prefill-moe > $R/moe-$2.log 2>&1
}
one "N A P" p1
one "P A N" p2
tar czf $OUT/r.tgz -C $R .
