# A full disk and a read-only output folder: the build fails with the
# system's reason (exit 1), the bundle already there is left as it was, and
# no temporary folder stays. The output lies on a small tmpfs mounted in a
# private mount namespace (unshare -m); where this machine cannot make one,
# the test is skipped (exit 77).
if [ -z "${QK_IN_NS:-}" ]; then
  unshare -m true 2>/dev/null || { echo "SKIP: no private mount namespace (unshare -m)"; exit 77; }
  QK_IN_NS=1 exec unshare -m bash "$0" "$@"
fi
. "$(dirname "$0")/lib.sh"
qkgen=$1
d="$scratch/disk"
mkdir -p "$d"
mount -t tmpfs -o size=300k tmpfs "$d" 2>/dev/null || { echo "SKIP: cannot mount a tmpfs"; exit 77; }
trap 'umount "$d" 2>/dev/null; rm -rf "$scratch"' EXIT
n=0
"$qkgen" build --filter copy_f32_nr1x1x4_wg256 --out "$d" -q || fail "the first, small bundle"
before=$(sha256sum "$d/default/manifest.json")
# full: a bundle larger than the 300 KiB left
set +e
"$qkgen" build --filter matvec_q4_0,matvec_q4_1,matvec_q8_0,matvec_q6_K --out "$d" -q 2> "$scratch/full.err"
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$scratch/full.err"; fail "full disk: exit $rc, expected 1"; }
grep -q "No space left on device" "$scratch/full.err" || { cat "$scratch/full.err"; fail "full disk: no reason given"; }
[ "$(sha256sum "$d/default/manifest.json")" = "$before" ] || fail "full disk: the old bundle changed"
[ -z "$(ls -A "$d" | grep '\.tmp\.')" ] || fail "full disk: a temporary folder stayed: $(ls -A "$d")"
n=$((n + 1))
# read-only
mount -o remount,ro "$d"
set +e
"$qkgen" build --filter matvec_q4_1 --out "$d" -q 2> "$scratch/ro.err"
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$scratch/ro.err"; fail "read-only: exit $rc, expected 1"; }
grep -q "Read-only file system" "$scratch/ro.err" || { cat "$scratch/ro.err"; fail "read-only: no reason given"; }
[ "$(sha256sum "$d/default/manifest.json")" = "$before" ] || fail "read-only: the old bundle changed"
n=$((n + 1))
echo "$n passed, 0 failed"
