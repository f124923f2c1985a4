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
# at most two minutes; on a host busy with other work (its load above its
# cores: lavapipe's threads wait for them) the tune's own CPU time counts
load=$(cut -d' ' -f1 /proc/loadavg)
TIMEFORMAT='%R %U %S'
{ time "$qkgen" tune --model $model $opts > "$scratch/log"; } 2> "$scratch/time" || fail "qkgen tune"
cat "$scratch/log"
read -r wall user sys < <(tail -1 "$scratch/time")
echo "tuned the tiny model in $wall s ($user s user, $sys s system; load $load on $(nproc) cores)"
python3 -c "import sys; w, c, load, n = map(float, sys.argv[1:]); sys.exit(0 if w < 120 or (load > n and c < 120) else 1)" \
  "$wall" "$(echo "$user + $sys" | bc)" "$load" "$(nproc)" || fail "the tiny model took $wall s to tune (at most 120)"
n=$(wc -l < "$db")
# each case's line splits its wall time into phases that add up to it
python3 - "$scratch/log" <<'PY' || fail "the cases' time by phase"
import re, sys
lines = [l for l in open(sys.argv[1]) if "candidates (" in l]
assert lines, "no case line"
for l in lines:
    m = re.search(r"; ([0-9.]+) s \(setup ([0-9.]+), pipelines ([0-9.]+), checks ([0-9.]+), "
                  r"screen ([0-9.]+), halving ([0-9.]+), final ([0-9.]+); records ([0-9.]+)\)$", l)
    assert m, l
    total, *ph = map(float, m.groups())
    assert abs(sum(ph[:6]) - total) <= 0.1 * total + 0.3 and ph[6] <= total, l
print(len(lines), "case lines, each with its time by phase")
PY
grep -q '"stage": "full"' "$db" || fail "no candidate timed in full"
# the finalists (at most --finalists a case, 3) timed in alternating slices,
# each one's figures whole: min <= median <= max over all its slices' runs
python3 - "$db" <<'PY' || fail "the finalists' full records"
import collections, json, sys
full = collections.defaultdict(list)
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("stage") == "full" and r["status"] == "ok":
        full[json.dumps(r["case"], sort_keys=True)].append(r)
assert full, "no full record"
for case, rs in full.items():
    assert len(rs) <= 3, (case, len(rs))
    for r in rs:
        assert "alternating" in r["note"], r["note"]
        assert 0 < r["us_min"] <= r["us"] <= r["us_max"] and r["runs"] >= 20, r
print(sum(map(len, full.values())), "finalists of", len(full), "cases timed in alternation")
PY
# resumed: everything is in the database already, nothing is measured again
"$qkgen" tune --model $model $opts > "$scratch/log2" || fail "qkgen tune (resumed)"
[ "$(wc -l < "$db")" -eq "$n" ] || fail "a resumed tune appended $(( $(wc -l < "$db") - n )) records"
"$qkgen" build --tuned "$db" --model $model --out "$out" || fail "build --tuned"
"$qkgen" build --tuned "$db" --model $model --out "$out" --name tuned32 --precision f32 ||
  fail "build --tuned --precision f32"
"$qkgen" verify --bundle "$out/tuned" --validation | tee "$scratch/verify" || fail "verify of the tuned bundle"
grep -q "^select table: [0-9]* shapes asked" "$scratch/verify" || fail "verify did not check the select table"
# complete for its model: a rule tuned at each case, a fallback for each operation
python3 - "$out/tuned/manifest.json" <<'PY' || fail "the tuned bundle is not complete for the model"
import json, sys
import manifest_view
m = json.load(open(sys.argv[1]))
at = {(r["op"], tuple(r["at"])) for d in m["select"]["devices"] for r in d["rules"]}
cases = [(op, (mm, 256, t)) for op, mm, ts in (("matvec", 64, (1, 4)), ("matmul", 64, (16,)),
         ("matvec_id", 32, (1, 4)), ("matmul_id", 32, (16,))) for t in ts]
missing = [c for c in cases if c not in at]
ops = {r["op"] for r in m["select"]["default"]}
names = {k["name"] for k in m["kernels"]}
kernels = {r["kernel"] for d in m["select"]["devices"] for r in d["rules"]} | {r["kernel"] for r in m["select"]["default"]}
# the products' fallbacks, and a rule for every other operation the layer records
layer = {"router_topk/renorm", "moe_route", "moe_combine/residual_rmsnorm", "matvec_id/swiglu",
         "matmul_id/swiglu"}
assert not missing and {"matvec", "matmul", "matvec_id", "matmul_id"} | layer <= ops, (missing, ops)
assert kernels <= names, kernels - names
# a MoE model's layer: its other operations too (qkgen bench --layer)
ks = manifest_view.kernels(m)  # each kernel with the fields of its module
fams = {k["family"] for k in ks}
assert {"router_topk", "moe_route", "moe_combine"} <= fams, fams
# those with weights in the model's one format only (router_topk and moe_combine computing
# their inputs): no aux kernel of another format
others = sorted(k["name"] for k in ks if k.get("format", "none") not in ("none", "q4_0"))
assert not others, others
assert any(k["name"].startswith("moe_combine-computed_q4_0") for k in ks), "no computed combine"
print(len(cases), "cases tuned,", len(ops), "fallbacks,", len(names), "kernels in the bundle")
PY
# the layer of the tiny model from the tuned bundle alone, its products selected
"$qkgen" bench --layer --bundle "$out/tuned" --formats q4_0 --k 256 --m 32 --experts 4 --top-k 2 \
  --tokens 1,16 --runs 20 --warmup-ms 10 --rotate-mb 0 > "$scratch/layer" 2>&1 ||
  fail "bench --layer on the tuned bundle: $(tail -3 "$scratch/layer")"
cat "$scratch/layer"
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
# every record a mark: a circle, or a small grey square for a kernel the device cannot run
marks=$(( $(grep -c '<circle' "$scratch/plot.svg") + $(grep -c 'width="4" height="4"' "$scratch/plot.svg") ))
[ "$marks" -ge "$n" ] || fail "the plot lacks candidates ($marks marks for $n records)"
echo "passed"
