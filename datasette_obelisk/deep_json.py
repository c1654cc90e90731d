"""JSON text of a value nested deeper than the ``json`` module goes, and back.

    dumps(value, **options) -> str   ``json.dumps(value, **options)``, the same text
    loads(text) -> value             ``json.loads(text)``, the same value

``json`` recurses once a level (its C encoder and scanner too), so a value nested
about a thousand levels deep (a lineage of five hundred generations: a node and
its ``descendants`` list each) is a ``RecursionError`` there. Both functions try
``json`` first and only then write or read without recursion, however deep.
``dumps`` takes ``default``, ``indent``, ``ensure_ascii`` and ``allow_nan``.
"""

from __future__ import annotations

import json
from json.decoder import JSONDecodeError, scanstring
from json.scanner import NUMBER_RE
from typing import Any, Callable

__all__ = ["dumps", "loads"]


def dumps(
    value: Any,
    *,
    default: Callable[[Any], Any] | None = None,
    indent: int | str | None = None,
    ensure_ascii: bool = True,
    allow_nan: bool = True,
) -> str:
    options = {"default": default, "indent": indent, "ensure_ascii": ensure_ascii, "allow_nan": allow_nan}
    try:
        return json.dumps(value, **options)
    except RecursionError:
        return _write(value, **options)


class _Text(str):
    """Text already written."""


def _write(value, *, default, indent, ensure_ascii, allow_nan) -> str:
    scalar = json.JSONEncoder(ensure_ascii=ensure_ascii, allow_nan=allow_nan).encode
    if isinstance(indent, int):
        indent = " " * indent
    item_separator = ", " if indent is None else ","
    out: list[str] = []
    open_ids: set[int] = set()  # containers (and values given to default) being written: a cycle is an error
    waiting: list = [(value, 0)]  # (a value still to write, its level) or text
    while waiting:
        item = waiting.pop()
        if type(item) is _Text:
            out.append(item)
            continue
        if type(item) is tuple and len(item) == 3:  # (a container's id leaving open_ids)
            open_ids.discard(item[2])
            continue
        item, level = item
        if item is None or isinstance(item, (str, int, float)):  # (bool is an int)
            out.append(scalar(item))
            continue
        is_dict, is_list = isinstance(item, dict), isinstance(item, (list, tuple))
        if (is_dict or is_list) and not item:
            out.append("{}" if is_dict else "[]")
            continue
        key = id(item)
        if key in open_ids:
            raise ValueError("Circular reference detected")
        open_ids.add(key)
        if not (is_dict or is_list):
            if default is None:
                raise TypeError(f"Object of type {item.__class__.__name__} is not JSON serializable")
            waiting += [(None, None, key), (default(item), level)]
            continue
        inner = "" if indent is None else "\n" + indent * (level + 1)
        parts: list = []
        for n, entry in enumerate(item.items() if is_dict else item):
            lead = _Text((item_separator if n else "") + inner)
            if is_dict:
                name, entry = entry
                parts += [_Text(lead + scalar(_key(name)) + ": "), (entry, level + 1)]
            else:
                parts += [lead, (entry, level + 1)]
        out.append("{" if is_dict else "[")
        close = ("" if indent is None else "\n" + indent * level) + ("}" if is_dict else "]")
        waiting += [(None, None, key), _Text(close), *reversed(parts)]
    return "".join(out)


def _key(name) -> str:
    """An object key as ``json`` writes it."""
    if isinstance(name, str):
        return name
    if isinstance(name, float):
        return json.dumps(name)  # (its repr; nan as NaN)
    if name is True or name is False or name is None:
        return json.dumps(name)
    if isinstance(name, int):
        return int.__repr__(name)
    raise TypeError(f"keys must be str, int, float, bool or None, not {name.__class__.__name__}")


def loads(text: str | bytes | bytearray) -> Any:
    try:
        return json.loads(text)
    except RecursionError:
        if not isinstance(text, str):
            text = text.decode(json.detect_encoding(text), "surrogatepass")
        return _read(text)


_SPACE = " \t\n\r"
_CONSTANTS = {"null": None, "true": True, "false": False,
              "NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}


def _read(s: str) -> Any:
    """One JSON value (``json.loads``'s grammar) read with a stack instead of recursion."""
    end = len(s)

    def skip(i: int) -> int:
        while i < end and s[i] in _SPACE:
            i += 1
        return i

    def scalar(i: int):
        if i < end and s[i] == '"':
            return scanstring(s, i + 1, True)
        number = NUMBER_RE.match(s, i)
        if number:
            integer, frac, exp = number.groups()
            if frac or exp:
                return float(integer + (frac or "") + (exp or "")), number.end()
            return int(integer), number.end()
        for word, constant in _CONSTANTS.items():
            if s.startswith(word, i):
                return constant, i + len(word)
        raise JSONDecodeError("Expecting value", s, i)

    stack: list = []  # open containers: [container, key still to be given a value (objects)]
    i = skip(0)
    while True:
        # a value starts at i
        if i < end and s[i] in "[{":
            is_dict = s[i] == "{"
            i = skip(i + 1)
            container: Any = {} if is_dict else []
            if i < end and s[i] == ("}" if is_dict else "]"):
                value, i = container, i + 1
            else:
                if is_dict:
                    if i >= end or s[i] != '"':
                        raise JSONDecodeError("Expecting property name enclosed in double quotes", s, i)
                    name, i = scanstring(s, i + 1, True)
                    i = skip(i)
                    if i >= end or s[i] != ":":
                        raise JSONDecodeError("Expecting ':' delimiter", s, i)
                    i = skip(i + 1)
                    stack.append([container, name])
                else:
                    stack.append([container, None])
                continue
        else:
            value, i = scalar(i)
        # a value is read: it goes into the open container, which may then close
        while True:
            if not stack:
                i = skip(i)
                if i != end:
                    raise JSONDecodeError("Extra data", s, i)
                return value
            top = stack[-1]
            if isinstance(top[0], dict):
                top[0][top[1]] = value
            else:
                top[0].append(value)
            i = skip(i)
            closing = "}" if isinstance(top[0], dict) else "]"
            if i < end and s[i] == closing:
                stack.pop()
                value, i = top[0], i + 1
                continue
            if i >= end or s[i] != ",":
                raise JSONDecodeError("Expecting ',' delimiter", s, i)
            i = skip(i + 1)
            if isinstance(top[0], dict):
                if i >= end or s[i] != '"':
                    raise JSONDecodeError("Expecting property name enclosed in double quotes", s, i)
                top[1], i = scanstring(s, i + 1, True)
                i = skip(i)
                if i >= end or s[i] != ":":
                    raise JSONDecodeError("Expecting ':' delimiter", s, i)
                i = skip(i + 1)
            break
