#!/usr/bin/env bash
# Set up and run the whole test suite (arguments are pytest's).
set -euo pipefail
here="$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)" extras=test
. "$here/scripts/venv.sh"
cd "$here"
exec "$venv/bin/python" -m pytest "$@"
