# No command writes over what it reads: an output that is an input (also
# through a hard link or a symbolic link to its folder), lies inside an input
# bundle or spec folder, or (a bundle, replaced as a whole) holds an input, is
# refused with exit 2 before anything is written, and the input is unchanged.
. "$(dirname "$0")/lib.sh"
qkgen=$1
src=$(cd "$(dirname "$0")/../.." && pwd)
cp -r "$2" "$scratch/B"
cp "$src/tests/specs_bad/inputs/w_q4_0.npy" "$src/tests/specs_bad/inputs/x_k32.npy" "$scratch/"
B=$scratch/B W=$scratch/w_q4_0.npy X=$scratch/x_k32.npy
# one tuning record, enough for --report
python3 - "$scratch/db.jsonl" <<'EOF'
import json, sys
r = {"v": 1, "device": {"vendor_id": 65541, "device_id": 0, "driver_version": 1,
     "cache_uuid": "00" * 16, "name": "llvmpipe"}, "variant": "matvec_q4_0_f32_nr1x1x8_wg64",
     "family": "matvec", "spv_sha256": "0" * 64, "case": {"op": "matvec", "format": "q4_0",
     "format_variant": "", "M": 64, "K": 256, "T": 1, "E": 0, "top_k": 0}, "precision": "f32",
     "nmse": 1e-14, "status": "ok", "stage": "full", "us": 10.0, "us_min": 9.0, "us_max": 11.0,
     "runs": 20, "note": "", "time": 1764081000}
open(sys.argv[1], "w").write(json.dumps(r) + "\n")
EOF
cp "$scratch/db.jsonl" "$scratch/db2.jsonl"
ln "$X" "$scratch/x_link.npy"
ln -s "$B" "$scratch/B_link"
mkdir -p "$scratch/s"
cp -r "$src/specs" "$scratch/s/specs"
cp "$scratch/db.jsonl" "$scratch/s/db.jsonl"
sums() { (cd "$scratch" && find B s db.jsonl db2.jsonl x_k32.npy w_q4_0.npy -type f | sort | xargs sha256sum); }
before=$(sums)
n=0
# expect TEXT COMMAND...: exit 2 with TEXT in the message, every input unchanged
expect() {
  local want=$1
  shift
  set +e
  "$qkgen" "$@" > "$scratch/out" 2> "$scratch/err"
  local rc=$?
  set -e
  [ $rc -eq 2 ] || { cat "$scratch/err"; fail "$*: exit $rc, expected 2"; }
  grep -qF -- "$want" "$scratch/err" || { cat "$scratch/err"; fail "$*: no '$want'"; }
  [ "$(sums)" = "$before" ] || fail "$*: an input changed"
  n=$((n + 1))
}
set -e
expect "qkgen export: --c $B/manifest.json is inside the input bundle $B" \
  export "$B" --c "$B/manifest.json"
expect "is inside the input bundle $scratch/B_link" export "$scratch/B_link" --c "$B/k.h"
expect "qkgen matmul: --out $B/manifest.json is inside the input bundle $B" \
  matmul --bundle "$B" --format q4_0 --weights "$W" --x "$X" --out "$B/manifest.json"
expect "qkgen matmul: --out $X is the input --x $X" \
  matmul --bundle "$B" --format q4_0 --weights "$W" --x "$X" --out "$X"
expect "--out $scratch/x_link.npy is the input --x $X" \
  matmul --bundle "$B" --format q4_0 --weights "$W" --x "$X" --out "$scratch/x_link.npy"
expect "--out $scratch/./w_q4_0.npy is the input --weights" \
  matmul --bundle "$B" --format q4_0 --weights "$W" --x "$X" --out "$scratch/./w_q4_0.npy"
expect "qkgen tune: --svg $scratch/db.jsonl is the input database $scratch/db.jsonl" \
  tune --report "$scratch/db.jsonl" --svg "$scratch/db.jsonl"
expect "--db $scratch/db.jsonl is the input database" \
  tune --merge "$scratch/db2.jsonl" "$scratch/db.jsonl" --db "$scratch/db.jsonl"
expect "--json $B/b.json is inside the input bundle $B" bench --bundle "$B" --json "$B/b.json"
expect "--out $scratch/s/specs is the input spec folder $scratch/s/specs" \
  build --specs "$scratch/s/specs" --out "$scratch/s" --name specs --filter copy_f32_nr1x1x4_wg256
expect "--out $scratch/s holds the input spec folder" \
  build --specs "$scratch/s/specs" --out "$scratch" --name s --filter copy_f32_nr1x1x4_wg256
expect "is inside the input spec folder" \
  build --specs "$scratch/s/specs" --out "$scratch/s/specs/models" --filter copy_f32_nr1x1x4_wg256
expect "holds the input database $scratch/s/db.jsonl" \
  build --tuned "$scratch/s/db.jsonl" --out "$scratch" --name s
expect "--db $scratch/o/tune/db.jsonl is inside the input candidate bundle" \
  tune --family matvec --m 64 --k 256 --tokens 1 --out "$scratch/o" --db "$scratch/o/tune/db.jsonl"
expect "--db $scratch/s/specs/t.jsonl is inside the input spec folder" \
  tune --family matvec --m 64 --k 256 --tokens 1 --specs "$scratch/s/specs" --db "$scratch/s/specs/t.jsonl"
[ ! -e "$scratch/o" ] || fail "a refused tune made $scratch/o"
echo "$n passed, 0 failed"
