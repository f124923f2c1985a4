# Shared by the CLI tests: fail with a message, and a scratch folder removed on exit.
set -u
fail() { echo "FAIL: $*"; exit 1; }
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
