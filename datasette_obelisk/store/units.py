"""A discovered file as ``source_files`` keeps it, and back.

    hints_json(unit) -> str
        What discovery learnt from the file's path, as stored.
    unit_of_row(row) -> SourceFile
        The unit discovery made for a stored file, for readers that do not
        discover (a live refresh, the other files of a family).
    in_read_order(units) -> list[SourceFile]
        Parents before their agents, then by path.
    retired_path(path, file_id) -> str; retired_from(path) -> str | None
        The name a stored file gone from disk keeps once another file is at its
        path (``<path>#gone-<id>``), and the path it was read from.
"""

from __future__ import annotations

import re
from pathlib import Path

import orjson

from ..sources.base import SourceFile


def hints_json(unit: SourceFile) -> str:
    return orjson.dumps(unit.hints, option=orjson.OPT_SORT_KEYS).decode()


def unit_of_row(row) -> SourceFile:
    return SourceFile(
        Path(row["path"]),
        row["source"],
        row["kind"],
        layout=row["layout"],
        compression=row["compression"],
        hints=orjson.loads(row["hints"]) if row["hints"] else {},
        priority=row["priority"] or 0,
    )


def in_read_order(units) -> list[SourceFile]:
    return sorted(units, key=lambda u: (u.priority, str(u.path)))


_RETIRED = re.compile(r"#gone-\d+\Z")


def retired_path(path: str, file_id: int) -> str:
    return f"{path}#gone-{file_id}"


def retired_sql(alias: str) -> str:
    """SQL: the source file ``alias`` was retired (its path is its ``retired_path``)."""
    return f"substr({alias}.path, -length('#gone-' || {alias}.id)) = '#gone-' || {alias}.id"


def retired_from(path: str) -> str | None:
    """The path a retired file (``retired_path``) was read from; None for any other."""
    match = _RETIRED.search(path)
    return path[:match.start()] if match else None
