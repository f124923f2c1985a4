# build --tuned treats the tuning database as input: every bundle built loads
# and reads back as JSON, also one built again over itself. Records are
# written here (no device work): the hashes are a bundle's.
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

echo "1 passed, 0 failed"
