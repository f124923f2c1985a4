#!/usr/bin/env bash
# Call A: issue 26's target with today's tune for q4_K dense decode (8 cases)
# and q4_K's dense prefill case (bench/tune-gpu.sh), one after the other.
set -uo pipefail
. .gpu/enter.sh
d=bench/results/2026-11-27b-h100
OUT=$OUT/q4_K-decode bash bench/tune-gpu.sh q4_K decode > "$OUT/q4_K-decode.log" 2>&1
OUT=$OUT/q4_K-prefill CASES="matmul,4096,14336,512" bash bench/tune-gpu.sh q4_K prefill > "$OUT/q4_K-prefill.log" 2>&1
for f in "$OUT"/*/tune-*.jsonl; do gzip "$f"; done
cat "$OUT"/*/times.txt
