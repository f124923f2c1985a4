# build --tuned treats the tuning database as input: records with names, a
# device UUID or times that a manifest cannot hold are refused where they are
# read (with the line and the field), a refused build leaves the bundle
# there as it was, a record whose variant computes another case (another
# format, a fused kernel, a shape its constraints refuse) never becomes a
# rule, and every bundle built loads and reads back as JSON.
# Records are written here (no device work): the hashes are a bundle's.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
out=$scratch/out
"$qkgen" build --out "$scratch/ref" --filter matvec_q4_0_f32_nr1x1,matvec_q8_0_f32_nr1x1 --quiet ||
  fail "build the reference bundle"
# records: python's rec(variant, format, **changes) with the bundle's hash
records() {
  python3 - "$scratch/ref/default/manifest.json" "$1" "$2" <<'EOF'
import json, sys, manifest_view
man, path, code = sys.argv[1], sys.argv[2], sys.argv[3]
ks = {k["name"]: k for k in manifest_view.kernels(json.load(open(man)))}
def rec(variant, fmt="q4_0", M=64, K=256, T=1, us=10.0, **changes):
    r = {"v": 1, "device": {"vendor_id": 65541, "device_id": 0, "driver_version": 1,
                            "cache_uuid": "76616c2d257300000000000000000000", "name": "llvmpipe"},
         "variant": variant, "family": "matvec",
         "spv_sha256": ks[variant]["spv_sha256"] if variant in ks else "0" * 64,
         "case": {"op": "matvec", "format": fmt, "format_variant": "", "M": M, "K": K, "T": T,
                  "E": 0, "top_k": 0},
         "precision": "f32", "nmse": 1e-14, "status": "ok", "stage": "full", "us": us,
         "us_min": us, "us_max": us, "runs": 20, "note": "", "time": 1764081000}
    for k, v in changes.items():
        if k.startswith("device_"):
            r["device"][k[7:]] = v
        else:
            r[k] = v
    # JSON has no infinity: what a file would say instead
    return json.dumps(r).replace("-Infinity", "-1e999").replace("Infinity", "1e999")
lines = eval(code)
open(path, "w").write("".join(l + "\n" for l in lines))
EOF
}
good=matvec_q4_0_f32_nr1x1x32_wg64
# expect_refused DB TEXT: build --tuned ignores the bad record with TEXT, has
# nothing left to build, and leaves the bundle built before as it was
expect_refused() {
  local db=$1 text=$2 rc=0 before
  before=$(cat "$out/tuned/manifest.json" | sha256sum)
  "$qkgen" build --tuned "$db" --out "$out" 2>"$scratch/err" >/dev/null || rc=$?
  [ $rc = 2 ] && grep -qF -- "$text" "$scratch/err" ||
    fail "$(basename "$db"): exit $rc, wanted 2 and '$text': $(cat "$scratch/err")"
  [ "$(cat "$out/tuned/manifest.json" | sha256sum)" = "$before" ] ||
    fail "$(basename "$db"): the bundle there before was changed"
}
# a good bundle first, which every refusal below must leave alone
records "$scratch/good.jsonl" "[rec('$good')]"
"$qkgen" build --tuned "$scratch/good.jsonl" --out "$out" --quiet || fail "build --tuned a good database"
python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$out/tuned/manifest.json" ||
  fail "the tuned manifest is not JSON"
"$qkgen" verify --bundle "$out/tuned" --filter "$good" >/dev/null || fail "the tuned bundle does not verify"
# built again over itself (the bundle current, its manifest kept): one select table
"$qkgen" build --tuned "$scratch/good.jsonl" --out "$out" --quiet || fail "build --tuned again"
python3 -c "
import json, sys
pairs = json.load(open(sys.argv[1]), object_pairs_hook=lambda p: [k for k, _ in p])
assert pairs.count('select') == 1, pairs" "$out/tuned/manifest.json" || fail "a rebuild repeats \"select\""

# ---- device.cache_uuid: written into the manifest's select table
n=0
for uuid in '0"}, "injected": {"x": "' 'a\\b' "$(printf 'x\001y')" '76616C2D257300000000000000000000' \
  '7661'; do
  n=$((n + 1))
  UUID=$uuid records "$scratch/uuid$n.jsonl" "[rec('$good', device_cache_uuid=__import__('os').environ['UUID'])]"
  expect_refused "$scratch/uuid$n.jsonl" "device.cache_uuid: "
done
# ---- times and NMSE: not finite, negative or past any dispatch
for t in "us=1e60" "us=float('inf')" "us=-1" "us_min=1e999" "us_max=1e10" "nmse=-1e-3" "nmse=1e999"; do
  n=$((n + 1))
  records "$scratch/t$n.jsonl" "[rec('$good', $t)]"
  expect_refused "$scratch/t$n.jsonl" "missing or not a number from 0 to"
done
# ---- names a manifest, header and report carry: never markup or quotes
for v in "'<script>alert(1)</script>'" "'a\"b'" "'matvec q4'" "''"; do
  n=$((n + 1))
  records "$scratch/v$n.jsonl" "[rec($v)]"
  expect_refused "$scratch/v$n.jsonl" "variant"
done
records "$scratch/fam.jsonl" "[rec('$good', family='mat\"vec')]"
expect_refused "$scratch/fam.jsonl" "family: "
records "$scratch/sha.jsonl" "[rec('$good', spv_sha256='Z' * 64)]"
expect_refused "$scratch/sha.jsonl" "spv_sha256: "
echo "$n hostile records refused, the bundle kept"

# ---- a record whose variant does not compute its case: never a rule
q8=matvec_q8_0_f32_nr1x1x32_wg64
records "$scratch/misfit.jsonl" "[rec('$good', us=10), rec('$q8', us=1),
  rec('${good}_swiglu', us=1), rec('$good', fmt='q8_0', K=512, us=1), rec('$good', K=48, us=1)]"
"$qkgen" build --tuned "$scratch/misfit.jsonl" --out "$out" --name misfit 2>"$scratch/err" >/dev/null ||
  fail "build --tuned with misfit records: $(cat "$scratch/err")"
grep -q "4 records whose kernel does not compute their case ignored (e.g. $q8 for matvec q4_0" \
  "$scratch/err" || fail "misfit records not reported: $(cat "$scratch/err")"
python3 - "$out/misfit/manifest.json" <<'EOF' || fail "a rule runs a kernel of another case"
import json, sys, manifest_view
m = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in manifest_view.kernels(m)}
rules = [r for d in m["select"]["devices"] for r in d["rules"]] + m["select"]["default"]
for r in rules:
    k = ks[r["kernel"]]
    assert (k["family"], k["format"], k.get("fusion", "none")) == (r["op"], r["format"], "none"), r
assert any(r["kernel"] == "matvec_q4_0_f32_nr1x1x32_wg64" for d in m["select"]["devices"]
           for r in d["rules"]), rules
EOF
echo "misfit records ignored, no rule runs another case's kernel"

# the largest time allowed reads back from the manifest it reaches
records "$scratch/max.jsonl" "[rec('$good', us=1e9, us_min=1e9, us_max=1e9)]"
"$qkgen" build --tuned "$scratch/max.jsonl" --out "$out" --quiet || fail "build --tuned, us 1e9"
"$qkgen" verify --bundle "$out/tuned" --filter "$good" >/dev/null ||
  fail "the bundle of a 1e9 us record does not load"
echo "1 passed, 0 failed"
