# The two-pass path as the tuner's choice: a prefill matmul's tune times
# each pair of a first pass (dequant) and a second (the product on f16w
# blocks) as one candidate, "twopass:A+B", checked first and recorded like
# any variant (a resumed tune measures it once); a tuned bundle whose case
# a pair wins gets a select rule naming its kernel and first pass (select
# version 3, schema qkgen-bundle/4) and both kernels; `qkgen matmul` runs
# the two passes from the rule and matches the float64 reference; qkrt_select
# (a caller that cannot run a first pass) and the exported header's
# P_select_level pass over the rule, P_select_passes answers with it; a
# rule whose first pass is not a dequant kernel of its format is refused.
#
# Which path wins on lavapipe says nothing of a GPU, where the tuner's
# measurement decides: so after the real tune the test also makes the pair
# the winner (its times in a copy of the database) to check what a two-pass
# winner gets; the fused winner's bundle is checked as written.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 test_select=$2 cc=$3
seed=${QKGEN_SEED:-$RANDOM}
echo "seed $seed (QKGEN_SEED repeats it)"
db="$scratch/tune.jsonl"
opts=(--out "$scratch/out" --db "$db" --runs 20 --warmup-ms 20 --rotate-mb 0 --seed "$seed"
  --family matmul --m 64 --k 256 --tokens 80 --formats q4_0)
"$qkgen" tune "${opts[@]}" --filter twopass,matmul_q4_0_f32_nr32x16x32_wg128_scalar \
  > "$scratch/tune.txt" 2>&1 || { cat "$scratch/tune.txt"; fail "tune"; }
cat "$scratch/tune.txt"
python3 - "$db" <<'PY' || fail "the database's two-pass records"
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
two = [r for r in recs if r["variant"].startswith("twopass:")]
assert two, "no two-pass record"
for r in two:
    first, _, second = r["variant"][len("twopass:"):].partition("+")
    assert first.startswith("dequant_q4_0_") and second.startswith("matmul_f16w_"), r["variant"]
    assert r["family"] == "matmul" and len(r["spv_sha256"]) == 64, r
full = [r for r in two if r["stage"] == "full" and r["status"] == "ok"]
assert full, "no two-pass candidate timed in full"
print(len(two), "two-pass records,", len(full), "timed in full")
PY
# resumed: nothing measured again, the pair included
"$qkgen" tune "${opts[@]}" --filter twopass,matmul_q4_0_f32_nr32x16x32_wg128_scalar \
  > "$scratch/again.txt" 2>&1 || { cat "$scratch/again.txt"; fail "the resumed tune"; }
n1=$(grep -o 'database [^ ]*: [0-9]* records' "$scratch/tune.txt" | grep -o '[0-9]* records')
n2=$(grep -o 'database [^ ]*: [0-9]* records' "$scratch/again.txt" | grep -o '[0-9]* records')
[ "$n1" = "$n2" ] || fail "the resumed tune measured again: $n1, then $n2"

# the pair as the winner (a copy of the database, its times below the others')
python3 - "$db" "$scratch/won.jsonl" <<'PY' || fail "editing the database"
import json, sys
out = []
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r["variant"].startswith("twopass:") and r["stage"] == "full":
        r["us"] = r["us_min"] = r["us_max"] = 1.0
    out.append(json.dumps(r))
open(sys.argv[2], "w").write("\n".join(out) + "\n")
PY
"$qkgen" build --tuned "$scratch/won.jsonl" --out "$scratch/out" --name tp --quiet ||
  fail "build --tuned (a two-pass winner)"
check_schema "$scratch/out/tp"
python3 - "$scratch/out/tp/manifest.json" <<'PY' || fail "the two-pass select table"
import json, sys
m = json.load(open(sys.argv[1]))
t = m["select"]
assert m["schema"] == "qkgen-bundle/4" and t["version"] == 3, (m["schema"], t["version"])
names = {k["name"] for k in m["kernels"]}
rules = [r for d in t["devices"] for r in d["rules"]]
assert len(rules) == 1 and rules[0]["kernel"].startswith("matmul_f16w_"), rules
assert rules[0]["first_pass"].startswith("dequant_q4_0_"), rules
assert {rules[0]["kernel"], rules[0]["first_pass"]} <= names, names
assert all("first_pass" not in r for r in t["default"]), t["default"]
print("select version 3:", rules[0]["first_pass"], "then", rules[0]["kernel"])
PY
# qkgen matmul: the two passes from the rule, against the float64 reference
d="$scratch/data"
python3 tests/tools/ggml_quant.py make --format q4_0 --m 64 --k 256 --tokens 80 --seed "$seed" \
  --out "$d" > /dev/null || fail "the quantizer"
