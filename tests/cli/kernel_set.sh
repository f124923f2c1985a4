# Kernel sets (qkgen list --set FILE): the variants of a set are exactly those
# of the whole specs that its rules keep, decided here from the names alone;
# the standard set's exclusions show in list --axes with their reason.
. "$(dirname "$0")/lib.sh"
qkgen=$1
"$qkgen" list --variants | sed '$d' >"$scratch/all" || fail "list --variants exited $?"
grep -h '^family:\|^kernel:' specs/kernels/*.yaml | awk '{ print $2 }' >"$scratch/families"
# keep.py FAMILIES FORMATS RULE < names: the names the rule keeps. A name is
# family[-value...]_format[_option]_..., its family the longest that fits.
cat >"$scratch/keep.py" <<'PY'
import re, sys
families = open(sys.argv[1]).read().split()
formats, rule = sys.argv[2].split(","), sys.argv[3]
for name in sys.stdin.read().split():
    fam = max((f for f in families if name.startswith(f) and name[len(f)] in "-_"), key=len)
    head, rest = name[len(fam):].split("_", 1) if name[len(fam)] == "-" else ("", name[len(fam) + 1:])
    values = head.split("-")[1:]
    # the format, then its scale type or the activation type (mxfp4 is not mxfp4_mlx)
    fmt = next((f for f in formats if re.match(re.escape(f) + "_(f32|f16|bf16)_", rest)), None)
    fused = any(name.endswith(s) for s in ("_swiglu", "_swiglu_oai", "_residual", "_residual_rmsnorm", "_renorm",
                                           "_topk_softmax", "_sigmoid_bias"))
    if not fused and eval(rule):
        print(name)
PY
keep() { python3 "$scratch/keep.py" "$scratch/families" "$@" <"$scratch/all"; }

# the standard set (specs/sets/standard.yaml)
"$qkgen" list --variants --set specs/sets/standard.yaml | sed '$d' >"$scratch/std" ||
  fail "list --set standard.yaml exited $?"
# every GGUF format and MLX configuration (bf16 scales), and the two-pass prefill's (dequant
# and the f16w products)
mlx=$(for b in 2 3 4 5 6 8; do for g in 32 64 128; do printf ',mlx%s_g%s_bf16' $b $g; done; done)
keep "q4_0,q4_1,q5_0,q5_1,q8_0,q2_K,q3_K,q4_K,q5_K,q6_K,iq4_nl,iq4_xs,iq3_xxs,iq2_xxs,mxfp4,nvfp4,f16w$mlx" \
  "fam in ('copy', 'quantize_q8') or fmt and (fam == 'matvec' and values == ['ids'] and fmt == 'q6_K'
   or fam == 'matvec_lanes' and set(values) & {'slab', 'q8', 'q8pre'}
   or fam == 'matmul' and not name.endswith('_scalar') or fam == 'matmul_tensor'
   or fam == 'dequant')" >"$scratch/std_want"
[ -s "$scratch/std" ] || fail "the standard set has no variants"
diff "$scratch/std_want" "$scratch/std" >"$scratch/diff" ||
  fail "standard set: $(wc -l <"$scratch/std") variants, the rules give $(wc -l <"$scratch/std_want"): $(head -5 "$scratch/diff")"

# a format named without its option keeps every option (MLX's scale types)
cat >"$scratch/small.yaml" <<'YAML'
set: small
kernels: [copy, matvec]
formats: [q4_0, mlx4_g64]
fusions: [none]
exclude:
  - { family: matvec, when: { routing: separate }, reason: "not in this set" }
restrict:
  - { family: matvec, when: { routing: ids }, formats: [q4_0], reason: "q4_0 only" }
YAML
"$qkgen" list --variants --set "$scratch/small.yaml" | sed '$d' >"$scratch/small" ||
  fail "list --set small.yaml exited $?"
keep q4_0,mlx4_g64 "fam == 'copy' or fam == 'matvec' and fmt and (values == [] or values == ['ids'] and fmt == 'q4_0')" \
  >"$scratch/small_want"
grep -q '^matvec_mlx4_g64_f16_' "$scratch/small" || fail "small set: no mlx4_g64 variant with f16 scales"
diff "$scratch/small_want" "$scratch/small" >"$scratch/diff" ||
  fail "small set: $(wc -l <"$scratch/small") variants, the rules give $(wc -l <"$scratch/small_want"): $(head -5 "$scratch/diff")"

# list --axes: a point the set excludes gives the set's reason; a family
# outside the set is not there
"$qkgen" list --axes matvec --set specs/sets/standard.yaml >"$scratch/axes" || fail "list --axes exited $?"
grep -A1 '^  matvec  ' "$scratch/axes" | grep -q 'excluded: not in the standard set' ||
  fail "no exclusion reason for the dense matvec: $(grep -A1 '^  matvec  ' "$scratch/axes")"
"$qkgen" list --axes matvec_mma --set specs/sets/standard.yaml 2>"$scratch/err" >/dev/null
rc=$?
[ $rc -eq 2 ] && grep -q "no family 'matvec_mma' (the specs have: dequant, matmul, matmul_tensor, matvec, matvec_lanes)" "$scratch/err" ||
  fail "--axes of a family outside the set: exit $rc, $(cat "$scratch/err")"
echo "3 passed, 0 failed"
