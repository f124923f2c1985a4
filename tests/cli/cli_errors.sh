# The CLI names the bad argument, exits 2, and writes nothing.
. "$(dirname "$0")/lib.sh"
qkgen=$1 out=$2
n=0
expect() { # expect STATUS PATTERN -- command...
  local want=$1 pat=$2; shift 3
  "$@" >"$scratch/o" 2>"$scratch/e"; local rc=$?
  [ $rc -eq "$want" ] || { cat "$scratch/e"; fail "$* exited $rc, expected $want"; }
  grep -q -- "$pat" "$scratch/e" || { cat "$scratch/e"; fail "$*: no '$pat' in stderr"; }
  n=$((n + 1))
}
expect 2 "unknown command 'frobnicate'" -- "$qkgen" frobnicate
expect 2 "unknown option '--bogus'" -- "$qkgen" build --bogus
expect 2 "\-\-out needs a value" -- "$qkgen" build --out
expect 2 "no such spec folder" -- "$qkgen" build /nonexistent/specs --out "$scratch/o1"
[ ! -e "$scratch/o1" ] || fail "output written for a missing spec folder"
# --specs DIR names the spec folder in every command (build, list, emit, tune)
expect 2 "no such spec folder" -- "$qkgen" build --specs /nonexistent/specs --out "$scratch/o1"
expect 2 "no such spec folder" -- "$qkgen" list --specs /nonexistent/specs
expect 2 "the spec folder is given twice" -- "$qkgen" list specs --specs specs
"$qkgen" list --specs specs --formats | grep -q "^q4_0 " || fail "qkgen list --specs specs --formats"
# a spec whose shared_memory expression counts less than its template
# declares: refused at build (a runtime would launch it past the device's
# limit), nothing written
mkdir -p "$scratch/sm/kernels" && cp -r specs/formats specs/fusions "$scratch/sm/"
sed -i "s#\.\./\.\./tests/#$PWD/tests/#" "$scratch"/sm/formats/*.yaml
# (the matmul family: every shared_memory expression, the scalar path unsplit)
# (a formats: list may go on over several lines: the whole flow list goes)
perl -0pe 's/^formats: \[[^\]]*\]/formats: [q4_0]/m' specs/kernels/matmul.yaml |
  sed -e 's/^\( *\)shared_memory: "[^"]*"/\1shared_memory: "8"/' \
    -e '/^exclude:/a\  - { when: { mma: coopmat }, reason: "scalar only" }\n  - { when: { split: splitk }, reason: "unsplit only" }' \
    >"$scratch/sm/kernels/matmul.yaml"
expect 1 "declares [0-9]* bytes of shared memory, more than the 8 of the spec's shared_memory" -- \
  "$qkgen" build "$scratch/sm" --templates templates --out "$scratch/o2"
[ ! -e "$scratch/o2/default" ] || fail "a bundle written despite the shared memory error"
# a missing template names the spec's template: line, before anything compiles
mkdir -p "$scratch/tp/kernels" && cp -r "$scratch/sm/formats" "$scratch/sm/fusions" "$scratch/tp/"
perl -0pe 's/^formats: \[[^\]]*\]/formats: [q4_0]/m' specs/kernels/matvec.yaml |
  sed 's/^template: .*/template: nothere.comp/' >"$scratch/tp/kernels/matvec.yaml"
line=$(grep -n '^template:' "$scratch/tp/kernels/matvec.yaml" | cut -d: -f1)
expect 2 "tp/kernels/matvec.yaml:$line:11: template: 'nothere.comp' is neither next to the spec" -- \
  "$qkgen" build "$scratch/tp" --templates templates --out "$scratch/o3"
[ ! -e "$scratch/o3/default" ] || fail "a bundle written despite a missing template"
# only regular files are read: a FIFO spec and a C header at /dev/zero hung
mkdir -p "$scratch/ff/kernels" "$scratch/ff/formats" && mkfifo "$scratch/ff/kernels/x.yaml"
expect 2 "x.yaml: cannot read: a FIFO (only regular files are read)" -- \
  timeout 20 "$qkgen" list "$scratch/ff"
