# qkgen export treats the manifest as input: a hostile inputs_hash stays a
# string and a comment (no symbol injected), and what the header cannot say
# as libqkrt means it is refused. BUNDLE is a small bundle (q4_0 mat-vecs).
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
echo "1 passed, 0 failed"
