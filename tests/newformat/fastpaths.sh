# Issue 42's fast paths from a format's declaration: MLX's fp4 modes (mxfp4_mlx, nvfp4_mlx, their
# int8 hooks in YAML and GLSL alone) verified on the int8-dot paths on lavapipe, and every path a
# format lacks in `qkgen list --formats` explained by a rule, never by a kernel's formats: list.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
fmts="mxfp4_mlx nvfp4_mlx mxfp8_mlx"
for f in $fmts; do
  for d in gen cli runtime common host tune tests/ref; do
    ! grep -rqw "$f" "$d" || fail "$d mentions $f: a format's fast paths must need no C"
  done
done
# 1. the paths and why each is lacking
"$qkgen" list --formats > "$scratch/list" || fail "qkgen list --formats exited $?"
sed -n '/^what each format lacks/,$p' "$scratch/list" > "$scratch/lacks"
[ -s "$scratch/lacks" ] || { cat "$scratch/list"; fail "no lacks section"; }
if grep -q 'no kernel of this path lists the format' "$scratch/lacks"; then
  grep 'no kernel of this path lists' "$scratch/lacks"
  fail "a fast path is missing because a kernel's formats: list leaves the format out"
fi
n=$(grep -cE "^[a-z0-9_]+ +[0-9]+ " "$scratch/lacks")
[ "$(grep -c "(rule '" "$scratch/lacks")" -eq "$n" ] || { cat "$scratch/lacks"; fail "a lack without its rule"; }
for f in mxfp4_mlx nvfp4_mlx; do
  ! grep -E "^$f +[0-9]+ (matvec|matvec_id|matvec_id_ranked|matmul_id)/dot8" "$scratch/lacks" ||
    fail "$f lacks an int8-dot mat-vec path"
done
grep -E "^mxfp8_mlx +[0-9]+ matvec/dot8: the format has int8-dot hooks" "$scratch/lacks" ||
  fail "mxfp8_mlx's lack of int8-dot paths is not explained"
# 2. the int8-dot kernels of the fp4 modes: dense, split K, expert ids (and swiglu), routed pairs
filter=
for f in mxfp4_mlx nvfp4_mlx; do
  for p in q8-inplace q8-inplace-splitk q8-ids-inplace q8-pairs-inplace; do filter="$filter${filter:+,}${p}_${f}_"; done
done
"$qkgen" build --out "$scratch/out" --quiet --filter "$filter" || fail "qkgen build exited $?"
"$qkgen" verify --bundle "$scratch/out/default" --validation > "$scratch/verify" 2>&1 ||
  { cat "$scratch/verify"; fail "qkgen verify exited $?"; }
cat "$scratch/verify"
grep -q '^[0-9]* passed, 0 failed' "$scratch/verify" || fail "a kernel failed"
for f in mxfp4_mlx nvfp4_mlx; do
  for p in q8-inplace q8-inplace-splitk q8-ids-inplace q8-pairs-inplace; do
    grep -qE "^matvec_lanes-${p}_${f}_.*_dot8(_swiglu)? .* pass$" "$scratch/verify" ||
      fail "no ${p} kernel of $f passed"
  done
done
grep -qE "^matvec_lanes-q8-ids-inplace_nvfp4_mlx_.*_dot8_swiglu .* pass$" "$scratch/verify" ||
  fail "nvfp4_mlx's swiglu form did not pass"
echo "1 passed, 0 failed: $(grep -c ' pass$' "$scratch/verify") int8-dot kernels of MLX's fp4 modes verified; every lacking path has its rule"
