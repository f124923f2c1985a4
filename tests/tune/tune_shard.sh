# qkgen tune --shard K/N on lavapipe: bad arguments refused by name; the
# shards of 1, 3, 4 and 7 list (--dry-run) every N-th case of the whole list
# from the K-th, together each case once (a shard past the cases tunes
# nothing, writes nothing); the tiny model tuned whole and as 3 shards, the
# shards merged (tune --merge, 100 databases at once too), and the tuned
# bundles compared.
#
# What is compared, and why: the winners are measured, and two tunes of one
# case time its candidates apart (lavapipe's times move by several percent
# from run to run), so a whole run's winners may differ from the shards'
# by noise alone. So the sharded merge is checked against the whole run for
# what noise cannot change: the same cases, each from one shard, the shard
# K's the whole list's K-th, K+3-th, ...; each case's candidates, its checks'
# outcomes, the variants screened and the number timed in full (the same
# --seed, so the same data). The bundle is then compared on the same
# measurements: the merged database against the one a single machine would
# have written with them (its records in the whole run's case order), and
# against a merge of the shards in the other order: each must build a tuned
# bundle that is byte for byte the same (manifest, select table, SPIR-V).
# Last, the whole run's own bundle has the same select rules (operations,
# formats, shapes and ranges; the kernels are the measurements') and default
# rules for the same operations and formats.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
model=specs/models/tiny.yaml out="$scratch/out" seed=${QKGEN_SEED:-$RANDOM}
echo "seed $seed (QKGEN_SEED repeats it)"
opts="--out $out --runs 20 --warmup-ms 20 --rotate-mb 0 --seed $seed"

# ---- the argument, refused by name (exit 2), no database made
expect_usage() { # expect_usage MESSAGE -- tune arguments...
  local want=$1; shift 2
  "$qkgen" tune "$@" > "$scratch/o" 2> "$scratch/e"; local rc=$?
  [ $rc -eq 2 ] || { cat "$scratch/e"; fail "tune $* exited $rc, expected 2"; }
  grep -qxF "qkgen tune: $want" "$scratch/e" || { cat "$scratch/e"; fail "tune $*: not '$want'"; }
  [ ! -e "$scratch/bad.jsonl" ] || fail "tune $* made its database"
}
bad="--model $model $opts --db $scratch/bad.jsonl"
expect_usage "--shard 3/2: no shard 3 of 2: shards are numbered from 0, 0/2 to 1/2" -- $bad --shard 3/2
expect_usage "--shard 2/2: no shard 2 of 2: shards are numbered from 0, 0/2 to 1/2" -- $bad --shard 2/2
expect_usage "--shard 3: not K/N (shard K of N, K from 0 to N-1)" -- $bad --shard 3
expect_usage "--shard 1/0: N: 0 is out of range 1..65536" -- $bad --shard 1/0
expect_usage "--shard -1/2: K: '-1' is not a non-negative integer" -- $bad --shard -1/2
expect_usage "--shard 1/2/3: N: '2/3' is not a non-negative integer" -- $bad --shard 1/2/3
expect_usage "--shard /2: K: '' is not a non-negative integer" -- $bad --shard /2
expect_usage "--shard 0/99999: N: 99999 is out of range 1..65536" -- $bad --shard 0/99999
expect_usage "--shard 0/2: shards a tune, not --merge or --report (they take whole databases)" -- \
  --merge "$scratch/none.jsonl" --db "$scratch/bad.jsonl" --shard 0/2
echo "--shard's bad arguments refused"

# ---- the shards' cases (--dry-run): each N-th of the whole list from the K-th
cases() { sed -n 's/^\(.*\): [0-9]* candidates (the fallback .*$/\1/p' "$1"; }
"$qkgen" tune --model $model $opts --db "$scratch/d.jsonl" --dry-run > "$scratch/whole.dry" ||
  fail "tune --dry-run"
