# qkgen export: a bundle with the cooperative-matrix, int8-dot, MoE, split-K
# (scratch sizes) and MLX kernels as one header that compiles without a warning
# as C99 (-pedantic) and as C++, whose dispatch functions agree with the
# manifest's expressions on random shapes, a select table that picks as
# select_eval.py does; a tampered module is refused.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 bundle=$2
seed=${QKGEN_SEED:-$RANDOM}
"$qkgen" export "$bundle" --c "$scratch/qkb_bundle.h" || fail "qkgen export exited $?"
n=$(grep -c '^  {"' "$scratch/qkb_bundle.h")
echo "header: $(wc -c <"$scratch/qkb_bundle.h") bytes, $n kernels"
src=$(dirname "$0")/export_check.c
flags="-Wall -Wextra -pedantic -Werror -I$scratch"
cc -std=c99 $flags "$src" -o "$scratch/check_c" || fail "the header does not compile as C99"
cp "$src" "$scratch/export_check.cpp"
c++ -std=c++11 $flags "$scratch/export_check.cpp" -o "$scratch/check_cpp" ||
  fail "the header does not compile as C++11"
# two translation units: declarations in one, definitions in the other
printf '#include "qkb_bundle.h"\nint first(void) { return qkb_find("%s"); }\n' "x" >"$scratch/a.c"
printf 'int first(void);\nint main(void) { return first() != -1; }\n' >"$scratch/b.c"
printf '#define QKB_IMPLEMENTATION\n#include "qkb_bundle.h"\n' >>"$scratch/b.c"
cc -std=c99 $flags "$scratch/a.c" "$scratch/b.c" -o "$scratch/two" && "$scratch/two" ||
  fail "the header does not link from two translation units"
for prog in check_c check_cpp; do
  /usr/bin/python3 "$(dirname "$0")/check_header.py" "$bundle/manifest.json" "$scratch/$prog" "$seed" ||
    fail "$prog: the header's functions differ from the manifest (seed $seed)"
done
# a select table: qkb_select against tests/tools/select_eval.py
python3 "$(dirname "$0")/check_select.py" "$qkgen" "$bundle" "$scratch" "$seed" ||
  fail "qkb_select differs from select_eval.py (seed $seed)"
# a module that is not the one the manifest hashed
cp -r "$bundle" "$scratch/tampered"
spv=$(ls "$scratch/tampered"/*.spv | head -1)
printf '\x07\x23\x02\x03' | dd of="$spv" bs=1 seek=8 conv=notrunc 2>/dev/null
rc=0
"$qkgen" export "$scratch/tampered" --c "$scratch/t.h" 2>"$scratch/err" || rc=$?
[ $rc = 2 ] && grep -q "SHA-256" "$scratch/err" || fail "a tampered module: exit $rc, $(cat "$scratch/err")"
[ ! -e "$scratch/t.h" ] || fail "a refused export left a header"
# bad arguments exit 2 with the argument named, a file that cannot be written 1
expect_rc() {
  local want=$1 text=$2 rc=0
  shift 2
  "$@" 2>"$scratch/err" || rc=$?
  [ $rc = "$want" ] && grep -q -- "$text" "$scratch/err" || fail "$*: exit $rc, $(cat "$scratch/err")"
}
expect_rc 2 "nonexistent/manifest.json" "$qkgen" export "$scratch/nonexistent" --c "$scratch/x.h"
expect_rc 2 "\-\-c FILE.h is required" "$qkgen" export "$bundle"
expect_rc 2 "'9a' is not a C identifier" "$qkgen" export "$bundle" --c "$scratch/x.h" --prefix 9a
# (a missing folder is made: a file in its way cannot be)
: >"$scratch/file"
expect_rc 1 "cannot create folder" "$qkgen" export "$bundle" --c "$scratch/file/x.h"
echo "1 passed, 0 failed"
