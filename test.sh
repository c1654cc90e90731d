#!/usr/bin/env bash
# Set up and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")"
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -qq --upgrade pip
.venv/bin/python -m pip install -qq -e '.[test]'
exec .venv/bin/python -m pytest "$@"
