# The select table's fallback levels on lavapipe: a bundle tuned for this
# device (records written here, no device work: the hashes are a bundle's)
# answers `qkgen matmul` from this device's rules; the same table with the
# entry moved to another device id of the family (low bits), to another chip
# of the vendor, or to another vendor, answers at the family, vendor and
# default levels, which `qkgen matmul` prints with the kernel (the tuned one,
# not the portable fallback, but for another vendor), each result right
# against the reference. An entry without family_mask (a table written
# before the levels) serves its own device only. libqkrt, the rule evaluated
# apart (select_eval.py) and the exported header agree on every level.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 test_select=$2
out=$scratch/out
seed=${QKGEN_SEED:-$RANDOM}
echo "seed $seed (QKGEN_SEED repeats it)"
"$qkgen" build --out "$scratch/ref" --filter matvec_q4_0_f32_nr1x1x32 --quiet ||
  fail "build the reference bundle"
read -r _ vendor device driver < <(echo | "$test_select" "$scratch/ref/default") ||
  fail "this device's identity"
echo "this device: vendor $vendor, device $device, driver $driver"
good=matvec_q4_0_f32_nr1x1x32_wg64
python3 - "$scratch/ref/default/manifest.json" "$scratch/db.jsonl" "$vendor" "$device" "$driver" \
  "$good" <<'EOF' || fail "records"
import json, sys, manifest_view
man, path, vendor, device, driver, good = sys.argv[1:7]
ks = {k["name"]: k for k in manifest_view.kernels(json.load(open(man)))}
r = {"v": 1, "device": {"vendor_id": int(vendor), "device_id": int(device),
                        "driver_version": int(driver), "cache_uuid": "0" * 32, "name": "the tuned GPU"},
     "variant": good, "family": "matvec", "spv_sha256": ks[good]["spv_sha256"],
     "case": {"op": "matvec", "format": "q4_0", "format_variant": "", "M": 64, "K": 256, "T": 1,
              "E": 0, "top_k": 0},
     "precision": "f32", "nmse": 1e-14, "status": "ok", "stage": "full", "us": 5.0,
     "us_min": 5.0, "us_max": 5.0, "runs": 20, "note": "", "time": 1764081000}
open(path, "w").write(json.dumps(r) + "\n")
EOF
"$qkgen" build --tuned "$scratch/db.jsonl" --out "$out" --quiet || fail "build --tuned"
fallback=$(python3 - "$out/tuned/manifest.json" "$good" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
d = m["select"]["devices"]
assert len(d) == 1 and d[0]["family_mask"] == 0xffffff00, d
assert any(r["kernel"] == sys.argv[2] for r in d[0]["rules"]), d
fb = [r["kernel"] for r in m["select"]["default"] if r["op"] == "matvec" and r["format"] == "q4_0"]
assert fb and fb[0] != sys.argv[2], fb  # the levels must be told apart by the kernel too
print(fb[0])
EOF
) || fail "the tuned table: $fallback"
echo "tuned $good, portable fallback $fallback"

# one table per level: the entry as tuned, moved within the family, to another
# chip of the vendor, to another vendor; and the family's without family_mask
variant() {  # variant NAME PYTHON-EDIT-OF-d
  cp -r "$out/tuned" "$scratch/$1"
  python3 - "$scratch/$1/manifest.json" "$2" <<'EOF' || fail "editing the table for $1"
import json, sys
m = json.load(open(sys.argv[1]))
for d in m["select"]["devices"]:
    exec(sys.argv[2])
json.dump(m, open(sys.argv[1], "w"), indent=1)
EOF
}
variant device "pass"
variant family "d['device_id'] ^= 0x5a"
variant vendor "d['device_id'] ^= 0x100"
variant other "d['vendor_id'] += 1"
variant old "d['device_id'] ^= 0x5a; del d['family_mask']"

python3 tests/tools/ggml_quant.py make --format q4_0 --m 64 --k 256 --tokens 1 --seed "$seed" \
  --out "$scratch/data" >/dev/null || fail "the quantizer"
