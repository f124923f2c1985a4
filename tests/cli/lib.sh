# Shared by the CLI tests: fail with a message, and a scratch folder removed on exit.
set -u
fail() { echo "FAIL: $*"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
# tests/tools on the Python path: the tests' inline scripts import manifest_view
export PYTHONPATH="$(cd "$(dirname "${BASH_SOURCE[0]}")/../tools" && pwd)${PYTHONPATH:+:$PYTHONPATH}"
# A bundle's manifest.json against docs/manifest.schema.json (python3-jsonschema).
check_schema() {
  local here
  here=$(dirname "${BASH_SOURCE[0]}")
  python3 "$here/../tools/manifest_schema.py" "$here/../../docs/manifest.schema.json" \
    "$1/manifest.json" || fail "$1/manifest.json does not match docs/manifest.schema.json"
}
