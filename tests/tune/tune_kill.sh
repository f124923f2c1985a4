# qkgen tune killed with SIGKILL at random moments (seeded: QK_KILL_SEED=N
# replays the kill times), several times over: half the kills within the
# first seconds (building, loading, the first checks), half at a random
# moment once the run writes records, until 20 have landed mid-run (a new
# database once one is done); each resumed to the end: the
# database only ever grows by whole records (nothing written is lost or
# rewritten), no run measures again what an earlier one recorded, at most the
# line being written when a kill lands is torn, and a last run adds nothing.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
seed=${QK_KILL_SEED:-$(date +%s)} kills=${QK_KILLS:-20}
echo "seed $seed, $kills kills (QK_KILL_SEED=$seed replays them)"
db="$scratch/tune.jsonl"
# eight cases of 5 to 9 candidates: enough work that most kills land mid-run
formats=q4_0,q8_0,q5_0,q4_1,q5_1,iq4_nl,q4_K,q6_K
opts="--out $scratch/out --runs 100 --warmup-ms 300 --rotate-mb 0 --family matvec --m 64 --k 256 --tokens 1 --formats $formats"
opts="$opts --filter $(for f in ${formats//,/ }; do echo -n "matvec_${f}_f32_nr1x1x,matvec_${f}_f32_nr2x1x,"; done)"
# check OLD NEW: NEW is OLD plus appended records none of which OLD has
check() {
  python3 - "$1" "$2" <<'PY'
import json, sys
old, new = (open(p).read() if p else "" for p in sys.argv[1:])
def key(line):
    r = json.loads(line)
    return (r["variant"], r["spv_sha256"], r["stage"], json.dumps(r["case"], sort_keys=True))
def keys(text):
    out, torn = [], 0
    for line in text.split("\n"):
        if not line:
            continue
        try:
            out.append(key(line))
        except (ValueError, KeyError):
            torn += 1
    return out, torn
assert new.startswith(old), "the database lost or rewrote what it had"
before, _ = keys(old)
# a torn last line of OLD is ended by the next writer: the appended part's
# first piece up to its newline belongs to it
tail = new[len(old):]
if old and not old.endswith("\n"):
    tail = tail.split("\n", 1)[1] if "\n" in tail else ""
added, torn_added = keys(tail)
again = set(before) & set(added)
assert not again, ("measured again", sorted(again)[:3])
every, torn = keys(new)
assert len(every) == len(set(every)), "a record repeated"
# whole lines only, but for lines a kill cut off (at most one per run)
assert torn_added <= 1, f"{torn_added} torn lines in one run"
print(f"{len(every)} records (+{len(added)}), {torn} torn lines in all")
PY
}
# finish: the run of the current database to its end adds only what was left,
# every case has its winner, and one more run adds nothing
finish() {
  cp "$db" "$scratch/old"
  "$qkgen" tune $opts --db "$db" > "$scratch/rest" 2>&1 || { cat "$scratch/rest"; fail "the resumed tune"; }
  echo -n "$(basename "$db") resumed to the end: "
  check "$scratch/old" "$db" || fail "the resumed tune"
  cp "$db" "$scratch/old"
  "$qkgen" tune $opts --db "$db" > "$scratch/again" 2>&1 || { cat "$scratch/again"; fail "a tune with nothing left"; }
  cmp -s "$scratch/old" "$db" || fail "a tune with nothing left appended $(($(wc -l < "$db") - $(wc -l < "$scratch/old"))) records"
  [ "$(grep -c "^matvec .*: matvec_" "$scratch/rest")" -eq 8 ] || { cat "$scratch/rest"; fail "not every case has a winner"; }
}
# Kills until $kills have landed while a tune ran. A run that ends by itself
# has finished its database (how soon depends on the machine's speed): that
# one is finished and checked, and the next runs start a new one.
landed=0 runs=0 dbs=1
while [ "$landed" -lt "$kills" ]; do
  runs=$((runs + 1))
  i=$runs
  [ "$runs" -le $((kills * 3)) ] || fail "only $landed of $kills kills landed in $((runs - 1)) runs"
  t=$(python3 -c "import random; r = random.Random($seed * 1000 + $i); print('%.2f' % r.uniform(0.3, 4) if $i % 2 else '%.2f' % r.uniform(0, 0.8))")
  cp "$db" "$scratch/old" 2>/dev/null || : > "$scratch/old"
  n0=$(wc -c < "$scratch/old")
  "$qkgen" tune $opts --db "$db" > "$scratch/run$i" 2>&1 &
  pid=$!
  after="start"
  if [ $((i % 2)) -eq 0 ]; then # once it writes records
    for _ in $(seq 1200); do
      [ "$(cat "$db" 2>/dev/null | wc -c)" -gt "$n0" ] && break
      kill -0 $pid 2>/dev/null || break
      sleep 0.05
    done
    after="its first record"
  fi
  sleep "$t"
  if kill -9 $pid 2>/dev/null; then
    landed=$((landed + 1))
    what="killed $t s after $after"
  else
    what="had ended $t s after $after"
  fi
  wait $pid 2>/dev/null
  [ -e "$db" ] || : > "$db"
  echo -n "run $i $what: "
  check "$scratch/old" "$db" || { cat "$scratch/run$i"; fail "run $i ($what)"; }
  if [ "${what#had ended}" != "$what" ] && [ "$landed" -lt "$kills" ]; then
    finish
    dbs=$((dbs + 1))
    db="$scratch/tune$dbs.jsonl"
  fi
done
finish
echo "passed: $landed kills landed mid-run in $runs runs, $dbs databases"
