#!/usr/bin/env bash
# Set up, ingest your agent logs (or a generated demo corpus) and serve them on 127.0.0.1.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -qq --upgrade pip
.venv/bin/python -m pip install -qq -e .
exec .venv/bin/obelisk up "$@"
