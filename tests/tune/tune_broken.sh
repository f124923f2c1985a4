# A deliberately broken kernel (a copy of matvec whose template scales its
# sums by 1.01) is checked, recorded as wrong and never selected; under
# --precision f32 no 8-bit-activation kernel is a candidate or a winner; a
# tune SIGKILLed while it writes records resumes with none repeated; a spent
# --budget leaves candidates that a later run measures, and still no broken
# kernel wins. Nothing depends on how fast the machine is: the budget is
# spent by a warm-up longer than it (see below), not by the device's speed.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
cp -r specs "$scratch/specs" && cp -r templates "$scratch/templates"
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
# (one the device refuses is recorded as unsupported, one that did not run as
# failed)
grep '"variant": "matvec_broken' "$scratch/any.jsonl" | grep -v '"status": "wrong"' |
  grep -v '"status": "failed"' | grep -v '"status": "unsupported"' &&
  fail "a broken candidate was recorded as correct"
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
# a tune killed (SIGKILL) at random moments resumes: every record whole and
# none twice; a spent --budget starts no more cases, and a later run does them
db="$scratch/killed.jsonl"
for i in 1 2 3; do
  before=$(cat "$db" 2>/dev/null | wc -l)
  "$qkgen" tune $opts $case_ --formats q4_0,q8_0 --filter $filter --db "$db" > /dev/null 2>&1 &
  # once it writes records, at a random moment of the next half second
  for w in $(seq 600); do
    [ "$(cat "$db" 2>/dev/null | wc -l)" -gt "$before" ] && break
    sleep 0.05
  done
  sleep "$(python3 -c "import random; print(random.uniform(0, 0.5))")"
  kill -9 $! 2>/dev/null
  wait $! 2>/dev/null
  echo "killed after $(wc -l < "$db" 2>/dev/null || echo 0) records"
done
"$qkgen" tune $opts $case_ --formats q4_0,q8_0 --filter $filter --db "$db" > "$scratch/rest" ||
  fail "tune after the kills"
n=$(wc -l < "$db")
"$qkgen" tune $opts $case_ --formats q4_0,q8_0 --filter $filter --db "$db" > /dev/null || fail "tune, resumed"
[ "$(wc -l < "$db")" -eq "$n" ] || fail "a resumed tune measured again"
python3 - "$db" <<'PY' || fail "records lost, repeated or torn"
import json, sys
keys, bad = {}, 0
lines = open(sys.argv[1]).read().split("\n")
for line in lines[:-1]:
    try:
        r = json.loads(line)
    except ValueError:
        bad += 1  # a line a kill cut off, reported and skipped by readers
        continue
    k = (r["variant"], r["spv_sha256"], r["stage"], json.dumps(r["case"], sort_keys=True))
    keys[k] = keys.get(k, 0) + 1
dup = [k for k, n in keys.items() if n > 1]
assert not dup, dup[:3]
cases = {k[3] for k in keys}
assert len(cases) == 2, cases  # both formats, all of each measured by now
print(len(keys), "records,", bad, "cut lines, no repeats")
PY
# --budget 1 with a case warm-up of 1.5 s (each case's first correct
# candidate waits it out, warm in host/bench.c; --steady-ms 0, or it would end
# after 250 ms on lavapipe, whose clock never rises): the first case's share
# (half the budget) and the whole budget are spent whatever the device's
# speed, so the q4_0 case screens its first correct candidate and defers the
# rest, and the q8_0 case is not started. (With --warmup-ms 20 the outcome
# raced the clock: lavapipe on two idle cores measured both cases in 0.9 s,
# so nothing was deferred and the test failed.)
b="$scratch/budget.jsonl"
"$qkgen" tune $opts $case_ --formats q4_0,q8_0 --filter $filter --db "$b" --budget 1 \
  --warmup-ms 1500 --steady-ms 0 > "$scratch/budget" || { cat "$scratch/budget"; fail "tune --budget 1"; }
cat "$scratch/budget"
grep -q "^matvec q4_0 .* over budget)" "$scratch/budget" || fail "the budget measured every q4_0 candidate"
grep -q "^budget of 1 s spent: 1 cases left" "$scratch/budget" || fail "the spent budget started the q8_0 case"
n=$(wc -l < "$b")
"$qkgen" tune $opts $case_ --formats q4_0,q8_0 --filter $filter --db "$b" > "$scratch/rest" ||
  { cat "$scratch/rest"; fail "tune after the budget"; }
cat "$scratch/rest"
grep -q "over budget\|budget of" "$scratch/rest" && fail "the later run left candidates"
[ "$(wc -l < "$b")" -gt "$n" ] || fail "the later run measured nothing"
grep '"variant": "matvec_broken' "$b" | grep -v '"status": "wrong"' | grep -v '"status": "failed"' &&
  fail "a broken candidate was recorded as correct after the budget"
"$qkgen" build "$scratch/specs" --templates "$scratch/templates" --tuned "$b" --out "$scratch/out" \
  --name tuned-budget || fail "build --tuned from the budgeted database"
grep -q 'matvec_broken' "$scratch/out/tuned-budget/manifest.json" &&
  fail "a broken kernel is in the bundle tuned under a budget"
echo "passed"
