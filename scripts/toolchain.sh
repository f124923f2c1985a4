#!/usr/bin/env bash
# Builds the shader toolchain qkgen links (glslang 15, SPIRV-Tools 2025.1,
# SPIRV-Headers 1.4.309) from Debian 13's source packages with Debian 12's
# cmake, ninja and gcc, into a prefix outside the clone that later clones on
# the same machine reuse while its version stamp matches. Prints the prefix on
# stdout (progress goes to stderr). Needs root for apt (sudo otherwise).
#
# Why: bookworm's glslang 12 cannot compile GL_KHR_cooperative_matrix nor
# GL_NV_cooperative_matrix2, and its SPIRV-Tools 2023.1 cannot validate them.
# Only the trixie deb-src entry is added, so no trixie binary is ever installed.
#
# Environment: QKGEN_TOOLCHAIN  prefix (default below); QKGEN_TOOLCHAIN_JOBS
# (default 2) and QKGEN_TOOLCHAIN_NICE (default 15) for the build.
set -euo pipefail

# The pinned source versions; the stamp changes, and so the prefix, with any of
# them or with this recipe's revision (bump it when the build flags change).
glslang_v=15.1.0+1.4.309.0-1
tools_v=2025.1~rc1-1
headers_v=1.6.1+1.4.309.0-1
recipe=1
stamp="glslang $glslang_v; spirv-tools $tools_v; spirv-headers $headers_v; recipe $recipe"

cache=/var/cache/qkgen
if [ "$(id -u)" -ne 0 ] && ! mkdir -p "$cache" 2>/dev/null; then
  cache=${XDG_CACHE_HOME:-$HOME/.cache}/qkgen
fi
prefix=${QKGEN_TOOLCHAIN:-$cache/toolchain-glslang15.1-spirvtools2025.1-r$recipe}
jobs=${QKGEN_TOOLCHAIN_JOBS:-2}
nice=${QKGEN_TOOLCHAIN_NICE:-15}
log() { echo "== toolchain: $*" >&2; }

if [ -f "$prefix/qkgen-toolchain.stamp" ] && [ "$(cat "$prefix/qkgen-toolchain.stamp")" = "$stamp" ]; then
  log "reusing $prefix"
  echo "$prefix"
  exit 0
fi

sudo=""
[ "$(id -u)" -ne 0 ] && sudo=sudo
mkdir -p "$(dirname "$prefix")"
# One build at a time per prefix (two CI runs on one machine); the loser
# waits and then finds the stamp.
exec 9>"$prefix.lock"
flock 9
if [ -f "$prefix/qkgen-toolchain.stamp" ] && [ "$(cat "$prefix/qkgen-toolchain.stamp")" = "$stamp" ]; then
  log "reusing $prefix (built by another run)"
  echo "$prefix"
  exit 0
fi

for p in cmake ninja-build g++ python3 dpkg-dev; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="${missing:-} $p"
done
if [ -n "${missing:-}" ]; then
  log "installing$missing"
  $sudo apt-get update >&2
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y --no-install-recommends $missing >&2
fi

# Source lines only: a deb-src entry never makes apt install a trixie binary.
list=/etc/apt/sources.list.d/qkgen-trixie-src.sources
# The orig tarball's "SHA-256 name" in the Sources stanza of package $1 at
# version $2, from apt's signed index; empty when trixie has no such version.
orig_of() {
  apt-cache showsrc "$1" 2>/dev/null | awk -v v="$2" '
    /^Package:/ {ok=0} $1 == "Version:" {ok = ($2 == v)}
    /^Checksums-Sha256:/ {f=1; next} /^[^ ]/ {f=0}
    ok && f && $3 ~ /\.orig\.tar\./ {print $1, $3; exit}'
}
if [ -z "$(orig_of glslang "$glslang_v")" ]; then
  log "adding $list (deb-src only)"
  printf '%s\n' "Types: deb-src" "URIs: http://deb.debian.org/debian" "Suites: trixie" \
    "Components: main" "Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg" |
    $sudo tee "$list" >/dev/null
  $sudo apt-get update >&2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/qkgen-toolchain.XXXXXX")
# The staging root sits beside the prefix so that the final move is a rename.
stage=$(dirname "$prefix")/.stage.$$
trap 'rm -rf "$work" "$stage"' EXIT
cd "$work"

