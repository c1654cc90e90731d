"""What a source is: discovery of files plus a parser per file.

A source never touches the database. The ingester discovers ``SourceFile``
units, opens a ``FileParser`` for each (restoring the small state the parser
saved at the last committed line), feeds it lines and writes the records.
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Protocol

from ..records import Position, Record


@dataclass(slots=True)
class SourceFile:
    """One file a source wants ingested.

    ``layout`` is ``"jsonl"`` (read incrementally by byte cursor),
    ``"document"`` (a whole JSON file, re-read whenever it changes) or
    ``"text"`` (a file of plain text, re-read whenever it changes, held up to
    ``reader.MAX_TEXT`` bytes: a tool's output saved apart; in no family).
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

    def text(self, data: bytes, size: int, left: int) -> Iterable[Record]:
        """Records for a text file (``layout == "text"``): ``data``, its first bytes
        (whole characters), of ``size`` bytes in all, ``left`` characters not held."""

    def state(self) -> dict[str, Any]:
        """Small JSON-able state to resume after the last fed line."""


class Source(Protocol):
    """A log source. Besides the members below, a source may declare optional class attributes:

    ``root_variable: str | None``
        The environment variable that names its folder (``"CODEX_HOME"``).
        When it is set to something that exists and is not a folder, the CLI
        refuses it with a usage error (exit 2) naming the variable.
    ``home_folder: str | None``
        Its folder under the home directory, used when the variable is unset
        (``".codex"``). When that exists and is not a folder, ``obelisk
        ingest`` warns and ingests the other sources.
    ``folder_layout: str``
        What its folder holds, for the warning given when a folder passed
        to ``ingest`` holds no file of this source.
    ``folders(root) -> list[Path]``
        Every folder ``discover(root)`` reads, when that is more than ``root``
        (a stored file under none of them that is gone is archived).
    ``settle_hints(units, stored) -> dict[str, dict]``
        Completes the hints of this run's ``units`` with what depends on other
        files (called before they are compared with the stored ones: a file
        whose hints change is read again); ``stored`` maps the path of each
        stored file of the source to its hints (``{}`` when none were kept). Returns the new hints of
        stored files not in ``units`` that are to change (read again too). A file whose
        hints name ``copies_of`` (an id of the source's session ``<source>:<id>``) keeps
        copies of that session's history as its own rows (its messages' ``meta.copied_from``);
        when its hints lose it while the file is gone (deleted, or emptied), those rows are deleted.
    ``settle_archived_replays(units, archived, redact) -> None``
        Called after ``settle_hints``: completes the hints of this run's ``units`` with
        what depends on the rows stored of files that cannot be read any more;
        ``archived(path)`` gives a stored file's hints, how many of its lines were read, and
        ``(line_no, type, subtype, role, content_type, text)`` of each message it gave, in
        the order of its lines (None for a file stored nowhere); ``redact`` is what the
        store passes records through before storing them (None when nothing is).
    ``trusted_records: bool``
        True skips the check of each record's fields against ``records``
        (the built-in sources, whose tests pin their records). Left unset,
        a line that yields a malformed record is reported as a parser error
        and its records are not written.

    ``root_location`` reads the first two; ``default_root`` can be
    ``existing_folder(root_location(self, environ))``.
    """

    name: str
    parser_version: int

    def default_root(self, environ: Mapping[str, str]) -> Path | None:
        """The folder to scan when none is given (from the environment); None when there is none."""

    def discover(self, root: Path) -> Iterator[SourceFile]:
        """Every file under ``root`` this source ingests."""

    def open_parser(self, unit: SourceFile, state: dict[str, Any] | None) -> FileParser:
        """A parser for ``unit``, resumed from ``state`` when given."""


def home(environ: Mapping[str, str]) -> Path:
    return Path(environ.get("HOME") or os.path.expanduser("~"))


def variable_root(source: Any, environ: Mapping[str, str]) -> str | None:
    """What ``source``'s ``root_variable`` is set to, as written; None when it is unset or empty."""
    variable = getattr(source, "root_variable", None)
    return environ.get(variable) or None if variable else None


def root_location(source: Any, environ: Mapping[str, str]) -> Path | None:
    """Where ``source``'s folder is, whether or not it exists: the value of its
    ``root_variable`` when set (``~`` expanded), else ``home_folder`` under the
    home directory; None when it declares neither."""
    named = variable_root(source, environ)
    if named is not None:
        return Path(named).expanduser()
    folder = getattr(source, "home_folder", None)
    return home(environ) / folder if folder else None


def existing_folder(path: Path | None) -> Path | None:
    """``path`` when it is a folder, else None."""
    return path if path is not None and path.is_dir() else None


def folders_of(source: Any, root: Path) -> list[Path]:
    """The folders ``source.discover(root)`` reads: its ``folders(root)``, else ``root``."""
    folders = getattr(source, "folders", None)
    return list(folders(Path(root))) if folders is not None else [Path(root)]


def default_root_of(source: Any, environ: Mapping[str, str]) -> tuple[Path | None, str | None]:
    """``source.default_root(environ)``, and why there is none when asking raised."""
    try:
        return source.default_root(environ), None
    except Exception as exc:  # a plugin's bug costs its own source only
        return None, f"the {source.name} source could not name its default folder: {exc!r}; {source.name} not ingested"


def non_folder_default(source: Any, environ: Mapping[str, str]) -> Path | None:
    """``source``'s default folder (its ``home_folder``, used when its ``root_variable`` is
    unset, or what its ``default_root`` returns) when that exists and is not a folder, else None."""
    if variable_root(source, environ) is not None:
        return None  # what the variable names is the caller's to check
    for location in (root_location(source, environ), default_root_of(source, environ)[0]):
        if location is not None and Path(location).exists() and not Path(location).is_dir():
            return Path(location)
    return None


def default_folder_warnings(sources: Mapping[str, Any], environ: Mapping[str, str] = os.environ) -> list[dict]:
    """The sources skipped because their default folder exists and is not a folder,
    each as ``{"source", "path", "message"}``."""
    warnings = []
    for name, source in sources.items():
        path = non_folder_default(source, environ)
        if path is not None:
            message = f"the {name} source's default folder {path} is not a folder; {name} not ingested"
            warnings.append({"source": name, "path": str(path), "message": message})
        elif (failure := default_root_of(source, environ)[1]) is not None:
            warnings.append({"source": name, "path": None, "message": failure})
    return warnings


def printable_path(path) -> str:
    """``path`` as text UTF-8 can carry: bytes of its name that are not UTF-8 as ``\\xff``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace")


# The folders ``walk_files`` could not read, while someone collects them (``unreadable_folders``).
_unreadable: ContextVar[list | None] = ContextVar("unreadable_folders", default=None)


@contextmanager
def unreadable_folders() -> Iterator[list[tuple[Path, OSError]]]:
    """Within the block, each folder ``walk_files`` skips because it cannot be read,
    with why: the ingester reports them, which would otherwise miss their files without a word."""
    found: list[tuple[Path, OSError]] = []
    token = _unreadable.set(found)
    try:
        yield found
    finally:
        _unreadable.reset(token)


def walk_files(root: Path) -> Iterator[Path]:
    """Files below ``root``, sorted.

    A symlink to a folder is followed (a project folder kept elsewhere is
    still the agent's), once every real folder has been walked, and only to
    a folder not walked yet: a link back up, or to a folder also reached
    directly, reads nothing twice, and files keep their real paths. Unreadable
    folders are skipped (and noted, see ``unreadable_folders``); entries that
    are not regular files (a dangling link, a symlink loop, a FIFO) are still
    yielded so the ingester can report them instead of silently missing them.
    """
    walked: set[tuple[int, int]] = set()
    links: list[Path] = []
    yield from _walk_folder(Path(root), walked, links)
    while links:
        link = links.pop(0)
        try:
            target = os.stat(link)
        except OSError:
            continue
        if (target.st_dev, target.st_ino) not in walked:
            yield from _walk_folder(link, walked, links)


def _walk_folder(folder: Path, walked: set, links: list) -> Iterator[Path]:
    """The files below ``folder`` through real folders; the folder links met go to ``links``."""
    try:
        st = os.stat(folder)
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (FileNotFoundError, NotADirectoryError):
        return  # (no such folder: nothing missed)
    except OSError as exc:
        if (noted := _unreadable.get()) is not None:
            noted.append((folder, exc))
        return
    walked.add((st.st_dev, st.st_ino))
    for entry in entries:
        try:
            if entry.is_dir(follow_symlinks=False):
                yield from _walk_folder(Path(entry.path), walked, links)
            elif entry.is_symlink() and _names_folder(entry):
                links.append(Path(entry.path))
            else:
                yield Path(entry.path)
        except OSError:
            continue


def _names_folder(link: os.DirEntry) -> bool:
    try:
        return link.is_dir()
    except OSError:  # a loop: reported as the file it is not
        return False
