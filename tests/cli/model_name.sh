# --model NAME: a model found by its name in the spec folder's models/ (then
# an installed qkgen's, then the source tree's), a file path as before, and
# a name found nowhere refused with every folder looked in, nothing written.
. "$(dirname "$0")/lib.sh"
qkgen=$1
src=$PWD
n=0
expect() { # expect PATTERN -- command...: exit 2, PATTERN in stderr
  local pat=$1; shift 2
  "$@" >"$scratch/o" 2>"$scratch/e"; local rc=$?
  [ $rc -eq 2 ] || { cat "$scratch/e"; fail "$* exited $rc, expected 2"; }
  grep -q -- "$pat" "$scratch/e" || { cat "$scratch/e"; fail "$*: no '$pat' in stderr"; }
  n=$((n + 1))
}
# (a format the model lacks stops the tune right after the model is read,
# its path in the message: which file the name found)
for m in tiny tiny.yaml; do
  expect "^qkgen tune: $src/specs/models/tiny.yaml: no format 'nosuch'" -- \
    "$qkgen" tune --model $m --formats nosuch --dry-run --out "$scratch/out"
done
expect "^qkgen tune: specs/models/tiny.yaml: no format 'nosuch'" -- \
  "$qkgen" tune --model specs/models/tiny.yaml --formats nosuch --dry-run --out "$scratch/out"
# a spec folder's own models come first
mkdir -p "$scratch/s/models" && cp specs/models/tiny.yaml "$scratch/s/models/mine.yaml"
cp -r specs/formats specs/kernels specs/fusions "$scratch/s/"
expect "^qkgen tune: $scratch/s/models/mine.yaml: no format 'nosuch'" -- \
  "$qkgen" tune --specs "$scratch/s" --model mine --formats nosuch --dry-run --out "$scratch/out"
# found nowhere: every folder named, in tune and in build --tuned
expect "^qkgen tune: --model nothere: no such file, nor a model nothere.yaml in $scratch/s/models, $src/specs/models\$" -- \
  "$qkgen" tune --specs "$scratch/s" --model nothere --dry-run --out "$scratch/out"
: >"$scratch/db.jsonl"
expect "^qkgen build: --model nothere: no such file, nor a model nothere.yaml in $src/specs/models\$" -- \
  "$qkgen" build --tuned "$scratch/db.jsonl" --model nothere --out "$scratch/out"
expect "^qkgen tune: --model sub/nothere.yaml: no such file\$" -- \
  "$qkgen" tune --model sub/nothere.yaml --dry-run --out "$scratch/out"
[ ! -e "$scratch/out" ] || fail "a refused --model wrote $scratch/out"
echo "model_name: $n checks passed"
