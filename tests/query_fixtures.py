"""Databases for the query tests: the shared corpus, the generator, toy logs.

Import the fixtures you use into a test module::

    from query_fixtures import corpus_db, read_conn, toy  # noqa: F401

- ``corpus_db``: every file of ../shared/corpus ingested once per test run
  (read it, never write it);
- ``corpus_copy(tmp_path, *relative_paths)``: chosen corpus files copied
  under a temp root and ingested, for tests that append or delete;
- ``generated_db``: a small deterministic corpus from the demo generator;
- ``toy``: a ``ToyLogs`` writer for hand-built sessions (tests/toy_source.py).
"""

from __future__ import annotations

import base64
import json
import shutil
import sqlite3
from pathlib import Path

import pytest

from datasette_obelisk.query.cursors import encode_cursor
from datasette_obelisk.query.errors import QueryError
from datasette_obelisk.query.session_query import SessionQuery
from datasette_obelisk.store.db import open_db
from datasette_obelisk.store.ingest import ingest
from toy_source import ToySource

CORPUS = Path(__file__).resolve().parent.parent.parent / "shared" / "corpus"
CORPUS_ROOTS = {"claude": "claude-code", "codex": "codex", "gemini": "gemini"}


def corpus_roots(base: Path = CORPUS) -> dict[str, Path]:
    return {source: base / folder for source, folder in CORPUS_ROOTS.items()}


def connect(db: Path) -> sqlite3.Connection:
    """A read-only connection, as the query faces use."""
    return sqlite3.connect(f"file:{db}?mode=ro", uri=True, isolation_level=None)


@pytest.fixture(scope="session")
def corpus_db(tmp_path_factory) -> Path:
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    db = tmp_path_factory.mktemp("corpus") / "corpus.db"
    ingest(db, corpus_roots())
    return db


@pytest.fixture
def read_conn(corpus_db):
    conn = connect(corpus_db)
    yield conn
    conn.close()


def copy_corpus(tmp_path: Path, *relative: str) -> tuple[Path, dict[str, Path]]:
    """Copy corpus files (paths below ../shared/corpus) and ingest them.

    Codex rollouts are discovered by name, so a Codex file that is not named
    ``rollout-*.jsonl`` is copied as ``rollout-<its name>``.
    """
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    base = tmp_path / "corpus"
    for item in relative:
        source = CORPUS / item
        target = base / item
        if item.startswith("codex/") and not source.name.startswith("rollout-"):
            target = target.with_name("rollout-" + source.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    roots = {s: p for s, p in corpus_roots(base).items() if p.exists()}
    db = tmp_path / "copy.db"
    ingest(db, roots)
    return db, roots


@pytest.fixture(scope="session")
def generated_db(tmp_path_factory) -> Path:
    from datasette_obelisk.demo.generator import generate

    root = tmp_path_factory.mktemp("generated")
    generate(root / "logs", seed=3, target_bytes=600_000)
    db = root / "generated.db"
    ingest(db, {"claude": root / "logs" / ".claude", "codex": root / "logs" / ".codex"})
    return db


def line(id, text, ts, **extra) -> dict:
    """A toy log line (see ``ToyLogs``)."""
    return {"id": id, "text": text, "ts": ts, **extra}


class ToyLogs:
    """Write toy sessions (one JSON object a line) and ingest them.

    A line is ``{"id", "text", "ts", "role", "type", "parent", "cwd", "tool",
    "output", "outcome"}`` (see tests/toy_source.py); the session id is the
    file name.
    """

    def __init__(self, tmp_path: Path):
        self.root = tmp_path / "toy"
        self.root.mkdir()
        self.db = tmp_path / "toy.db"
        self.sources = {"toy": ToySource()}

    def write(self, session_id: str, *lines: dict, append: bool = False) -> Path:
        path = self.root / f"{session_id}.jsonl"
        with open(path, "ab" if append else "wb") as fp:
            for line in lines:
                fp.write((json.dumps(line) + "\n").encode())
        return path

    def ingest(self):
        return ingest(self.db, {"toy": self.root}, sources=self.sources)

    def conn(self) -> sqlite3.Connection:
        return connect(self.db)

    def write_conn(self) -> sqlite3.Connection:
        return open_db(self.db)

    def sql(self, sql: str, params=()) -> None:
        """Change rows directly (for states the parsers never produce)."""
        conn = sqlite3.connect(self.db, isolation_level=None)
        try:
            conn.execute(sql, params)
        finally:
            conn.close()


@pytest.fixture
def toy(tmp_path) -> ToyLogs:
    return ToyLogs(tmp_path)


def resigned(conn, cursor: str, position) -> str:
    """``cursor`` with another position, signed with the database's secret
    (which whoever can read the database can read too)."""
    body = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    return encode_cursor(conn, body["scope"], body["fp"], body["gen"], position)


def refusal(call) -> tuple[str, str]:
    """The code and message of the ``QueryError`` that ``call()`` raises."""
    with pytest.raises(QueryError) as error:
        call()
    return error.value.code, error.value.message


def type_filter_refusals(conn, types) -> list[tuple[str, str]]:
    """What each session-query method taking event filters says of ``types`` (s1's events)."""
    sq = SessionQuery(conn)
    return [
        refusal(lambda: sq.search_sessions({"query": "needle", "eventFilters": types})),
        refusal(lambda: sq.search_events({"sessionId": "s1", "query": "needle", "filters": types})),
        refusal(lambda: sq.filter_events("s1", types)),
        refusal(lambda: sq.event_count("s1", types)),
    ]


def type_filter_answers(conn, values) -> tuple[list, dict]:
    """What s1's events and a search of every session answer to a type filter of ``values``."""
    sq = SessionQuery(conn)
    types = [{"kind": "type", "values": values}]
    return sq.filter_events("s1", types), sq.search_sessions({"query": "needle", "eventFilters": types})
