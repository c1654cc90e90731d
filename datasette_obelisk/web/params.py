"""Request parameters, parsed in one place.

Query strings carry scalars as text and structured values as JSON
(``filters=[{"kind":"cwd","values":["/x"]}]``). Path parts arrive
percent-encoded and are decoded here. A value that cannot be parsed is a
``QueryError`` with the code the caller names (``OBELISK_INVALID_ARGUMENT``
unless the contract has a more precise one), and so is a JSON object that
names a key twice (which one was meant?). Integers are bounded: by the
caller's ``minimum`` / ``maximum``, and always by SQLite's 64-bit range.
"""

from __future__ import annotations

import json
import re
from urllib.parse import unquote

import orjson

from ..query.errors import QueryError

INVALID = "OBELISK_INVALID_ARGUMENT"
TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off", ""}
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
INTEGER = re.compile(r"\s*[-+]?[0-9]+\s*")


class Params:
    def __init__(self, args, url_vars: dict | None = None):
        self.args = args
        self.url_vars = {k: unquote(v) for k, v in (url_vars or {}).items()}

    @classmethod
    def from_request(cls, request) -> "Params":
        return cls(request.args, request.url_vars)

    def path(self, name: str) -> str:
        return self.url_vars[name]

    def path_int(self, name: str, code: str = INVALID, minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int:
        return _integer(name, self.url_vars[name], code, minimum, maximum)

    def text(self, name: str, default: str | None = None, required: bool = False, code: str = INVALID):
        value = self.args.get(name)
        if value is None or value == "":
            if required:
                raise QueryError(code, f"missing required parameter {name!r}")
            return default
        return value

    def texts(self, name: str) -> list[str]:
        """Every value of a repeated parameter (``?source=a&source=b``), blanks dropped."""
        return [v for v in self.args.getlist(name) if v != ""]

    def integer(self, name: str, default: int | None = None, code: str = INVALID,
                minimum: int = INT64_MIN, maximum: int = INT64_MAX) -> int | None:
        value = self.args.get(name)
        if value is None or value == "":
            return default
        return _integer(name, value, code, minimum, maximum)

    def boolean(self, name: str, default: bool = False, code: str = INVALID) -> bool:
        value = self.args.get(name)
        if value is None:
            return default
        lowered = value.strip().lower()
        if lowered in TRUE:
            return True
        if lowered in FALSE:
            return False
        raise QueryError(code, f"{name} must be true or false, not {value!r}")

    def json(self, name: str, default=None, code: str = INVALID):
        value = self.args.get(name)
        if value is None or value == "":
            return default
        try:
            parsed = orjson.loads(value)  # (refuses lone surrogates and deep nesting: ValueError)
        except ValueError as exc:
            raise QueryError(code, f"{name} must be JSON: {exc}") from None
        if "{" in value:  # an object may name a key twice, which orjson folds into the last
            _refuse_repeated_keys(name, value, code)
        return parsed

    def values(self, *names: str) -> dict:
        """The given text parameters that are present, by name."""
        return {name: self.args.get(name) for name in names if self.args.get(name) not in (None, "")}


def _refuse_repeated_keys(name: str, value: str, code: str) -> None:
    """A JSON object in ``value`` naming a key twice is refused, as a repeated
    parameter is: which one was meant?"""

    def check(pairs):
        seen: set = set()
        repeated = sorted({key for key, _ in pairs if key in seen or seen.add(key)})
        if repeated:
            raise QueryError(code, f"{name}: key {', '.join(map(repr, repeated))} given more than once in one object")
        return dict(pairs)

    try:
        json.loads(value, object_pairs_hook=check)
    except RecursionError:  # nested deeper than Python's parser goes (orjson's limit is higher)
        raise QueryError(code, f"{name} is nested too deeply") from None


def _integer(name: str, value: str, code: str, minimum: int, maximum: int) -> int:
    if not isinstance(value, str) or not INTEGER.fullmatch(value):  # int() also reads "５" and "1_000"
        raise QueryError(code, f"{name} must be an integer, not {_clip(value)!r}")
    text = value.strip()
    negative, digits = text.startswith("-"), text.lstrip("+-").lstrip("0") or "0"
    if len(digits) > 19:  # past 64 bits (int() refuses over 4,300 digits)
        number = INT64_MIN - 1 if negative else INT64_MAX + 1
    else:
        number = -int(digits) if negative else int(digits)
    low, high = max(minimum, INT64_MIN), min(maximum, INT64_MAX)
    if not low <= number <= high:
        bounds = "a 64-bit integer" if (low, high) == (INT64_MIN, INT64_MAX) else f"between {low} and {high}"
        raise QueryError(code, f"{name} must be {bounds}, not {_clip(value)}")
    return number


def _clip(value, length: int = 40) -> str:
    text = str(value)
    return text if len(text) <= length else text[: length - 1] + "…"