n=0
for want in "device $good" "family $good" "vendor $good" "other $fallback" "old $fallback"; do
  set -- $want
  name=$1 kernel=$2 level=$1
  case $name in
    other | old) level=default ;;
  esac
  bundle=$scratch/$name
  rm -f "$scratch/data/Y.npy"
  "$qkgen" matmul --format q4_0 --weights "$scratch/data/W.npy" --x "$scratch/data/X.npy" \
    --out "$scratch/data/Y.npy" --bundle "$bundle" --validation 2>"$scratch/err" ||
    fail "$name: qkgen matmul: $(cat "$scratch/err")"
  line="qkgen matmul: $kernel (the bundle's select table, $level level"
  [ "$level" = default ] && line="$line: the portable rules)" || line="$line: tuned on the tuned GPU)"
  grep -qF "$line, M=64 K=256 T=1" "$scratch/err" ||
    fail "$name: wanted '$line', got: $(cat "$scratch/err")"
  python3 - "$scratch/data" <<'EOF' || fail "$name: a wrong result"
import numpy as np, sys
y, ref = np.load(sys.argv[1] + "/Y.npy"), np.load(sys.argv[1] + "/REF.npy")
nmse = float(((y - ref) ** 2).sum() / (ref ** 2).sum())
assert np.isfinite(y).all() and nmse <= 1e-6, nmse
print("NMSE %.2e" % nmse)
EOF
  # every shape of the table: libqkrt's kernel and level as the rule's
  python3 tests/tools/select_eval.py "$test_select" "$bundle" --expect-levels "$level,default" ||
    fail "$name: qkrt_select_ex disagrees with the rule"
  # the exported header picks the same at the same level
  mkdir -p "$scratch/h-$name"
  "$qkgen" export "$bundle" --c "$scratch/h-$name/qkb_bundle.h" || fail "$name: export"
  cc -std=c99 -Wall -Werror -I "$scratch/h-$name" -DVENDOR="$vendor"u -DDEVICE="$device"u \
    -DDRIVER="$driver"u -x c - -o "$scratch/h-$name/sel" <<'EOF' || fail "$name: the header's selection"
#define QKB_IMPLEMENTATION
#include "qkb_bundle.h"
#include <stdio.h>
#include <string.h>
int main(void) {
    static const char *const levels[] = {"device", "family", "vendor", "default"};
    qkb_shape s;
    int k, level = -1;
    memset(&s, 0, sizeof s);
    qkb_shape_set(&s, "M", 64), qkb_shape_set(&s, "K", 256), qkb_shape_set(&s, "T", 1);
    k = qkb_select_level(VENDOR, DEVICE, DRIVER, "matvec", "q4_0", NULL, "f32", &s, NULL, NULL,
                         &level);
    printf("%s %s\n", k < 0 ? "-" : qkb_kernels[k].name, k < 0 ? "-" : levels[level]);
    return 0;
}
EOF
  got=$("$scratch/h-$name/sel")
  [ "$got" = "$kernel $level" ] || fail "$name: the exported header picks $got, wanted $kernel $level"
  n=$((n + 1))
  echo "$name: $kernel at the $level level"
done
# a malformed family_mask: the bundle refused where it is loaded, with the
# file, line and column of the value
variant bad "d['family_mask'] = 'x'"
where=$(python3 -c "
import sys
text = open(sys.argv[1]).read()
at = text.index('\"family_mask\": \"x\"') + len('\"family_mask\": ')
print('%d:%d' % (text.count('\\n', 0, at) + 1, at - text.rfind('\\n', 0, at)))" "$scratch/bad/manifest.json")
rc=0
"$qkgen" matmul --format q4_0 --weights "$scratch/data/W.npy" --x "$scratch/data/X.npy" \
  --out "$scratch/data/Y.npy" --bundle "$scratch/bad" 2>"$scratch/err" || rc=$?
grep -qF "$scratch/bad/manifest.json:$where: select: \"family_mask\" is not an integer 0 .. 2^32-1" \
  "$scratch/err" && [ $rc != 0 ] || fail "a bad family_mask (at $where): exit $rc, $(cat "$scratch/err")"
echo "a bad family_mask refused at $where"
echo "$n levels checked, 0 failed"
