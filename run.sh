#!/usr/bin/env bash
# Set up, ingest your agent logs (or a generated demo corpus) and serve them on 127.0.0.1.
# It works in the folder you run it in: paths given as arguments, the database and the demo.
set -euo pipefail
here="$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)" extras=
. "$here/scripts/venv.sh"
exec "$venv/bin/obelisk" up "$@"
