#!/usr/bin/env bash
# Builds peerlayer (the peer's whole MoE layer, bench/peer/peerlayer.c) into
# DIR (default .peer/, ignored by git), next to the peer that
# `bash ../shared/peer/fetch.sh .peer` fetched, with run-layer.sh beside it.
#   bash bench/peer/build.sh [DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${1:-$(cd "$here/../.." && pwd)/.peer}
mkdir -p "$dir"
gcc -std=gnu11 -O2 -Wall -Wextra -o "$dir/peerlayer" "$here/peerlayer.c" -ldl -lm -lpthread
cp "$here/run-layer.sh" "$dir/"
[ -f "$dir"/fugood-node-llama-linux-x64-vulkan-1.7.15.tgz ] ||
  echo "note: no peer package in $dir yet: bash ../shared/peer/fetch.sh $dir" >&2
echo "built $dir/peerlayer"
