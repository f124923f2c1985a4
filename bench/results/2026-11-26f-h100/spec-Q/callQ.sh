#!/usr/bin/env bash
# issue 25, experiment Q: N (tiles compiled in) with the whole body twice,
# each copy under a test of an unspecialized specialization constant
# (build-gpu/templates-Q): is a K loop inside such a branch slow?
#   F=$(cat build-gpu/pkg/filter2.txt); for b in N A P; do ... (see callJ.sh)
set -u
P=build-gpu/pkg
mkdir -p /tmp/pk && tar xJf $P/b-Q.txz -C /tmp/pk && cp $P/qkgen $P/standard.sh $P/commit.txt /tmp/pk/
R=/tmp/resQ; rm -rf $R; mkdir -p $R
start=$(date +%s)
F=$(cat $P/filter2.txt)
one() {
  FILTER=$F FORMATS="q8_0 mlx4_g64" BUNDLES="$1" OUT=$R/mm-$2 SEED=88 DEADLINE=$((start + 300)) bash /tmp/pk/standard.sh prefill-matmul > $R/mm-$2.log 2>&1
  FILTER=$F FORMATS="q8_0" BUNDLES="$1" OUT=$R/moe-$2 SEED=88 DEADLINE=$((start + 300)) bash /tmp/pk/standard.sh prefill-moe > $R/moe-$2.log 2>&1
}
one "N A Q" p1
one "Q N" p2
tar czf $OUT/r.tgz -C $R .