cases "$scratch/whole.dry" > "$scratch/whole.cases"
total=$(wc -l < "$scratch/whole.cases")
[ "$total" -eq 6 ] || fail "the tiny model has 6 cases, the dry run listed $total"
for n in 1 4 7; do
  : > "$scratch/union"
  for k in $(seq 0 $((n - 1))); do
    "$qkgen" tune --model $model $opts --db "$scratch/d.jsonl" --dry-run --shard $k/$n \
      > "$scratch/s.dry" 2>&1 || { cat "$scratch/s.dry"; fail "tune --dry-run --shard $k/$n"; }
    awk -v k=$k -v n=$n '(NR - 1) % n == k' "$scratch/whole.cases" > "$scratch/want"
    cases "$scratch/s.dry" > "$scratch/got"
    cmp -s "$scratch/want" "$scratch/got" ||
      { diff "$scratch/want" "$scratch/got"; fail "--shard $k/$n lists other cases"; }
    c=$(wc -l < "$scratch/want")
    if [ "$c" -eq 0 ]; then # a batch system's spare task
      grep -qxF "shard $k/$n: 0 of $total cases: nothing to tune, no database written" "$scratch/s.dry" ||
        { cat "$scratch/s.dry"; fail "--shard $k/$n: no 'nothing to tune'"; }
    else
      grep -q "), shard $k/$n: $c of $total cases, seed $seed$" "$scratch/s.dry" ||
        { cat "$scratch/s.dry"; fail "--shard $k/$n: its header does not say which shard"; }
    fi
    cat "$scratch/got" >> "$scratch/union"
  done
  [ "$(sort "$scratch/union")" = "$(sort "$scratch/whole.cases")" ] ||
    fail "the $n shards do not cover each case once: $(sort "$scratch/union" | uniq -c)"
done
[ ! -e "$scratch/d.jsonl" ] || fail "a dry run wrote its database"
# a shape's formats listed twice: one case, in one shard
"$qkgen" tune --family matvec --m 64 --k 256 --tokens 1 --formats q4_0,q8_0,q4_0 --filter nr4x1x32 \
  $opts --db "$scratch/d.jsonl" --dry-run --shard 1/2 > "$scratch/f.dry" 2>&1 || fail "--family --shard"
[ "$(cases "$scratch/f.dry")" = "matvec q8_0 m=64 k=256 t=1" ] ||
  { cat "$scratch/f.dry"; fail "--formats q4_0,q8_0,q4_0 --shard 1/2 is not the q8_0 case alone"; }
echo "the shards of 1, 4 and 7 list each of the $total cases once"

# ---- tuned whole and as 3 shards, merged
"$qkgen" tune --model $model $opts --db "$scratch/whole.jsonl" > "$scratch/whole.log" 2>&1 ||
  { cat "$scratch/whole.log"; fail "the whole tune"; }
for k in 0 1 2; do
  "$qkgen" tune --model $model $opts --db "$scratch/s$k.jsonl" --shard $k/3 > "$scratch/s$k.log" 2>&1 ||
    { cat "$scratch/s$k.log"; fail "tune --shard $k/3"; }
  grep -q "^tuned 2 cases (shard $k/3: 2 of 6 cases) in " "$scratch/s$k.log" ||
    { cat "$scratch/s$k.log"; fail "--shard $k/3: its summary does not say which shard"; }
done
cat "$scratch/s1.log"
"$qkgen" tune --merge "$scratch"/s{0,1,2}.jsonl --db "$scratch/merged.jsonl" || fail "the merge"
"$qkgen" tune --merge "$scratch"/s{2,1,0}.jsonl --db "$scratch/reversed.jsonl" || fail "the merge"
# a large fleet's shards in one merge (it took 64 databases at most)
mkdir "$scratch/fleet"
for i in $(seq 0 99); do cp "$scratch/s$((i % 3)).jsonl" "$scratch/fleet/shard-$i.jsonl"; done
"$qkgen" tune --merge "$scratch"/fleet/shard-*.jsonl --db "$scratch/fleet.jsonl" > "$scratch/fleet.log" ||
  fail "a merge of 100 databases"
