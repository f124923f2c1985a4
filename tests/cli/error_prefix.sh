# Every error starts with `qkgen COMMAND:` (`qkgen:` for an unknown command):
# bad specs, models, kernel sets, databases, bundles, headers and arguments
# given to each command, and every line each writes on stderr checked, the
# messages the libraries return (spec loading, planning, model specs, the
# runtime's log) included. Exit status nonzero, as each one documents.
. "$(dirname "$0")/lib.sh"
qkgen=$1
n=0
check() { # check CMD ARGS...: fails, every stderr line starting with "qkgen CMD: "
  local want="qkgen $1: "
  case $1 in build | list | emit | layout | devices | verify | matmul | bench | export | tune | dequant) ;;
  *) want="qkgen: " ;;
  esac
  "$qkgen" "$@" >"$scratch/o" 2>"$scratch/e" && fail "qkgen $* succeeded"
  [ -s "$scratch/e" ] || fail "qkgen $*: nothing on stderr"
  grep -v "^$want" "$scratch/e" | grep -q . &&
    { cat "$scratch/e"; fail "qkgen $*: a line of stderr does not start with '$want'"; }
  n=$((n + 1))
}
bad=tests/specs_bad
# a spec folder whose kernel spec is not YAML; one whose template is missing
mkdir -p "$scratch/y/kernels" && cp -r specs/formats specs/fusions "$scratch/y/"
sed -i "s#\.\./\.\./tests/#$PWD/tests/#" "$scratch"/y/formats/*.yaml
echo 'kernel: [' >"$scratch/y/kernels/x.yaml"
mkdir -p "$scratch/t/kernels" && cp -r "$scratch/y/formats" "$scratch/y/fusions" "$scratch/t/"
sed 's/^template: .*/template: nothere.comp/' specs/kernels/copy.yaml >"$scratch/t/kernels/copy.yaml"
: >"$scratch/db.jsonl"
check build "$scratch/y" --out "$scratch/o1"
check build "$scratch/t" --out "$scratch/o1"
check list "$scratch/y"
check emit --specs "$scratch/y" copy_f32
check tune --specs "$scratch/y" --family matvec --m 32 --k 32 --tokens 1 --dry-run --out "$scratch/o1"
check build --tuned "$scratch/db.jsonl" --specs "$scratch/y" --out "$scratch/o1"
check tune --report "$scratch/db.jsonl" --specs "$scratch/y"
# a model spec, a kernel set, a database
check tune --model $bad/model_dup_op.yaml --dry-run --out "$scratch/o1"
check build --tuned $bad/inputs/tunedb_repeated.jsonl --model $bad/model_dup_op.yaml --out "$scratch/o1"
check tune --model nothere --dry-run --out "$scratch/o1"
check build --set $bad/set_syntax.yaml --out "$scratch/o1"
check list --variants --set $bad/set_unknown_format.yaml
check tune --report $bad/inputs/nonexistent.jsonl
check build --tuned $bad/inputs/tunedb_all_bad.jsonl --out "$scratch/o1"
# bundles, headers, arrays, arguments
check export $bad/inputs/manifest_schema_other --c "$scratch/x.h"
check export $bad/inputs/nonexistent --c "$scratch/x.h"
check verify --bundle $bad/inputs/manifest_array
check verify --bundle $bad/inputs/manifest_hash_wrong
check layout --header $bad/inputs/broken.h --struct block_x
check dequant --format q4_0 --in $bad/inputs/npy_magic.npy --out "$scratch/d.npy"
check matmul --format q4_0 --weights $bad/inputs/npy_w_float32.npy --x $bad/inputs/npy_x_f64.npy \
  --out "$scratch/y.npy"
check bench --tokns 4
check devices extra
check biuld
[ ! -e "$scratch/o1" ] || fail "a failed command wrote $scratch/o1"
echo "error_prefix: $n commands, every stderr line prefixed"
