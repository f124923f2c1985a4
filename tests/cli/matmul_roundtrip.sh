# qkgen matmul on weights quantized by another implementation (tests/tools/
# ggml_quant.py, numpy) against its float64 reference, through .npy files.
. "$(dirname "$0")/lib.sh"
qkgen=$1 bundle=$2
seed=${QKGEN_SEED:-$RANDOM}
echo "seed $seed"
n=0
for fmt in ${QK_ROUNDTRIP_FORMATS:-q4_0 q8_0}; do
  for shape in "33 256 1" "7 512 0"; do
    set -- $shape
    d="$scratch/$fmt-$1"
    python3 tests/tools/ggml_quant.py make --format "$fmt" --m "$1" --k "$2" --tokens 1 --seed "$seed" --out "$d" >/dev/null || fail "quantizer"
    x="$d/X.npy"
    if [ "$3" = 0 ]; then  # also the 1-D form of X
      python3 -c "import numpy as np; np.save('$d/X1.npy', np.load('$d/X.npy')[0])"; x="$d/X1.npy"
    fi
    "$qkgen" matmul --format "$fmt" --weights "$d/W.npy" --x "$x" --out "$d/Y.npy" --bundle "$bundle" || fail "qkgen matmul $fmt"
    python3 - "$d" "$3" <<'PY' || fail "$fmt M=$1 K=$2"
import numpy as np, sys
d, two_d = sys.argv[1], sys.argv[2] == "1"
y, ref = np.load(f"{d}/Y.npy"), np.load(f"{d}/REF.npy")
if not two_d: ref = ref[0]
assert y.dtype == np.float32 and y.shape == ref.shape, (y.dtype, y.shape, ref.shape)
nmse = float(np.sum((y - ref) ** 2) / np.sum(ref ** 2))
print(f"{d.split('/')[-1]}: shape {y.shape} NMSE {nmse:.3e}")
assert np.isfinite(y).all() and nmse <= 1e-6, nmse
PY
    n=$((n + 1))
  done
done
# The kernel it ran is named on stderr; --kernel forces one, and refuses a
# name the bundle lacks or a kernel that does not compute this product.
d="$scratch/q4_0-33"
"$qkgen" matmul --format q4_0 --weights "$d/W.npy" --x "$d/X.npy" --out "$d/Y0.npy" --bundle "$bundle" \
  2> "$scratch/default.err" || fail "qkgen matmul (default choice)"
grep -q "^qkgen matmul: [a-z].* (the default choice\|^qkgen matmul: [a-z].* (the bundle's select table" "$scratch/default.err" ||
  fail "no kernel line: $(cat "$scratch/default.err")"
pick() { python3 - "$bundle/manifest.json" "$1" <<'PY'
import json, sys
import manifest_view
m = json.load(open(sys.argv[1]))
ks = manifest_view.kernels(m)  # each kernel with the fields of its module
print(next(k["name"] for k in ks if k["family"] == sys.argv[2] and k["format"] == "q4_0" and k["fusion"] == "none"))
PY
}
kernel=$(pick matvec) || fail "no q4_0 matvec kernel in $bundle"
"$qkgen" matmul --format q4_0 --weights "$d/W.npy" --x "$d/X.npy" --out "$d/Y1.npy" --bundle "$bundle" \
  --kernel "$kernel" 2> "$scratch/forced.err" || fail "qkgen matmul --kernel $kernel: $(cat "$scratch/forced.err")"
grep -qF "qkgen matmul: $kernel (--kernel), M=33 K=256 T=1" "$scratch/forced.err" || fail "forced: $(cat "$scratch/forced.err")"
python3 -c "import numpy as np, sys; y, r = np.load('$d/Y1.npy'), np.load('$d/REF.npy'); e = float(((y - r) ** 2).sum() / (r ** 2).sum()); print('--kernel NMSE', e); sys.exit(e > 1e-6)" ||
  fail "--kernel $kernel: wrong result"
expect_bad() {  # expect_bad MESSAGE ARGS...: exit 2, MESSAGE on stderr, no output file
  local want=$1; shift
  rm -f "$d/Y2.npy"
  "$qkgen" matmul --format q4_0 --weights "$d/W.npy" --x "$d/X.npy" --out "$d/Y2.npy" --bundle "$bundle" "$@" \
    2> "$scratch/bad.err"
  local rc=$?
  [ "$rc" = 2 ] || fail "$*: exit $rc, expected 2"
  grep -qF -- "$want" "$scratch/bad.err" || fail "$*: expected '$want', got: $(cat "$scratch/bad.err")"
  [ ! -e "$d/Y2.npy" ] || fail "$*: wrote Y2.npy"
}
expect_bad "--kernel: no kernel 'no_such_kernel' in" --kernel no_such_kernel
idk=$(pick matvec_id) || fail "no q4_0 matvec_id kernel in $bundle"
expect_bad "--kernel: $idk is a matvec_id kernel, not an unfused matvec or matmul" --kernel "$idk"
n=$((n + 4))
echo "$n passed, 0 failed"
