# A GLSL error in a format's dequant file, a template or an include is
# reported at that file's own line (the emitter's #line directives), with the
# line shown, exit 1, and no bundle written.
. "$(dirname "$0")/lib.sh"
qkgen=$1
cp -r templates "$scratch/templates"
check() { # FILE (under templates/) LINE: break FILE at LINE, expect FILE:LINE and its text
  local file=$1 line=$2
  rm -rf "$scratch/templates" && cp -r templates "$scratch/templates"
  sed -i "${line}s/\$/ qk_no_such_name;/" "$scratch/templates/$file"
  local text
  text=$(sed -n "${line}p" "$scratch/templates/$file" | sed 's/^ *//')
  set +e
  "$qkgen" build --templates "$scratch/templates" --filter matvec_q4_0_f32_nr2x1x8_wg64 \
    --out "$scratch/out" --quiet > "$scratch/log" 2>&1
  local rc=$?
  set -e
  [ $rc -eq 1 ] || { cat "$scratch/log"; fail "$file:$line: exit $rc, expected 1"; }
  grep -q "$scratch/templates/$file:$line: " "$scratch/log" ||
    { cat "$scratch/log"; fail "$file:$line: the message does not name the file and line"; }
  grep -qF "$text" "$scratch/log" || { cat "$scratch/log"; fail "$file:$line: the line is not shown"; }
  [ ! -e "$scratch/out/default" ] || fail "$file:$line: a bundle was written"
}
set -e
# the first line of each that holds a statement
check formats/q4_0.glsl "$(grep -n 'return' templates/formats/q4_0.glsl | head -1 | cut -d: -f1)"
check matvec.comp "$(grep -n 'barrier();' templates/matvec.comp | head -1 | cut -d: -f1)"
check include/bytes.glsl "$(grep -n 'int(b & 3u)' templates/include/bytes.glsl | head -1 | cut -d: -f1)"
# a format without one of its hooks: the error says which hook it must
# define, its signature and where the contract is
rm -rf "$scratch/templates" && cp -r templates "$scratch/templates"
sed -i 's/^void qk_dequant_sub(/void qk_dequant_sub_renamed(/' "$scratch/templates/formats/q4_0.glsl"
set +e
"$qkgen" build --templates "$scratch/templates" --filter matvec_q4_0_f32_nr2x1x8_wg64 \
  --out "$scratch/out" --quiet > "$scratch/log" 2>&1
rc=$?
set -e
[ $rc -eq 1 ] || { cat "$scratch/log"; fail "missing hook: exit $rc, expected 1"; }
grep -qF "hint: qk_dequant_sub is a format hook" "$scratch/log" &&
  grep -qF "void qk_dequant_sub(uint m, uint blk, uint sub, out float y[QK_SUB_N])" "$scratch/log" &&
  grep -qF "The format hook contract" "$scratch/log" ||
  { cat "$scratch/log"; fail "missing hook: no hint naming the hook and its contract"; }
echo "4 passed, 0 failed"
