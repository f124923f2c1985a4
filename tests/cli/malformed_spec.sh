# A malformed spec gives file:line:col on stderr, exit status 2, and nothing
# written: not the bundle, not the cache, not even the output folder.
. "$(dirname "$0")/lib.sh"
qkgen=$1
cp -r specs "$scratch/specs"
sed -i 's/^  NR0: \[1, 2, 4\]/  NR0: [1, 2, x4]/' "$scratch/specs/kernels/matvec.yaml"
grep -q 'x4' "$scratch/specs/kernels/matvec.yaml" || fail "could not plant the error"
"$qkgen" build "$scratch/specs" --out "$scratch/out" 2>"$scratch/err"
rc=$?
cat "$scratch/err"
[ $rc -eq 2 ] || fail "exit status $rc, expected 2"
grep -q "matvec.yaml:[0-9]*:[0-9]*: tile.NR0: expected an integer, got 'x4'" "$scratch/err" || fail "message"
[ ! -e "$scratch/out" ] || fail "something was written: $(ls -A "$scratch/out")"
# YAML syntax errors too
printf 'format: q4_0\nblock: { elements: 32, bytes: 18\n' > "$scratch/specs/formats/q4_0.yaml"
"$qkgen" build "$scratch/specs" --out "$scratch/out" 2>"$scratch/err"
rc=$?
cat "$scratch/err"
[ $rc -eq 2 ] || fail "exit status $rc for a syntax error"
grep -q "q4_0.yaml:[0-9]*:[0-9]*: YAML syntax error" "$scratch/err" || fail "syntax message"
[ ! -e "$scratch/out" ] || fail "something was written"
echo "2 passed, 0 failed"
