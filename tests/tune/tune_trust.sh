# build --tuned treats the tuning database as input: records with names, a
# device UUID or times that a manifest cannot hold are refused where they are
# read (with the line and the field), a refused build leaves the bundle
# there as it was, a record whose variant computes another case (another
# format, a fused kernel, a shape its constraints refuse) never becomes a
# rule, and every bundle built loads and reads back as JSON. With
# test_select_qkrt as a second argument, random databases too (QKGEN_SEED).
# Records are written here (no device work): the hashes are a bundle's.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 select_qkrt=${2:-}
out=$scratch/out
"$qkgen" build --out "$scratch/ref" --filter matvec_q4_0_f32_nr1x1,matvec_q8_0_f32_nr1x1 --quiet ||
  fail "build the reference bundle"
# records: python's rec(variant, format, **changes) with the bundle's hash
records() {
  python3 - "$scratch/ref/default/manifest.json" "$1" "$2" <<'EOF'
import json, sys, manifest_view
man, path, code = sys.argv[1], sys.argv[2], sys.argv[3]
ks = {k["name"]: k for k in manifest_view.kernels(json.load(open(man)))}
ks = dict(ks, **{"matvec_q4_0_f32_nr1x1x8_wg64_x": {"spv_sha256": "0" * 64}})
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

# ---- hostile records, one a line of one database: each refused with its
# line and field, nothing left to build, the bundle kept
# device.cache_uuid (written into the select table), times and NMSE (not
# finite, negative or past any dispatch), names a manifest, header and report
# carry (never markup or quotes)
records "$scratch/hostile.jsonl" "[
  rec('$good', device_cache_uuid='0\"}, \"injected\": {\"x\": \"'),
  rec('$good', device_cache_uuid='a\\\\b'), rec('$good', device_cache_uuid='x\\x01y'),
  rec('$good', device_cache_uuid='76616C2D257300000000000000000000'),
  rec('$good', device_cache_uuid='7661'),
  rec('$good', us=1e60), rec('$good', us=float('inf')), rec('$good', us=-1),
  rec('$good', us_min=1e999), rec('$good', us_max=1e10), rec('$good', nmse=-1e-3),
  rec('$good', nmse=1e999),
  rec('<script>alert(1)</script>'), rec('a\"b'), rec('matvec q4'), rec(''),
  rec('$good', family='mat\"vec'), rec('$good', spv_sha256='Z' * 64)]"
before=$(sha256sum <"$out/tuned/manifest.json")
rc=0
"$qkgen" build --tuned "$scratch/hostile.jsonl" --out "$out" 2>"$scratch/err" >/dev/null || rc=$?
[ $rc = 2 ] && grep -q "no records (every line ignored" "$scratch/err" ||
  fail "hostile.jsonl: exit $rc, wanted 2: $(cat "$scratch/err")"
n=0
for why in "1: device.cache_uuid: " "2: device.cache_uuid: " "3: device.cache_uuid: " \
  "4: device.cache_uuid: " "5: device.cache_uuid: " "6: us: missing or not a number from 0 to" \
  "7: us: " "8: us: " "9: us_min: " "10: us_max: " "11: nmse: " "12: nmse: " "13: variant: " \
  "14: variant: " "15: variant: " "16: an empty variant" "17: family: " "18: spv_sha256: "; do
  n=$((n + 1))
  grep -qF "hostile.jsonl:$why" "$scratch/err" || fail "hostile.jsonl:$why not reported: $(cat "$scratch/err")"
done
[ "$(sha256sum <"$out/tuned/manifest.json")" = "$before" ] || fail "hostile.jsonl: the bundle there was changed"
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
# ---- random databases (QKGEN_SEED): any mix of records, good, misfit and
# hostile, builds a bundle that libqkrt loads (its select table checked) and
# runs, or is refused with a message; never a crash or a broken manifest
if [ -n "$select_qkrt" ]; then
  seed=${QKGEN_SEED:-$RANDOM}
  echo "random databases: seed $seed (QKGEN_SEED repeats it)"
  for i in 1 2 3 4; do
    records "$scratch/r$i.jsonl" "[
      (lambda rng: [rec(rng.choice(list(ks)), fmt=rng.choice(['q4_0', 'q4_0', 'q8_0']),
                    M=rng.choice([1, 7, 64, 4096, 0]), K=rng.choice([32, 256, 48, 14336]),
                    T=rng.choice([1, 2, 3, 8, 512]), us=rng.choice([0.5, 3.25, 10, 1e9, 1e60, -1]),
                    status=rng.choice(['ok', 'ok', 'ok', 'wrong', 'failed']),
                    stage=rng.choice(['full', 'screen', 'check']),
                    device_driver_version=rng.choice([1, 2]),
                    device_cache_uuid=rng.choice(['76616c2d257300000000000000000000', '0' * 32, 'x\"']))
                for _ in range(rng.randint(1, 40))])(__import__('random').Random($seed * 10 + $i))
    ][0]"
    rc=0
    "$qkgen" build --tuned "$scratch/r$i.jsonl" --out "$out" --name "r$i" >"$scratch/log" 2>&1 || rc=$?
    if [ $rc != 0 ]; then
      [ $rc = 2 ] && grep -q "qkgen build: " "$scratch/log" || fail "r$i.jsonl: exit $rc: $(cat "$scratch/log")"
      echo "r$i.jsonl: refused: $(tail -1 "$scratch/log")"
      continue
    fi
    "$select_qkrt" "$out/r$i" </dev/null >"$scratch/kernels" 2>"$scratch/err" ||
      fail "r$i.jsonl: libqkrt does not load the bundle: $(cat "$scratch/err")"
    # every rule answers with a kernel of its own case; one of them runs
    python3 - "$out/r$i/manifest.json" <<'EOF' || fail "r$i.jsonl: a rule runs a kernel of another case"
import json, sys, manifest_view
m = json.load(open(sys.argv[1]))
ks = {k["name"]: k for k in manifest_view.kernels(m)}
for r in [r for d in m["select"]["devices"] for r in d["rules"]] + m["select"]["default"]:
    k = ks[r["kernel"]]
    assert (k["family"], k["format"]) == (r["op"], r["format"]), r
EOF
    k=$(python3 -c 'import json,sys; t = json.load(open(sys.argv[1]))["select"]
print((t["default"] + [r for d in t["devices"] for r in d["rules"]])[0]["kernel"])' "$out/r$i/manifest.json")
    "$qkgen" verify --bundle "$out/r$i" --filter "$k" >"$scratch/verify" 2>&1 ||
      fail "r$i.jsonl: $k does not verify: $(tail -3 "$scratch/verify")"
    echo "r$i.jsonl: built, loaded, $k verified"
  done
fi
echo "1 passed, 0 failed"
