#!/usr/bin/env bash
# Builds what a GPU machine without compilers needs, on this machine: qkgen
# linked statically against glslang, SPIRV-Tools and libstdc++, and a bundle,
# into build-gpu/pkg (carried to the GPU machine with .gpu from
# ../shared/gpu/fetch-loader.sh). Usage: bench/build-gpu.sh [SET [TEMPLATES]]
# The bundle is the kernel set SET of specs/ (default specs/sets/standard.yaml,
# the set bench/standard.sh times; it fits the GPU machine's 64 MiB carry), or
# every kernel of SET where SET is a spec folder.
set -euo pipefail
cd "$(dirname "$0")/.."
set=${1:-specs/sets/standard.yaml} templates=${2:-templates}
specs=(specs --set "$set")
[ ! -d "$set" ] || specs=("$set")
# the shader toolchain of scripts/toolchain.sh (glslang 15, SPIRV-Tools
# 2025.1, static archives) unless QKGEN_TOOLCHAIN=system
toolchain=${QKGEN_TOOLCHAIN:-}
[ "$toolchain" = system ] || toolchain=$(bash scripts/toolchain.sh)
cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DQKGEN_STATIC_TOOLCHAIN=ON -DBUILD_TESTING=OFF \
  -DQKGEN_TOOLCHAIN="$toolchain" >/dev/null
cmake --build build-gpu -j"$(nproc)" --target qkgen
rm -rf build-gpu/pkg && mkdir -p build-gpu/pkg
cp build-gpu/qkgen build-gpu/pkg/
./build-gpu/qkgen build "${specs[@]}" --templates "$templates" --out build-gpu/out ${QKGEN_FILTER:+--filter "$QKGEN_FILTER"}
cp -r build-gpu/out/default build-gpu/pkg/bundle
cp bench/run-gpu.sh bench/standard.sh build-gpu/pkg/
# the commit the package was built from (the GPU machine's copy of .git need
# not be this one's: runs 95-97 read the session's first commit there), and
# the files that differed from it
{ git log -1 --format='commit %H %cd'; git status --short; } > build-gpu/pkg/commit.txt
du -sh build-gpu/pkg
