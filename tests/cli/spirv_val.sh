# Every module of the bundle passes the standalone spirv-val (a second opinion
# besides the in-process validation of qkgen build).
. "$(dirname "$0")/lib.sh"
out=$2
command -v spirv-val >/dev/null || fail "spirv-val not installed (Debian: spirv-tools)"
pass=0
for f in "$out/default"/*.spv; do
  # the module's target from its SPIR-V version (word 1): 1.6 is Vulkan 1.3's
  # (the NV cooperative-matrix-2 modules), else Vulkan 1.2
  env=vulkan1.2
  [ "$(od -An -tx4 -j4 -N4 "$f" | tr -d ' ')" = 00010600 ] && env=vulkan1.3
  spirv-val --target-env $env "$f" || fail "$f does not validate"
  pass=$((pass + 1))
done
[ "$pass" -gt 0 ] || fail "no module checked"
echo "$pass passed, 0 failed"
