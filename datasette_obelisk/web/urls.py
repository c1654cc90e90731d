"""Links to our pages, built in one place (base_url aware, ids quoted)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

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
    encoded = urlencode(query, doseq=True)
    return url + ("?" + encoded if encoded else "")


def session_url(datasette, session_id, db=None, **query) -> str:
    return obelisk_url(datasette, f"/session/{segment(session_id)}", db=db, **query)


def lineage_url(datasette, session_id, db=None, **query) -> str:
    return obelisk_url(datasette, f"/session/{segment(session_id)}/lineage", db=db, **query)


def event_url(datasette, session_id, seq, db=None, **query) -> str:
    return obelisk_url(datasette, f"/event/{segment(session_id)}/{int(seq)}", db=db, **query)
