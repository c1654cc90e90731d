"""What a third-party parser's records must hold before the writer takes them.

The built-in parsers are held to their records by their tests. A plugin's
parser is not: one record of the wrong shape (a dict, a message without a
session, a text that is a number) would stop the writer and roll back every
file of the run. Each of its records is checked against the field types of
``records`` instead, and a line that yields a bad one becomes a ``LineError``.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Iterable

from .. import records
from ..records import LineError, Position

_NAMES = {str: "text", int: "an integer", float: "a number", list: "a list", dict: "an object",
          Position: "a Position", type(None): "null"}


def _allowed(hint) -> tuple[type, ...]:
    if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union:
        return tuple(t for arg in typing.get_args(hint) for t in _allowed(arg))
    return (typing.get_origin(hint) or hint,)


FIELDS: dict[type, list[tuple[str, tuple[type, ...]]]] = {
    cls: [(name, _allowed(hint)) for name, hint in typing.get_type_hints(cls).items()]
    for cls in vars(records).values()
    if isinstance(cls, type) and dataclasses.is_dataclass(cls) and cls.__module__ == records.__name__
}


def problem(record: Any) -> str | None:
    """Why ``record`` cannot be written, or None."""
    fields = FIELDS.get(type(record))
    if fields is None:
        return f"a parser yielded {type(record).__name__}, which is no record"
    for name, allowed in fields:
        value = getattr(record, name)
        if not isinstance(value, allowed):
            wanted = " or ".join(_NAMES.get(t, t.__name__) for t in allowed)
            return f"{type(record).__name__}.{name} is {type(value).__name__}, not {wanted}"
        if type(value) is Position:
            if problem(value):
                return f"{type(record).__name__}.{name}: {problem(value)}"
        elif type(value) is list and not all(isinstance(item, str) for item in value):
            return f"{type(record).__name__}.{name} holds something other than text"
    return None


def checked_line(found: Iterable, position: Position) -> list:
    """The records of one line, or one ``LineError`` in their place when any is bad."""
    found = list(found)
    for record in found:
        reason = problem(record)
        if reason:
            return [LineError(position, f"parser error: {reason}")]
    return found


def checked_document(found: Iterable, whole: Position) -> list:
    """The records of a document; a bad one becomes a ``LineError`` at its own place."""
    kept = []
    for record in found:
        reason = problem(record)
        if reason is None:
            kept.append(record)
        else:
            place = getattr(record, "position", None)
            kept.append(LineError(place if type(place) is Position and not problem(place) else whole,
                                  f"parser error: {reason}"))
    return kept
