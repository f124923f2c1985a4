#!/usr/bin/env bash
# f16 activations on every matmul_tensor path (decode, inplace, shared)
# against f32, the five GGUF formats dense and q4_0/q4_K MoE at 512 tokens,
# then the peer, same call
set -uo pipefail
. .gpu/enter.sh
o=/tmp/xh; rm -rf $o; mkdir -p $o; q=build-gpu/pkg/qkgen BUNDLE=${BUNDLE:-bundle-nv2}
pack() { tar czf $OUT/xh.tgz.tmp -C $o . && mv $OUT/xh.tgz.tmp $OUT/xh.tgz; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt 2>&1
for f in q4_0 q8_0 q4_K q5_K q6_K; do for a in f32 f16; do
  $q bench --bundle $BUNDLE --family matmul --m 4096 --k 14336 --tokens 512 --formats $f \
    --activations $a --seed 97 --finalists 3 --json $o/mm-$f-$a.json > $o/mm-$f-$a.txt 2>&1
  echo "== dense $f $a"; grep " \*$" $o/mm-$f-$a.txt | cut -c1-175; done; pack; done
for f in q4_0 q4_K; do for a in f32 f16; do
  $q bench --bundle $BUNDLE --family moe_matmul --m 768 --k 2048 --tokens 512 --experts 128 --top-k 8 \
    --formats $f --activations $a --seed 97 --finalists 3 --json $o/moe-$f-$a.json > $o/moe-$f-$a.txt 2>&1
  echo "== moe $f $a"; grep " \*$" $o/moe-$f-$a.txt | cut -c1-175; done; pack; done
OUT=$o bash .peer/run.sh prefill,moe --types q4_0,q8_0,q4_K,q5_K,q6_K > $o/peer.log 2>&1
grep -E "part=prefill|n=512" $o/peer-on.txt | cut -c1-200; pack
