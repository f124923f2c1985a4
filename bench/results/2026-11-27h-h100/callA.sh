#!/usr/bin/env bash
# decode path: plain f16 B loads (u1) and 4-step unroll (u4) against HEAD (old)
set -uo pipefail
. .gpu/enter.sh
o=/tmp/xa; rm -rf $o; mkdir -p $o; q=build-gpu/pkg/qkgen
pack() { tar czf $OUT/xa.tgz.tmp -C $o . && mv $OUT/xa.tgz.tmp $OUT/xa.tgz; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt 2>&1
T=nr128x128x64_wg256,nr64x256x64_wg256
for f in q4_0 q8_0 q4_K q5_K q6_K; do
  for ba in old:f32 old:f16 u1:f16 u4:f32 u4:f16; do b=${ba%:*}; a=${ba#*:}
    $q bench --bundle exptmp/$b --family matmul --m 4096 --k 14336 --tokens 512 --formats $f \
      --filter $T --activations $a --seed 97 --finalists 2 --json $o/mm-$f-$b-$a.json > $o/mm-$f-$b-$a.txt 2>&1
    echo "== $f $b $a"; grep " \*$" $o/mm-$f-$b-$a.txt | cut -c1-150
  done; pack
done
OUT=$o bash .peer/run.sh prefill --types q4_0,q8_0,q4_K,q5_K,q6_K > $o/peer.log 2>&1
grep -E "part=prefill|n=512" $o/peer-on.txt | cut -c1-200; pack
