#!/usr/bin/env bash
# session 6 call S2: call S after the scratch fix (own_scratch, the finalists'
# re-check): the three kernels in one bench, then a tune of the case.
set -u
Q=build-gpu/pkg/qkgen
R=/tmp/resS2; rm -rf $R; mkdir -p $R
SK=matmul_tensor-shared-splitk_q4_0_f32_nr128x128x64_wg256_sk2_coopmat2_nv
SH=matmul_tensor-shared_q4_0_f32_nr128x128x64_wg256_coopmat2_nv
KH=matmul-shared_q4_0_f32_nr128x128x64_wg256_coopmat_khr
$Q build --filter $SK,$SH,$KH --out /tmp/s --name b --quiet > $R/build.txt 2>&1
B="--bundle /tmp/s/b --family matmul --m 4096 --k 14336 --tokens 512 --formats q4_0 --finalists 0 --seed 7"
$Q bench $B --json $R/three-1.json > $R/three-1.txt 2>&1
$Q tune --family matmul --m 4096 --k 14336 --tokens 512 --formats q4_0 --out /tmp/s/tw \
  --db $R/tune.jsonl --seed 7 > $R/tune.txt 2>&1
$Q tune --family matmul --m 4096 --k 14336 --tokens 512 --formats q4_0 --out /tmp/s/tw \
  --db $R/tune2.jsonl --seed 8 > $R/tune2.txt 2>&1
cp build-gpu/pkg/commit.txt $R/
tar czf $OUT/r.tgz -C $R .
