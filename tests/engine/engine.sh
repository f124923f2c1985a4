# examples/engine, an engine with no qkgen inside, built as a project of its own
# against a bundle qkgen builds for it and against that bundle exported as a C
# header; both run a q4_0 mat-vec, a q4_K MoE mat-vec and a tiled matmul on the
# default device under the validation layer, checked against their own references;
# and the engine's expression evaluator against tests/export/check_header.py's.
# Then a tuned bundle of a small MoE layer (tests/engine/moe.yaml, tuned here on
# the default device: about 20 s on lavapipe), as a folder and as a header: the
# engine runs the whole decode layer at T = 1 and 3 with every kernel from the
# select table alone (its own evaluator over cJSON, and the header's
# qkb_select_level: both must choose the same kernels), checked end to end
# against its float64 reference.
. "$(dirname "$0")/../cli/lib.sh"
set -o pipefail # (the runs below are piped through tee)
qkgen=$1 out=$2
src=$(cd "$(dirname "$0")/../.." && pwd)
filter=matvec_q4_0_f32_nr1x1x8_wg64,matvec_q4_0_f32_nr2x4x8_wg128,matmul_q4_0_f32_nr32x16x32_wg128_scalar,matmul_q4_0_f32_nr64x32x32_wg128_scalar
# the MoE mat-vec by its name before and after the kernel families
filter=$filter,matvec_id_q4_K_f32_nr1x1x32_wg64,matvec_id_q4_K_f32_nr4x1x32_wg64,matvec-ids_q4_K_f32_nr1x1x32_wg64,matvec-ids_q4_K_f32_nr4x1x32_wg64
"$qkgen" build --out "$out" --name engine --filter "$filter" -q || fail "qkgen build exited $?"
check_schema "$out/engine"
mkdir -p "$scratch/include" "$scratch/layer"
"$qkgen" export "$out/engine" --c "$scratch/include/qkb_bundle.h" || fail "qkgen export exited $?"
# the tuned bundle of the layer: a short tune, then build --tuned (its select
# table has a rule for every operation of the layer)
start=$(date +%s)
model=$src/tests/engine/moe.yaml
"$qkgen" tune --model "$model" --out "$scratch/tuned" --db "$scratch/tune.jsonl" --runs 20 \
  --warmup-ms 20 --rotate-mb 0 --finalists 2 >"$scratch/tune.log" 2>&1 ||
  { cat "$scratch/tune.log"; fail "qkgen tune of tests/engine/moe.yaml"; }
"$qkgen" build --tuned "$scratch/tune.jsonl" --model "$model" --out "$scratch/tuned" \
  --name layer -q || fail "qkgen build --tuned exited $?"
check_schema "$scratch/tuned/layer"
"$qkgen" export "$scratch/tuned/layer" --c "$scratch/layer/qkb_bundle.h" ||
  fail "qkgen export (tuned)"
echo "tuned and built the layer's bundle in $(( $(date +%s) - start )) s"
cmake -S "$src/examples/engine" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release \
  -DQKB_HEADER="$scratch/include/qkb_bundle.h" -DQKB_LAYER_HEADER="$scratch/layer/qkb_bundle.h" \
  >"$scratch/log" 2>&1 &&
  cmake --build "$scratch/build" >>"$scratch/log" 2>&1 || { cat "$scratch/log"; fail "the example does not build"; }
grep -q "warning:" "$scratch/log" && { cat "$scratch/log"; fail "the example builds with warnings"; }
# nothing of qkgen linked: Vulkan's loader, cJSON and the C library only
for exe in engine engine_embedded engine_layer_embedded; do
  extra=$(ldd "$scratch/build/$exe" | grep -v -E "libvulkan|libcjson|libm\.|libc\.|ld-linux|linux-vdso" || true)
  [ -z "$extra" ] || fail "$exe links more than Vulkan and cJSON: $extra"
done
# the engine's own expression evaluator against a third one, on random expressions
cc -std=c11 -Wall -Wextra -Werror -I "$src/examples/engine" "$(dirname "$0")/expr_check.c" \
  "$src/examples/engine/expr.c" -o "$scratch/expr_check" || fail "expr_check does not build"
python3 "$(dirname "$0")/check_expr.py" "$scratch/expr_check" "${ENGINE_SEED:-$RANDOM}" ||
  fail "the engine's evaluator differs from the grammar's"
export ENGINE_VALIDATION=1 ENGINE_SEED=${ENGINE_SEED:-$RANDOM$RANDOM}
"$scratch/build/engine" "$out/engine" || fail "engine (folder) exited $?"
"$scratch/build/engine_embedded" || fail "engine_embedded (header) exited $?"
# the layer, from the select table alone: folder and header choose alike
"$scratch/build/engine" "$scratch/tuned/layer" | tee "$scratch/layer-folder" ||
  fail "engine (the layer, folder) exited $?"
"$scratch/build/engine_layer_embedded" | tee "$scratch/layer-header" ||
  fail "engine_layer_embedded (the layer, header) exited $?"
for f in folder header; do
  grep -c "^layer T=[13]: NMSE .* ok$" "$scratch/layer-$f" | grep -qx 2 ||
    fail "the layer ($f) did not check T = 1 and 3"
  grep "(rule: " "$scratch/layer-$f" > "$scratch/choice-$f"
done
[ -s "$scratch/choice-folder" ] && diff "$scratch/choice-folder" "$scratch/choice-header" ||
  fail "the engine's select evaluator and the header's choose differently"
echo "4 passed, 0 failed"
