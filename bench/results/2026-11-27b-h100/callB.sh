#!/usr/bin/env bash
# Call B (PART=q4_K-prefill) and C (PART=mlx4_g64-prefill): issue 26's
# target with today's tune for a format's prefill part (the six cases of
# bench/tune-gpu.sh), packed into one file (the GPU machine
# returns at most 8 files: call A lost its logs so).
set -uo pipefail
. .gpu/enter.sh
part=${PART:-q4_K-prefill}
fmt=${part%-*} what=${part#*-}
w=/tmp/callout && rm -rf $w && mkdir -p $w
OUT=$w/$part bash bench/tune-gpu.sh "$fmt" "$what" > "$w/$part.log" 2>&1
gzip $w/*/tune-*.jsonl $w/*/clocks-*.csv
rm -rf $w/*/work
tar czf "$OUT/$part.tgz" -C $w .
cat $w/*/times.txt
