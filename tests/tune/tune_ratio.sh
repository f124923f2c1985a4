# The tune's line for a case and `qkgen tune --report` agree on the fallback:
# the same time (marked s where only screened) and the same speedup, at one
# stage. One finalist, so a fallback that loses the screen is not timed in
# full: its ratio is then against the winner's first screen, in both.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
db="$scratch/tune.jsonl"
for t in 64 32; do
  "$qkgen" tune --out "$scratch/out" --db "$db" --family matmul --m 64 --k 256 --tokens $t \
    --formats q4_0 --filter matmul_q4_0_f32_nr64,matmul_q4_0_f32_nr32x32 --finalists 1 --runs 20 \
    --warmup-ms 20 --rotate-mb 0 --screen-warmup-ms 0 --steady-ms 0 >>"$scratch/log" 2>&1 ||
    { cat "$scratch/log"; fail "qkgen tune --tokens $t"; }
done
"$qkgen" tune --report "$db" >"$scratch/report" 2>&1 || { cat "$scratch/report"; fail "tune --report"; }
cat "$scratch/log" "$scratch/report"
python3 - "$scratch/log" "$scratch/report" <<'PY' || fail "the line and the report disagree"
import re, sys
line = {}
for l in open(sys.argv[1]):
    m = re.match(r"(\S+ \S+ m=\d+ k=\d+ t=\d+) .*; fallback ([0-9.]+s?) us \(([0-9.]+x)\);", l)
    if m:
        line[m[1]] = (m[2], m[3])
rep = {}
for l in open(sys.argv[2]):
    m = re.match(r"(\S+ \S+ m=\d+ k=\d+ t=\d+) +\S+ +[0-9.]+s? +([0-9.]+s?) +([0-9.]+x) ", l)
    if m:
        rep[m[1]] = (m[2], m[3])
assert line, "no case line with a fallback"
assert line == rep, (line, rep)
print(len(line), "cases: the same fallback time and speedup in the line and the report")
PY
