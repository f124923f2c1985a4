#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `. .gpu/enter.sh`: the
# standard set of `qkgen bench` (its default cases) on the bundle of
# specs/sets/standard.yaml that bench/build-gpu.sh puts in build-gpu/pkg, one
# part per call so that each fits the device's 10-minute limit:
#   bash build-gpu/pkg/standard.sh decode    # dense mat-vec, 1-8 tokens
#   bash build-gpu/pkg/standard.sh moe       # MoE mat-vec with ids, 1-32 tokens
#   bash build-gpu/pkg/standard.sh prefill   # matmul and MoE matmul, 32-512 tokens
# (prefill-matmul and prefill-moe: its two halves)
# One bench process per format and family, each writing its table and JSON to
# $OUT (default bench-out) as it ends, so a part cut short keeps what it
# finished; SEED (default 88) fixes the data and the expert ids, FORMATS (every
# GGUF format and mlx4_g64 by default, space-separated; bench/formats-gpu.sh
# times the other MLX configurations) splits a part further, and DEADLINE (a
# time in seconds since the epoch) ends the part before it: a bench process
# that would run past it is cut there, and none starts within 30 s of it.
# PACK=FILE.tgz packs $OUT into that file after each process (the GPU machine
# returns at most 8 files of a call: run 88 lost five formats' logs).
# FILTER (qkgen bench --filter) keeps the variants whose name contains one of
# its comma-separated parts.
# BUNDLES (default "bundle") names the package's bundles to time, each format
# on each in turn, so that two bundles (templates before and after a change)
# meet the same clocks; with more than one, a log's name ends in its bundle's.
# Then, on any machine: python3 bench/table.py OUT/*.json
set -uo pipefail
pkg=$(dirname "$0")
out=${OUT:-bench-out}
seed=${SEED:-88}
formats=${FORMATS:-q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl mxfp4 mlx4_g64}
bundles=${BUNDLES:-bundle}
case ${1:-} in
decode) families="matvec" ;;
moe) families="moe" ;;
prefill) families="matmul moe_matmul" ;;
prefill-matmul) families="matmul" ;;
prefill-moe) families="moe_matmul" ;;
*) echo "usage: $0 decode|moe|prefill|prefill-matmul|prefill-moe" >&2; exit 2 ;;
esac
mkdir -p "$out"
# the pack, less itself where PACK lies inside $OUT (run 92 lost its logs so)
pack() { tar czf "$PACK.tmp" --exclude="./$(basename "$PACK")*" -C "$out" . && mv "$PACK.tmp" "$PACK"; }
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee -a "$out/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 200 >> "$out/clocks-$1.csv" &
logger=$!
# the commit bench/build-gpu.sh built the package from
tee "$out/commit.txt" < "$pkg/commit.txt"
"$pkg/qkgen" devices > "$out/devices.txt" 2>&1
rc=0
for fam in $families; do
  for f in $formats; do
    for b in $bundles; do
      name=$fam-$f
      [ "$bundles" = "${bundles%% *}" ] || name=$name-$b
      t0=$(date +%s)
      limit=()
      if [ -n "${DEADLINE:-}" ]; then
        left=$((DEADLINE - t0))
        if [ $left -lt 30 ]; then
          echo "$name: not run, $left s before the deadline"
          rc=1
          continue
        fi
        limit=(timeout "$left")
      fi
      "${limit[@]}" "$pkg/qkgen" bench --bundle "$pkg/$b" --family "$fam" --formats "$f" --runs 30 \
        --warmup-ms 1000 --seed "$seed" ${FILTER:+--filter "$FILTER"} --json "$out/$name.json" > "$out/$name.txt" 2>&1
      s=$?
      [ $s -eq 0 ] || rc=1
      echo "$name: exit $s in $(( $(date +%s) - t0 )) s, $(grep -c '  \*$' "$out/$name.txt") cases"
      [ -z "${PACK:-}" ] || pack
    done
  done
done
kill $logger
[ -z "${PACK:-}" ] || pack
awk -F', ' 'NR > 1 && $2 ~ /MHz/ { sub(/ MHz/, "", $2); if ($2 + 0 > 1500) hi++; n++ } END { printf "SM clock samples: %d, above 1500 MHz: %d\n", n, hi }' "$out/clocks-$1.csv"
exit $rc
