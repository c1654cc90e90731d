"""The search page's state: read from the query string, written back into links.

Facet values are repeated parameters (``?source=claude&source=codex``,
ORed); ``from`` / ``to`` are days (``YYYY-MM-DD``, inclusive). Every link
the page draws (facet value, filter chip, next page) is this state with
one change, so the page works without JavaScript.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import date
from urllib.parse import urlencode

from ..query.errors import QueryError
from .params import INVALID
from .params import _integer as integer

LIST_FIELDS = ("source", "project", "branch", "model", "role", "tool")
FACET_LABELS = {
    "source": "Source", "project": "Project", "branch": "Branch", "model": "Model",
    "role": "Role", "tool": "Tool", "day": "Date",
}
PAGE_SIZE = 20
RECENT_PAGE = 15  # sessions listed a page before a query, unless ``limit`` says how many
RECENT_PAGE_CHOICES = (15, 50, 200, 1000)  # the page sizes the page offers (``limit`` takes any from 1 to 1,000)
MAX_RECENT_PAGE = 1000  # as the failures page's limit, and the helpers' (obelisk.MAX_LIMIT)
FACET_VALUES = 8  # shown per facet; "more" shows up to MORE_FACET_VALUES of one
MORE_FACET_VALUES = 100
DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")  # (date.fromisoformat also reads 2026-W01-1 and 20260101…)


@dataclass(frozen=True)
class SearchForm:
    query: str = ""
    mode: str = "terms"
    lists: dict = field(default_factory=dict)  # facet name -> tuple of values
    day_from: str | None = None
    day_to: str | None = None
    cursor: str | None = None
    db: str | None = None
    more: str | None = None  # the facet shown with all its values (up to MORE_FACET_VALUES)
    limit: int = PAGE_SIZE
    recent_limit: str | None = None  # ``limit`` as given: how many sessions a page lists before a query

    @classmethod
    def from_params(cls, params) -> "SearchForm":
        return cls(
            query=(params.text("q") or "").strip(),
            mode=params.text("mode", "terms").strip().lower(),  # (in any case, as /api/search reads it)
            lists={name: tuple(params.texts(name)) for name in LIST_FIELDS if params.texts(name)},
            day_from=params.text("from"),
            day_to=params.text("to"),
            cursor=params.text("cursor"),
            db=params.text("db"),
            more=params.text("more") if params.text("more") in FACET_LABELS else None,
            recent_limit=params.text("limit") or None,
        )

    def recent_page(self) -> int:
        """How many sessions a page lists before a query: ``limit`` (1 to 1,000), else 15.
        (Checked here, not when the form is read, so a refused one is corrected in place.)"""
        if self.recent_limit is None:
            return RECENT_PAGE
        return integer("limit", self.recent_limit, INVALID, 1, MAX_RECENT_PAGE)

    def recent_page_choices(self) -> list[dict]:
        """The page sizes offered, each a link to this list at that size, from where it is."""
        size = self.recent_page()
        return [{"size": n, "current": n == size,
                 "url": self.query_string(recent_limit=None if n == RECENT_PAGE else str(n))}
                for n in RECENT_PAGE_CHOICES]

    # -- what the query layer gets ------------------------------------------

    def filter_options(self) -> dict:
        options = {}
        for name, option in (("source", "sources"), ("project", "projects"), ("role", "roles")):
            if self.lists.get(name):
                options[option] = list(self.lists[name])
        if self.day_from:
            options["time_from"] = f"{day('from', self.day_from)}T00:00:00.000Z"
        if self.day_to:
            options["time_to"] = f"{day('to', self.day_to)}T23:59:59.999Z"
        return options

    def narrowing(self) -> dict:
        return {name: list(self.lists[name]) for name in ("branch", "model", "tool") if self.lists.get(name)}

    def per_facet(self) -> int:
        """How many values of each facet to count: one past those shown, to know whether more exist."""
        return (MORE_FACET_VALUES if self.more else FACET_VALUES) + 1

    def every_session(self, limit: int = 1000) -> dict | None:
        """The ``obelisk_sessions`` stored query's parameters that list every session these
        filters select, ``limit`` rows (as many as it shows at once); None when it cannot: it takes one
        source, and its other filters differ from the page's (a project there is a LIKE
        pattern, a branch the session's own, days the day a session started where the page
        takes any session active on them; it has no model, role or tool), so the page's
        own pager lists those."""
        chosen = {name: values for name, values in self.lists.items() if values}
        if self.day_from or self.day_to or set(chosen) - {"source"} or len(chosen.get("source", ())) > 1:
            return None
        return {**({"source": chosen["source"][0]} if chosen else {}), "limit": limit}

    def every_session_label(self) -> str:
        """What the "every session" link is narrowed to: its source."""
        return (self.every_session() or {}).get("source") or ""

    # -- links -----------------------------------------------------------

    def query_string(self, **changes) -> str:
        state = replace(self, **changes)
        pairs = [("q", state.query)]
        if state.mode != "terms":
            pairs.append(("mode", state.mode))
        for name in LIST_FIELDS:
            pairs += [(name, value) for value in state.lists.get(name, ())]
        pairs += [("from", state.day_from), ("to", state.day_to), ("cursor", state.cursor), ("more", state.more),
                  ("limit", state.recent_limit), ("db", state.db)]
        return "?" + urlencode([(k, v) for k, v in pairs if v])

    def with_value(self, name: str, value, on: bool) -> str:
        """The link that adds (``on``) or removes one facet value, back on page one."""
        if name == "day":
            day = value if on else None
            return self.query_string(day_from=day, day_to=day, cursor=None)
        values = [v for v in self.lists.get(name, ()) if v != value] + ([value] if on else [])
        return self.query_string(lists={**self.lists, name: tuple(values)}, cursor=None)

    def chips(self) -> list[dict]:
        """Each active filter with the link that removes it."""
        found = [
            {"label": f"{FACET_LABELS[name]}: {value}", "url": self.with_value(name, value, False)}
            for name in LIST_FIELDS
            for value in self.lists.get(name, ())
        ]
        if self.day_from or self.day_to:
            span = self.day_from if self.day_from == self.day_to else f"{self.day_from or '…'} – {self.day_to or '…'}"
            found.append({"label": f"Date: {span}", "url": self.query_string(day_from=None, day_to=None, cursor=None)})
        return found

    def facet_links(self, facets: dict, uncounted=()) -> list[dict]:
        """Facets in display order, each value with its count and toggle link, and
        the link that shows more of a facet's values (``more``) or fewer again (``fewer``).
        A facet ``uncounted`` (its count ran out of time) shows its chosen values, uncounted."""
        shown = []
        for name, label in FACET_LABELS.items():
            selected = set(self.lists.get(name, ())) if name != "day" else {self.day_from} & {self.day_to}
            limit = MORE_FACET_VALUES if name == self.more else FACET_VALUES
            if name in uncounted:
                shown.append({
                    "name": name, "label": label, "uncounted": True, "more": None, "fewer": None,
                    "values": [{"value": value, "count": None, "selected": True, "url": self.with_value(name, value, False)}
                               for value in sorted(selected - {None})],
                })
                continue
            found = facets.get(name, [])
            values = [
                {
                    "value": item["value"],
                    "count": item["count"],
                    "selected": item["value"] in selected,
                    "url": self.with_value(name, item["value"], item["value"] not in selected),
                }
                for item in found[:limit] + [item for item in found[limit:] if item["value"] in selected]
            ]
            if values:
                shown.append({
                    "name": name, "label": label, "values": values,
                    "more": self.query_string(more=name) if len(found) > limit and name != self.more else None,
                    "fewer": self.query_string(more=None) if name == self.more and len(found) > FACET_VALUES else None,
                })
        return shown


def day(name: str, value: str) -> str:
    """``value`` when it is a day written ``YYYY-MM-DD``, else OBELISK_INVALID_ARGUMENT."""
    try:
        if DAY.fullmatch(value) and date.fromisoformat(value):
            return value
    except ValueError:
        pass
    raise QueryError("OBELISK_INVALID_ARGUMENT", f"{name} must be a day written YYYY-MM-DD, not {value!r}")
