#!/usr/bin/env bash
# Set up, ingest your agent logs (or a generated demo corpus) and serve them on 127.0.0.1.
# It works in the folder you run it in: paths given as arguments, the database and the demo.
set -euo pipefail
here="$(CDPATH='' cd -- "$(dirname -- "$0")" && pwd)"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
# Installed once per version of pyproject.toml, so a second run needs no network.
stamp="$venv/.installed-$(cksum < "$here/pyproject.toml" | cut -d' ' -f1)"
if [ ! -e "$stamp" ]; then
  "$venv/bin/python" -m pip install -qq --upgrade pip
  "$venv/bin/python" -m pip install -qq -e "$here"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
exec "$venv/bin/obelisk" up "$@"
