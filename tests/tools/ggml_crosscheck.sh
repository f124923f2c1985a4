# The CPU references of the GGUF formats against ggml's own dequantizer: the same random
# blocks (qkgen dequant --random, the checks' random data) through qkgen's reference (the
# format's declared reference:, else the built-in one) and through ggml's to_float, which
# ggml_crosscheck loads from a ggml build given as a shared library:
#   QKGEN_GGML_LIB=/path/to/libggml.so (or a llama.cpp addon exporting ggml's C API)
#   bash tests/tools/ggml_crosscheck.sh QKGEN CROSSCHECK [FORMAT ...]
# Without QKGEN_GGML_LIB it skips (exit 77) and says so.
set -u
qkgen=$1 tool=$2
shift 2
formats=${*:-iq4_xs nvfp4 iq2_xxs iq3_xxs q4_0 q4_K q6_K iq4_nl mxfp4}
if [ -z "${QKGEN_GGML_LIB:-}" ]; then
  echo "skip: no ggml build given (set QKGEN_GGML_LIB to a shared library with ggml's C API)"
  exit 77
fi
[ -r "$QKGEN_GGML_LIB" ] || { echo "skip: QKGEN_GGML_LIB=$QKGEN_GGML_LIB is not readable"; exit 77; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
pass=0 fail=0
for f in $formats; do
  "$qkgen" dequant --format "$f" --random 4096 --blocks-out "$scratch/$f.bin" \
    --out "$scratch/$f.npy" >/dev/null || { echo "FAIL $f: qkgen dequant exited $?"; fail=$((fail + 1)); continue; }
  "$tool" "$QKGEN_GGML_LIB" "$f" "$scratch/$f.bin" "$scratch/$f.npy"
  case $? in
    0) pass=$((pass + 1)) ;;
    77) exit 77 ;;
    *) echo "FAIL $f"; fail=$((fail + 1)) ;;
  esac
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
