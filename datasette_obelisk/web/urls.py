"""Links to our pages, built in one place (base_url aware, ids quoted)."""

from __future__ import annotations

import re
from urllib.parse import quote, quote_plus, urlencode

ROOT = "/-/obelisk"


def segment(value) -> str:
    """``value`` as one path segment; ``.`` and ``..`` (a Claude Code log named
    ``..jsonl``) escaped, as a browser removes them from a path unescaped."""
    text = quote(str(value), safe=":@")
    return text.replace(".", "%2E") if text in (".", "..") else text


def obelisk_url(datasette, _where: str = "", **query) -> str:
    """``/-/obelisk{_where}?{query}``, dropping empty query values."""
    query = {k: 1 if v is True else v for k, v in query.items() if v not in (None, "", False, [], ())}
    url = datasette.urls.path(ROOT + _where)
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
            parts.append(f"{quote_plus(key)}={value}")
        elif kind is str:
            parts.append(f"{quote_plus(key)}={quote_plus(value)}")
        else:
            part = urlencode({key: value}, doseq=True)
            if part:
                parts.append(part)
    return "&".join(parts)


UNRESERVED = re.compile(r"[A-Za-z0-9_.~-]*")  # (what ``quote_plus`` leaves as it is)


def session_url(datasette, session_id, db=None, **query) -> str:
    return obelisk_url(datasette, f"/session/{segment(session_id)}", db=db, **query)


def lineage_url(datasette, session_id, db=None, **query) -> str:
    return obelisk_url(datasette, f"/session/{segment(session_id)}/lineage", db=db, **query)


def event_url(datasette, session_id, seq, db=None, **query) -> str:
    return obelisk_url(datasette, f"/event/{segment(session_id)}/{int(seq)}", db=db, **query)
