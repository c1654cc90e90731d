"""./run.sh and ./test.sh, the README's two commands: the environment they make and use.

They run here with stand-ins for python3 and the environment's programs (nothing is
installed), on a PATH that holds only those and the few tools the scripts call.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parent.parent
TOOLS = ["bash", "sh", "cat", "cksum", "cut", "basename", "dirname", "rm", "mkdir", "touch", "chmod"]

# python3 -c CODE answers the version check with $FAKE_VERSION_OK; -m venv DIR makes an
# environment whose python and obelisk note what they were asked to do.
FAKE_PYTHON3 = r"""#!/bin/sh
case "$1" in
  -V) echo "Python 3.10.13" ;;
  -c) exit "${FAKE_VERSION_OK:-0}" ;;
  -m)
    [ "$2" = venv ] || exit 2
    mkdir -p "$3/bin"
    for name in python obelisk; do
      printf '#!/bin/sh\necho "%s $*" >> "$(dirname "$0")/../calls"\n' "$name" > "$3/bin/$name"
      chmod +x "$3/bin/$name"
    done ;;
esac
"""


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("run.sh", "test.sh", "pyproject.toml"):
        shutil.copy2(ROOT / name, repo / name)
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for tool in TOOLS:
        found = shutil.which(tool)
        assert found, tool
        (bin_ / tool).symlink_to(found)
    (bin_ / "python3").write_text(FAKE_PYTHON3)
    (bin_ / "python3").chmod(0o755)
    return repo, bin_


def run(repo, bin_, script, *args, **env):
    return subprocess.run(
        [str(bin_ / "bash"), str(repo / script), *args],
        cwd=repo, capture_output=True, text=True, timeout=60,
        env={"PATH": str(bin_), "HOME": str(repo), **env},
    )


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
@pytest.mark.parametrize("broken", ["failing", "without pip"])
def test_an_environment_that_cannot_run_pip_is_made_again(checkout, script, broken):
    """A .venv whose python fails (one made by an older python3) or has no pip (its making
    interrupted, or a python3 without ensurepip) is made again, not used for ever."""
    repo, bin_ = checkout
    if broken == "without pip":
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(repo / ".venv")], check=True)
    else:
        (repo / ".venv" / "bin").mkdir(parents=True)
        (repo / ".venv" / "bin" / "python").write_text("#!/bin/sh\necho 'No module named pip' >&2\nexit 1\n")
        (repo / ".venv" / "bin" / "python").chmod(0o755)
    result = run(repo, bin_, script, "--no-serve")
    assert result.returncode == 0, result.stderr
    calls = (repo / ".venv" / "calls").read_text().splitlines()
    assert any(" pip install " in f" {call} " for call in calls), calls
    assert calls[-1] == ("obelisk up --no-serve" if script == "run.sh" else "python -m pytest --no-serve")


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
def test_a_python_older_than_3_11_is_named_and_no_environment_made(checkout, script):
    repo, bin_ = checkout
    result = run(repo, bin_, script, FAKE_VERSION_OK="1")
    assert result.returncode == 1
    assert "needs Python 3.11 or newer" in result.stderr and "Python 3.10.13" in result.stderr, result.stderr
    assert "PYTHON=" in result.stderr
    assert not (repo / ".venv").exists()


def test_a_usable_environment_is_kept(checkout):
    repo, bin_ = checkout
    assert run(repo, bin_, "run.sh").returncode == 0
    (repo / ".venv" / "kept").touch()
    result = run(repo, bin_, "run.sh", "--port", "8002")
    assert result.returncode == 0, result.stderr
    assert (repo / ".venv" / "kept").exists()
    calls = (repo / ".venv" / "calls").read_text().splitlines()
    assert sum("pip install -qq -e" in call for call in calls) == 1, calls  # installed once
    assert calls[-1] == "obelisk up --port 8002"


def test_a_moved_checkout_installs_again(checkout):
    """The environment's commands name the folder they were installed in: a checkout moved
    or renamed installs again rather than failing at `.venv/bin/obelisk` for ever."""
    repo, bin_ = checkout
    assert run(repo, bin_, "run.sh").returncode == 0
    assert run(repo, bin_, "run.sh").returncode == 0
    moved = repo.rename(repo.with_name("moved"))
    result = run(moved, bin_, "run.sh", "--no-serve")
    assert result.returncode == 0, result.stderr
    calls = (moved / ".venv" / "calls").read_text().splitlines()
    assert sum("pip install -qq -e" in call for call in calls) == 2, calls
    assert calls[-2].endswith(f"pip install -qq -e {moved}") and calls[-1] == "obelisk up --no-serve"
