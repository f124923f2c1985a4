#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `. .gpu/enter.sh`:
# records the device and its SM clock, checks every kernel against the CPU
# reference, then runs the benchmarks. Logs go to $OUT (default bench-out/).
# Usage: build-gpu/pkg/run-gpu.sh [qkgen bench options...]
set -uo pipefail
pkg=$(dirname "$0")
out=${OUT:-bench-out}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,clocks.max.mem --format=csv | tee "$out/gpu.txt"
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu --format=csv -lms 100 > "$out/clocks.csv" &
logger=$!
tee "$out/commit.txt" < "$pkg/commit.txt" # the commit bench/build-gpu.sh built from
"$pkg/qkgen" devices | tee "$out/devices.txt"
# every kernel once against the CPU reference (slow where the driver compiles
# many large pipelines; the benchmark checks each variant it times anyway)
if [ -n "${VERIFY:-}" ]; then
  "$pkg/qkgen" verify --bundle "$pkg/bundle" ${VERIFY_FILTER:+--filter "$VERIFY_FILTER"} > "$out/verify.txt" 2>&1
  echo "verify: $(tail -1 "$out/verify.txt")"
fi
"$pkg/qkgen" bench --bundle "$pkg/bundle" --json "$out/bench.json" "$@" 2>&1 | tee "$out/bench.txt"
kill $logger
awk -F', ' 'NR > 1 { sub(/ MHz/, "", $2); if ($2 + 0 > 1500) hi++; n++ } END { printf "SM clock samples: %d, above 1500 MHz: %d\n", n, hi }' "$out/clocks.csv" | tee -a "$out/bench.txt"
