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
    done
    # (the environment's python tells its version as $FAKE_SYS_VERSION)
    echo 'case "$2" in *"print(sys.version)"*) echo "${FAKE_SYS_VERSION:-3.12.1}" ;; esac' >> "$3/bin/python" ;;
esac
"""


@pytest.fixture
def checkout(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("run.sh", "test.sh", "pyproject.toml", "scripts/venv.sh"):
        if (ROOT / name).exists():
            (repo / name).parent.mkdir(exist_ok=True)
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


LAST_CALL = {"run.sh": "obelisk up --no-serve", "test.sh": "python -m pytest --no-serve"}
INSTALLED = {"run.sh": "", "test.sh": "[test]"}


def installs(repo) -> list[str]:
    return [call for call in (repo / ".venv" / "calls").read_text().splitlines() if "pip install -qq -e" in call]


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
def test_a_moved_checkout_installs_again(checkout, script):
    """The environment's commands name the folder they were installed in: a checkout moved
    or renamed installs again rather than failing at `.venv/bin/obelisk` for ever."""
    repo, bin_ = checkout
    assert run(repo, bin_, script).returncode == 0
    assert run(repo, bin_, script).returncode == 0
    moved = repo.rename(repo.with_name("moved"))
    result = run(moved, bin_, script, "--no-serve")
    assert result.returncode == 0, result.stderr
    calls = (moved / ".venv" / "calls").read_text().splitlines()
    assert len(installs(moved)) == 2, calls
    assert calls[-2].endswith(f"pip install -qq -e {moved}{INSTALLED[script]}") and calls[-1] == LAST_CALL[script]


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
def test_a_second_run_installs_nothing(checkout, script):
    """Installing needs the network and takes seconds: only the first run does it."""
    repo, bin_ = checkout
    for _ in range(3):
        result = run(repo, bin_, script, "--no-serve")
        assert result.returncode == 0, result.stderr
    assert installs(repo) == [f"python -m pip install -qq -e {repo}{INSTALLED[script]}"]
    assert sum("pip install -qq --upgrade pip" in call for call in (repo / ".venv" / "calls").read_text().splitlines()) == 1
    assert (repo / ".venv" / "calls").read_text().splitlines()[-1] == LAST_CALL[script]


@pytest.mark.parametrize("script", ["run.sh", "test.sh"])
@pytest.mark.parametrize("change", ["pyproject.toml", "Python"])
def test_a_changed_pyproject_or_python_installs_again(checkout, script, change):
    repo, bin_ = checkout
    assert run(repo, bin_, script).returncode == 0
    env = {}
    if change == "Python":
        env["FAKE_SYS_VERSION"] = "3.12.2"
    else:
        with open(repo / "pyproject.toml", "a") as fp:
            fp.write("# a new dependency\n")
    assert run(repo, bin_, script, **env).returncode == 0
    assert len(installs(repo)) == 2
    assert run(repo, bin_, script, **env).returncode == 0
    assert len(installs(repo)) == 2


def test_the_test_extras_serve_run_sh_too(checkout):
    """./test.sh installs the package with its test extras: ./run.sh then installs nothing;
    after ./run.sh, ./test.sh installs the extras it lacks, once."""
    repo, bin_ = checkout
    assert run(repo, bin_, "run.sh").returncode == 0
    for script in ("test.sh", "run.sh", "test.sh", "run.sh"):
        assert run(repo, bin_, script).returncode == 0
    assert installs(repo) == [f"python -m pip install -qq -e {repo}", f"python -m pip install -qq -e {repo}[test]"]
