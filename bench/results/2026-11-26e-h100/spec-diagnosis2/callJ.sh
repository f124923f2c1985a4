#!/usr/bin/env bash
# session 5 call J: where a specialization constant in the matmul costs.
# N: tiles compiled in; A: specialized; H: N + a spec constant in the
# products' guard inside the K loop; J: N + a spec constant added to the
# activation loads' shared offset. Then issue 26: tune-gpu q4_K prefill.
set -u
P=build-gpu/pkg
mkdir -p /tmp/pk && tar xJf $P/b.txz -C /tmp/pk && cp $P/qkgen $P/standard.sh $P/commit.txt /tmp/pk/
R=/tmp/resJ; rm -rf $R; mkdir -p $R
start=$(date +%s)
F=$(cat $P/filter2.txt)
one() { # bundles tag
  FILTER=$F FORMATS="q8_0 mlx4_g64" BUNDLES="$1" OUT=$R/mm-$2 SEED=88 DEADLINE=$((start + 300)) bash /tmp/pk/standard.sh prefill-matmul > $R/mm-$2.log 2>&1
  FILTER=$F FORMATS="q8_0" BUNDLES="$1" OUT=$R/moe-$2 SEED=88 DEADLINE=$((start + 300)) bash /tmp/pk/standard.sh prefill-moe > $R/moe-$2.log 2>&1
}
one "N A H J" p1
one "J H A N" p2
echo "experiment done at $(( $(date +%s) - start )) s" | tee $R/times.txt
CASES="${CASES:-}" OUT=$R/tune timeout $((start + 570 - $(date +%s))) bash $P/tune-gpu.sh q4_K prefill > $R/tune.log 2>&1
echo "tune done at $(( $(date +%s) - start )) s" | tee -a $R/times.txt
tar czf $OUT/r.tgz --exclude=./tune/work -C $R .
