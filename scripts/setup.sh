#!/usr/bin/env bash
# qkgen's one set-up command on Debian 12: installs the dependencies (apt),
# configures and builds into build/, generates the default bundle into
# out/default, and runs every kernel of it once on the default Vulkan device
# against the CPU reference. --no-verify skips that last step.
set -euo pipefail
cd "$(dirname "$0")/.."
verify=1
[ "${1:-}" = "--no-verify" ] && verify=0

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

echo "== building"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"

echo "== generating out/default"
./build/qkgen build

if [ $verify = 1 ]; then
  echo "== running every kernel once against the CPU reference"
  ./build/qkgen verify
fi