"$qkgen" matmul --format q4_0 --weights "$d/W.npy" --x "$d/X.npy" --out "$d/Y.npy" \
  --bundle "$scratch/out/tp" 2> "$scratch/matmul.err" || { cat "$scratch/matmul.err"; fail "matmul"; }
cat "$scratch/matmul.err"
grep -q "^qkgen matmul: dequant_q4_0_[^ ]* then matmul_f16w_[^ ]* (the bundle's select table, device" \
  "$scratch/matmul.err" || fail "qkgen matmul did not run the rule's two passes"
python3 - "$d" <<'PY' || fail "the two passes' result"
import numpy as np, sys
y, ref = np.load(f"{sys.argv[1]}/Y.npy"), np.load(f"{sys.argv[1]}/REF.npy")
nmse = float(np.sum((y - ref) ** 2) / np.sum(ref ** 2))
print(f"two passes from the select table: NMSE {nmse:.3e}")
assert np.isfinite(y).all() and nmse <= 5e-4, nmse
PY
# a caller of qkrt_select, and the independent evaluator, pass over the rule
python3 tests/tools/select_eval.py "$test_select" "$scratch/out/tp" ||
  fail "qkrt_select and the rule's evaluator differ"
# the header: P_select_level passes over the rule, P_select_passes answers
"$qkgen" export "$scratch/out/tp" --c "$scratch/tp.h" --prefix tp || fail "export"
cat > "$scratch/use.c" <<'C'
#define TP_IMPLEMENTATION
#include "tp.h"
#include <stdio.h>
#include <string.h>
int main(void) {
    tp_shape s;
    int level = -1, first = -2, one, two;
    memset(&s, 0, sizeof s);
    s.M = 64, s.K = 256, s.T = 80;
    one = tp_select_level(0x10005, 0, 1, "matmul", "q4_0", NULL, "f32", &s, NULL, NULL, &level);
    two = tp_select_passes(0x10005, 0, 1, "matmul", "q4_0", NULL, "f32", &s, NULL, NULL, &level,
                           &first);
    printf("%s | %s then %s\n", one >= 0 ? tp_kernels[one].name : "-",
           first >= 0 ? tp_kernels[first].name : "-", two >= 0 ? tp_kernels[two].name : "-");
    return !(one >= 0 && strncmp(tp_kernels[one].name, "matmul_q4_0_", 12) == 0 && first >= 0 &&
             strncmp(tp_kernels[first].name, "dequant_q4_0_", 13) == 0 &&
             strncmp(tp_kernels[two].name, "matmul_f16w_", 12) == 0);
}
C
"$cc" -std=c99 -Wall -Wextra -Werror -I"$scratch" "$scratch/use.c" -o "$scratch/use" ||
  fail "the header does not compile"
"$scratch/use" || fail "the header's select functions"
# a first pass that is not a dequant kernel of the rule's format: refused
cp -r "$scratch/out/tp" "$scratch/bad"
python3 - "$scratch/bad/manifest.json" <<'PY' || fail "editing the table"
import json, sys
m = json.load(open(sys.argv[1]))
r = m["select"]["devices"][0]["rules"][0]
r["first_pass"] = r["kernel"]
json.dump(m, open(sys.argv[1], "w"), indent=1)
PY
echo "matmul q4_0 64 256 80 0 0 f32" | "$test_select" "$scratch/bad" > "$scratch/bad.txt" 2>&1 &&
  fail "libqkrt loaded a rule whose first pass is a matmul"
grep -q "names first pass 'matmul_f16w_[^']*', not a dequant kernel of it" "$scratch/bad.txt" ||
  { cat "$scratch/bad.txt"; fail "libqkrt's message"; }
echo "passed"
