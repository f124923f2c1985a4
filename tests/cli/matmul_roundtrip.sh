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
echo "$n passed, 0 failed"