# Only the upstream tarballs are used (Debian's patches are packaging). apt
# fetches them from the mirror and checks them against the signed Sources
# index; some .dsc and .debian.tar.xz files answer 404 on the mirror, which
# apt reports as a failure although the tarball arrived, so the result is
# judged by the tarball's SHA-256 from that same index instead.
fetch() { # package version -> path of the verified orig tarball
  local pkg=$1 ver=$2 upstream=${2%-*} line sum name
  (apt-get source --download-only --tar-only "$pkg=$ver" ||
    apt-get source --download-only "$pkg=$ver") >&2 2>&1 || true
  line=$(orig_of "$pkg" "$ver")
  [ -n "$line" ] || { echo "toolchain: no orig tarball of $pkg $ver in trixie's Sources index (update the pins in $0)" >&2; exit 1; }
  sum=${line% *} name=${line#* }
  [ -f "$name" ] || { echo "toolchain: $pkg $ver: $name did not download" >&2; exit 1; }
  echo "$sum  $name" | sha256sum -c --quiet >&2 || { echo "toolchain: $name: SHA-256 mismatch" >&2; exit 1; }
  mkdir -p "src/$pkg"
  tar -xf "$name" -C "src/$pkg" --strip-components=1
  log "$pkg $upstream unpacked"
}
fetch spirv-headers "$headers_v"
fetch spirv-tools "$tools_v"
fetch glslang "$glslang_v"

# Built under the staging root and moved into place at the end, so a prefix
# with a stamp is always complete.
cfg=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$prefix" -DBUILD_SHARED_LIBS=OFF
     -DCMAKE_POSITION_INDEPENDENT_CODE=ON)
build() { nice -n "$nice" cmake --build "$@" -j"$jobs" >&2; }

t0=$(date +%s)
cmake -S src/spirv-headers -B b/headers "${cfg[@]}" -DSPIRV_HEADERS_ENABLE_TESTS=OFF \
  -DSPIRV_HEADERS_ENABLE_INSTALL=ON >&2
DESTDIR=$stage cmake --install b/headers >&2

# SPIRV-Tools: only the static core and optimizer libraries and the
# validator, optimizer and disassembler tools; the project's full build would
# compile the core twice more (its always-built shared library) and the
# reducer, linter, differ and linker qkgen does not use.
cmake -S src/spirv-tools -B b/tools "${cfg[@]}" -DSPIRV-Headers_SOURCE_DIR="$work/src/spirv-headers" \
  -DSPIRV_SKIP_TESTS=ON -DSPIRV_WERROR=OFF -DSPIRV_TOOLS_BUILD_STATIC=ON >&2
build b/tools --target SPIRV-Tools-static SPIRV-Tools-opt spirv-val spirv-opt spirv-dis
install -d "$stage$prefix/bin" "$stage$prefix/lib" "$stage$prefix/include/spirv-tools"
install -m 755 b/tools/tools/spirv-val b/tools/tools/spirv-opt b/tools/tools/spirv-dis "$stage$prefix/bin/"
install -m 644 b/tools/source/libSPIRV-Tools.a b/tools/source/opt/libSPIRV-Tools-opt.a "$stage$prefix/lib/"
install -m 644 src/spirv-tools/include/spirv-tools/*.h src/spirv-tools/include/spirv-tools/*.hpp \
  "$stage$prefix/include/spirv-tools/"
t1=$(date +%s)
log "SPIRV-Tools built in $((t1 - t0)) s"

# glslang without its built-in optimizer (qkgen runs SPIRV-Tools' itself, see
# gen/compile/optimize.cpp) and without HLSL, so it does not link SPIRV-Tools.
cmake -S src/glslang -B b/glslang "${cfg[@]}" -DENABLE_OPT=OFF -DENABLE_HLSL=OFF -DGLSLANG_TESTS=OFF \
  -DENABLE_GLSLANG_BINARIES=ON -DENABLE_SPVREMAPPER=OFF -DBUILD_EXTERNAL=OFF >&2
build b/glslang
DESTDIR=$stage cmake --install b/glslang >&2
t2=$(date +%s)
log "glslang built in $((t2 - t1)) s"

echo "$stamp" >"$stage$prefix/qkgen-toolchain.stamp"
printf 'spirv-tools %s s\nglslang %s s\n' "$((t1 - t0))" "$((t2 - t1))" >"$stage$prefix/qkgen-toolchain.times"
rm -rf "$prefix.old"
[ -e "$prefix" ] && mv "$prefix" "$prefix.old"
mv "$stage$prefix" "$prefix"
rm -rf "$prefix.old"
log "built $prefix in $((t2 - t0)) s"
echo "$prefix"
