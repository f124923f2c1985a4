# docs/new-format.md, step by step: q3s (q3s.yaml + q3s.glsl, this folder only) joins a copy of
# the specs, its kernels build, and they match test_newformat's reference, directly and through
# `qkgen matmul`. No C of qkgen names q3s: only test_newformat.c's reference knows it.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 check=$2
here=$(dirname "$0")
for d in gen cli runtime common tests/ref; do
  ! grep -rqw q3s "$d" || fail "$d mentions q3s: a new format must need no C change"
done
# 1. the YAML and the GLSL beside it in formats/
cp -r specs "$scratch/specs"
cp "$here/q3s.yaml" "$here/q3s.glsl" "$scratch/specs/formats/"
# 2. the format named in the kernels that should support it
sed -i 's/^formats: \[/formats: [q3s, /' "$scratch/specs/kernels/matvec.yaml"
grep -q '^formats: \[q3s, ' "$scratch/specs/kernels/matvec.yaml" || fail "no formats: list in matvec.yaml"
# 3. listed, built (only the portable mat-vec's variants: the others are not under test here,
# and the kernels of every format, formats: [all], include cooperative-matrix ones lavapipe lacks)
"$qkgen" list "$scratch/specs" --formats | grep -E '^q3s +block +- +32 +3.5 ' || fail "qkgen list does not show q3s"
"$qkgen" build "$scratch/specs" --out "$scratch/out" --filter matvec_q3s_ || fail "qkgen build exited $?"
grep -q '"name": "qs", "type": "u8", "offset": 2, "count": 12' "$scratch/out/default/manifest.json" ||
  fail "the manifest does not describe q3s's blocks"
check_schema "$scratch/out/default"
# 4. every kernel against the reference
"$check" run "$scratch/out/default" || fail "a q3s kernel is off"
# 5. qkgen matmul, which knows formats only from the bundle
mkdir "$scratch/mm"
"$check" npy "$scratch/mm" 33 512 3 >/dev/null || fail "writing the matmul case"
"$qkgen" matmul --format q3s --weights "$scratch/mm/W.npy" --x "$scratch/mm/X.npy" \
  --out "$scratch/mm/Y.npy" --bundle "$scratch/out/default" || fail "qkgen matmul exited $?"
python3 - "$scratch/mm" <<'PY' || fail "qkgen matmul is off"
import numpy as np, sys
d = sys.argv[1]
y, ref = np.load(f"{d}/Y.npy"), np.load(f"{d}/REF.npy")
assert y.shape == ref.shape and np.isfinite(y).all(), (y.shape, ref.shape)
nmse = float(np.sum((y - ref) ** 2) / np.sum(ref ** 2))
print(f"qkgen matmul q3s: shape {y.shape} NMSE {nmse:.2e}")
assert nmse <= 1e-6, nmse
PY
echo "1 passed, 0 failed: q3s built, checked kernel by kernel and through qkgen matmul"
