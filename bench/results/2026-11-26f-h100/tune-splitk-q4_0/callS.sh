#!/usr/bin/env bash
# session 6 call S: issue 26, the dense q4_0 prefill case's split-K NV2
# kernel measured 401-406 us in the tune's alternating finals and 436 us in
# the exhaustive (sequential) bench. Each of three kernels timed alone (a
# process each, its own whole warm-up), twice in turn; then the three in one
# bench, twice; then a tune of the case.
set -u
Q=build-gpu/pkg/qkgen
R=/tmp/resS; rm -rf $R; mkdir -p $R
SK=matmul_tensor-shared-splitk_q4_0_f32_nr128x128x64_wg256_sk2_coopmat2_nv
SH=matmul_tensor-shared_q4_0_f32_nr128x128x64_wg256_coopmat2_nv
KH=matmul-shared_q4_0_f32_nr128x128x64_wg256_coopmat_khr
$Q build --filter $SK,$SH,$KH --out /tmp/s --name b --quiet > $R/build.txt 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,power.draw --format=csv -lms 200 > $R/clocks.csv 2>/dev/null &
logger=$!
B="--bundle /tmp/s/b --family matmul --m 4096 --k 14336 --tokens 512 --formats q4_0 --finalists 0 --seed 7"
for round in 1 2; do
  for k in $SK $SH $KH; do
    $Q bench $B --filter $k --json $R/alone-$round-${k:0:30}.json > $R/alone-$round-${k:0:30}.txt 2>&1
  done
done
for round in 1 2; do $Q bench $B --json $R/three-$round.json > $R/three-$round.txt 2>&1; done
$Q tune --family matmul --m 4096 --k 14336 --tokens 512 --formats q4_0 --out /tmp/s/tw \
  --db $R/tune.jsonl --seed 7 > $R/tune.txt 2>&1
kill $logger
git log -1 --format='commit %H %cd' > $R/commit.txt 2>/dev/null
tar czf $OUT/r.tgz -C $R .
