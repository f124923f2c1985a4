# A format of issue 42 from its YAML alone: iq4_xs (specs/formats/iq4_xs.yaml and
# templates/formats/iq4_xs.glsl, no C of qkgen naming it), whose CPU reference is the
# reference: its YAML declares, through qkgen verify, bench and tune on lavapipe (small shapes).
# A format without a reference (q3s of this folder) is skipped by verify and refused by bench
# and tune, each naming that cause.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
here=$(dirname "$0")
for d in gen cli runtime common tests/ref; do
  ! grep -rqw iq4_xs "$d" || fail "$d mentions iq4_xs: a new format must need no C"
done
# 1. iq4_xs's dense mat-vec (one tile and its swiglu form), an int8-dot lane kernel, a matmul
"$qkgen" build --out "$scratch/out" --quiet \
  --filter matvec_iq4_xs_f32_nr2x1x32_wg64,matvec_lanes-q8_iq4_xs_f32_nr1x1x256_wg256_tpr8_dot8,matmul_iq4_xs_f32_nr32x16x32_wg128_scalar ||
  fail "qkgen build exited $?"
b="$scratch/out/default"
# 2. verify: every kernel against the declared reference
"$qkgen" verify --bundle "$b" --validation > "$scratch/verify" || { cat "$scratch/verify"; fail "qkgen verify exited $?"; }
cat "$scratch/verify"
[ "$(grep -c '_iq4_xs_.* pass$' "$scratch/verify")" -ge 4 ] || fail "fewer than 4 iq4_xs kernels passed"
grep -q '^[0-9]* passed, 0 failed' "$scratch/verify" || fail "a kernel failed"
# 3. bench: timed and checked against the same reference
opts="--runs 20 --warmup-ms 20 --rotate-mb 0"
"$qkgen" bench --bundle "$b" --family matvec --formats iq4_xs --m 64 --k 512 --tokens 1 \
  $opts --copy-mb 1 > "$scratch/bench" 2>&1 || { cat "$scratch/bench"; fail "qkgen bench exited $?"; }
grep -q 'matvec_iq4_xs_f32_nr2x1x32_wg64' "$scratch/bench" || { cat "$scratch/bench"; fail "bench timed no iq4_xs kernel"; }
# 4. tune: a case of two candidates, checked and timed, with a correct winner recorded
"$qkgen" tune --family matvec --m 64 --k 512 --tokens 1 --formats iq4_xs --out "$scratch/tune" \
  --filter matvec_iq4_xs_f32_nr2x1x32_wg64,matvec_iq4_xs_f32_nr1x1x32_wg64 --db "$scratch/db.jsonl" \
  $opts > "$scratch/tune.out" 2>&1 || { cat "$scratch/tune.out"; fail "qkgen tune exited $?"; }
grep '"variant": "matvec_iq4_xs' "$scratch/db.jsonl" | grep -q '"status": "ok"' ||
  { cat "$scratch/tune.out"; fail "no iq4_xs candidate recorded as ok"; }
# 5. a format without a reference: the cause is the format, said by each command
cp -r specs "$scratch/specs"
cp "$here/q3s.yaml" "$here/q3s.glsl" "$scratch/specs/formats/"
sed -i 's/^formats: \[/formats: [q3s, /' "$scratch/specs/kernels/matvec.yaml"
"$qkgen" build "$scratch/specs" --out "$scratch/q3s" --filter matvec_q3s_f32_nr1x1x8_wg64 --quiet ||
  fail "qkgen build (q3s) exited $?"
why="no CPU reference for format q3s: declare reference: in its YAML (docs/new-format.md)"
"$qkgen" verify --bundle "$scratch/q3s/default" --specs "$scratch/specs" --verbose > "$scratch/v2" 2>&1 &&
  fail "verify passed a bundle whose kernels it could not check"
grep -q "skip: $why" "$scratch/v2" && grep -q "skipped 2 kernels of formats without a CPU reference (the first: $why)" "$scratch/v2" ||
  { cat "$scratch/v2"; fail "verify does not say why q3s is skipped"; }
grep -q 'no reference in verify for this family' "$scratch/v2" && fail "verify blames the family"
"$qkgen" bench --bundle "$scratch/q3s/default" --specs "$scratch/specs" --family matvec --formats q3s \
  --m 64 --k 512 --tokens 1 $opts --copy-mb 1 > "$scratch/b2" 2>&1 && fail "bench ran q3s without a reference"
grep -q "$why" "$scratch/b2" || { cat "$scratch/b2"; fail "bench does not say why"; }
"$qkgen" tune --specs "$scratch/specs" --family matvec --m 64 --k 512 --tokens 1 --formats q3s \
  --out "$scratch/tune" --db "$scratch/db2.jsonl" --dry-run > "$scratch/t2" 2>&1
[ $? -eq 2 ] || { cat "$scratch/t2"; fail "tune of q3s did not exit 2"; }
grep -q "qkgen tune: $why" "$scratch/t2" || { cat "$scratch/t2"; fail "tune does not say why"; }
echo "1 passed, 0 failed: iq4_xs verified, benchmarked and tuned on its declared reference; q3s refused with the cause"
