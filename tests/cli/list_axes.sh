# qkgen list --axes FAMILY: the axes with their values and meanings, each
# combination's kernel with its variant count or the reason it has none, and
# the rules that dropped tile points; an unknown family is bad input.
. "$(dirname "$0")/lib.sh"
qkgen=$1
"$qkgen" list --axes matvec_lanes >"$scratch/out" || fail "list --axes exited $?"
grep -q '^  routing: which weights each token column multiplies$' "$scratch/out" || fail "no routing axis"
grep -q '^    q8pre ' "$scratch/out" || fail "no q8pre value"
# the kernel of a point, its axes and its variants, as qkgen list --variants counts them
n=$("$qkgen" list --variants --filter matvec_lanes-q8-ids_ | sed -n 's/^(\([0-9]*\) variants)$/\1/p')
grep -q "^  matvec_lanes-q8-ids  *activation=q8 routing=ids weights=registers split=none: $n variants$" \
  "$scratch/out" || fail "no matvec_lanes-q8-ids line with its $n variants"
grep -A1 '^  matvec_lanes-q8pre-pairs ' "$scratch/out" | grep -q 'excluded: not in the search space' ||
  fail "no exclusion reason for matvec_lanes-q8pre-pairs"
grep -q "registers stage chunks of whole blocks; a planar format's groups lie in several planes (rule 'PLANAR == 0')" "$scratch/out" ||
  fail "no dropped-point count for a rule"
"$qkgen" list --axes nosuch 2>"$scratch/err"
rc=$?
[ $rc -eq 2 ] || fail "an unknown family: exit status $rc, expected 2"
grep -q "no family 'nosuch' (the specs have: dequant, matmul, matmul_tensor, matvec, matvec_lanes" "$scratch/err" ||
  fail "message: $(cat "$scratch/err")"
# qkgen list without flags: counts per kernel and format, whose total is
# the number of variants and of modules a bundle of the specs holds
"$qkgen" list >"$scratch/counts" || fail "list exited $?"
all=$("$qkgen" list --variants | sed -n 's/^(\([0-9]*\) variants)$/\1/p')
grep -qE "^\(all\) +$all +[0-9]+$" "$scratch/counts" || fail "the counts' total is not $all: $(grep '^(all)' "$scratch/counts")"
[ "$(wc -l <"$scratch/counts")" -lt 200 ] || fail "qkgen list printed $(wc -l <"$scratch/counts") lines"
echo "3 passed, 0 failed"
