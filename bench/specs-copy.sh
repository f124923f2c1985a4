# Sourced first by each bench/*-specs.sh, with its default directory and its
# own arguments:
#   . "$(dirname "$0")/specs-copy.sh" build-gpu/NAME "$@"
# Leaves the shell in the repository root (errors fatal) with $dir the
# script's first argument, else the default: a fresh directory holding
# specs/formats and specs/fusions, MLX restricted to mlx4_g64 with bf16
# scales (the standard set's), and $k=$dir/kernels, empty, for the script's
# kernels; then `keep_formats F...` narrows those kernels to the formats F
# and `exclude_points FAMILY WHEN REASON` leaves points of a family out.
# The scripts that copy kernel spec files by their old names (matvec_xq.yaml,
# matmul_id.yaml, ...) recreate runs of the commits before the family specs
# (f6227e7): check one of those out to run them again.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
dir=${2:-$1}
k=$dir/kernels
rm -rf "$dir" && mkdir -p "$k"
cp -r specs/formats specs/fusions "$dir/"
sed -i 's/^  bits: .*/  bits: [4]/; s/^  group: .*/  group: [64]/; s/^  scale_type: .*/  scale_type: [bf16]/' \
    "$dir/formats/mlx.yaml"

# Narrows every kernel and family spec in $k to the formats named (and
# `none`), with no fusion (the family's lists and its axis values' and
# cases'); a list left with none of them is an error.
keep_formats() {
  python3 - "$k" "$@" <<'PY'
import glob, re, sys
keep = sys.argv[2:]
for path in glob.glob(sys.argv[1] + "/*.yaml"):
    text = open(path).read()
    def formats(m):
        have = [f.strip() for f in m.group(2).split(",")]
        return m.group(1) + "formats: [" + ", ".join(f for f in have if f in keep or f == "none") + "]"
    text = re.sub(r"^(\s*)formats: \[(.*)\]", formats, text, flags=re.M)
    text = re.sub(r"^(\s*)fusions: .*", r"\1fusions: [none]", text, flags=re.M)
    if re.search(r"^\s*formats: \[\]", text, flags=re.M):
        sys.exit(f"{path}: none of the formats {' '.join(keep)}")
    open(path, "w").write(text)
PY
}

# Leaves out of family spec $k/FAMILY.yaml the points where WHEN holds (the
# inside of a YAML flow mapping of axes to values, "activation: direct"),
# as one more entry of its exclude: list:
#   exclude_points FAMILY WHEN REASON
exclude_points() {
  python3 - "$k/$1.yaml" "$2" "$3" <<'PY'
import re, sys
path, when, reason = sys.argv[1:]
text = open(path).read()
entry = "  - { when: { %s }, reason: \"%s\" }\n" % (when, reason)
if re.search(r"^exclude:\s*$", text, flags=re.M):
    text = re.sub(r"^exclude:\s*\n", lambda m: "exclude:\n" + entry, text, count=1, flags=re.M)
else:
    text += "\nexclude:\n" + entry
open(path, "w").write(text)
PY
}
