# f16 activations, a case of their own: the same matmul tuned on f32 and on
# f16 activations (`qkgen tune --activations f16`) keeps two cases in the
# database (the f16 records version 2, naming their activations), `qkgen
# build --tuned` writes a select table of version 2 with a rule and a
# fallback for each, qkrt_select answers f32 queries with f32 kernels only
# and qkrt_select_activations f16 ones with f16 kernels (against
# tests/tools/select_eval.py), `qkgen verify` runs the tuned bundle and asks
# both, and the report names the f16 case.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 test_select=$2
db="$scratch/tune.jsonl"
opts=(--out "$scratch/out" --db "$db" --runs 20 --warmup-ms 20 --rotate-mb 0 --strategy exhaustive
  --family matmul --m 48 --k 256 --tokens 16 --formats q4_0)
"$qkgen" tune "${opts[@]}" --filter matmul_q4_0_f32_nr32x32x32_wg128_scalar \
  > "$scratch/f32.txt" 2>&1 || { cat "$scratch/f32.txt"; fail "tune (f32)"; }
"$qkgen" tune "${opts[@]}" --activations f16 --filter matmul-shared_q4_0_f16_nr32x32x64_wg128_scalar \
  > "$scratch/f16.txt" 2>&1 || { cat "$scratch/f16.txt"; fail "tune --activations f16"; }
cat "$scratch/f16.txt"
grep -q "x=f16" "$scratch/f16.txt" || fail "the f16 case's line does not say x=f16"
python3 - "$db" <<'PY' || fail "the database's records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
f16 = [r for r in recs if r["case"].get("activations") == "f16"]
f32 = [r for r in recs if "activations" not in r["case"]]
assert f16 and f32 and len(f16) + len(f32) == len(recs), [r["case"] for r in recs]
assert all(r["v"] == 2 and "_f16_" in r["variant"] for r in f16), [(r["v"], r["variant"]) for r in f16]
assert all(r["v"] == 1 and "_f16_" not in r["variant"] for r in f32), [(r["v"], r["variant"]) for r in f32]
assert any(r["status"] == "ok" and r["stage"] == "full" for r in f16), "no f16 record timed in full"
print(len(f32), "f32 records (version 1),", len(f16), "f16 records (version 2)")
PY
"$qkgen" tune --report "$db" > "$scratch/report.txt" || fail "tune --report"
grep -q "^matmul q4_0 m=48 k=256 t=16 x=f16 " "$scratch/report.txt" ||
  { cat "$scratch/report.txt"; fail "the report does not name the f16 case"; }
"$qkgen" build --tuned "$db" --out "$scratch/out" --name tuned --quiet || fail "build --tuned"
check_schema "$scratch/out/tuned"
python3 - "$scratch/out/tuned/manifest.json" <<'PY' || fail "the select table"
import json, sys
m = json.load(open(sys.argv[1]))
assert m["schema"] == "qkgen-bundle/4", m["schema"]  # readers of 3 refuse f16 rules
t = m["select"]
act = {k["name"]: k["activation"] for k in m["kernels"]}
rules = [r for d in t["devices"] for r in d["rules"]]
assert t["version"] == 2, t["version"]
for where, rs in (("tuned", rules), ("default", t["default"])):
    by = {r.get("activations", "f32") for r in rs}
    assert by == {"f32", "f16"}, (where, by)
    for r in rs:
        assert act[r["kernel"]] == r.get("activations", "f32"), (where, r)
# the f16 fallback runs on every device: not an NV cooperative-matrix-2 kernel
fb16 = [r["kernel"] for r in t["default"] if r.get("activations") == "f16"]
assert fb16 and "coopmat2_nv" not in fb16[0], fb16
print("select version 2:", len(rules), "tuned rules and", len(t["default"]), "fallbacks, f32 and f16")
PY
python3 tests/tools/select_eval.py "$test_select" "$scratch/out/tuned" --expect-device-rules ||
  fail "qkrt_select and qkrt_select_activations differ from the rule"
# a rule that says f16 but names an f32 kernel: libqkrt refuses the bundle
# when it loads it (qkrt_select_check), and the exporter refuses it
cp -r "$scratch/out/tuned" "$scratch/mixed"
python3 - "$scratch/mixed/manifest.json" <<'PY' || fail "editing the table"
import json, sys
m = json.load(open(sys.argv[1]))
t = m["select"]
f32 = next(r["kernel"] for d in t["devices"] for r in d["rules"] if "activations" not in r)
for r in [r for d in t["devices"] for r in d["rules"]] + t["default"]:
    if r.get("activations") == "f16":
        r["kernel"] = f32
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
echo "matmul q4_0 48 256 16 0 0 f16" | "$test_select" "$scratch/mixed" > "$scratch/mixed.txt" 2>&1 &&
  fail "libqkrt loaded a bundle whose f16 rule names an f32 kernel"
grep -q "select: a rule for f16 activations names kernel 'matmul_q4_0_f32_[^']*', which reads f32" \
  "$scratch/mixed.txt" || { cat "$scratch/mixed.txt"; fail "libqkrt's message"; }
"$qkgen" export "$scratch/mixed" --c "$scratch/mixed.h" > "$scratch/export.txt" 2>&1 &&
  fail "the exporter took an f16 rule naming an f32 kernel"
grep -q "select: a rule for f16 activations names kernel 'matmul_q4_0_f32_[^']*', which reads f32" \
  "$scratch/export.txt" || { cat "$scratch/export.txt"; fail "the exporter's message"; }
[ ! -e "$scratch/mixed.h" ] || fail "a refused export left $scratch/mixed.h"
"$qkgen" verify --bundle "$scratch/out/tuned" --validation > "$scratch/verify.txt" 2>&1 ||
  { cat "$scratch/verify.txt"; fail "verify of the tuned bundle"; }
grep -q "^select table: \([0-9]*\) shapes asked, \1 answered" "$scratch/verify.txt" ||
  { cat "$scratch/verify.txt"; fail "the select table does not answer every shape"; }
# an f16 query on a table of f32 rules only finds none: version 1, f32 only
grep -v '"activations"' "$db" > "$scratch/f32.jsonl"
"$qkgen" build --tuned "$scratch/f32.jsonl" --out "$scratch/out" --name tuned32 --quiet ||
  fail "build --tuned (f32 records)"
python3 -c "import json,sys; m=json.load(open(sys.argv[1])); assert m['select']['version'] == 1 and m['schema'] == 'qkgen-bundle/3', m['schema']" \
  "$scratch/out/tuned32/manifest.json" || fail "a table of f32 rules is not version 1 of schema 3"
echo "matmul q4_0 48 256 16 0 0 f16" | "$test_select" "$scratch/out/tuned32" | tail -1 | grep -qx -- - ||
  fail "an f16 query on an f32 table answered"
echo "tune.f16: ok"
