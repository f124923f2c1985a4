#!/usr/bin/env bash
# On the GPU machine, from the repository root (after `. .gpu/enter.sh`):
# issue 29's MoE layer target at decode token counts, ours and the peer's in
# one call. The layer's cases are tuned afresh (a database from another day
# may name variants whose content hash has changed since), the tuned bundle
# is built from them, `qkgen bench --layer` times the layer once per mode
# (--router and --down), and the peer's layer (bench/peer/build.sh, then
# .peer/run-layer.sh) follows in the same call:
#   bash bench/layer-gpu.sh                # q4_0 and q4_K at 1 and 8 tokens
#   MODEL=bench/layer/qwen3-moe.yaml MODES=auto-split bash bench/layer-gpu.sh
#                                          # and at 32 and 512 (the prefill path)
# MODEL (default bench/layer/qwen3-moe-decode.yaml: its formats and tokens),
# MODES (default "auto-split auto-fused ranked-split ranked-fused":
# ROUTER-DOWN, the values of --router and --down; results in layer-MODE.*),
# QKGEN (default build-gpu/pkg/qkgen), OUT (default layer-out), SEED
# (default 88); PACK=FILE.tgz packs $OUT after each step (the GPU machine
# returns at most 8 files of a call); LAYER_OPTS adds options to `qkgen
# bench --layer` and PEER=0 leaves the peer out (a smoke test on lavapipe: a
# small model file, LAYER_OPTS="--m 64 --k 256 ...").
set -uo pipefail
qkgen=${QKGEN:-build-gpu/pkg/qkgen}
model=${MODEL:-bench/layer/qwen3-moe-decode.yaml}
out=${OUT:-layer-out}
seed=${SEED:-88}
modes=${MODES:-auto-split auto-fused ranked-split ranked-fused}
# formats and tokens from the model file's flow lists (one line each)
list() { sed -n "s/^$1:.*\[\(.*\)\].*/\1/p" "$model" | tr -d ' '; }
formats=$(list formats)
# the decode token counts, then the prefill ones
tokens=$(for part in decode prefill; do
  sed -n "s/^tokens:.*$part: *\\[\\([^]]*\\)\\].*/\\1/p" "$model"
done | tr -d ' ' | paste -sd, -)
[ -n "$formats" ] && [ -n "$tokens" ] || { echo "$0: $model: no formats or token counts" >&2; exit 2; }
mkdir -p "$out"
pack() {
  [ -z "${PACK:-}" ] && return
  tar czf "$PACK.tmp" --warning=no-file-changed --exclude=./work --exclude="./$(basename "$PACK")*" -C "$out" . &&
    mv "$PACK.tmp" "$PACK"
}
step() { # name, command...: its output in $out/NAME.txt, its wall time logged
  local name=$1 t0 t1 rc; shift
  t0=$(date +%s.%N)
  "$@" > "$out/$name.txt" 2>&1
  rc=$?
  t1=$(date +%s.%N)
  awk -v n="$name" -v a="$t0" -v b="$t1" -v r=$rc 'BEGIN { printf "%s %.1f s rc %d\n", n, b - a, r }' |
    tee -a "$out/times.txt"
  pack
  return $rc
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv > "$out/gpu.txt" 2>&1
git log -1 --format='commit %H %cd' > "$out/commit.txt" 2>/dev/null
cp "$model" "$out/"
rm -f "$out/tune.jsonl"
step tune "$qkgen" tune --model "$model" --db "$out/tune.jsonl" --out "$out/work" --seed "$seed" ||
  exit 1
step build "$qkgen" build --tuned "$out/tune.jsonl" --model "$model" --out "$out/work" --name layer ||
  exit 1
for m in $modes; do
  step "layer-$m" "$qkgen" bench --layer --bundle "$out/work/layer" --formats "$formats" \
    --tokens "$tokens" --router "${m%%-*}" --down "${m#*-}" --seed "$seed" \
    --json "$out/layer-$m.json" ${LAYER_OPTS:-}
done
export OUT="$out"
[ "${PEER:-1}" = 0 ] || step peer bash .peer/run-layer.sh --types "$formats" --tokens "$tokens"
pack
