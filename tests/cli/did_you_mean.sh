# An unknown option or command gets the nearest known one by edit distance
# (a letter left out, added, changed, two swapped, a capital), in every
# command; one near nothing gets no guess. Exit 2, nothing else run.
. "$(dirname "$0")/lib.sh"
qkgen=$1
n=0
expect() { # expect GUESS COMMAND ARGS...: "did you mean GUESS?" (GUESS -: none)
  local want=$1; shift
  "$qkgen" "$@" >"$scratch/o" 2>"$scratch/e"; local rc=$?
  [ $rc -eq 2 ] || { cat "$scratch/e"; fail "qkgen $* exited $rc, expected 2"; }
  if [ "$want" = - ]; then
    ! grep -q "did you mean" "$scratch/e" || { cat "$scratch/e"; fail "qkgen $*: a guess"; }
  else
    grep -q -- "unknown .*'; did you mean $want? " "$scratch/e" ||
      { cat "$scratch/e"; fail "qkgen $*: no 'did you mean $want?'"; }
  fi
  n=$((n + 1))
}
expect --force build --froce
expect --tuned build --tuned x --tunde y
expect --formats list --formts
expect --templates emit --templats
expect --struct layout --strct x
expect --help devices --hepl
expect --validation verify --validaton
expect --weights matmul --weigths w.npy
expect --tokens bench --tokns 4
expect --k bench --K 4
expect --top-k bench --topk 4
expect --prefix export B --prefx p
expect --dry-run tune --dryrun
expect --seed tune --seeed=3
expect --steady-ms tune --steady-m 5
expect --format dequant --formt q4_0
expect --tokens bench -tokens 4
expect - build --bogus
expect - tune --zzzzzzzz
expect build biuld
expect tune tnue
expect --version --verison
expect - frobnicate
echo "did_you_mean: $n checks passed"
