# The CI model end to end on lavapipe: `qkgen tune --model specs/models/tiny.yaml`
# within two minutes, a resumed run that measures nothing, `qkgen build
# --tuned`, `qkgen verify` of the tuned bundle (its select table included),
# qkrt_select against tests/tools/select_eval.py at, between and beyond the
# tuned shapes and on an unknown device, `qkgen matmul` through the table, and
# the report and its plot.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 test_select=$2
db="$scratch/tune.jsonl" out="$scratch/out" model=specs/models/tiny.yaml
opts="--out $out --db $db --runs 20 --warmup-ms 20 --rotate-mb 0"
t0=$(date +%s)
"$qkgen" tune --model $model $opts | tee "$scratch/log" || fail "qkgen tune"
t=$(($(date +%s) - t0))
echo "tuned the tiny model in $t s"
[ "$t" -lt 120 ] || fail "the tiny model took $t s to tune (at most 120)"
n=$(wc -l < "$db")
grep -q '"stage": "full"' "$db" || fail "no candidate timed in full"
# resumed: everything is in the database already, nothing is measured again
"$qkgen" tune --model $model $opts > "$scratch/log2" || fail "qkgen tune (resumed)"
[ "$(wc -l < "$db")" -eq "$n" ] || fail "a resumed tune appended $(( $(wc -l < "$db") - n )) records"
"$qkgen" build --tuned "$db" --model $model --out "$out" || fail "build --tuned"
"$qkgen" build --tuned "$db" --model $model --out "$out" --name tuned32 --precision f32 ||
  fail "build --tuned --precision f32"
"$qkgen" verify --bundle "$out/tuned" --validation | tee "$scratch/verify" || fail "verify of the tuned bundle"
grep -q "^select table: [0-9]* shapes asked" "$scratch/verify" || fail "verify did not check the select table"
python3 tests/tools/select_eval.py "$test_select" "$out/tuned" --expect-device-rules ||
  fail "qkrt_select disagrees with the rule"
# an unknown device: the same bundle with another vendor id in its table
cp -r "$out/tuned" "$scratch/unknown"
python3 - "$scratch/unknown/manifest.json" <<'PY' || fail "editing the manifest"
import json, sys
m = json.load(open(sys.argv[1]))
for d in m["select"]["devices"]:
    d["vendor_id"] += 1
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
python3 tests/tools/select_eval.py "$test_select" "$scratch/unknown" --expect-default-only ||
  fail "an unknown device does not get the default rules"
# an f32 table has no 8-bit-activation kernel
python3 - "$out/tuned32/manifest.json" <<'PY' || fail "an f32 table names a q8 kernel"
import json, sys
m = json.load(open(sys.argv[1]))
rules = [r for d in m["select"]["devices"] for r in d["rules"]] + m["select"]["default"]
bad = [r["kernel"] for r in rules if r["precision"] != "f32" and r["op"].startswith("matvec")]
assert not bad, bad
print(len(rules), "rules, no q8 or f16 mat-vec kernel")
PY
QK_ROUNDTRIP_FORMATS=q4_0 bash tests/cli/matmul_roundtrip.sh "$qkgen" "$out/tuned32" ||
  fail "qkgen matmul through the select table"
"$qkgen" tune --report "$db" --svg "$scratch/plot.svg" | tee "$scratch/report" || fail "report"
[ "$(grep -c 'x  ' "$scratch/report")" -ge 6 ] || fail "the report lacks cases"
[ "$(grep -c '<circle' "$scratch/plot.svg")" -ge "$n" ] || fail "the plot lacks candidates"
echo "passed"
