# qkgen bench --layer takes its kernels from a bundle's select table: the
# layer bundle with a table whose rules name kernels that the CLI's own choice
# would not (the one-row mat-vecs with ids, where it prefers the most rows),
# so the kernels used show which chose. The gate/up kernel is the selected
# one's "_swiglu" sibling where there is one (q4_0), else gate, up and the
# swiglu kernel (q8_0's pre-quantized mat-vec has none). --router split: the
# router product from the table too, not the top-k kernel that computes it.
. "$(dirname "$0")/lib.sh"
qkgen=$1 bundle=$2
cp -r "$bundle" "$scratch/sel" || fail "copying $bundle"
python3 - "$scratch/sel/manifest.json" <<'PY' || fail "adding a select table"
import json, sys
m = json.load(open(sys.argv[1]))
def rule(op, fmt, kernel):
    return {"op": op, "format": fmt, "format_variant": "", "kernel": kernel, "precision": "f32",
            "M": [1, None], "K": [1, None], "T": [1, None]}
m["select"] = {"version": 1, "devices": [], "default": [
    rule("matvec", "q4_0", "matvec_q4_0_f32_nr1x1x8_wg64"),
    rule("matvec_id", "q4_0", "matvec-ids_q4_0_f32_nr1x1x8_wg64"),
    rule("matmul", "q4_0", "matmul_q4_0_f32_nr32x16x32_wg128_scalar"),
    rule("matmul_id", "q4_0", "matmul-pairs_q4_0_f32_nr32x16x32_wg128_scalar"),
    rule("matvec", "q8_0", "matvec_q8_0_f32_nr1x1x8_wg64"),
    rule("matvec_id", "q8_0", "matvec_lanes-q8pre-ids_q8_0_f32_nr1x1x64_wg256_tpr16_dot8")]}
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
"$qkgen" bench --layer --bundle "$scratch/sel" --formats q4_0,q8_0 --m 64 --k 128 --experts 8 \
  --top-k 2 --tokens 1,12 --router split --runs 20 --warmup-ms 20 --rotate-mb 1 --copy-mb 8 \
  --json "$scratch/layer.json" | tee "$scratch/log" || fail "qkgen bench --layer"
grep -q "kernels (select table)" "$scratch/log" || fail "no layer said its kernels came from the table"
python3 - "$scratch/layer.json" <<'PY' || fail "the layers did not run the selected kernels"
import json, sys
want = {
    ("q4_0", 1): {"router": "matvec_q4_0_f32_nr1x1x8_wg64",
                  "gate_up": "matvec-ids_q4_0_f32_nr1x1x8_wg64_swiglu",
                  "down": "matvec-ids_q4_0_f32_nr1x1x8_wg64"},
    ("q4_0", 12): {"router": "matmul_q4_0_f32_nr32x16x32_wg128_scalar",
                   "route": "moe_route_f32_nr1x1x1_wg256",
                   "gate_up": "matmul-pairs_q4_0_f32_nr32x16x32_wg128_scalar_swiglu",
                   "down": "matmul-pairs_q4_0_f32_nr32x16x32_wg128_scalar"},
    ("q8_0", 1): {"gate": "matvec_lanes-q8pre-ids_q8_0_f32_nr1x1x64_wg256_tpr16_dot8",
                  "swiglu": "swiglu_f32_nr1x1x1_wg256"},
}
results = json.load(open(sys.argv[1]))["results"]
assert len(results) == 4, len(results)
for r in results:
    assert r["ok"] and r["selected"], r
    for role, name in want.get((r["format"], r["T"]), {}).items():
        assert r["kernels"].get(role) == name, (r["format"], r["T"], role, r["kernels"])
print(len(results), "layers on the selected kernels")
PY
echo "passed"
