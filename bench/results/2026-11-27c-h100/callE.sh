#!/usr/bin/env bash
# Call E: the Qwen3-30B-A3B-like MoE layer at 1, 8, 32 and 512 tokens, q4_0
# and q4_K, every case of it tuned afresh in the call (bench/layer/qwen3-moe.yaml;
# call D's bundle took its prefill cases from a database of 2026-11-26 whose
# q4_K matmul records are stale), the default path, the peer beside it.
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w
packall() { tar czf "$OUT/callE.tgz.tmp" --warning=no-file-changed --exclude=work -C $w . &&
  mv "$OUT/callE.tgz.tmp" "$OUT/callE.tgz"; }
MODEL=bench/layer/qwen3-moe.yaml MODES=auto-split OUT=$w/layer PACK=$w/layer.tgz \
  bash bench/layer-gpu.sh > $w/layer.log 2>&1
cat $w/layer/times.txt; grep -h "decode\|prefill\|stages" $w/layer/layer-*.txt
grep RESULT $w/layer/layer-off.txt | sed 's/.*type=\([^ ]*\) tokens=\([0-9]*\).*wall_us=\([0-9.]*\).*/\1 \2 \3/'
rm -f $w/layer.tgz; packall
