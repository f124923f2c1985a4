#!/usr/bin/env bash
# Call D: mlx4_g64's prefill cases again on an H100 (call C landed on an
# H200), one case at a time, the pack refreshed after each so that a call cut
# by the device budget keeps what it finished.
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w
i=0
for c in matmul,4096,14336,512 moe_matmul,768,2048,512,128,8 moe_matmul,2048,768,512,128,8; do
  i=$((i + 1))
  OUT=$w/mlx4_g64-prefill-$i CASES=$c bash bench/tune-gpu.sh mlx4_g64 prefill >> "$w/callD.log" 2>&1
  rm -rf $w/*/work
  tar czf "$OUT/callD.tgz.tmp" -C $w . && mv "$OUT/callD.tgz.tmp" "$OUT/callD.tgz"
  cat $w/*/times.txt | tail -1
done
