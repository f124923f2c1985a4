# qkgen export treats the manifest as input: a hostile inputs_hash stays a
# string and a comment (no symbol injected), and a select table libqkrt
# would refuse (a rule's kernel of another operation or format, a range
# that is not [lo, hi] with 0 <= lo <= hi) is refused. BUNDLE is a small bundle (q4_0 mat-vecs).
. "$(dirname "$0")/../cli/lib.sh"
qkgen=$1 bundle=$2
flags="-std=c99 -Wall -Wextra -pedantic -Werror -I$scratch"

# a copy of the bundle whose manifest python edits (the code reads it as `m`)
edited() {
  rm -rf "$scratch/b" && cp -r "$bundle" "$scratch/b"
  python3 - "$scratch/b/manifest.json" "$1" <<'EOF'
import json, sys
path, code = sys.argv[1], sys.argv[2]
m = json.load(open(path))
exec(code)
json.dump(m, open(path, "w"), indent=1)
EOF
}

# ---- inputs_hash: in the header's comment and in a #define
n=0
for hash in '*/ int qk_injected_probe = 1; /*' 'x"; int qk_injected_probe; //' 'a\"b\' \
  "$(printf 'line\nbreak ??/')" '/* nested'; do
  n=$((n + 1))
  HASH=$hash edited 'import os; m["inputs_hash"] = os.environ["HASH"]'
  "$qkgen" export "$scratch/b" --c "$scratch/qkb_bundle.h" || fail "hash $n: export exited $?"
  # the probe defines the name an injection would: a second definition fails
  python3 - "$scratch/probe.c" "$hash" <<'EOF'
import sys
path, h = sys.argv[1], sys.argv[2].encode()
lit = "".join(chr(c) if 32 <= c < 127 and c not in b'"\\?' else "\\%03o" % c for c in h)
open(path, "w").write('#define QKB_IMPLEMENTATION\n#include "qkb_bundle.h"\n#include <string.h>\n'
                      'static int qk_injected_probe;\n'
                      'int main(void) { return qk_injected_probe + strcmp(QKB_INPUTS_HASH, "%s"); }\n' % lit)
EOF
  cc $flags "$scratch/probe.c" -o "$scratch/probe" 2>"$scratch/err" ||
    fail "hash $n: the header does not compile: $(head -5 "$scratch/err")"
  "$scratch/probe" || fail "hash $n: QKB_INPUTS_HASH is not the manifest's inputs_hash"
done
echo "inputs_hash: $n hostile values stay strings"
# ---- integer literals: the header writes the value libqkrt reads ("010" is
# ten to libqkrt, eight as C text), also in constraints
edited 'k = m["kernels"][0]
k["dispatch"] = {"grid": ["(M + 010 - 1) / 010", "0007 * T", "1"]}
m["modules"][[x["name"] for x in m["modules"]].index(k["module"])]["constraints"] = ["K % 0032 == 0", "M >= 010"]'
"$qkgen" export "$scratch/b" --c "$scratch/qkb_bundle.h" || fail "leading zeros: export exited $?"
k0=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["kernels"][0]["name"])' "$scratch/b/manifest.json")
cat >"$scratch/lit.c" <<EOF
#define QKB_IMPLEMENTATION
#include "qkb_bundle.h"
#include <stdio.h>
int main(void) {
    const qkb_kernel *k = &qkb_kernels[qkb_find("$k0")];
    qkb_shape s;
    uint32_t g[3];
    memset(&s, 0, sizeof s);
    s.M = 100, s.K = 64, s.T = 3;
    if (k->dispatch(&s, g) || k->check(&s) != -1) return 1;
    s.M = 9; /* below 010, which is 8 in C */
    printf("%u %u %u %d\n", g[0], g[1], g[2], k->check(&s));
    return 0;
}
EOF
cc $flags "$scratch/lit.c" -o "$scratch/lit" 2>"$scratch/err" || fail "leading zeros: $(head -5 "$scratch/err")"
[ "$("$scratch/lit")" = "10 21 1 1" ] ||
  fail "leading zeros: the header computes $("$scratch/lit"), libqkrt 10 21 1 1"
echo "literals: the value read, not the text"

# ---- select tables the header cannot answer as libqkrt would: refused
# expect_refused PYTHON TEXT: the edited bundle's export exits 2 with TEXT, writes nothing
expect_refused() {
  local rc=0
  edited "$1"
  rm -f "$scratch/r.h"
  "$qkgen" export "$scratch/b" --c "$scratch/r.h" 2>"$scratch/err" || rc=$?
  [ $rc = 2 ] && grep -qF -- "$2" "$scratch/err" || fail "$1: exit $rc, wanted 2 and '$2': $(cat "$scratch/err")"
  [ ! -e "$scratch/r.h" ] || fail "$1: a refused export wrote a header"
}
k=matvec_q4_0_f32_nr1x1x8_wg64
table='m["select"] = {"version": 1, "devices": [], "default": [r]}'
rule="r = {'op': 'matvec', 'format': 'q4_0', 'format_variant': '', 'kernel': '$k', 'precision': 'f32', 'M': [1, None], 'K': [1, None], 'T': [1, None]}"
expect_refused "$rule; r['format'] = 'q8_0'; $table" "a rule for q8_0 names kernel '$k', which reads q4_0"
expect_refused "$rule; r['op'] = 'matmul'; $table" "a rule for matmul names kernel '$k', a matvec kernel"
expect_refused "$rule; r['M'] = [1, -5]; $table" '"M": the upper bound -5 is below the lower 1'
expect_refused "$rule; r['K'] = [300, 2]; $table" '"K": the upper bound 2 is below the lower 300'
expect_refused "$rule; r['T'] = [-3, None]; $table" '"T": the lower bound is not an integer >= 0'
expect_refused "$rule; r['kernel'] = 'nowhere'; $table" "kernel 'nowhere' is not in the manifest"
# a good table exports, and its rule is the kernel's
edited "$rule; $table"
"$qkgen" export "$scratch/b" --c "$scratch/qkb_bundle.h" || fail "a good select table: export exited $?"
echo "select: 6 tables libqkrt refuses are refused"
# ---- a kernel whose entry point its module lacks (libqkrt's loader refuses
# it; a header must not carry it to an engine's pipeline creation)
expect_refused 'for mod in m["modules"]: mod["entry_point"] = "nosuch"' "entry_point 'nosuch'"
echo "entry points: a kernel naming one its module lacks is refused"
echo "1 passed, 0 failed"
