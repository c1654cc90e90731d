"""What a third-party parser's records must hold before the writer takes them.

The built-in parsers are held to their records by their tests. A plugin's
parser is not: one record of the wrong shape (a dict, a message without a
session, a text that is a number, a lone surrogate SQLite cannot store)
would stop the writer and roll back every file of the run. Each of its
records is checked against the field types of ``records`` instead, and a
line that yields a bad one becomes a ``LineError``.
"""

from __future__ import annotations

import types
import typing
from typing import Any, Iterable

import orjson

from ..records import LineError, Message, Position
from .writer import Writer

_NAMES = {str: "text", int: "an integer", float: "a number", list: "a list", dict: "an object",
          Position: "a Position", type(None): "null"}
LOWEST, HIGHEST = -(1 << 63), (1 << 63) - 1  # what SQLite stores


def _allowed(hint) -> tuple[type, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(t for arg in typing.get_args(hint) for t in _allowed(arg))
    return (typing.get_origin(hint) or hint,)


def _fields(cls) -> list[tuple[str, tuple[type, ...]]]:
    return [(name, _allowed(hint)) for name, hint in typing.get_type_hints(cls).items()]


FIELDS = {cls: _fields(cls) for cls in (Message, *Writer.handlers)}
POSITION_FIELDS = _fields(Position)


def problem(record: Any, source: str | None = None) -> str | None:
    """Why ``record`` cannot be written, or None; a record naming its source must name ``source``."""
    fields = FIELDS.get(type(record))
    if fields is None:
        return f"a parser yielded {type(record).__name__}, which is no record"
    found = _field_problem(record, fields)
    if found is None and source is not None and getattr(record, "source", source) != source:
        return f"{type(record).__name__}.source is {record.source!r}, not this file's source {source!r}"
    return found


def _field_problem(record: Any, fields) -> str | None:
    name_of = type(record).__name__
    for name, allowed in fields:
        value = getattr(record, name)
        if not isinstance(value, allowed):
            wanted = " or ".join(_NAMES.get(t, t.__name__) for t in allowed)
            return f"{name_of}.{name} is {type(value).__name__}, not {wanted}"
        if isinstance(value, Position):
            found = _field_problem(value, POSITION_FIELDS)
            if found:
                return f"{name_of}.{name}: {found}"
        elif isinstance(value, str) and not _encodable(value):
            return f"{name_of}.{name} holds a lone surrogate, which UTF-8 cannot encode"
        elif isinstance(value, int) and not LOWEST <= value <= HIGHEST:
            return f"{name_of}.{name} is out of SQLite's 64-bit range"
        elif isinstance(value, list) and not all(isinstance(item, str) and _encodable(item) for item in value):
            return f"{name_of}.{name} holds something other than text"
        elif isinstance(value, dict) and not _is_json(value):
            return f"{name_of}.{name} is no JSON object"
    return None


def _encodable(text: str) -> bool:
    if text.isascii():
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _is_json(value: dict) -> bool:
    try:
        orjson.dumps(value)
    except TypeError:
        return False
    return True


def checked_line(found: Iterable, position: Position, source: str) -> list:
    """The records of one line, or one ``LineError`` in their place when any is bad."""
    found = list(found)
    for record in found:
        reason = problem(record, source)
        if reason:
            return [LineError(position, f"parser error: {reason}")]
    return found


def checked_document(found: Iterable, whole: Position, source: str) -> list:
    """The records of a document; a bad one becomes a ``LineError`` at its own place."""
    kept = []
    for record in found:
        reason = problem(record, source)
        if reason is None:
            kept.append(record)
        else:
            place = getattr(record, "position", None)
            fits = isinstance(place, Position) and not _field_problem(place, POSITION_FIELDS)
            kept.append(LineError(place if fits else whole, f"parser error: {reason}"))
    return kept
