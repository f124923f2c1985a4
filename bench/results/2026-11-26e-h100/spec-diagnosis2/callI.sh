#!/usr/bin/env bash
# session 5 call I: is a module with any specialization constant slow on NVIDIA?
# N: tiles compiled in; A: specialized (default); D: compiled in + one spec
# constant (id 9) used only in a dead guard; x: the same binary passing a
# VkSpecializationInfo (id 9 = 0) to every pipeline
set -u
P=build-gpu/pkg
mkdir -p /tmp/pk /tmp/pkx && tar xJf $P/b.txz -C /tmp/pk && cp $P/qkgen $P/standard.sh $P/commit.txt /tmp/pk/
for b in N D; do ln -sfn /tmp/pk/$b /tmp/pkx/$b; done
cp $P/qkgen-exp /tmp/pkx/qkgen && cp $P/standard.sh $P/commit.txt /tmp/pkx/
R=/tmp/resI; rm -rf $R; mkdir -p $R
start=$(date +%s)
F=$(cat $P/filter2.txt)
one() { # dir bundles tag
  FILTER=$F FORMATS="q8_0 mlx4_g64" BUNDLES="$2" OUT=$R/mm-$3 SEED=88 DEADLINE=$((start + 520)) bash $1/standard.sh prefill-matmul > $R/mm-$3.log 2>&1
  FILTER=$F FORMATS="q8_0" BUNDLES="$2" OUT=$R/moe-$3 SEED=88 DEADLINE=$((start + 520)) bash $1/standard.sh prefill-moe > $R/moe-$3.log 2>&1
}
one /tmp/pk "N A D" p1
QK_EXP_SPECINFO=1 one /tmp/pkx "N D" x1
QK_EXP_SPECINFO=1 one /tmp/pkx "D N" x2
one /tmp/pk "D A N" p2
echo "done at $(( $(date +%s) - start )) s" | tee $R/times.txt
tar czf $OUT/r.tgz -C $R .
