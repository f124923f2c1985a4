#!/usr/bin/env bash
# On the GPU machine, after `. .gpu/enter.sh`: times the peer's whole MoE FFN
# layer (peerlayer, one ggml graph of chained layers per case) twice, as
# ../shared/peer/run.sh times single ops: with ggml-vulkan's per-op GPU timing
# (kern_us, a barrier after each op) and without (wall_us per layer). Run it in
# the same device call as `qkgen bench --layer`. Results: $OUT/layer-on.txt and
# $OUT/layer-off.txt (stderr beside them).
#   bash .peer/run-layer.sh [peerlayer options, e.g. --types q4_0 --tokens 1,8]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT:-peer-out}
work=${TMPDIR:-/tmp}/peer-work
mkdir -p "$work/lib" "$out"
[ -f "$work/package/index.node" ] || tar xzf "$here"/fugood-node-llama-linux-x64-vulkan-1.7.15.tgz -C "$work"
# index.node needs libgomp.so.1 and a libstdc++ with GLIBCXX_3.4.30
ldconfig -p | grep -q 'libgomp.so.1 ' || echo "warning: no libgomp.so.1 on this machine; carry Debian 12's libgomp1 and put it in $work/lib" >&2
rc=0
for mode in on off; do
  e=(); [ "$mode" = on ] && e=(GGML_VK_PERF_LOGGER=1)
  env LD_LIBRARY_PATH="$work/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "${e[@]}" \
    "$here/peerlayer" "$work/package/index.node" "$@" > "$out/layer-$mode.txt" 2> "$out/layer-$mode.err"
  r=$?; [ $r -ne 0 ] && rc=$r
  echo "peer layer $mode: exit $r, $(grep -c ^RESULT "$out/layer-$mode.txt") cases"
done
exit $rc
