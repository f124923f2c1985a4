# Every module of the bundle passes the standalone spirv-val (a second opinion
# besides the in-process validation of qkgen build).
. "$(dirname "$0")/lib.sh"
out=$2
command -v spirv-val >/dev/null || fail "spirv-val not installed (Debian: spirv-tools)"
pass=0
for f in "$out/default"/*.spv; do
  spirv-val --target-env vulkan1.2 "$f" || fail "$f does not validate"
  pass=$((pass + 1))
done
[ "$pass" -gt 0 ] || fail "no module checked"
echo "$pass passed, 0 failed"
