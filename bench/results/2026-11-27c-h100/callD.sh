#!/usr/bin/env bash
# Call D: the Qwen3-30B-A3B-like layer at 1, 8, 32 and 512 tokens with the
# defaults of this stop (the ranked gate/up at decode, the new moe_route at
# prefill) from a tuned bundle of the whole model: the decode cases tuned
# afresh, merged with the seven-format database of 2026-11-26-nv2 for the
# prefill ones; the peer's layer in the same call.
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w/layer
q=build-gpu/pkg/qkgen
o=$w/layer
packall() { tar czf "$OUT/callD.tgz.tmp" --warning=no-file-changed --exclude=work -C $w . &&
  mv "$OUT/callD.tgz.tmp" "$OUT/callD.tgz"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > $o/gpu.txt 2>&1
git log -1 --format='commit %H %cd' > $o/commit.txt 2>/dev/null
zcat bench/results/2026-11-26-nv2/tune/tune.jsonl.gz > $w/nv2.jsonl
$q tune --model bench/layer/qwen3-moe-decode.yaml --db $o/tune.jsonl --out $w/work --seed 88 > $o/tune.txt 2>&1
$q tune --merge $w/nv2.jsonl $o/tune.jsonl --db $w/merged.jsonl > $o/merge.txt 2>&1
$q build --tuned $w/merged.jsonl --model specs/models/qwen3-30b-a3b.yaml --out $w/work --name qwen > $o/build.txt 2>&1
tail -1 $o/build.txt; packall
$q bench --layer --bundle $w/work/qwen --formats q4_0,q4_K --tokens 1,8,32,512 --seed 88 \
  --json $o/layer.json > $o/layer.txt 2>&1
grep -h "decode\|prefill\|stages" $o/layer.txt; packall
OUT=$o bash .peer/run-layer.sh --types q4_0,q4_K --tokens 1,8,32,512 > $o/peer.txt 2>&1
cat $o/peer.txt; grep RESULT $o/layer-off.txt | sed 's/.*type=\([^ ]*\) tokens=\([0-9]*\).*wall_us=\([0-9.]*\).*/\1 \2 \3/'
packall
