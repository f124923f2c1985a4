# Sourced first by each bench/*-specs.sh, with its default directory and its
# own arguments:
#   . "$(dirname "$0")/specs-copy.sh" build-gpu/NAME "$@"
# Leaves the shell in the repository root (errors fatal) with $dir the
# script's first argument, else the default: a fresh directory holding
# specs/formats and specs/fusions, MLX restricted to mlx4_g64 with bf16
# scales (the standard set's), and $k=$dir/kernels, empty, for the script's
# kernels.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${2:-$1}
k=$dir/kernels
rm -rf "$dir" && mkdir -p "$k"
cp -r specs/formats specs/fusions "$dir/"
# the formats' layout checks name ggml's structs relative to specs/formats
sed -i "s#\.\./\.\./tests/#$PWD/tests/#" "$dir"/formats/*.yaml
sed -i 's/^  bits: .*/  bits: [4]/; s/^  group: .*/  group: [64]/; s/^  scale_type: .*/  scale_type: [bf16]/' \
    "$dir/formats/mlx.yaml"
