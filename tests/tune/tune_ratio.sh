# The tune's line for a case and `qkgen tune --report` agree on the fallback:
# the same time (marked s where only screened) and the same speedup, at one
# stage. One finalist, so a fallback that loses the screen is not timed in
# full: its ratio is then against the winner's first screen, in both.
# Candidates the device cannot run (on lavapipe the cooperative-matrix ones)
# are counted as unsupported, not failed, in the line, the database, the
# report and the plot.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
db="$scratch/tune.jsonl"
for t in 64 32; do
  "$qkgen" tune --out "$scratch/out" --db "$db" --family matmul --m 64 --k 256 --tokens $t \
    --formats q4_0 --filter matmul_q4_0_f32_nr64,matmul_q4_0_f32_nr32x32 --finalists 1 --runs 20 \
    --warmup-ms 20 --rotate-mb 0 --screen-warmup-ms 0 --steady-ms 0 >>"$scratch/log" 2>&1 ||
    { cat "$scratch/log"; fail "qkgen tune --tokens $t"; }
done
"$qkgen" tune --report "$db" --svg "$scratch/plot.svg" >"$scratch/report" 2>&1 || { cat "$scratch/report"; fail "tune --report"; }
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
python3 - "$scratch/log" "$scratch/report" "$db" "$scratch/plot.svg" <<'PY' || fail "unsupported candidates"
import json, re, sys
recs = [json.loads(l) for l in open(sys.argv[3])]
lacks = [r for r in recs if "which device" in r["note"] and "lacks" in r["note"]]
assert all(r["status"] == "unsupported" and r["stage"] == "check" for r in lacks), lacks[:1]
assert all(r["status"] != "failed" for r in recs), [r for r in recs if r["status"] == "failed"][:1]
per = {}
for r in lacks:
    c = r["case"]
    key = f"{c['op']} {c['format']} m={c['M']} k={c['K']} t={c['T']}"
    per[key] = per.get(key, 0) + 1
line = {m[1]: (int(m[2]), int(m[3])) for m in
        re.finditer(r"^(\S+ \S+ m=\d+ k=\d+ t=\d+) +\d+ candidates \(\d+ wrong, (\d+) failed, "
                    r"(\d+) unsupported", open(sys.argv[1]).read(), re.M)}
rep = {m[1]: (int(m[2]), int(m[3])) for m in
       re.finditer(r"^(\S+ \S+ m=\d+ k=\d+ t=\d+) .* \d+ \(\d+, (\d+), (\d+)\)$",
                   open(sys.argv[2]).read(), re.M)}
want = {k: (0, per.get(k, 0)) for k in line}
assert line == want and rep == want, (line, rep, want)
svg = open(sys.argv[4]).read()
assert svg.count(": unsupported by the device</title>") == len(lacks), "the plot's unsupported marks"
assert ": failed</title>" not in svg, "a candidate plotted as failed"
print(len(lacks), "unsupported candidates: none failed, counted so in the line, report and plot"
      + ("" if lacks else " (this device runs every candidate)"))
PY