grep -qxF "merged 100 databases into $scratch/fleet.jsonl: $(wc -l < "$scratch/merged.jsonl") records" \
  "$scratch/fleet.log" || { cat "$scratch/fleet.log"; fail "the merge of 100 databases"; }
python3 - "$scratch" <<'PY' || fail "the sharded merge against the whole tune"
import collections, json, sys
d = sys.argv[1]
def label(line):
    c = json.loads(line)["case"]
    return json.dumps(c, sort_keys=True)
def cases(path):
    out = collections.OrderedDict()
    for line in open(path):
        out.setdefault(label(line), []).append(json.loads(line))
    return out
whole, merged = cases(f"{d}/whole.jsonl"), cases(f"{d}/merged.jsonl")
order = list(whole)  # the whole run's case order, the tune's
assert len(order) == 6, order
assert sorted(merged) == sorted(order), (sorted(merged), order)
for k in range(3):  # shard K: the K-th, K+3-th ... of the whole list, and no other
    assert list(cases(f"{d}/s{k}.jsonl")) == order[k::3], k
def outcome(recs):  # what the measurements' noise does not change
    return (sorted((r["variant"], r["status"]) for r in recs if r["stage"] == "check"),
            sorted(r["variant"] for r in recs if r["stage"] == "screen"),
            sum(r["stage"] == "full" for r in recs))
for c in order:
    assert outcome(whole[c]) == outcome(merged[c]), (c, outcome(whole[c]), outcome(merged[c]))
# the merged records as one machine would have written them: the whole run's case order
lines = open(f"{d}/merged.jsonl").read().splitlines()
lines.sort(key=lambda line: order.index(label(line)))  # stable: each case's own order kept
open(f"{d}/single.jsonl", "w").write("".join(l + "\n" for l in lines))
print(len(order), "cases, each in one shard;", len(lines), "records merged, each case's",
      "candidates, checks, screens and finalists as in the whole run")
PY

# ---- the tuned bundles: the same measurements give the same bundle
build() { # build DB: out/tuned from DB
  "$qkgen" build --tuned "$1" --model $model --out "$out" --quiet > "$scratch/build.log" 2>&1 ||
    { cat "$scratch/build.log"; fail "build --tuned $1"; }
}
build "$scratch/merged.jsonl" && cp -r "$out/tuned" "$scratch/b-merged"
for db in single reversed; do
  build "$scratch/$db.jsonl"
  diff -r "$scratch/b-merged" "$out/tuned" ||
    fail "the tuned bundle of the shards' merge differs from the one of $db.jsonl"
done
echo "the merged shards, one machine's order and the other merge build the same tuned bundle"
build "$scratch/whole.jsonl"
python3 - "$scratch/b-merged/manifest.json" "$out/tuned/manifest.json" <<'PY' ||
import json, sys
def rules(path):  # the rules less what the measurements chose
    s = json.load(open(path))["select"]
    drop = lambda r: {k: v for k, v in r.items() if k not in ("kernel", "precision", "us")}
    # the defaults' groups: each winner brings its fused and ranked siblings,
    # so two cases that share a winner in one run and not in the other list
    # one sibling rule more; the groups they serve are the same
    groups = sorted({json.dumps(drop(r), sort_keys=True) for r in s["default"]})
    return [[drop(r) for r in d["rules"]] for d in s["devices"]], groups
a, b = rules(sys.argv[1]), rules(sys.argv[2])
assert a == b, (a, b)
print(sum(map(len, a[0])), "select rules and", len(a[1]), "default groups as the whole tune's")
PY
  fail "the whole tune's select table has other rules"
echo "passed"
