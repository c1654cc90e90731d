"""A discovered file as ``source_files`` keeps it, and back.

    hints_json(unit) -> str
        What discovery learnt from the file's path, as stored.
    unit_of_row(row) -> SourceFile
        The unit discovery made for a stored file, for readers that do not
        discover (a live refresh, the other files of a family).
    in_read_order(units) -> list[SourceFile]
        Parents before their agents, then by path.
"""

from __future__ import annotations

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
