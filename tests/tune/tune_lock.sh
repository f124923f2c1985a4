# One writer of a tuning database at a time: while a tune runs, a second tune
# and a --merge into its database exit 1 naming the holder; with --wait they
# wait for it, then measure only what it left, so the records of the two runs
# neither interleave nor repeat.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
# (in a folder that the first tune makes)
db="$scratch/dbs/tune.jsonl" lock="$scratch/dbs/.tune.jsonl.lock"
opts="--out $scratch/out --db $db --runs 20 --warmup-ms 20 --rotate-mb 0 --family matvec --m 64 --k 256 --tokens 1"
filter="--filter matvec_q4_0_f32_nr1x1x,matvec_q4_0_f32_nr2x1x,matvec_q8_0_f32_nr1x1x,matvec_q8_0_f32_nr2x1x"
# (a long warm-up, waited out whole, keeps the first one running while the
# others try)
"$qkgen" tune $opts --formats q4_0 $filter --warmup-ms 8000 --steady-ms 0 > "$scratch/a" 2>&1 &
a=$!
for _ in $(seq 600); do
  grep -q "^pid $a since" "$lock" 2>/dev/null && break
  kill -0 $a 2>/dev/null || { cat "$scratch/a"; fail "the first tune ended without taking the lock"; }
  sleep 0.1
done
grep -q "^pid $a since" "$lock" || fail "the first tune did not take $lock in a minute"
in_use="$db is in use by another qkgen tune or --merge ($lock is held by pid $a since"
"$qkgen" tune $opts --formats q4_0 $filter > "$scratch/b" 2> "$scratch/b.err"
rc=$?
[ $rc -eq 1 ] || { cat "$scratch/b" "$scratch/b.err"; fail "a second tune exited $rc, expected 1"; }
grep -qF "qkgen tune: $in_use" "$scratch/b.err" || { cat "$scratch/b.err"; fail "no 'in use' message"; }
[ -s "$scratch/b" ] && fail "the refused tune started: $(cat "$scratch/b")"
cp "$db" "$scratch/other.jsonl" 2>/dev/null || : > "$scratch/other.jsonl"
"$qkgen" tune --merge "$scratch/other.jsonl" --db "$db" > /dev/null 2> "$scratch/m.err"
rc=$?
[ $rc -eq 1 ] && grep -qF "$in_use" "$scratch/m.err" || { cat "$scratch/m.err"; fail "a merge into the database in use exited $rc"; }
kill -0 $a 2>/dev/null || echo "note: the first tune ended before the refusals were checked"
# --wait: queued behind the first, then only its own case
"$qkgen" tune $opts --formats q4_0,q8_0 $filter --wait > "$scratch/c" 2> "$scratch/c.err" ||
  { cat "$scratch/c" "$scratch/c.err"; fail "tune --wait"; }
wait $a || { cat "$scratch/a"; fail "the first tune failed"; }
grep -qF "waiting for $lock, held by pid $a since" "$scratch/c.err" ||
  { cat "$scratch/c.err"; echo "note: the first tune had ended before --wait began"; }
python3 - "$db" <<'PY' || fail "records torn, repeated or interleaved"
import json, sys
cases, keys = [], set()
for line in open(sys.argv[1]).read().split("\n")[:-1]:
    r = json.loads(line)  # every line whole
    k = (r["variant"], r["spv_sha256"], r["stage"], json.dumps(r["case"], sort_keys=True))
    assert k not in keys, ("repeated", k)
    keys.add(k)
    cases.append(r["case"]["format"])
first_q8 = cases.index("q8_0")
assert "q4_0" not in cases[first_q8:], "q4_0 records after the waiting tune's q8_0 ones"
print(len(keys), "records:", first_q8, "of the first tune, then", len(cases) - first_q8,
      "of the one that waited; none repeated")
PY
echo "passed"
