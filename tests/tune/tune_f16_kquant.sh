# A K-quant's f16-activation kernels are NVIDIA's only (cooperative matrix 2):
# `qkgen tune --dry-run` of such a case lists them with no portable fallback.
# Skips (77), saying why, where the shader compiler cannot compile
# GL_NV_cooperative_matrix2 (Debian's glslang 12, QKGEN_TOOLCHAIN=system):
# the generator then drops those kernels, and the case has no candidate.
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1
if ! "$qkgen" --version | grep -q "^GL_NV_cooperative_matrix2: yes"; then
  echo "SKIP: needs a shader compiler with GL_NV_cooperative_matrix2, for the K-quants' f16" \
    "kernels; qkgen's is $("$qkgen" --version | sed -n 's/^shader compiler: //p')" \
    "(scripts/toolchain.sh builds one)"
  exit 77
fi
# a K-quant's f16 kernels are NVIDIA's only: no portable fallback
"$qkgen" tune --dry-run --out "$scratch/out" --family matmul --m 48 --k 256 --tokens 16 \
  --formats q4_K --activations f16 > "$scratch/dry.txt" 2>&1 || { cat "$scratch/dry.txt"; fail "tune --dry-run"; }
grep -q "^matmul q4_K m=48 k=256 t=16 x=f16: [0-9]* candidates (the fallback (none) included)" \
  "$scratch/dry.txt" || { cat "$scratch/dry.txt"; fail "q4_K on f16 activations has a fallback"; }
echo "tune.f16_kquant: ok"
