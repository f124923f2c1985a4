#!/usr/bin/env bash
# Call A: the MoE decode layer (bench/layer-gpu.sh: q4_0 and q4_K at 1 and 8
# tokens, --down split and fused, the peer's layer), then q4_0's dense
# prefill case of issue 26's target (bench/tune-gpu.sh), in one pack.
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w
packall() { tar czf "$OUT/callA.tgz.tmp" --warning=no-file-changed --exclude=work -C $w . &&
  mv "$OUT/callA.tgz.tmp" "$OUT/callA.tgz"; }
OUT=$w/layer PACK=$w/layer.tgz bash bench/layer-gpu.sh > $w/layer.log 2>&1
cat $w/layer/times.txt; grep -h "decode" $w/layer/layer-*.txt | grep -v kernels
rm -f $w/layer.tgz; packall
OUT=$w/q4_0-prefill CASES=matmul,4096,14336,512 bash bench/tune-gpu.sh q4_0 prefill > $w/prefill.log 2>&1
cat $w/q4_0-prefill/times.txt
packall
