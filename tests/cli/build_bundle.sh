# Builds the default specs into the test bundle that the other tests share.
. "$(dirname "$0")/lib.sh"
qkgen=$1 out=$2
"$qkgen" build --out "$out" || fail "qkgen build exited $?"
[ -f "$out/default/manifest.json" ] || fail "no manifest in $out/default"
n=$(ls "$out/default"/*.spv | wc -l)
[ "$n" -gt 0 ] || fail "no .spv in the bundle"
echo "1 passed, 0 failed: bundle of $n modules"
