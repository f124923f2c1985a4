#!/usr/bin/env bash
# On the GPU machine, from the repository root, after `. .gpu/enter.sh`: every
# format's decode cases, qkgen and the peer (llama.cpp's Vulkan backend, carried
# as .peer) in one call, so both see the same clocks:
#   bash bench/formats-gpu.sh gguf   # the 16 GGUF formats: mat-vec 4096x14336 and
#                                    # 14336x4096 at 1, 4, 8 tokens; MoE 128 experts
#                                    # top-8 768x2048 at 1, 8, 32; the peer on the same
#   bash bench/formats-gpu.sh mlx    # the 18 MLX configurations (bf16 scales): mat-vec
#                                    # 4096x14336 at 1 and 8 tokens, MoE 768x2048 at 1
# The package is bench/build-gpu.sh's (PKG, default build-gpu/pkg); FORMATS
# (space-separated) narrows a part; FILTER (default _dot8, the int8-dot kernels,
# the fastest decode path of every format) is qkgen bench's --filter; OUT (default
# formats-out) takes the logs, one bench JSON per format and shape, and PACK=FILE
# packs OUT into FILE after each process (the GPU machine returns 8 files a call);
# DEADLINE (seconds since the epoch) starts no bench process within 40 s of it.
# Then, on any machine: python3 bench/side_by_side.py OUT (the table with ratios).
set -uo pipefail
pkg=${PKG:-build-gpu/pkg}
out=${OUT:-formats-out}
filter=${FILTER:-_dot8}
part=${1:-}
case $part in
gguf) formats=${FORMATS:-q4_0 q4_1 q5_0 q5_1 q8_0 q2_K q3_K q4_K q5_K q6_K iq4_nl iq4_xs iq3_xxs iq2_xxs mxfp4 nvfp4}
      shapes="4096,14336,1,4,8 14336,4096,1,4,8 768,2048,1,8,32,128,8" ;;
mlx) formats=${FORMATS:-$(for b in 2 3 4 5 6 8; do for g in 32 64 128; do printf 'mlx%s_g%s ' $b $g; done; done)}
     shapes="4096,14336,1,8 768,2048,1,128,8" ;;
*) echo "usage: $0 gguf|mlx" >&2; exit 2 ;;
esac
mkdir -p "$out"
# (tar's status 1: a file changed while read, the clock log that goes on)
pack() {
  [ -n "${PACK:-}" ] || return 0
  tar czf "$PACK.tmp" --warning=no-file-changed --exclude="./$(basename "$PACK")*" -C "$out" .
  [ $? -gt 1 ] || mv "$PACK.tmp" "$PACK"
}
nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv >> "$out/gpu.txt" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv -lms 200 >> "$out/clocks-$part.csv" 2>/dev/null &
logger=$!
cp "$pkg/commit.txt" "$out/commit.txt" 2>/dev/null
if [ "$part" = gguf ] && [ -x .peer/peerbench ]; then
  # the peer first, on the same shapes, its per-op GPU time (kern_us) against qkgen's per-dispatch us
  work=${TMPDIR:-/tmp}/peer-work
  mkdir -p "$work"
  [ -f "$work/package/index.node" ] || tar xzf .peer/fugood-node-llama-linux-x64-vulkan-1.7.15.tgz -C "$work"
  cases=()
  for t in 1 4 8; do cases+=(--case "dense,4096,14336,$t" --case "dense,14336,4096,$t"); done
  for t in 1 8 32; do cases+=(--case "moe,768,2048,$t,128,8"); done
  # (its quantizer refuses iq2_xxs without an importance matrix: PEER_TYPES
  # names the formats it times, by default the part's but that one)
  types=${PEER_TYPES:-$(echo $formats | tr ' ' '\n' | grep -vx iq2_xxs | paste -sd,)}
  GGML_VK_PERF_LOGGER=1 .peer/peerbench "$work/package/index.node" --types "$types" "${cases[@]}" \
    --runs 20 --warmup-ms 400 > "$out/peer.txt" 2> "$out/peer.err"
  echo "peer: exit $?, $(grep -c ^RESULT "$out/peer.txt") cases"
fi
rc=0
for f in $formats; do
  for s in $shapes; do
    IFS=, read -r m k rest <<< "$s"
    # the token counts, then (MoE) experts and top-k: "1,8,32,128,8"
    IFS=, read -ra v <<< "$rest"
    ids=() toks=$rest
    if [ "$m" = 768 ]; then
      n=${#v[@]}
      ids=(--experts "${v[$((n - 2))]}" --top-k "${v[$((n - 1))]}")
      toks=$(IFS=,; echo "${v[*]:0:$((n - 2))}")
    fi
    name=$f-m$m-k$k
    if [ -n "${DEADLINE:-}" ] && [ $((DEADLINE - $(date +%s))) -lt 40 ]; then
      echo "$name: not run, under 40 s before the deadline"
      rc=1
      continue
    fi
    "$pkg/qkgen" bench --bundle "$pkg/bundle" --formats "$f" --m "$m" --k "$k" --tokens "$toks" \
      "${ids[@]}" --filter "$filter" --runs 20 --warmup-ms 400 --finalists 2 --copy-mb 256 \
      --seed 88 --json "$out/$name.json" > "$out/$name.txt" 2>&1
    s_rc=$?
    [ $s_rc -eq 0 ] || rc=1
    echo "$name: exit $s_rc, $(grep -c '  \*$' "$out/$name.txt") cases"
  done
  pack
done
kill $logger 2>/dev/null
pack
awk -F', ' 'NR > 1 && $2 ~ /MHz/ { sub(/ MHz/, "", $2); if ($2 + 0 > 1500) hi++; n++ } END { printf "SM clock samples: %d, above 1500 MHz: %d\n", n, hi }' "$out/clocks-$part.csv"
exit $rc