mkdir -p "$scratch/cz/kernels" && cp -r "$scratch/sm/formats" "$scratch/sm/fusions" "$scratch/cz/"
sed -i 's#header: .*ggml_blocks.h#header: /dev/zero#' "$scratch/cz/formats/q4_0.yaml"
cp "$scratch/tp/kernels/matvec.yaml" "$scratch/cz/kernels/" && sed -i 's/^template: .*/template: matvec.comp/' "$scratch/cz/kernels/matvec.yaml"
expect 2 "c_struct: q4_0 does not match block_q4_0: /dev/zero: cannot read: a character device" -- \
  timeout 20 "$qkgen" build "$scratch/cz" --templates templates --out "$scratch/o4"
expect 2 "\-\-format is required" -- "$qkgen" matmul --weights a --x b --out c
python3 -c 'import numpy' 2>/dev/null || fail "python3-numpy is needed"
python3 - "$scratch" <<'PY'
import numpy as np, sys
d = sys.argv[1]
np.save(f"{d}/w_bad_dtype.npy", np.zeros((4, 18), np.float32))
np.save(f"{d}/w_bad_row.npy", np.zeros((4, 19), np.uint8))
np.save(f"{d}/w.npy", np.zeros((4, 36), np.uint8))
np.save(f"{d}/x.npy", np.zeros((64,), np.float32))
np.save(f"{d}/x_bad_k.npy", np.zeros((96,), np.float32))
np.save(f"{d}/x_f64.npy", np.zeros((64,), np.float64))
PY
b="--bundle $out/default"
expect 2 "w_bad_dtype.npy: expected uint8 blocks of q4_0, got float32 \[4, 18\]" -- "$qkgen" matmul --format q4_0 --weights "$scratch/w_bad_dtype.npy" --x "$scratch/x.npy" --out "$scratch/y.npy" $b
expect 2 "a row of 19 bytes is not a whole number of q4_0 blocks (18 bytes)" -- "$qkgen" matmul --format q4_0 --weights "$scratch/w_bad_row.npy" --x "$scratch/x.npy" --out "$scratch/y.npy" $b
expect 2 "x_bad_k.npy: K is 96, but the weights have K = 64" -- "$qkgen" matmul --format q4_0 --weights "$scratch/w.npy" --x "$scratch/x_bad_k.npy" --out "$scratch/y.npy" $b
expect 2 "x_f64.npy: expected float32" -- "$qkgen" matmul --format q4_0 --weights "$scratch/w.npy" --x "$scratch/x_f64.npy" --out "$scratch/y.npy" $b
expect 2 "no matvec kernel for q9_9" -- "$qkgen" matmul --format q9_9 --weights "$scratch/w.npy" --x "$scratch/x.npy" --out "$scratch/y.npy" $b
expect 2 "/dev/zero: cannot read: a character device" -- timeout 20 "$qkgen" matmul --format q4_0 --weights "$scratch/w.npy" --x /dev/zero --out "$scratch/y.npy" $b
# the arrays read before the bundle failed to load leaked (seen under LeakSanitizer)
expect 2 "nobundle/manifest.json: cannot open" -- "$qkgen" matmul --format q4_0 --weights "$scratch/w.npy" --x "$scratch/x.npy" --out "$scratch/y.npy" --bundle "$scratch/nobundle"
[ ! -e "$scratch/y.npy" ] || fail "y.npy written despite errors"
expect 2 "\-\-finalists: 65 is out of range 0..64" -- "$qkgen" bench --finalists 65 --json "$scratch/b.json" $b
expect 2 "\-\-runs: 5 is out of range 20..1000000" -- "$qkgen" bench --runs 5 --json "$scratch/b.json" $b
[ ! -e "$scratch/b.json" ] || fail "bench JSON written despite a bad argument"
echo "$n passed, 0 failed"
