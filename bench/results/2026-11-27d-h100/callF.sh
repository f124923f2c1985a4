#!/usr/bin/env bash
# Call F: issue 29's prefill targets measured again beside the peer (the
# kernels unchanged since 2026-11-26-nv2-final): the NV cooperative-matrix-2
# matmul (matmul_tensor, built on the GPU machine from the tree's specs) for
# the dense 4096 x 14336 and the MoE 768 x 2048 (128 experts, top-8) at 512
# tokens, then the peer's prefill and MoE in the same call.
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w/prefill
o=$w/prefill q=build-gpu/pkg/qkgen
packall() { tar czf "$OUT/callF.tgz.tmp" --warning=no-file-changed --exclude=work -C $w . &&
  mv "$OUT/callF.tgz.tmp" "$OUT/callF.tgz"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $o/gpu.txt 2>&1
git log -1 --format='commit %H %cd' > $o/commit.txt 2>/dev/null
$q build --filter matmul_tensor --out $w/work --quiet > $o/build.txt 2>&1
for f in q4_0 q8_0 q4_K q5_K q6_K; do
  $q bench --bundle $w/work/default --family matmul --m 4096 --k 14336 --tokens 512 --formats $f \
    --seed 97 --json $o/nv2-mm-$f.json > $o/nv2-mm-$f.txt 2>&1
  grep " \*$" $o/nv2-mm-$f.txt | cut -c1-160; packall
done
for f in q4_0 q4_K; do
  $q bench --bundle $w/work/default --family moe_matmul --m 768 --k 2048 --tokens 512 --experts 128 \
    --top-k 8 --formats $f --seed 97 --json $o/nv2-moe-$f.json > $o/nv2-moe-$f.txt 2>&1
  grep " \*$" $o/nv2-moe-$f.txt | cut -c1-160; packall
done
OUT=$o bash .peer/run.sh prefill,moe --types q4_0,q8_0,q4_K,q5_K,q6_K > $o/peer.log 2>&1
cat $o/peer.log; packall
