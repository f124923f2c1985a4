#!/usr/bin/env bash
# session 5 call K: issue 25 prefill A/B after the products lost their
# specialization-dependent guard. before: HEAD templates, tiles compiled in;
# after: the working tree's templates, specialized. 7 formats, filter7.
set -u
P=build-gpu/pkg
mkdir -p /tmp/pk && tar xJf $P/b.txz -C /tmp/pk && cp $P/qkgen $P/standard.sh $P/commit.txt /tmp/pk/
R=/tmp/resK; rm -rf $R; mkdir -p $R
start=$(date +%s)
F=$(cat $P/filter7.txt)
for part in prefill-matmul prefill-moe; do
FILTER=$F FORMATS="${FMTS:-q8_0 mlx4_g64 q4_0 q4_K q5_K q6_K iq4_nl}" BUNDLES="before after" OUT=$R/$part SEED=88 \
  DEADLINE=$((start + ${SECS:-570})) bash /tmp/pk/standard.sh $part > $R/$part.log 2>&1
done
echo "done at $(( $(date +%s) - start )) s" | tee $R/times.txt
tar czf $OUT/r.tgz -C $R .
