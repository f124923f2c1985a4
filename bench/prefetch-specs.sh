#!/usr/bin/env bash
# Writes to DIR (default build-gpu/prefetch-specs) the restricted copy of
# specs/ that run 98 of bench/RESULTS.md benchmarked: the staged decode
# kernels whose templates (matvec_xq.comp, matvec_staged.comp) put a lane's
# first chunk of a slab in flight before the slab's activations: copy and
# quantize_q8, matvec_xq, matvec_xq_split, matvec_xq_pre, matvec_xs,
# matvec_id_xq, matvec_id_xq_pre, matmul_id_xq and matvec_id_xs, for the six
# block formats of the standard set (mlx4_g64 reads in place and has no
# staged chunk), no fusion. Built twice: with the committed templates, and
# with bench/prefetch.patch (not kept: slower in 53 of 88 cases) applied to a
# copy of them; then both bundles in one package, timed format by format:
#   bash bench/prefetch-specs.sh
#   bash bench/build-gpu.sh build-gpu/prefetch-specs && mv build-gpu/pkg/bundle build-gpu/bundle-before
#   rm -rf build-gpu/after && mkdir -p build-gpu/after && cp -r templates build-gpu/after/
#   patch -d build-gpu/after -p1 < bench/prefetch.patch
#   bash bench/build-gpu.sh build-gpu/prefetch-specs build-gpu/after/templates
#   mv build-gpu/bundle-before build-gpu/pkg/ && strip build-gpu/pkg/qkgen     # 62.9 MB
# and on the GPU machine, run 98 (moe) and run 99 (decode):
#   . .gpu/enter.sh && O=$OUT && BUNDLES="bundle-before bundle" FORMATS="q4_0 q8_0 q4_K q5_K q6_K iq4_nl" \
#       PACK=$O/moe.tgz OUT=$O/a bash build-gpu/pkg/standard.sh moe
#   python3 bench/table.py a/*-bundle-before.json; python3 bench/table.py a/*-bundle.json
. "$(dirname "$0")/specs-copy.sh" build-gpu/prefetch-specs "$@"
cp specs/kernels/{copy,quantize_q8,matvec_xq,matvec_xq_split,matvec_xq_pre,matvec_xs}.yaml "$k/"
cp specs/kernels/{matvec_id_xq,matvec_id_xq_pre,matmul_id_xq,matvec_id_xs}.yaml "$k/"
keep_formats q4_0 q8_0 q4_K q5_K q6_K iq4_nl
echo "wrote $dir"
