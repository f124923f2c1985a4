#!/usr/bin/env bash
# session 6 call R: issue 25 prefill A/B of the instance regions. before:
# HEAD 017832d templates, tiles compiled in; after: the working tree
# (literals per instance, specialized). 7 formats, filter7.
set -u
P=build-gpu/pkg
mkdir -p /tmp/pk && tar xJf $P/b-R.txz -C /tmp/pk && cp $P/qkgen $P/standard.sh $P/commit.txt /tmp/pk/
R=/tmp/resR; rm -rf $R; mkdir -p $R
start=$(date +%s)
F=$(cat $P/filter7.txt)
for part in ${PARTS:-prefill-matmul prefill-moe}; do
FILTER=$F FORMATS="${FMTS:-q8_0 mlx4_g64 q4_0 q4_K q5_K q6_K iq4_nl}" BUNDLES="before after" OUT=$R/$part SEED=88 \
  DEADLINE=$((start + ${SECS:-570})) bash /tmp/pk/standard.sh $part > $R/$part.log 2>&1
done
echo "done at $(( $(date +%s) - start )) s" | tee $R/times.txt
tar czf $OUT/r.tgz -C $R .
