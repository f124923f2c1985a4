#!/usr/bin/env bash
# Writes to DIR (default build-gpu/mlx-specs) the restricted copy of specs/
# that run 74 of bench/RESULTS.md benchmarked: copy and every decode kernel of
# mlx4_g64 (bf16 scales, the standard set's MLX format) on int8 dot products
# (matvec_xq_global, its split and pre-quantized forms with quantize_q8, the
# MoE forms matvec_id_xq_global and matmul_id_xq_global) beside the f32
# kernels they compete with (matvec_xs_global, matvec_id_xs_global,
# matvec_mma_global), no fusion. Run 74 built it twice, with the templates
# before and after the int8 codes of MLX took the even/odd order; run 86
# timed mlx4_g64's standard decode set on it (codes by 16-byte loads):
#   bash bench/mlx-specs.sh && bash bench/build-gpu.sh build-gpu/mlx-specs [TEMPLATES]
. "$(dirname "$0")/specs-copy.sh" build-gpu/mlx-specs "$@"
cp specs/kernels/{copy,quantize_q8,matvec_xs_global,matvec_xq_global,matvec_xq_split_global,matvec_xq_pre_global}.yaml "$k/"
cp specs/kernels/{matvec_id_xs_global,matvec_id_xq_global,matmul_id_xq_global,matvec_mma_global}.yaml "$k/"
sed -i 's/^formats: \[.*mlx4_g64.*\]/formats: [mlx4_g64]/; s/^fusions: .*/fusions: [none]/' "$k"/*.yaml
echo "wrote $dir"
