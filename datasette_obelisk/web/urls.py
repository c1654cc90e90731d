"""Links to our pages, built in one place (base_url aware, ids quoted)."""

from __future__ import annotations

import re
from functools import lru_cache
from urllib.parse import quote, quote_plus, urlencode

ROOT = "/-/obelisk"


def segment(value) -> str:
    """``value`` as one path segment; ``.`` and ``..`` (a Claude Code log named
    ``..jsonl``) escaped, as a browser removes them from a path unescaped."""
    return _segment(value) if type(value) is str else _segment(str(value))


@lru_cache(maxsize=4096)  # (a page names its session in most of its links)
def _segment(text: str) -> str:
    text = quote(text, safe=":@")
    return text.replace(".", "%2E") if text in (".", "..") else text


def obelisk_url(datasette, _where: str = "", **query) -> str:
    """``/-/obelisk{_where}?{query}``, dropping empty query values."""
    return with_query(datasette.urls.path(ROOT + _where), query)


def with_query(url: str, query: dict) -> str:
    """``url?{query}``, the empty values of ``query`` left out (None, "", False or 0, an
    empty list or tuple) and True written 1; ``url`` alone when none is left."""
    query = {k: 1 if v is True else v for k, v in query.items() if v not in (None, "", False, [], ())}
    # (encoded, not the dict, decides: a template's undefined value is an empty sequence that adds nothing)
    encoded = query_string(query)
    return url + ("?" + encoded if encoded else "")


def query_string(query: dict) -> str:
    """``urlencode(query, doseq=True)``; an int value, and a str one made of characters a URL
    carries as they are, are written here, without the checks ``urlencode`` makes of each
    (a transcript page builds some 1,500 links)."""
    parts = []
    for key, value in query.items():
        kind = type(value)
        if kind is int or (kind is str and UNRESERVED.fullmatch(value)):
            parts.append(f"{_name(key)}={value}")
        elif kind is str:
            parts.append(f"{_name(key)}={quote_plus(value)}")
        else:
            part = urlencode({key: value}, doseq=True)
            if part:
                parts.append(part)
    return "&".join(parts)


UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")  # (what ``quote_plus`` leaves as it is)


def _name(key) -> str:
    """``quote_plus(key)``: a query's names are mostly words, which it leaves as they are."""
    return key if type(key) is str and UNRESERVED.fullmatch(key) else quote_plus(key)


def session_path(session_id) -> str:
    return f"/session/{segment(session_id)}"


def lineage_path(session_id) -> str:
    return f"/session/{segment(session_id)}/lineage"


def event_path(session_id, seq) -> str:
    return f"/event/{segment(session_id)}/{int(seq)}"


def session_url(datasette, session_id, db=None, **query) -> str:
    return obelisk_url(datasette, session_path(session_id), db=db, **query)


def lineage_url(datasette, session_id, db=None, **query) -> str:
    return obelisk_url(datasette, lineage_path(session_id), db=db, **query)


def event_url(datasette, session_id, seq, db=None, **query) -> str:
    return obelisk_url(datasette, event_path(session_id, seq), db=db, **query)
