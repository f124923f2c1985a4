# qkgen matmul for every GGUF format and every MLX configuration (bits x group x scale type) on
# weights quantized by another implementation (tests/tools/ggml_quant.py) against its float64 ref.
. "$(dirname "$0")/lib.sh"
qkgen=$1 bundle=$2
seed=${QKGEN_SEED:-$RANDOM}
echo "seed $seed"
python3 -c 'import numpy' 2>/dev/null || fail "python3-numpy is needed"
# All cases from one python process: numpy's import costs more than a small case.
python3 - "$scratch" "$seed" > "$scratch/cases" <<'PY' || fail "quantizer"
import sys
sys.path.insert(0, "tests/tools")
import ggml_quant as g
out, seed = sys.argv[1], int(sys.argv[2])
for fmt in g.BLOCK_FORMATS:  # M odd, two K-quant super-blocks, a partial tile of 3 tokens
    g.make_case(fmt, 33, 512, 3, seed, f"{out}/{fmt}")
    print(fmt, fmt, "-")
for bits in g.MLX_BITS:
    for group in g.MLX_GROUPS:
        for st in g.SCALE_DTYPES:
            fmt, name = f"mlx{bits}_g{group}", f"mlx{bits}_g{group}_{st}"
            g.make_case(fmt, 7, 256, 2, seed, f"{out}/{name}", stype=st)
            print(name, fmt, st)
PY
while read -r name fmt st; do
  d="$scratch/$name"
  planar=()
  [ "$st" = - ] || planar=(--scales "$d/S.npy" --biases "$d/B.npy")
  "$qkgen" matmul --format "$fmt" --weights "$d/W.npy" "${planar[@]}" --x "$d/X.npy" \
    --out "$d/Y.npy" --bundle "$bundle" || fail "qkgen matmul $name exited $?"
done < "$scratch/cases"
python3 - "$scratch" <<'PY' || fail "a result is off"
import numpy as np, sys
d = sys.argv[1]
bad = 0
names = [l.split()[0] for l in open(f"{d}/cases")]
for name in names:
    y, ref = np.load(f"{d}/{name}/Y.npy"), np.load(f"{d}/{name}/REF.npy")
    ok = y.dtype == np.float32 and y.shape == ref.shape and np.isfinite(y).all()
    nmse = float(np.sum((y - ref) ** 2) / np.sum(ref ** 2)) if ok else float("inf")
    ok = ok and nmse <= 1e-6
    bad += not ok
    print(f"{'ok  ' if ok else 'FAIL'} {name:16s} shape {y.shape} NMSE {nmse:.2e}")
print(f"{len(names) - bad} passed, {bad} failed")
sys.exit(1 if bad else 0)
PY
