#!/usr/bin/env bash
# session 5: issue 26, bench/tune-gpu.sh FMT prefill for CASES (or the part)
set -u
R=/tmp/resT; rm -rf $R; mkdir -p $R
start=$(date +%s)
OUT=$R/tune timeout ${SECS:-580} bash build-gpu/pkg/tune-gpu.sh $FMT ${PART:-prefill} > $R/tune.log 2>&1
echo "tune done at $(( $(date +%s) - start )) s" | tee -a $R/times.txt
tar czf $OUT/r.tgz --exclude=./tune/work -C $R .
