# Sourced by the bench/*-specs.sh scripts, from the repository root.
# specs_copy DIR: a fresh DIR holding specs/formats and specs/fusions, MLX
# restricted to mlx4_g64 with bf16 scales (the standard set's), and an empty
# DIR/kernels for the script's kernels.
specs_copy() {
    rm -rf "$1" && mkdir -p "$1/kernels"
    cp -r specs/formats specs/fusions "$1/"
    # the formats' layout checks name ggml's structs relative to specs/formats
    sed -i "s#\.\./\.\./tests/#$PWD/tests/#" "$1"/formats/*.yaml
    sed -i 's/^  bits: .*/  bits: [4]/; s/^  group: .*/  group: [64]/; s/^  scale_type: .*/  scale_type: [bf16]/' \
        "$1/formats/mlx.yaml"
}
