#!/usr/bin/env bash
# qkgen's one set-up command on Debian 12: installs the dependencies (apt),
# configures and builds into build/, generates a representative bundle into
# out/default (one variant of every kernel path), and runs each of its kernels
# once on the default Vulkan device against the CPU reference.
# --no-verify skips that last step; --all generates and verifies every
# variant (minutes more; the test suite verifies every variant anyway).
set -euo pipefail
cd "$(dirname "$0")/.."
verify=1 all=0
for arg in "$@"; do
  case $arg in
  --no-verify) verify=0 ;;
  --all) all=1 ;;
  *) echo "usage: $0 [--no-verify] [--all]" >&2; exit 2 ;;
  esac
done

packages=(build-essential cmake pkg-config libyaml-dev glslang-dev glslang-tools spirv-tools
          libvulkan-dev mesa-vulkan-drivers vulkan-validationlayers libclang-dev llvm-14-tools
          python3-numpy python3-jsonschema libcjson-dev bc)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "== installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends "${missing[@]}"
fi

# The shader toolchain: glslang 15 and SPIRV-Tools 2025.1 from Debian 13's
# sources (scripts/toolchain.sh), built once per machine into a cache outside
# the clone and reused by later clones. QKGEN_TOOLCHAIN=system skips it and
# links Debian 12's glslang 12, which drops the variants that need newer GLSL
# extensions (qkgen list --dropped says which).
toolchain=${QKGEN_TOOLCHAIN:-}
if [ "$toolchain" != system ]; then
  echo "== shader toolchain"
  toolchain=$(bash scripts/toolchain.sh)
fi

echo "== building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DQKGEN_TOOLCHAIN="$toolchain" >/dev/null
cmake --build build -j"$(nproc)"

# One variant of each path (kernel x format x activation x math path x
# fusion: `qkgen build --representative`, the first legal tile of each), so
# that this command takes minutes on two cores rather than the whole search
# space's build and verify (docs/setup.md, "The set-up command").
select=(--representative)
[ $all = 1 ] && select=()
echo "== generating out/default${select:+ (one variant of each kernel path)}"
./build/qkgen build "${select[@]}"

if [ $verify = 1 ]; then
  # A CPU driver (lavapipe) compiles each pipeline for up to seconds, one at
  # a time per process: one shard of the kernels per core. GALLIVM_PERF=nopt
  # skips LLVM's optimizations there, as the test suite does.
  jobs=$(nproc)
  echo "== running each kernel once against the CPU reference ($jobs processes)"
  logs=$(mktemp -d)
  trap 'rm -rf "$logs"' EXIT
  pids=()
  # the first shard's table as it comes, the others' after it
  [ "$jobs" = 1 ] || echo "-- shard 0/$jobs"
  for ((s = 0; s < jobs; s++)); do
    out=$logs/$s
    [ $s = 0 ] && out=/dev/stdout
    GALLIVM_PERF=${GALLIVM_PERF-nopt} ./build/qkgen verify --shard "$s/$jobs" >"$out" 2>&1 &
    pids+=($!)
  done
  failed=0
  for ((s = 0; s < jobs; s++)); do
    wait "${pids[$s]}" || failed=1
    [ $s = 0 ] && continue
    echo "-- shard $s/$jobs"
    cat "$logs/$s"
  done
  [ $failed = 0 ] || { echo "== verify failed (above)"; exit 1; }
  echo "== verify: every kernel checked passed"
fi
