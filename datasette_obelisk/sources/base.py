"""What a source is: discovery of files plus a parser per file.

A source never touches the database. The ingester discovers ``SourceFile``
units, opens a ``FileParser`` for each (restoring the small state the parser
saved at the last committed line), feeds it lines and writes the records.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

from ..records import Position, Record


@dataclass(slots=True)
class SourceFile:
    """One file a source wants ingested.

    ``layout`` is ``"jsonl"`` (read incrementally by byte cursor) or
    ``"document"`` (a whole JSON file, re-read whenever it changes).
    ``hints`` carries what discovery learnt from the path (session id, agent
    id, parent session) for the parser.
    """

    path: Path
    source: str
    kind: str
    layout: str = "jsonl"
    compression: str | None = None  # None | "zstd"
    hints: dict[str, Any] = field(default_factory=dict)
    priority: int = 0  # lower is ingested first (parents before children)


class FileParser(Protocol):
    def feed(self, line: bytes, position: Position) -> Iterable[Record]:
        """Records for one line (without its newline)."""

    def document(self, data: bytes) -> Iterable[Record]:
        """Records for a whole-file document (``layout == "document"``)."""

    def state(self) -> dict[str, Any]:
        """Small JSON-able state to resume after the last fed line."""


class Source(Protocol):
    name: str
    parser_version: int

    def default_root(self, environ: Mapping[str, str]) -> Path | None:
        """The folder to scan when none is given (from the environment)."""

    def discover(self, root: Path) -> Iterator[SourceFile]:
        """Every file under ``root`` this source ingests."""

    def open_parser(self, unit: SourceFile, state: dict[str, Any] | None) -> FileParser:
        """A parser for ``unit``, resumed from ``state`` when given."""


def home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or os.path.expanduser("~"))


def walk_files(root: Path) -> Iterator[Path]:
    """Files below ``root``, sorted, never following directory symlinks.

    Unreadable folders are skipped; entries that are not regular files (a
    dangling link, a symlink loop, a FIFO) are still yielded so the ingester
    can report them instead of silently missing them.
    """
    try:
        entries = sorted(os.scandir(root), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from walk_files(Path(entry.path))
            else:
                yield Path(entry.path)
        except OSError:
            continue
