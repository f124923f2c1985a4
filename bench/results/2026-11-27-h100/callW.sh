#!/usr/bin/env bash
# call W (2026-11-27): issue 26's tune against the exhaustive bench with the
# steady warm-up (2a24bb0): bench/tune-gpu.sh per format and part, packed
# into $OUT/r.tgz after each part.
set -u
dout=$OUT R=/tmp/resW
mkdir -p $R
for p in "mlx4_g64 moe" "q4_K moe" "mlx4_g64 decode"; do
  set -- $p
  OUT=$R/$1-$2 QKGEN=build-gpu/pkg/qkgen timeout 200 bash bench/tune-gpu.sh $1 $2 > $R/$1-$2.log 2>&1
  rm -rf $R/$1-$2/work
  tar czf $dout/r.tgz -C $R .
done
