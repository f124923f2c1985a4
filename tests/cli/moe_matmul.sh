# qkgen matmul for any token count and its MoE form (--ids): weights quantized
# by tests/tools/ggml_quant.py (numpy), results against its float64 reference.
. "$(dirname "$0")/lib.sh"
qkgen=$1 bundle=$2
seed=${QKGEN_SEED:-$RANDOM}
echo "seed $seed"
n=0
nmse() { # nmse Y.npy REF.npy: shape and NMSE checks
  python3 - "$1" "$2" <<'PY'
import numpy as np, sys
y, ref = np.load(sys.argv[1]), np.load(sys.argv[2])
assert y.dtype == np.float32 and y.shape == ref.shape, (y.dtype, y.shape, ref.shape)
e = float(np.sum((y - ref) ** 2) / np.sum(ref ** 2))
print(f"  shape {y.shape} NMSE {e:.3e}")
assert np.isfinite(y).all() and e <= 1e-6, e
PY
}
# plain products: few tokens (mat-vec) and many (matmul where the bundle has it)
for fmt in q4_K q8_0; do
  for T in 5 37; do
    d="$scratch/$fmt-$T"
    python3 tests/tools/ggml_quant.py make --format "$fmt" --m 33 --k 512 --tokens $T --seed "$seed" --out "$d" >/dev/null || fail "quantizer"
    echo "$fmt T=$T"
    "$qkgen" matmul --format $fmt --weights "$d/W.npy" --x "$d/X.npy" --out "$d/Y.npy" --bundle "$bundle" || fail "qkgen matmul $fmt T=$T"
    nmse "$d/Y.npy" "$d/REF.npy" || fail "$fmt T=$T"
    n=$((n + 1))
  done
done
# MoE: stacked experts, a row per token (gate/up) and a row per slot (down)
for fmt in q4_0 q4_K mlx4_g64; do
  for T in 3 37; do
    d="$scratch/moe-$fmt-$T"
    python3 tests/tools/ggml_quant.py make --format "$fmt" --m 40 --k 512 --tokens $T --experts 6 --top-k 4 --seed "$seed" --out "$d" >/dev/null || fail "quantizer"
    sb=""
    [ -f "$d/S.npy" ] && sb="--scales $d/S.npy --biases $d/B.npy"
    echo "$fmt --ids T=$T"
    "$qkgen" matmul --format $fmt --weights "$d/W.npy" --x "$d/X.npy" --ids "$d/IDS.npy" $sb --out "$d/Y.npy" --bundle "$bundle" || fail "qkgen matmul --ids $fmt T=$T"
    nmse "$d/Y.npy" "$d/REF.npy" || fail "$fmt --ids T=$T"
    # a row per slot: X [T, top_k, K], reference from the numpy dequantizer
    python3 tests/tools/ggml_quant.py dequant --format "$fmt" --w "$d/W.npy" ${sb:+--s "$d/S.npy" --b "$d/B.npy"} --out "$d/D.npy" >/dev/null || fail "dequant"
    python3 - "$d" <<'PY' || fail "slot rows"
import numpy as np, sys
d = sys.argv[1]
ids, deq = np.load(f"{d}/IDS.npy"), np.load(f"{d}/D.npy").astype(np.float64)
x = np.random.default_rng(1).standard_normal((ids.shape[0], ids.shape[1], deq.shape[2])).astype(np.float32)
np.save(f"{d}/XS.npy", x)
np.save(f"{d}/REFS.npy", np.einsum("tsk,tsmk->tsm", x.astype(np.float64), deq[ids]))
PY
    echo "$fmt --ids T=$T, a row per slot"
    "$qkgen" matmul --format $fmt --weights "$d/W.npy" --x "$d/XS.npy" --ids "$d/IDS.npy" $sb --out "$d/YS.npy" --bundle "$bundle" || fail "qkgen matmul --ids (per slot) $fmt T=$T"
    nmse "$d/YS.npy" "$d/REFS.npy" || fail "$fmt --ids per slot T=$T"
    n=$((n + 2))
  done
done
# bad MoE inputs: exit 2 with the problem named, nothing written
d="$scratch/moe-q4_0-3"
python3 - "$d" <<'PY'
import numpy as np, sys
d = sys.argv[1]
ids = np.load(f"{d}/IDS.npy")
bad = ids.copy(); bad[1, 2] = 6; np.save(f"{d}/IDS_range.npy", bad)
dup = ids.copy(); dup[0, 1] = dup[0, 0]; np.save(f"{d}/IDS_dup.npy", dup)
np.save(f"{d}/IDS_i64.npy", ids.astype(np.int64))
np.save(f"{d}/W2.npy", np.load(f"{d}/W.npy")[0])
PY
expect() { # expect PATTERN -- command...
  local pat=$1; shift 2
  "$@" >"$scratch/o" 2>"$scratch/e"; local rc=$?
  [ $rc -eq 2 ] || { cat "$scratch/e"; fail "$* exited $rc, expected 2"; }
  grep -q -- "$pat" "$scratch/e" || { cat "$scratch/e"; fail "$*: no '$pat' in stderr"; }
  n=$((n + 1))
}
m="$qkgen matmul --format q4_0 --x $d/X.npy --out $d/bad.npy --bundle $bundle"
expect "id 6 at \[1, 2\] is not an expert (0..5)" -- $m --weights "$d/W.npy" --ids "$d/IDS_range.npy"
expect "token 0 picks expert .* twice" -- $m --weights "$d/W.npy" --ids "$d/IDS_dup.npy"
expect "IDS_i64.npy: expected int32 \[T, top_k\]" -- $m --weights "$d/W.npy" --ids "$d/IDS_i64.npy"
expect "W2.npy: expected a 3-D array \[E, M, row\] of stacked experts" -- $m --weights "$d/W2.npy" --ids "$d/IDS.npy"
[ ! -e "$d/bad.npy" ] || fail "output written despite errors"
echo "$n passed, 0 failed"
