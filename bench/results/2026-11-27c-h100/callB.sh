#!/usr/bin/env bash
# Call B: the MoE decode layer again with moe_combine on the int8-dot lanes
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w
packall() { tar czf "$OUT/callB.tgz.tmp" --warning=no-file-changed --exclude=work -C $w . &&
  mv "$OUT/callB.tgz.tmp" "$OUT/callB.tgz"; }
OUT=$w/layer PACK=$w/layer.tgz bash bench/layer-gpu.sh > $w/layer.log 2>&1
cat $w/layer/times.txt; grep -h "decode\|stages" $w/layer/layer-*.txt
rm -f $w/layer.tgz; packall
