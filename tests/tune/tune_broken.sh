# A deliberately broken kernel (a copy of matvec whose template scales its
# sums by 1.01) is checked, recorded as wrong and never selected; under
# --precision f32 no 8-bit-activation kernel is a candidate or a winner.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
cp -r specs "$scratch/specs" && cp -r templates "$scratch/templates"
mkdir "$scratch/tests" && cp tests/ggml_blocks.h "$scratch/tests/" # the formats' c_struct checks
sed -e 's/^family: matvec$/family: matvec_broken/' -e 's/^template: matvec.comp$/template: matvec_broken.comp/' \
  specs/kernels/matvec.yaml > "$scratch/specs/kernels/matvec_broken.yaml"
sed 's/const float v = sum\[0\];/const float v = sum[0] * 1.01;/' templates/matvec.comp \
  > "$scratch/templates/matvec_broken.comp"
grep -q 'matvec_broken' "$scratch/specs/kernels/matvec_broken.yaml" &&
  grep -q 'sum\[0\] \* 1.01' "$scratch/templates/matvec_broken.comp" || fail "could not plant the bug"
opts="--specs $scratch/specs --templates $scratch/templates --out $scratch/out --runs 20 --warmup-ms 20 --rotate-mb 0"
case_="--family matvec --m 64 --k 256 --tokens 1 --formats q4_0"
# the broken kernel's fastest-looking tiles, the plain one's, and int8-dot ones
filter=matvec_broken_q4_0_f32_nr4x,matvec_q4_0_f32_nr4x1x8_wg64,q8_q4_0_f32_nr1x1x64_wg128
"$qkgen" tune $opts $case_ --filter $filter --db "$scratch/any.jsonl" --strategy exhaustive ||
  fail "tune (a case whose broken candidates are wrong still has a winner)"
wrong=$(grep '"variant": "matvec_broken' "$scratch/any.jsonl" | grep -c '"status": "wrong"')
[ "$wrong" -ge 1 ] || fail "no broken candidate recorded as wrong"
# (one the device refuses is recorded as failed: it never ran)
grep '"variant": "matvec_broken' "$scratch/any.jsonl" | grep -v '"status": "wrong"' |
  grep -v '"status": "failed"' && fail "a broken candidate was recorded as correct"
grep -q '"precision": "q8"' "$scratch/any.jsonl" || fail "no int8-dot candidate in the search"
for p in any f32; do
  "$qkgen" build "$scratch/specs" --templates "$scratch/templates" --tuned "$scratch/any.jsonl" \
    --out "$scratch/out" --name "tuned-$p" --precision $p || fail "build --tuned --precision $p"
  grep -q 'matvec_broken' "$scratch/out/tuned-$p/manifest.json" && fail "a broken kernel is in the $p bundle"
done
python3 - "$scratch/out/tuned-f32/manifest.json" <<'PY' || fail "q8 under --precision f32"
import json, sys
m = json.load(open(sys.argv[1]))
rules = [r for d in m["select"]["devices"] for r in d["rules"]]
assert rules and all(r["precision"] == "f32" and "_dot8" not in r["kernel"] for r in rules), rules
print("f32 winners:", [r["kernel"] for r in rules])
PY
# --precision f32 in the tune itself: no q8 candidate is measured
"$qkgen" tune $opts $case_ --filter $filter --db "$scratch/f32.jsonl" --precision f32 || fail "tune --precision f32"
grep -q '"precision": "q8"' "$scratch/f32.jsonl" && fail "tune --precision f32 measured a q8 kernel"
echo "passed"
