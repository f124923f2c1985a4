# qkgen export --c DIR/.../FILE.h makes the header's folders where missing,
# only once the bundle is read whole: a refused bundle, or an output inside
# the bundle it reads, leaves no folder behind.
. "$(dirname "$0")/lib.sh"
qkgen=$1
cp -r "$2" "$scratch/B"
B=$scratch/B
"$qkgen" export "$B" --c "$scratch/a/b/c/k.h" >"$scratch/o" 2>&1
rc=$?
[ $rc -eq 0 ] || { cat "$scratch/o"; fail "export into a missing folder exited $rc"; }
grep -q "^#define QKB_KERNEL_COUNT" "$scratch/a/b/c/k.h" || fail "no header in $scratch/a/b/c"
# a refused bundle: nothing made
mkdir "$scratch/bad" && echo '{' >"$scratch/bad/manifest.json"
"$qkgen" export "$scratch/bad" --c "$scratch/x/y/k.h" >"$scratch/o" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$scratch/o"; fail "export of a broken manifest exited $rc, expected 2"; }
[ ! -e "$scratch/x" ] || fail "a refused export made $scratch/x"
# never inside its input, made or not
"$qkgen" export "$B" --c "$B/new/k.h" >"$scratch/o" 2>&1
rc=$?
[ $rc -eq 2 ] || { cat "$scratch/o"; fail "export into its bundle exited $rc, expected 2"; }
grep -q "^qkgen export: --c $B/new/k.h is inside the input bundle $B" "$scratch/o" ||
  { cat "$scratch/o"; fail "the message of an export into its bundle"; }
[ ! -e "$B/new" ] || fail "export made $B/new inside its input"
# a file where a folder should be: the folder that cannot be made, exit 1
: >"$scratch/file"
"$qkgen" export "$B" --c "$scratch/file/k.h" >"$scratch/o" 2>&1
rc=$?
[ $rc -eq 1 ] || { cat "$scratch/o"; fail "export under a file exited $rc, expected 1"; }
grep -q "^qkgen export: .*cannot create folder" "$scratch/o" ||
  { cat "$scratch/o"; fail "the message of an export under a file"; }
echo "export_mkdir: 4 checks passed"
