# A second build with nothing changed compiles nothing and rewrites nothing;
# a changed template recompiles only the modules that use it. One kernel's
# variants (all its formats), not the whole default bundle: the cache works
# per module, and build.bundle builds the whole default bundle.
. "$(dirname "$0")/lib.sh"
qkgen=$1 out=$2
only=(--filter matvec_shared_)
cp -r specs templates "$scratch/"
"$qkgen" build "$scratch/specs" --templates "$scratch/templates" --out "$scratch/out" "${only[@]}" -q || fail "first build"
stamp=$(stat -c %Y.%i "$scratch/out/default/manifest.json")
start=$(date +%s.%N)
msg=$("$qkgen" build "$scratch/specs" --templates "$scratch/templates" --out "$scratch/out" "${only[@]}") || fail "second build"
end=$(date +%s.%N)
echo "$msg"
echo "$msg" | grep -q "is up to date" || fail "second build was not up to date"
[ "$(stat -c %Y.%i "$scratch/out/default/manifest.json")" = "$stamp" ] || fail "bundle rewritten"
check_schema "$scratch/out/default"
echo "second build took $(echo "$end - $start" | bc) s"
# a change in one format's GLSL: its variants recompile, the others come from the cache
echo "// changed" >> "$scratch/templates/formats/q8_0.glsl"
msg=$("$qkgen" build "$scratch/specs" --templates "$scratch/templates" --out "$scratch/out" "${only[@]}") || fail "third build"
echo "$msg"
total=$(echo "$msg" | sed -n 's/.* in \([0-9]*\) modules.*/\1/p')
compiled=$(echo "$msg" | sed -n 's/.*(\([0-9]*\) compiled.*/\1/p')
# the modules of q8_0's kernels (variants that differ only in tile sizes share one)
q8=$(python3 -c 'import json, sys
import manifest_view
m = json.load(open(sys.argv[1]))
ks = manifest_view.kernels(m)  # each kernel with the fields of its module
print(len({k["module"] for k in ks if k["format"] == "q8_0"}))' "$scratch/out/default/manifest.json")
[ "$compiled" = "$q8" ] || fail "compiled $compiled modules, expected the $q8 of q8_0"
[ "$compiled" -lt "$total" ] || fail "everything was recompiled"
echo "2 passed, 0 failed"
