# Sourced by run.sh and test.sh (after setting $here, the checkout, and $extras, the package's
# extras to install: empty, or "test"): makes "$here/.venv" and installs the package into it.
#
# The environment is made again when it is not a usable one: made by a Python older than 3.11,
# or without pip (its making interrupted, or a Debian python3 without python3-venv).
venv="$here/.venv"
ok='import sys; sys.exit(sys.version_info < (3, 11))'
if ! { [ -x "$venv/bin/python" ] && "$venv/bin/python" -c "import pip; $ok" 2>/dev/null; }; then
  tried="${PYTHON:-python3 python3.13 python3.12 python3.11}" py=
  for candidate in $tried; do
    if command -v "$candidate" >/dev/null && "$candidate" -c "$ok" 2>/dev/null; then py=$candidate; break; fi
  done
  if [ -z "$py" ]; then
    found=$(command -v python3 >/dev/null && python3 -V 2>&1 || echo "no python3")
    echo "$(basename -- "$0") needs Python 3.11 or newer, and none of $tried is ($found):" \
      "install one, or name it with PYTHON=/path/to/python3.11" >&2
    exit 1
  fi
  rm -rf "$venv"
  "$py" -m venv "$venv"
fi
# Installed once per version of pyproject.toml, place of the checkout (its commands name the
# folder they were installed in) and version of the environment's Python, so a second run
# needs no network. The test extras hold the package too: their stamp serves run.sh as well.
key=$({ cat "$here/pyproject.toml"; echo "$here"; "$venv/bin/python" -c 'import sys; print(sys.version)'; } | cksum | cut -d' ' -f1)
stamp="$venv/.installed-$key${extras:+-$extras}"
if [ ! -e "$stamp" ] && [ ! -e "$venv/.installed-$key-test" ]; then
  "$venv/bin/python" -m pip install -qq --upgrade pip
  "$venv/bin/python" -m pip install -qq -e "$here${extras:+[$extras]}"
  rm -f "$venv"/.installed-*
  touch "$stamp"
fi
