# A plain `cmake -S . -B build` takes the shader toolchain the set-up cached
# (scripts/toolchain.sh's prefix of its current stamp) and says so;
# -DQKGEN_TOOLCHAIN=system still takes Debian's; where the cache holds only
# another version, the configure warns and names it. Three configures of the
# source tree into scratch folders (nothing is built). Skips (77) the first
# check where this machine has no cached toolchain.
. "$(dirname "$0")/lib.sh"
src=$1
unset QKGEN_TOOLCHAIN
configure() { # configure NAME ARGS...: the configure's output in $scratch/NAME.log
  local name=$1; shift
  cmake -S "$src" -B "$scratch/$name" "$@" >"$scratch/$name.log" 2>&1 ||
    { cat "$scratch/$name.log"; fail "cmake $* failed"; }
}
line() { grep "qkgen shader toolchain:" "$scratch/$1.log"; }
configure system -DQKGEN_TOOLCHAIN=system
line system | grep -q "Debian's glslang and SPIRV-Tools, chosen by -DQKGEN_TOOLCHAIN=system\$" ||
  { cat "$scratch/system.log"; fail "-DQKGEN_TOOLCHAIN=system did not take Debian's"; }
! grep -q "CMake Warning" "$scratch/system.log" || fail "a warning though system was asked for"
mkdir -p "$scratch/cache/toolchain-old"
echo "glslang 1; recipe 0" >"$scratch/cache/toolchain-old/qkgen-toolchain.stamp"
configure stale -DQKGEN_TOOLCHAIN_CACHE="$scratch/cache"
line stale | grep -q "Debian's glslang and SPIRV-Tools, none cached" ||
  { cat "$scratch/stale.log"; fail "a stale cache did not fall back to Debian's"; }
tr -s ' \n' ' ' <"$scratch/stale.log" | grep -q "no shader toolchain of scripts/toolchain.sh in $scratch/cache (of another version: $scratch/cache/toolchain-old)" ||
  { cat "$scratch/stale.log"; fail "no warning naming the stale toolchain"; }
echo "system and stale: ok"
# the machine's own cache, as the set-up leaves it
want=$(bash -c "$(grep -E '^(glslang_v|tools_v|headers_v|recipe|stamp)=' "$src/scripts/toolchain.sh"); echo \"\$stamp\"")
cached=
for s in /var/cache/qkgen/*/qkgen-toolchain.stamp "${XDG_CACHE_HOME:-$HOME/.cache}"/qkgen/*/qkgen-toolchain.stamp; do
  [ -f "$s" ] && [ "$(cat "$s")" = "$want" ] && { cached=$(dirname "$s"); break; }
done
[ -n "$cached" ] || { echo "SKIP: no cached toolchain of stamp '$want' on this machine"; exit 77; }
configure plain
line plain | grep -qF "qkgen shader toolchain: $cached ($want), found in the set-up's cache" ||
  { cat "$scratch/plain.log"; fail "a plain configure did not take $cached"; }
grep -q "^QK_LIB_glslang:FILEPATH=$cached/lib/" "$scratch/plain/CMakeCache.txt" ||
  fail "glslang not linked from $cached: $(grep '^QK_LIB_glslang:' "$scratch/plain/CMakeCache.txt")"
echo "plain configure: $cached"
