"""Highlighting that can never inject HTML.

The query layer returns plain text and ``[start, end)`` offsets of the
matches in it. Every piece of the text is escaped on its own and only our
``<mark>`` tags are put between the pieces.
"""

from __future__ import annotations

from markupsafe import Markup, escape


def mark(text: str | None, spans=()) -> Markup:
    """``text`` escaped, with each ``[start, end)`` span wrapped in ``<mark>``."""
    text = text or ""
    pieces = []
    cursor = 0
    for start, end in sorted(spans or ()):
        start, end = max(start, cursor), min(end, len(text))
        if start >= end:
            continue
        pieces.append(escape(text[cursor:start]))
        pieces.append(Markup("<mark>") + escape(text[start:end]) + Markup("</mark>"))
        cursor = end
    pieces.append(escape(text[cursor:]))
    return Markup("").join(pieces)


def snippet_html(snippet: dict | None) -> Markup:
    """A query-layer snippet (``{"text", "matches"}``) as safe HTML."""
    snippet = snippet or {}
    return mark(snippet.get("text"), snippet.get("matches"))
