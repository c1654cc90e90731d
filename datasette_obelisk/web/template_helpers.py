"""What templates may call: links that keep ``?db=``, safe snippets, small formatting."""

from __future__ import annotations

import json
import re
from functools import partial
from urllib.parse import quote, urlsplit

from markupsafe import Markup, escape

from ..query.obelisk import MAX_RAW_LIMIT
from ..query.session_query import READ_PAGE_MAX
from ..query.transcript import RESULT_CHARS
from . import urls
from ..utc import canonical
from .highlight import snippet_html


CANONICAL_UTC = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\.[0-9]{3}Z")
SHOWN_TIME = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2} [0-9]{2}:[0-9]{2}")  # as ``when`` writes a time
BIDI_CONTROLS = dict.fromkeys([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])


class TemplateHelpers:
    def __init__(self, datasette, db: str | None, raw_shown: bool = True, request=None):
        self.datasette = datasette
        self.db = db
        self.raw_shown = raw_shown  # False where the actor may not view source_files: /api/raw would refuse
        self.request = request  # (the page's: a plugin may give it a template environment of its own)
        self.raws: dict = {}
        # (what every link of a page starts with, encoded once: a transcript page builds some 1,500)
        self.root = str(datasette.urls.path(urls.ROOT))

    def fragment(self, template: str, **context) -> Markup:
        """``template`` rendered at once with ``context`` and these helpers (``ob``), for a page
        to include: a page is rendered asynchronously, each value and call awaited, which cost a
        transcript of 500 entries several times its rendering as one synchronous pass."""
        environment = synchronous(self.datasette.get_jinja_environment(self.request))
        return Markup(environment.get_template(template).render(ob=self, **context))

    def page(self, _where: str = "", **query) -> str:
        """A page of ours: ``page('/files', path=...)``; ``urls.obelisk_url`` with ``db``."""
        return urls.with_query(self.root + _where, query if self.db is None else {"db": self.db, **query})

    def session(self, session_id, **query) -> str:
        return self.page(urls.session_path(session_id), **query)

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
        return self.page(urls.lineage_path(session_id), **query)

    def event(self, session_id, seq, **query) -> str:
        return self.page(urls.event_path(session_id, seq), **query)

    def api(self, _name: str, *parts, **query) -> str:
        """An API endpoint: ``api('raw', uuid=...)``, ``api('session-query/session', session_id)``."""
        tail = "".join("/" + urls.segment(part) for part in parts)
        return self.page("/api/" + _name + tail, **query)

    def session_json(self, session_id) -> str:
        """readSession over HTTP, a page at a time: a session of any length answers (whole, one
        past ``READ_SESSION_MAX`` events would not), the page naming its next."""
        return self.api("session-query/session", session_id, limit=READ_PAGE_MAX)

    def raw(self, uuid) -> str | None:
        """The original log line of a message, whole (up to ``MAX_RAW_LIMIT`` characters); None when hidden.
        (Built once per message: a transcript entry links it for its text, its calls and itself.)"""
        if not self.raw_shown:
            return None
        if uuid not in self.raws:
            self.raws[uuid] = self.api("raw", uuid=uuid, limit=MAX_RAW_LIMIT)
        return self.raws[uuid]

    def text(self, value, raw=None, tag="div", css="ob-text", length=None, limit=None) -> Markup:
        """A log's text in a ``tag`` of class ``css``: the part ``cut`` shows, escaped, then how
        many characters it leaves out, with a link to the line they are on (``raw``) when any.
        (The ``text`` macro of ``_text.html``: escaped once, not value by value in a macro.)"""
        shown, more = self.cut(value, length, limit)
        tag = escape(tag)
        if not more:
            return Markup(f'<{tag} class="{escape(css)}">{escape(shown)}</{tag}>')
        link = f' (see <a href="{escape(raw)}">raw</a>)' if raw else ""
        return Markup(f'<{tag} class="{escape(css)}">{escape(shown)}'
                      f'<span class="ob-muted ob-more"> … {more:,} more characters{link}</span></{tag}>')

    def tool_input(self, input_json, message_uuid, raw: bool = True) -> Markup:
        """A call's input as indented JSON (``text`` in a ``pre``); ``raw`` false: no link to its line."""
        return self.text(self.pretty_json(input_json), self.raw(message_uuid) if raw else None, "pre", "ob-pre")

    def tool_result(self, output, length, message_uuid, limit=None, raw: bool = True) -> Markup:
        """A call's output, ``length`` characters long in all (``text`` in a ``pre``)."""
        return self.text(output, self.raw(message_uuid) if raw else None, "pre", "ob-pre", length, limit)

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
        text = str(timestamp)
        if not CANONICAL_UTC.fullmatch(text):  # (stored times are: nothing to convert)
            text = canonical(text) or text
        return text[:16].replace("T", " ") if len(text) >= 16 and text[4] == "-" else text

    @classmethod
    def when_utc(cls, timestamp) -> str:
        """``when``, saying ``UTC`` after a time, for a list with no column heading to say it."""
        shown = cls.when(timestamp)
        return f"{shown} UTC" if SHOWN_TIME.fullmatch(shown) else shown  # ("yesterday", as a log wrote it, is no UTC time)

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


def synchronous(environment):
    """A synchronous copy of a (Datasette's asynchronous) template environment: the same loader,
    filters and globals, templates compiled and cached apart; made once per environment."""
    copy = environment.__dict__.get("_obelisk_synchronous")
    if copy is None:
        # (a cache of its own: the overlay would otherwise start with the asynchronous compilations)
        copy = environment.overlay(enable_async=False, cache_size=400)
        copy.getattr = partial(item_first, copy)
        environment._obelisk_synchronous = copy
    return copy


DICT_ATTRIBUTES = frozenset(dir(dict))


def item_first(environment, obj, attribute):
    """``environment.getattr``: ``obj.attribute`` in a template, quicker for a row or an entry.
    Jinja tries the attribute first, then the item; a dict has no attribute but its methods,
    so its item is looked up at once (no ``AttributeError`` raised and caught per value)."""
    if type(obj) is dict and attribute not in DICT_ATTRIBUTES:
        try:
            return obj[attribute]
        except KeyError:
            return environment.undefined(obj=obj, name=attribute)
    return type(environment).getattr(environment, obj, attribute)
