import sqlite3
from pathlib import Path

import pytest

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"


def pytest_report_header(config):
    return f"sqlite: {sqlite3.sqlite_version}, corpus: {CORPUS if CORPUS.exists() else 'missing'}"


@pytest.fixture(autouse=True)
def isolated_home(tmp_path_factory, monkeypatch):
    """Never let a test see this machine's own agent folders."""
    home = tmp_path_factory.mktemp("home")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(home / ".claude"))
    monkeypatch.setenv("CODEX_HOME", str(home / ".codex"))
    monkeypatch.delenv("GEMINI_CLI_HOME", raising=False)
    monkeypatch.delenv("OBELISK_DB", raising=False)
    return home


@pytest.fixture
def toy_plugin():
    """The toy source (tests/toy_source.py) installed for one test."""
    import toy_source
    from datasette_obelisk.plugins import pm

    pm.register(toy_source, "toy-test-plugin")
    yield
    pm.unregister(toy_source)


@pytest.fixture
def corpus():
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    return CORPUS


from query_fixtures import corpus_db, generated_db  # noqa: E402,F401  (built once per run)
