"""What templates may call: links that keep ``?db=``, safe snippets, small formatting."""

from __future__ import annotations

import json
from urllib.parse import quote, urlsplit

from ..query.obelisk import MAX_RAW_LIMIT
from ..query.session_query import READ_PAGE_MAX
from ..query.transcript import RESULT_CHARS
from . import urls
from ..utc import canonical
from .highlight import snippet_html


BIDI_CONTROLS = dict.fromkeys([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])


class TemplateHelpers:
    def __init__(self, datasette, db: str | None, raw_shown: bool = True):
        self.datasette = datasette
        self.db = db
        self.raw_shown = raw_shown  # False where the actor may not view source_files: /api/raw would refuse

    def page(self, _where: str = "", **query) -> str:
        """A page of ours: ``page('/files', path=...)``."""
        return urls.obelisk_url(self.datasette, _where, db=self.db, **query)

    def session(self, session_id, **query) -> str:
        return urls.session_url(self.datasette, session_id, db=self.db, **query)

    def tool_call(self, session_id, call_id, anchors: dict) -> str:
        """The transcript page showing a call, at its ``#tool-`` anchor; the session's start when
        no page shows it (``anchors`` has none). The call is named by its id (``?call=``), not by
        the page it is on now: an ingest that renumbers the session moves it to another."""
        if anchors.get(call_id) is None:
            return self.session(session_id)
        return self.session(session_id, call=call_id) + "#" + quote(f"tool-{call_id}", safe="")

    def in_transcript(self, session_id, where: dict | None) -> str:
        """The transcript page showing a message, at its anchor (``transcript.message_anchor``)."""
        if where is None:
            return self.session(session_id)
        url = self.session(session_id, start=where["start"], shadowed=where["rewound"], meta=where["meta"], log=where["log"])
        return url + "#" + quote(where["anchor"], safe="")

    def lineage(self, session_id, **query) -> str:
        return urls.lineage_url(self.datasette, session_id, db=self.db, **query)

    def event(self, session_id, seq, **query) -> str:
        return urls.event_url(self.datasette, session_id, seq, db=self.db, **query)

    def api(self, _name: str, *parts, **query) -> str:
        """An API endpoint: ``api('raw', uuid=...)``, ``api('session-query/session', session_id)``."""
        tail = "".join("/" + urls.segment(part) for part in parts)
        return urls.obelisk_url(self.datasette, "/api/" + _name + tail, db=self.db, **query)

    def session_json(self, session_id) -> str:
        """readSession over HTTP, a page at a time: a session of any length answers (whole, one
        past ``READ_SESSION_MAX`` events would not), the page naming its next."""
        return self.api("session-query/session", session_id, limit=READ_PAGE_MAX)

    def raw(self, uuid) -> str | None:
        """The original log line of a message, whole (up to ``MAX_RAW_LIMIT`` characters); None when hidden."""
        return self.api("raw", uuid=uuid, limit=MAX_RAW_LIMIT) if self.raw_shown else None

    def table(self, database: str, table: str, **query) -> str:
        from urllib.parse import urlencode

        url = self.datasette.urls.table(database, table)
        return url + ("?" + urlencode(query) if query else "")

    snippet = staticmethod(snippet_html)

    @staticmethod
    def when(timestamp) -> str:
        """``2026-01-02 03:04`` in UTC from an ISO timestamp, whatever its offset (as given
        when it is not one): a log may write ``+02:00``, the archive's times are UTC."""
        if not timestamp:
            return ""
        text = canonical(str(timestamp)) or str(timestamp)
        return text[:16].replace("T", " ") if len(text) >= 16 and text[4] == "-" else text

    @staticmethod
    def count(n, noun: str, plural: str | None = None) -> str:
        """``1 message``, ``2,048 messages``."""
        n = n or 0
        return f"{n:,} {noun if n == 1 else plural or noun + 's'}"

    @staticmethod
    def pretty_json(text) -> str:
        try:
            return json.dumps(json.loads(text), indent=2, ensure_ascii=False)
        except (TypeError, ValueError, RecursionError):  # (nested deeper than Python goes: as it is)
            return text or ""

    @staticmethod
    def cut(text, full_length=None, limit=None) -> tuple[str, int]:
        """``(the start of text a page shows, how many characters it leaves out)``.

        ``text`` may already be shortened (a tool result read with ``substr``):
        ``full_length`` is then the length of the whole, e.g. ``tool_results.content_length``.
        A page shows at most ``limit`` characters (default ``RESULT_CHARS``).
        """
        text = text or ""
        limit = RESULT_CHARS if limit is None else limit
        shown = text[:limit]
        return shown, max(len(text), full_length or 0) - len(shown)

    @staticmethod
    def external(url) -> str | None:
        """``url`` when a page may link to it: an ``http(s)`` URL naming a host, with no
        whitespace or control character; otherwise None (a log's ``javascript:`` or
        ``data:`` URL is shown as text, never followed)."""
        if not isinstance(url, str) or any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in url):
            return None
        try:
            parts = urlsplit(url)
        except ValueError:
            return None
        return url if parts.scheme.lower() in ("http", "https") and parts.hostname else None

    @staticmethod
    def clip(text, length: int = 300) -> str:
        text = text or ""
        return text if len(text) <= length else text[: length - 1] + "…"

    @staticmethod
    def in_title(text, length: int | None = None) -> str:
        """Log text for a page's ``<title>``: without the controls that change the
        direction of what follows (CSS isolates them in the page, not in a title)."""
        text = (text or "").translate(BIDI_CONTROLS)
        return TemplateHelpers.clip(text, length) if length else text
