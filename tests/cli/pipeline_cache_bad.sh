# libqkrt's pipeline cache on disk: a FIFO, a device, a folder or a corrupt
# file where the cache belongs is ignored with a warning (the FIFO's open
# hung), the kernels still run, and a good cache is saved in its place.
. "$(dirname "$0")/lib.sh"
qkgen=$1
kernel=matvec_q4_0_f32_nr1x1x8_wg64
"$qkgen" build --out "$scratch/out" --filter $kernel --quiet || fail "building the small bundle"
export QKGEN_CACHE_DIR="$scratch/cache"
run() { # run NAME: verify the small bundle within a minute, its stderr in $scratch/NAME
  timeout 60 "$qkgen" verify --bundle "$scratch/out/default" --filter $kernel \
    > "$scratch/$1.out" 2> "$scratch/$1"
  local rc=$?
  [ $rc -eq 0 ] || { cat "$scratch/$1.out" "$scratch/$1"; fail "$1: verify exited $rc (124: it hung)"; }
}
run first
cache=$(ls "$QKGEN_CACHE_DIR"/pipelines_*.bin) || fail "no pipeline cache written"
[ -s "$cache" ] || fail "the pipeline cache is empty"
grep -q "pipeline cache" "$scratch/first" && fail "a warning without a bad cache: $(cat "$scratch/first")"
n=0
# expect NAME PATTERN: with the cache path made by the caller, verify warns PATTERN
expect() {
  run "$1"
  grep -q -- "$2" "$scratch/$1" || { cat "$scratch/$1"; fail "$1: no '$2' in stderr"; }
  [ -f "$cache" ] && [ ! -L "$cache" ] && [ -s "$cache" ] || fail "$1: no good cache saved over it"
  n=$((n + 1))
}
rm "$cache" && mkfifo "$cache"
expect fifo "qkrt: ignoring pipeline cache: $cache: cannot read: a FIFO (only regular files are read)"
rm "$cache" && ln -s /dev/zero "$cache"
expect device "qkrt: ignoring pipeline cache: $cache: cannot read: a character device"
head -c 100 /dev/urandom > "$cache"
expect random "qkrt: ignoring pipeline cache $cache: 100 bytes, truncated or of another device"
: > "$cache"
expect empty "qkrt: ignoring pipeline cache $cache: 0 bytes, truncated or of another device"
# a cache of another device: the header's vendor id changed
run again
python3 - "$cache" <<'PY' || fail "editing the cache header"
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
b[8:12] = struct.pack("<I", struct.unpack("<I", b[8:12])[0] ^ 0xffff)
open(sys.argv[1], "wb").write(b)
PY
expect foreign "qkrt: ignoring pipeline cache $cache: [0-9]* bytes, truncated or of another device"
run good
grep -q "pipeline cache" "$scratch/good" && fail "the saved cache is refused: $(cat "$scratch/good")"
# a folder where the file belongs cannot be replaced: warned, not saved, still runs
rm "$cache" && mkdir "$cache"
run folder
grep -q -- "qkrt: ignoring pipeline cache: $cache: cannot read: a folder" "$scratch/folder" ||
  { cat "$scratch/folder"; fail "folder: no warning"; }
echo "$((n + 1)) bad pipeline caches ignored with a warning"
