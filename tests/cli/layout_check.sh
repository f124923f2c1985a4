# The libclang layout check in `qkgen build`: every GGUF format's YAML passes against
# specs/formats/ggml_blocks.h, and pointing one at the drifted structs of
# tests/ggml_blocks_wrong.h fails the build with exit 2, a file:line:col message naming the
# format, and no bundle.
. "$(dirname "$0")/lib.sh"
qkgen=$1
# The specs carry their header: a copy of specs/ alone must check.
cp -r specs "$scratch/specs"
n=0
for f in specs/formats/*.yaml; do
  grep -q '^layout: planar' "$f" && continue
  grep -q '^c_struct: { header: ggml_blocks.h,' "$f" || fail "$f has no c_struct on ggml_blocks.h"
  n=$((n + 1))
done
echo "$n GGUF formats name their ggml struct"
one=matvec_q4_0_f32_nr1x1x8_wg64  # the check covers every format; compile one variant only
"$qkgen" build "$scratch/specs" --out "$scratch/good" --filter "$one" -q || fail "the right header failed the build"
check_schema "$scratch/good/default"
pass=1
# Each struct of the wrong header drifts differently: a count, an order, padding, a type.
for fmt in q4_0 q8_0 mxfp4 q6_K; do
  rm -rf "$scratch/specs" && cp -r specs "$scratch/specs"
  cp tests/ggml_blocks_wrong.h "$scratch/specs/formats/"
  sed -i 's#ggml_blocks\.h#ggml_blocks_wrong.h#' "$scratch/specs/formats/$fmt.yaml"
  rc=0
  "$qkgen" build "$scratch/specs" --out "$scratch/bad-$fmt" --filter "$one" -q 2>"$scratch/err" || rc=$?
  echo "$fmt: $(cat "$scratch/err")"
  [ "$rc" = 2 ] || fail "$fmt: exit $rc, expected 2"
  grep -q "formats/$fmt.yaml:[0-9]*:[0-9]*: c_struct: $fmt does not match block_$fmt: " "$scratch/err" ||
    fail "$fmt: the message does not name the spec, the format and the struct"
  [ ! -e "$scratch/bad-$fmt/default" ] || fail "$fmt: a bundle was written"
  pass=$((pass + 1))
done
echo "$pass passed, 0 failed"
