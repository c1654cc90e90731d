"""Databases for the query helper tests: the shared corpus and tiny toy logs."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from datasette_obelisk.query.readonly import connect_readonly
from datasette_obelisk.store.db import connect
from datasette_obelisk.store.ingest import ingest
from toy_source import ToySource

CORPUS = Path(__file__).parent.parent.parent / "shared" / "corpus"
SEED = Path(__file__).parent.parent.parent / "shared" / "seeds" / "000_24aef40d7300de5e.txt"
CLAUDE = CORPUS / "claude-code"
CODEX = CORPUS / "codex"


def ingest_corpus(db: Path) -> None:
    ingest(db, {"claude": CLAUDE, "codex": CODEX, "gemini": CORPUS / "gemini"})


def corpus_line(path: Path, number: int) -> bytes:
    """Line ``number`` (1-based) of a corpus file, without its newline."""
    return path.read_bytes().split(b"\n")[number - 1]


def line_offset(path: Path, number: int) -> int:
    """The byte offset at which line ``number`` (1-based) starts."""
    return sum(len(line) + 1 for line in path.read_bytes().split(b"\n")[: number - 1])


@pytest.fixture(scope="session")
def corpus_db(tmp_path_factory) -> Path:
    """The shared corpus, ingested once for the whole test run."""
    if not CORPUS.exists():
        pytest.skip(f"shared corpus not found at {CORPUS}")
    db = tmp_path_factory.mktemp("corpus") / "obelisk.db"
    ingest_corpus(db)
    return db


@pytest.fixture
def ro(corpus_db):
    conn = connect_readonly(corpus_db)
    yield conn
    conn.close()


def toy_line(**fields) -> bytes:
    return (json.dumps(fields) + "\n").encode()


def build_toy_db(folder: Path, sessions: dict[str, list[dict]]) -> Path:
    """A database ingested from toy logs: one ``<session>.jsonl`` per key."""
    logs = folder / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    for name, lines in sessions.items():
        (logs / f"{name}.jsonl").write_bytes(b"".join(toy_line(**line) for line in lines))
    db = folder / "toy.db"
    ingest(db, {"toy": logs}, sources={"toy": ToySource()})
    return db


def execute(db: Path, sql: str, params=()) -> None:
    """A write made by the test itself (fixtures the parsers cannot produce)."""
    conn = connect(db)
    try:
        conn.execute(sql, params)
    finally:
        conn.close()


def table_counts(db: Path) -> dict[str, int]:
    conn = sqlite3.connect(db)
    try:
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {name: conn.execute(f'SELECT COUNT(*) FROM "{name}"').fetchone()[0] for name in names}
    finally:
        conn.close()
