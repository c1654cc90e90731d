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
    kept_copies(path) -> (low, high) | None; is_kept_copy(path, log) -> bool
        Where a log's copies as it was before it was pruned are kept (Claude Code's
        ``<session>/before-cleanup/<ms>-<hex>.jsonl.replaced``), as a range of paths.
"""

from __future__ import annotations

import os
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


# Claude Code (2.1.3xx, ``CLAUDE_CODE_TRANSCRIPT_LOCAL_GC=keep``) links a session's log as
# ``<session>/before-cleanup/<ms>-<hex>.jsonl.replaced`` before it renames the log pruned
# to its last compaction over it: the lines both hold are the log's (``Writer``).
KEPT_FOLDER = "before-cleanup"
KEPT_SUFFIX = ".jsonl.replaced"


def kept_copies(path: str) -> tuple[str, str] | None:
    """The range of paths (low, high: ``low < p < high``) that the copies a source kept of the log
    at ``path``, from before it pruned it, lie in; None when ``path`` is no log so kept."""
    if not path.endswith(".jsonl"):
        return None
    folder = os.path.join(path[: -len(".jsonl")], KEPT_FOLDER, "")
    return folder, folder[:-1] + chr(ord(folder[-1]) + 1)


def is_kept_copy(path: str, log: str) -> bool:
    """Whether ``path`` is a copy kept of the log at ``log`` from before it was pruned."""
    folder = kept_copies(log)
    return folder is not None and path.startswith(folder[0]) and path.endswith(KEPT_SUFFIX) and (
        os.sep not in path[len(folder[0]):])


def kept_from(path: str) -> str | None:
    """The log a copy kept from before it was pruned (``kept_copies``) was kept of; None for any other path."""
    folder, name = os.path.split(path)
    log_folder, kept = os.path.split(folder)
    log = log_folder + ".jsonl"
    return log if kept == KEPT_FOLDER and name.endswith(KEPT_SUFFIX) and is_kept_copy(path, log) else None


def kept_copy_sql(alias: str) -> str:
    """SQL: the source file ``alias`` is a copy kept of a log from before it was pruned (``kept_copies``)."""
    return f"({alias}.path GLOB '*[/\\]{KEPT_FOLDER}[/\\]*{KEPT_SUFFIX}')"
