# A tuned bundle's fallbacks serve every shape the format allows: the MoE
# matmul of iq4_nl tuned with one candidate, a pair mat-vec whose chunks of
# 64 elements refuse K of an odd number of blocks, and the tuned bundle's
# select table checked by `qkgen verify` at K = 13 blocks (its fallback was
# that mat-vec before the fallback's probe shapes; every such shape then had
# no rule on an untuned device). Its kernels have their tiles compiled in
# (no specialization constants) unless --specialize.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
db="$scratch/tune.jsonl"
winner=matvec_lanes-slab-pairs_iq4_nl_f32_nr2x2x64_wg256_tpr16
"$qkgen" tune --out "$scratch/out" --db "$db" --runs 20 --warmup-ms 20 --rotate-mb 0 \
  --family moe_matmul --m 32 --k 128 --tokens 2 --experts 4 --top-k 2 --formats iq4_nl \
  --filter $winner --strategy exhaustive > "$scratch/tune.txt" 2>&1 || {
  cat "$scratch/tune.txt"
  fail "tune"
}
grep -q "\"variant\": \"$winner\".*\"status\": \"ok\"" "$db" || fail "no correct record of $winner"
for opt in "" --specialize; do
  name=tuned${opt:+-specialized}
  "$qkgen" build --tuned "$db" --out "$scratch/out" --name $name $opt --quiet ||
    fail "build --tuned $opt"
  python3 - "$scratch/out/$name/manifest.json" "$opt" <<'PY' || fail "$name: manifest"
import json, sys
m = json.load(open(sys.argv[1]))
default = [d["kernel"] for d in m["select"]["default"] if d["op"] == "matmul_id"]
assert default and "slab-pairs" not in default[0], default
specialized = [k["name"] for k in m["kernels"] if k.get("specialization_constants")]
if sys.argv[2]:
    assert specialized, "--specialize: no kernel has specialization constants"
else:
    assert not specialized, specialized
    assert len(m["modules"]) == len(m["kernels"]), (len(m["modules"]), len(m["kernels"]))
print(sys.argv[1], "fallback", default[0], "specialized", len(specialized))
PY
  "$qkgen" verify --bundle "$scratch/out/$name" > "$scratch/verify.txt" 2>&1 || {
    cat "$scratch/verify.txt"
    fail "verify $name"
  }
  grep -q "^select table: \([0-9]*\) shapes asked, \1 answered" "$scratch/verify.txt" ||
    fail "$name: the select table does not answer every shape"
done
echo "tune.fallback: ok"
