#!/usr/bin/env bash
# On the GPU machine, from the repository root (after `. .gpu/enter.sh`): the
# issue-26 target for one format and one part of the standard set. Each case
# is tuned (`qkgen tune`, successive halving, candidates built on demand from
# specs/ and templates/ into $OUT/work) and then benchmarked exhaustively over
# the same candidates (`qkgen bench --finalists 0` on the tune's own bundle),
# one after the other in the same call, each command's wall time logged:
#   bash bench/tune-gpu.sh q4_0 decode    # dense mat-vec, 1-8 tokens
#   bash bench/tune-gpu.sh q4_K moe       # MoE mat-vec with ids, 1-32 tokens
#   bash bench/tune-gpu.sh mlx4_g64 prefill
# for q4_0, q4_K and mlx4_g64 and the parts decode, moe and prefill (a part
# per call: the exhaustive bench of a prefill part takes minutes). Then, on
# any machine: python3 bench/tune_compare.py $OUT, which gives per case the
# tune's pick and its time, the exhaustive best, their ratio (target: within
# 3%) and both commands' device times (target: the tune at most a quarter).
# QKGEN (default build-gpu/pkg/qkgen, bench/build-gpu.sh's static build),
# OUT (default tune-out), SEED (default 88); CASES (family,m,k,tokens[,experts,
# top_k] separated by spaces) replaces the part's cases, TUNE_OPTS and
# BENCH_OPTS add options (a smoke test on lavapipe: small shapes, short runs).
# PACK=FILE.tgz packs $OUT (less the candidates' build folder) into that file
# after each case: the GPU machine returns at most 8 files of a call, and a
# part writes 4 a case (2026-11-27b's call A lost its logs so).
set -uo pipefail
fmt=${1:-} part=${2:-}
qkgen=${QKGEN:-build-gpu/pkg/qkgen}
out=${OUT:-tune-out}
seed=${SEED:-88}
# the standard set of `qkgen bench` (cli/cmd_bench.c): family m k tokens [experts top_k]
case $part in
decode) cases="matvec,4096,14336,1 matvec,4096,14336,2 matvec,4096,14336,4 matvec,4096,14336,8
               matvec,14336,4096,1 matvec,14336,4096,2 matvec,14336,4096,4 matvec,14336,4096,8" ;;
moe) cases="moe,768,2048,1,128,8 moe,768,2048,8,128,8 moe,768,2048,32,128,8 moe,2048,768,1,128,8
            moe,2048,768,8,128,8 moe,2048,768,32,128,8 moe,1792,2048,1,32,4 moe,1792,2048,8,32,4" ;;
prefill) cases="matmul,4096,14336,512 moe_matmul,768,2048,32,128,8 moe_matmul,768,2048,512,128,8
                moe_matmul,2048,768,32,128,8 moe_matmul,2048,768,512,128,8
                moe_matmul,1792,2048,512,32,4" ;;
*) echo "usage: $0 FORMAT decode|moe|prefill" >&2; exit 2 ;;
esac
[ -n "$fmt" ] || { echo "usage: $0 FORMAT decode|moe|prefill" >&2; exit 2; }
cases=${CASES:-$cases}
mkdir -p "$out"
# the pack, less itself where PACK lies inside $OUT
# (tar's status 1: a file changed while read, the clock log that goes on)
pack() {
  tar czf "$PACK.tmp" --warning=no-file-changed --exclude=./work --exclude="./$(basename "$PACK")*" \
    -C "$out" .
  [ $? -gt 1 ] || mv "$PACK.tmp" "$PACK"
}
# a database of its own per format and part, and a fresh one: a tune that
# found its case's records there would resume, measure nothing and report a
# time that says nothing of the search (calls G and H of 2026-11-26d)
db="$out/tune-$fmt-$part.jsonl"
if [ -e "$db" ]; then
  echo "$0: $db exists: a tune would resume from it and time nothing; use a fresh OUT" >&2
  exit 2
fi
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$out/gpu.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv -lms 200 \
  >> "$out/clocks-$fmt-$part.csv" 2>/dev/null &
logger=$!
git log -1 --format='commit %H %cd' > "$out/commit.txt" 2>/dev/null
for c in $cases; do
  IFS=, read -r fam m k t e tk <<< "$c"
  ids=() name="$fam-$fmt-m$m-k$k-t$t"
  if [ -n "${e:-}" ]; then ids=(--experts "$e" --top-k "$tk"); name="$name-e$e"; fi
  # the candidates built and every pipeline made and checked once, untimed, so
  # that neither timed command pays the driver's compiles the other saves
  "$qkgen" tune --family "$fam" --m "$m" --k "$k" --tokens "$t" "${ids[@]}" --formats "$fmt" \
    --out "$out/work" --dry-run > "$out/prepare-$name.txt" 2>&1
  "$qkgen" verify --bundle "$out/work/tune" >> "$out/prepare-$name.txt" 2>&1
  t0=$(date +%s.%N)
  "$qkgen" tune --family "$fam" --m "$m" --k "$k" --tokens "$t" "${ids[@]}" --formats "$fmt" \
    --out "$out/work" --db "$db" --seed "$seed" ${TUNE_OPTS:-} > "$out/tune-$name.txt" 2>&1
  rc_t=$?
  t1=$(date +%s.%N)
  "$qkgen" bench --bundle "$out/work/tune" --family "$fam" --m "$m" --k "$k" --tokens "$t" \
    "${ids[@]}" --formats "$fmt" --finalists 0 --seed "$seed" --json "$out/bench-$name.json" ${BENCH_OPTS:-} \
    > "$out/bench-$name.txt" 2>&1
  rc_b=$?
  t2=$(date +%s.%N)
  # (awk: the GPU machine has no bc)
  awk -v n="$name" -v a="$t0" -v b="$t1" -v c="$t2" -v rt=$rc_t -v rb=$rc_b \
    'BEGIN { printf "%s tune_s %.2f rc %d bench_s %.2f rc %d\n", n, b - a, rt, c - b, rb }' |
    tee -a "$out/times.txt"
  [ -z "${PACK:-}" ] || pack
done
kill $logger 2>/dev/null
[ -z "${PACK:-}" ] || pack
