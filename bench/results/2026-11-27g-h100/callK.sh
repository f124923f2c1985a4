#!/usr/bin/env bash
# mlx4_g64 dense prefill on matmul_tensor, f32 and f16 activations (the peer
# has no MLX format); q4_0 f32/f16 again as the same call's reference
set -uo pipefail
. .gpu/enter.sh
o=/tmp/xk; rm -rf $o; mkdir -p $o; q=build-gpu/pkg/qkgen BUNDLE=${BUNDLE:-bundle-mlx}
pack() { tar czf $OUT/xk.tgz.tmp -C $o . && mv $OUT/xk.tgz.tmp $OUT/xk.tgz; }
nvidia-smi --query-gpu=name,driver_version --format=csv > $o/gpu.txt 2>&1
for a in f32 f16; do
  $q bench --bundle $BUNDLE --family matmul --m 4096 --k 14336 --tokens 512 --formats mlx4_g64 \
    --activations $a --seed 97 --finalists 3 --json $o/mm-mlx4_g64-$a.json > $o/mm-mlx4_g64-$a.txt 2>&1
  echo "== dense mlx4_g64 $a"; grep -E " \*$" $o/mm-mlx4_g64-$a.txt | cut -c1-185; pack; done
