# Builds the default specs into the test bundle that the other tests share.
. "$(dirname "$0")/lib.sh"
qkgen=$1 out=$2
# The set-up (scripts/setup.sh) built one variant of each path of the same
# specs into out/ moments before in CI; its compile cache spares compiling
# those modules again (a path's tiles share one where the kernel specializes
# them). Entries are
# keyed by the generator's hash and each variant's GLSL, so a stale one is
# never used: what changed since is compiled here.
if [ ! -d "$out/.cache" ] && [ -d out/.cache ]; then
  mkdir -p "$out" && cp -r out/.cache "$out/.cache"
fi
"$qkgen" build --out "$out" || fail "qkgen build exited $?"
[ -f "$out/default/manifest.json" ] || fail "no manifest in $out/default"
n=$(ls "$out/default"/*.spv | wc -l)
[ "$n" -gt 0 ] || fail "no .spv in the bundle"
echo "1 passed, 0 failed: bundle of $n modules"
