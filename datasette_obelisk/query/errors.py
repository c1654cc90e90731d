"""One closed taxonomy of error codes for every face (Python, CLI, HTTP).

The ``SESSION_QUERY_*`` codes are the session-query contract's own; the
``OBELISK_*`` codes cover the helper API and the history contract.
"""

from __future__ import annotations

import functools

SESSION_QUERY_CODES = frozenset(
    "SESSION_QUERY_" + name
    for name in (
        "ABORTED CORRUPT_SESSION EVENT_NOT_FOUND INDEX_FAILED INVALID_CONFIG "
        "INVALID_CURSOR INVALID_FILTER INVALID_LIMIT INVALID_QUERY INVALID_LINEAGE "
        "INVALID_SURFACE INVALID_WINDOW PERSISTENCE_FAILED SEARCH_DISABLED "
        "SESSION_NOT_FOUND STALE_CURSOR SOURCE_CONFLICT"
    ).split()
)
OBELISK_CODES = frozenset(
    "OBELISK_" + name
    for name in (
        "INVALID_ARGUMENT NOT_FOUND READ_ONLY INVALID_SQL MEMORY_REFUSED "
        "TIMEOUT SCRIPT_ERROR PERMISSION_DENIED PAYLOAD_TOO_LARGE METHOD_NOT_ALLOWED "
        "UNSUPPORTED_MEDIA_TYPE"
    ).split()
)
CODES = SESSION_QUERY_CODES | OBELISK_CODES

# HTTP status for each code; anything not listed is a 400.
STATUS = {
    "SESSION_QUERY_SESSION_NOT_FOUND": 404,
    "SESSION_QUERY_EVENT_NOT_FOUND": 404,
    "OBELISK_NOT_FOUND": 404,
    "OBELISK_PERMISSION_DENIED": 403,
    "OBELISK_METHOD_NOT_ALLOWED": 405,
    "OBELISK_PAYLOAD_TOO_LARGE": 413,
    "OBELISK_UNSUPPORTED_MEDIA_TYPE": 415,
    "OBELISK_TIMEOUT": 504,
    "SESSION_QUERY_ABORTED": 504,  # over HTTP only the time limit aborts a request
    "SESSION_QUERY_INDEX_FAILED": 500,  # (503 while an ingest defers indexing: retry_after)
    "SESSION_QUERY_PERSISTENCE_FAILED": 500,
    # What the archive holds contradicts itself: no request can fix that.
    "SESSION_QUERY_CORRUPT_SESSION": 500,
    "SESSION_QUERY_INVALID_LINEAGE": 500,
    "SESSION_QUERY_INVALID_SURFACE": 500,
    "SESSION_QUERY_SOURCE_CONFLICT": 500,
}


class QueryError(Exception):
    """An error with a machine code from ``CODES``. ``retry_after`` (seconds) marks a
    failure that passes by itself (a search while an ingest defers full-text indexing):
    over HTTP it is a 503 whatever its code, with that ``Retry-After``."""

    def __init__(self, code: str, message: str, retry_after: int | None = None):
        if code not in CODES:
            raise ValueError(f"unknown error code {code!r}")
        super().__init__(message)
        self.code = code
        self.message = message
        self.retry_after = retry_after

    @property
    def status(self) -> int:
        return 503 if self.retry_after is not None else STATUS.get(self.code, 400)

    def as_dict(self) -> dict:
        return {"ok": False, "error": {"code": self.code, "message": self.message}}


LONE_SURROGATE = "holds a lone surrogate, which UTF-8 cannot hold"


def refusing_unencodable(code: str):
    """Decorate a Python entry point so that a string argument UTF-8 cannot
    hold (a lone surrogate, which SQLite cannot be given) raises ``code``
    rather than ``UnicodeEncodeError``. Stored text is always UTF-8, so only
    an argument can be one."""
    def decorate(fn):
        @functools.wraps(fn)
        def checked(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except UnicodeEncodeError:
                if not any(map(holds_lone_surrogate, (*args, *kwargs.values()))):
                    raise
                raise QueryError(code, f"{fn.__name__}(): an argument {LONE_SURROGATE}") from None
        return checked
    return decorate


def holds_lone_surrogate(value) -> bool:
    """Whether ``value`` is, or a list or dict in it holds, a string UTF-8 cannot hold."""
    if isinstance(value, str):
        return not value.isascii() and not _encodes(value)
    if isinstance(value, dict):
        return any(map(holds_lone_surrogate, (*value.keys(), *value.values())))
    if isinstance(value, (list, tuple, set)):
        return any(map(holds_lone_surrogate, value))
    return False


def _encodes(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True
