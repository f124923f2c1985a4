# bench's own copy at its default size (1 GiB) on a device at Vulkan's
# minimum limits (lavapipe: 65,535 workgroups a dimension, 128 MiB a storage
# buffer): a single dispatch would ask for 65,536 workgroups of the copy
# kernel over a 1 GiB binding, so the copy is split into dispatches within
# both limits and its bandwidth still measured. (The other tests pass
# --copy-mb 8, which hides it.)
. "$(dirname "$0")/lib.sh"
qkgen=$1
"$qkgen" build --out "$scratch/out" --filter copy_f32_nr1x1x4_wg256,matvec_q4_0_f32_nr1x1x8_wg64 \
  --quiet || fail "building the bundle"
# LLVM's optimizations on for the copy itself: 1 GiB a run on a CPU
set +e
env -u GALLIVM_PERF "$qkgen" bench --bundle "$scratch/out/default" --formats q4_0 --family matvec \
  --m 64 --k 256 --tokens 1 --warmup-ms 0 --rotate-mb 1 > "$scratch/log" 2>&1
rc=$?
set -e
[ $rc -eq 0 ] || { cat "$scratch/log"; fail "bench with its default --copy-mb exited $rc"; }
grep -Eq "^copy bandwidth: [0-9.]*[1-9][0-9.]* GB/s \(1024 MiB copied" "$scratch/log" ||
  { cat "$scratch/log"; fail "no copy bandwidth of 1024 MiB"; }
echo "1 passed, 0 failed"
