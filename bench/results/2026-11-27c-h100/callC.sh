#!/usr/bin/env bash
# Call C: the MoE decode layer with the top-k inside gate/up (--router ranked)
set -uo pipefail
. .gpu/enter.sh
w=/tmp/callout && rm -rf $w && mkdir -p $w
packall() { tar czf "$OUT/callC.tgz.tmp" --warning=no-file-changed --exclude=work -C $w . &&
  mv "$OUT/callC.tgz.tmp" "$OUT/callC.tgz"; }
OUT=$w/layer PACK=$w/layer.tgz bash bench/layer-gpu.sh > $w/layer.log 2>&1
cat $w/layer/times.txt; grep -h "decode\|stages" $w/layer/layer-*.txt
rm -f $w/layer.tgz; packall
