# Golden tests of the generated GLSL and of the SPIR-V disassembly, with FileCheck.
. "$(dirname "$0")/lib.sh"
qkgen=$1 out=$2
FILECHECK=${FILECHECK:-/usr/lib/llvm-14/bin/FileCheck}
[ -x "$FILECHECK" ] || fail "FileCheck not found (Debian: llvm-14-tools)"
n=0
for check in tests/golden/*.check; do
  name=$(basename "$check" .check)
  case "$name" in
    *.spv) "$qkgen" emit "${name%.spv}" >/dev/null || fail "no variant ${name%.spv}"
           # the variant's module (variants that differ only in specialization
           # constants share one), as the manifest names it
           spv=$(python3 -c 'import json, sys
import manifest_view
m = json.load(open(sys.argv[1] + "/manifest.json"))
ks = manifest_view.kernels(m)  # each kernel with the fields of its module
print(next(k["spv"] for k in ks if k["name"] == sys.argv[2]))' "$out/default" "${name%.spv}") ||
             fail "${name%.spv}: not in $out/default/manifest.json"
           spirv-dis "$out/default/$spv" | "$FILECHECK" "$check" || fail "$check" ;;
    *)     "$qkgen" emit "$name" | "$FILECHECK" "$check" || fail "$check" ;;
  esac
  n=$((n + 1))
done
echo "$n passed, 0 failed"
