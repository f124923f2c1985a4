# An interrupted build never leaves half a bundle: kill builds at several
# moments and check that the bundle is absent or whole (every module listed
# in the manifest present with its hash) and no temporary folder is taken for it.
# One kernel's variants (about 260, some seconds to build) so that each kill
# lands mid-build without compiling the whole default bundle again.
. "$(dirname "$0")/lib.sh"
qkgen=$1
only=(--filter matvec_shared_)
check_whole() {
  local b=$1/default
  [ -e "$b" ] || return 0
  [ -f "$b/manifest.json" ] || fail "bundle without manifest"
  for spv in $(grep -o '"spv": "[^"]*"' "$b/manifest.json" | cut -d'"' -f4); do
    [ -f "$b/$spv" ] || fail "manifest lists $spv, which is missing"
  done
}
for delay in 0.05 0.2 0.5 1.0; do
  rm -rf "$scratch/out"
  "$qkgen" build "${only[@]}" --out "$scratch/out" --force -q &
  pid=$!
  sleep $delay
  kill -9 $pid 2>/dev/null
  wait $pid 2>/dev/null
  check_whole "$scratch/out"
  echo "killed after $delay s: $( [ -e "$scratch/out/default" ] && echo 'whole bundle' || echo 'no bundle')"
done
# an old bundle survives an interrupted rebuild
"$qkgen" build "${only[@]}" --out "$scratch/out" -q || fail "build"
"$qkgen" build "${only[@]}" --out "$scratch/out" --force -q &
pid=$!
sleep 0.3
kill -9 $pid 2>/dev/null
wait $pid 2>/dev/null
check_whole "$scratch/out"
[ -f "$scratch/out/default/manifest.json" ] || fail "the old bundle was lost"
# the killed builds' hidden folders and files are removed by the next build,
# but not those of a build still running (this shell stands in for one)
dead=$(sh -c 'echo $$')
mkdir -p "$scratch/out/.default.tmp.$dead/x" "$scratch/out/default.old.$dead" "$scratch/out/.default.tmp.$$"
touch "$scratch/out/.cache/0123.spv.tmp.$dead"
"$qkgen" build "${only[@]}" --out "$scratch/out" -q || fail "build after kills"
left=$(cd "$scratch/out" && ls -a . .cache | grep -E '\.(tmp|old)\.[0-9]+$' | grep -v "^\.default\.tmp\.$$\$")
[ -z "$left" ] || fail "temporary files of killed builds left: $left"
[ -d "$scratch/out/.default.tmp.$$" ] || fail "the folder of a live build was removed"
check_schema "$scratch/out/default"
# one build of a bundle at a time: while another holds its lock (flock(1)
# stands in for it) a build waits, then completes; two at once both succeed
rmdir "$scratch/out/.default.tmp.$$"
one=(--filter matvec_q4_0_f32_nr2x1x8_wg64) # a build of well under a second
"$qkgen" build "${one[@]}" --out "$scratch/lock" -q || fail "build of one variant"
# the holder keeps the lock until the build has said that it waits, however
# long the build's planning takes on a loaded machine, then lets it go
flock "$scratch/lock/.default.lock" sh -c "while [ ! -e '$scratch/release' ]; do sleep 0.05; done" &
holder=$!
sleep 0.3
"$qkgen" build "${one[@]}" --out "$scratch/lock" --force > "$scratch/waited" 2>&1 &
waiter=$!
for _ in $(seq 1200); do
  grep -q "^qkgen build: waiting for $scratch/lock/.default.lock, held by" "$scratch/waited" && break
  kill -0 $waiter 2>/dev/null || break
  sleep 0.1
done
grep -q "^qkgen build: waiting for $scratch/lock/.default.lock, held by" "$scratch/waited" ||
  { touch "$scratch/release"; wait $waiter; cat "$scratch/waited"; fail "a waiting build did not say so"; }
sleep 0.5
kill -0 $waiter 2>/dev/null || { touch "$scratch/release"; fail "a build did not wait for the bundle's lock"; }
grep -q "^built " "$scratch/waited" && fail "a build finished while another held the lock"
touch "$scratch/release"
wait $holder
wait $waiter || { cat "$scratch/waited"; fail "the waiting build failed"; }
grep -q "^built " "$scratch/waited" || { cat "$scratch/waited"; fail "the waiting build did not complete"; }
"$qkgen" build "${only[@]}" --out "$scratch/out" --force -q & a=$!
"$qkgen" build "${only[@]}" --out "$scratch/out" --force -q & b=$!
wait $a || fail "the first of two concurrent builds failed"
wait $b || fail "the second of two concurrent builds failed"
check_whole "$scratch/out"
check_schema "$scratch/out/default"
echo "8 passed, 0 failed"
