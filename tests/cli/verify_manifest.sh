# `qkgen verify` fails, naming the kernel and what differs, when a bundle's
# module does not match its manifest entry: a workgroup size, a module swapped
# for another (its hash fixed or not), bindings and push constants edited, an
# entry point the module lacks, a specialization constant off the tile.
. "$(dirname "$0")/lib.sh"
qkgen=$1
good="$scratch/out/default"
"$qkgen" build --out "$scratch/out" --filter matvec_q4_0_f32_nr1x1x8_wg64 --quiet ||
  fail "building the small bundle"
kernel=matvec_q4_0_f32_nr1x1x8_wg64 spv=matvec_q4_0_f32_nk8.spv
"$qkgen" verify --bundle "$good" --filter $kernel > "$scratch/log" ||
  { cat "$scratch/log"; fail "the untouched bundle does not verify"; }
n=0
# edit NAME PYTHON: a copy of the bundle whose manifest entry of $kernel
# (k; m is the whole manifest, d the folder) PYTHON changes
edit() {
  rm -rf "$scratch/$1" && cp -r "$good" "$scratch/$1" || fail "copying the bundle"
  python3 - "$scratch/$1" "$kernel" "$2" <<'PY' || fail "editing $1"
import hashlib, json, sys
d, name, code = sys.argv[1:]
m = json.load(open(f"{d}/manifest.json"))
k = next(k for k in m["kernels"] if k["name"] == name)
def rehash(spv):  # the manifest's hashes of spv made right again
    h = hashlib.sha256(open(f"{d}/{spv}", "rb").read()).hexdigest()
    for e in m["kernels"] + m["modules"]:
        if e.get("spv") == spv:
            e["spv_sha256"] = h
exec(code)
json.dump(m, open(f"{d}/manifest.json", "w"), indent=1)
PY
}
# expect NAME STATUS PATTERN: verify of that copy exits STATUS and says PATTERN
expect() {
  "$qkgen" verify --bundle "$scratch/$1" --filter $kernel > "$scratch/o" 2>&1
  local rc=$?
  [ $rc -eq "$2" ] || { cat "$scratch/o"; fail "$1: verify exited $rc, expected $2"; }
  grep -q -- "$3" "$scratch/o" || { cat "$scratch/o"; fail "$1: no '$3' in the output"; }
  n=$((n + 1))
}
edit wg 'k["workgroup_size"] = [128, 1, 1]'
expect wg 1 "FAIL: kernel $kernel: $spv under the kernel's specialization constants has a workgroup of 64x1x1, but the manifest says 128x1x1"
# the swiglu module (two weight buffers at binding 0) in place of the plain one
edit swap "import shutil; shutil.copy(f'{d}/matvec_q4_0_f32_nk8_swiglu.spv', f'{d}/$spv'); rehash('$spv')"
expect swap 1 "FAIL: kernel $kernel: $spv declares binding 0 ('w') as 2 buffers, but the manifest says 1"
edit swap_stale "import shutil; shutil.copy(f'{d}/matvec_q4_0_f32_nk8_swiglu.spv', f'{d}/$spv')"
expect swap_stale 2 "$spv: kernel '$kernel': sha256 is [0-9a-f]* but the manifest says"
edit no_x 'k["bindings"] = [b for b in k["bindings"] if b["name"] != "x"]'
expect no_x 1 "FAIL: kernel $kernel: $spv uses buffer binding 1 of set 0, which the manifest entry does not list"
edit push_swap 'p = k["push_constants"]; p[0]["offset"], p[1]["offset"] = p[1]["offset"], p[0]["offset"]'
expect push_swap 1 "FAIL: kernel $kernel: $spv has push constant 'M' (u32) at offset 0, but the manifest has 'K' (u32) there"
edit push_type 'k["push_constants"][2]["type"] = "f32"'
expect push_type 1 "FAIL: kernel $kernel: $spv has push constant 'T' (u32) at offset 8, but the manifest has 'T' (f32) there"
edit push_gone 'k["push_constants"] = k["push_constants"][:2]; k["push_constant_size"] = 8'
expect push_gone 1 "FAIL: kernel $kernel: $spv reads push constant 'T' (u32) at offset 8, where the manifest entry has none"
# refused when loaded: a pipeline of a missing entry point fails at creation
# (VK_ERROR_UNKNOWN, or a crash under the validation layer), and NR1 100000
# where the tile says 1 ran for minutes
edit entry 'k["entry_point"] = "nomain"'
expect entry 2 "entry_point 'nomain': $spv has no GLCompute entry point of that name"
edit nr1 'next(c for c in k["specialization_constants"] if c["name"] == "NR1")["value"] = 100000'
expect nr1 2 "specialization constant 'NR1' is 100000, but the kernel's tile has NR1 = 1"
edit nr0_id 'next(c for c in k["specialization_constants"] if c["name"] == "NR0")["id"] = 5'
expect nr0_id 2 "specialization constant 'NR0': expected id 1 and type u32"
edit wg_spec 'next(c for c in k["specialization_constants"] if c["name"] == "WG")["value"] = 4096'
expect wg_spec 1 "FAIL: kernel $kernel: $spv under the kernel's specialization constants has a workgroup of 4096x1x1, but the manifest says 64x1x1"
edit spec_unknown 'k["specialization_constants"].append({"id": 9, "name": "ROWS", "type": "u32", "value": 7})'
expect spec_unknown 2 "specialization constant 'ROWS': not a tile parameter"
echo "$n broken bundles refused, the untouched one verified"
