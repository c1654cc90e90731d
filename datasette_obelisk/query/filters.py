"""Session and event predicates: validated once, turned into SQL, fingerprinted.

    Filters(...)                      keyword form used by query/search.py
    Filters.from_contract(session_filters, event_filters)
                                      the session-query contract's
                                      ``[{kind: ...}]`` arrays (text excluded)
    filters.session_sql("s")          -> (sql, params) over ``sessions``
    filters.event_sql("m")            -> (sql, params) over ``messages``
    filters.normalized()              -> dict for cursor fingerprints
    ms_sql(column)                    SQL for an ISO column as epoch ms

Lists are ORed within one clause, clauses are ANDed, ranges are inclusive.
An empty list, or two clauses of one kind with no value in common, match
nothing; only a missing list leaves its attribute unconstrained.
``None`` in ``cwds``/``parents`` means "no cwd" / "no parent" (root sessions).
``availability`` holds ``sessions.availability`` states: ``live`` (the
source log file still exists) and ``archived`` (it is gone, the session
survives in the archive). The contract's words map onto them in
``from_contract``: ``live`` admits live sessions, ``persisted`` every stored
one (see ``AVAILABILITY``). Invalid values raise
``SESSION_QUERY_INVALID_FILTER``, as do range bounds that are not finite
numbers SQLite can compare as 64-bit integers (``NaN``, ``Infinity``,
``1e20``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields

from .errors import QueryError
from .events import branch_sql, event_ms_sql, event_type_sql, semantic_sql, speaker_sql, tool_name_sql, tool_sessions_sql
from .text import to_ms

SURFACES = ("current", "shadowed", "log-only")
# Session attributes (the history contract's word) and where they live.
ATTRIBUTES = {
    "source": "{s}.source",
    "repository": "{s}.repository",
    "cwd": "COALESCE({s}.cwd, {s}.project_path)",
    "project": "{s}.project",
    "branch": "{s}.git_branch",
    "model": "{s}.model",
    "relationship": "{s}.relationship",
    "parent": "{s}.parent_session_id",
}
STATES = ("live", "archived")
# The contract's availability words and the states each admits: the archive
# materializes every session it stores, so each one is persisted.
AVAILABILITY = {"live": ("live",), "persisted": STATES}
SESSION_KINDS = ("id", "cwd", "created-at", "parent", "availability")
EVENT_KINDS = ("seq", "time", "type", "surface")
MAX_VALUES = 1000
RANGE_KEYS, VALUES_KEYS = frozenset({"kind", "from", "to"}), frozenset({"kind", "values"})
CLAUSE_KEYS = {
    **dict.fromkeys(("created-at", "seq", "time"), RANGE_KEYS),
    **dict.fromkeys(("id", "cwd", "parent", "availability", "type", "surface"), VALUES_KEYS),
    "text": frozenset({"kind", "text"}),
}
INT64_MAX = 2**63 - 1


def is_int64(value) -> bool:
    """A finite number within SQLite's 64-bit integer range."""
    return math.isfinite(value) and -INT64_MAX <= value <= INT64_MAX


def ms_sql(column: str) -> str:
    return f"CAST(ROUND((julianday({column}) - 2440587.5) * 86400000) AS INTEGER)"


def invalid(message: str) -> QueryError:
    return QueryError("SESSION_QUERY_INVALID_FILTER", message)


def _strings(name: str, values, nullable: bool = False) -> tuple | None:
    if values is None:
        return None
    if isinstance(values, (str, bytes)) or not hasattr(values, "__iter__"):
        values = [values]
    values = list(values)
    if len(values) > MAX_VALUES:
        raise invalid(f"{name}: at most {MAX_VALUES} values")
    for value in values:
        if value is None and nullable:
            continue
        if not isinstance(value, str) or not value:
            raise invalid(f"{name}: values must be non-empty strings{' or null' if nullable else ''}")
    return tuple(sorted(set(values), key=lambda v: (v is not None, v or "")))


def _number(name: str, value):
    """``value`` when it is a number SQLite can compare as an integer."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise invalid(f"{name}: expected a number")
    if not is_int64(value):
        raise invalid(f"{name}: {value!r} is not a finite number from -{INT64_MAX} to {INT64_MAX}")
    return value


def _bound(name: str, value, upper: bool = False) -> int | None:
    """An inclusive bound in epoch ms (``upper``: the range's end)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise invalid(f"{name}: expected a number or an ISO-8601 time")
    if isinstance(value, (int, float)):
        _number(name, value)
        # Times are whole milliseconds: a bound between two admits only the one inside the range.
        return math.floor(value) if upper else math.ceil(value)
    ms = to_ms(value)
    if ms is None:
        raise invalid(f"{name}: expected a number or an ISO-8601 time, got {value!r}")
    return ms


def _seq(name: str, value) -> int | None:
    if value is None:
        return None
    _number(name, value)
    if value != int(value):
        raise invalid(f"{name}: expected an integer")
    return int(value)


def _range(name: str, low, high) -> None:
    if low is not None and high is not None and low > high:
        raise invalid(f"{name}: the range is empty (from > to)")


@dataclass(frozen=True)
class Filters:
    sources: tuple | None = None
    projects: tuple | None = None
    cwds: tuple | None = None
    session_ids: tuple | None = None
    parents: tuple | None = None
    availability: tuple | None = None
    created_from: int | None = None
    created_to: int | None = None
    time_from: int | None = None
    time_to: int | None = None
    seq_from: int | None = None
    seq_to: int | None = None
    types: tuple | None = None
    roles: tuple | None = None
    surfaces: tuple | None = None
    models: tuple | None = None
    branches: tuple | None = None
    tools: tuple | None = None
    include_meta: bool = False
    attributes: tuple | None = None
    semantic_only: bool = False  # only events with semantic text (the session-query search)

    @classmethod
    def build(
        cls,
        *,
        sources=None, projects=None, cwds=None, session_ids=None, parents=None,
        availability=None, created_from=None, created_to=None, time_from=None,
        time_to=None, seq_from=None, seq_to=None, types=None, roles=None,
        surfaces=None, models=None, branches=None, tools=None, include_meta=False, attributes=None,
        semantic_only=False, check_ranges=True,
    ) -> "Filters":
        built = cls(
            sources=_strings("sources", sources),
            projects=_strings("projects", projects),
            cwds=_strings("cwds", cwds, nullable=True),
            session_ids=_strings("session_ids", session_ids),
            parents=_strings("parents", parents, nullable=True),
            availability=_strings("availability", availability),
            created_from=_bound("created_from", created_from),
            created_to=_bound("created_to", created_to, upper=True),
            time_from=_bound("time_from", time_from),
            time_to=_bound("time_to", time_to, upper=True),
            seq_from=_seq("seq_from", seq_from),
            seq_to=_seq("seq_to", seq_to),
            types=_strings("types", types),
            roles=_strings("roles", roles),
            surfaces=_strings("surfaces", surfaces),
            models=_strings("models", models),
            branches=_strings("branches", branches),
            tools=_strings("tools", tools),
            include_meta=bool(include_meta),
            attributes=_attributes(attributes),
            semantic_only=bool(semantic_only),
        )
        for value in built.availability or ():
            if value not in STATES:
                raise invalid(f"availability: {value!r} is not one of {', '.join(STATES)}")
        for value in built.surfaces or ():
            if value not in SURFACES:
                raise invalid(f"surfaces: {value!r} is not one of {', '.join(SURFACES)}")
        if check_ranges:
            _range("created-at", built.created_from, built.created_to)
            _range("time", built.time_from, built.time_to)
            _range("seq", built.seq_from, built.seq_to)
        return built

    @classmethod
    def from_contract(cls, session_filters=None, event_filters=None, include_meta=True, semantic_only=False) -> "Filters":
        options: dict = {"include_meta": include_meta, "semantic_only": semantic_only, "check_ranges": False}
        for clause in _clauses(session_filters, "sessionFilters"):
            kind = clause.get("kind")
            if kind == "created-at":
                _merge_range(options, "created", clause)
            elif kind in ("id", "cwd", "parent"):
                name = {"id": "session_ids", "cwd": "cwds", "parent": "parents"}[kind]
                _merge_values(options, name, _values(clause, kind))
            elif kind == "availability":
                _merge_values(options, "availability", _admitted(_values(clause, kind)))
            else:
                raise invalid(f"sessionFilters: unknown kind {kind!r}; use one of {', '.join(SESSION_KINDS)}")
        for clause in _clauses(event_filters, "eventFilters"):
            kind = clause.get("kind")
            if kind in ("seq", "time"):
                _merge_range(options, kind, clause)
            elif kind in ("type", "surface"):
                _merge_values(options, "types" if kind == "type" else "surfaces", _values(clause, kind))
            elif kind == "text":
                raise invalid("eventFilters: a text scan is not a search filter; use filterEvents for it")
            else:
                raise invalid(f"eventFilters: unknown kind {kind!r}; use one of {', '.join(EVENT_KINDS)}")
        return cls.build(**options)

    def normalized(self) -> dict:
        """Every set field; an empty list stays: it matches nothing, unlike no list."""
        return {
            f.name: list(v) if isinstance(v, tuple) else v
            for f in fields(self)
            if (v := getattr(self, f.name)) is not None
        }

    @property
    def has_event_filters(self) -> bool:
        return any(
            getattr(self, name) is not None
            for name in ("time_from", "time_to", "seq_from", "seq_to", "types", "roles", "surfaces",
                         "models", "branches", "tools")
        ) or not self.include_meta or self.semantic_only

    def session_sql(self, s: str = "s") -> tuple[str, list]:
        where = _Where()
        where.values(f"{s}.source", self.sources)
        if self.projects is not None:  # an empty list matches no session (IN () is false)
            marks = ", ".join("?" * len(self.projects))
            where.add(f"({s}.project IN ({marks}) OR {s}.project_path IN ({marks}))", [*self.projects, *self.projects])
        where.values(f"COALESCE({s}.cwd, {s}.project_path)", self.cwds)
        where.values(f"{s}.id", self.session_ids)
        where.values(f"{s}.parent_session_id", self.parents)
        where.values(f"{s}.availability", self.availability)
        where.bounds(f"COALESCE({ms_sql(f'{s}.started_at')}, 0)", self.created_from, self.created_to)
        for key, op, value in self.attributes or ():
            column = ATTRIBUTES.get(key)
            if column is None:
                where.add("0")  # an attribute no session has
            elif op == "equals":
                where.add(f"{column.format(s=s)} = ?", [value])
            else:
                where.add(f"instr({column.format(s=s)}, ?) > 0", [value])
        if self.tools is not None:  # (only sessions that hold such a call can hold an event of it)
            where.add(f"{s}.id IN ({tool_sessions_sql(len(self.tools))})", [*self.tools, *self.tools])
        # Sessions whose time span cannot overlap the event time range.
        if self.time_from is not None:
            where.add(f"({s}.ended_at IS NULL OR {ms_sql(f'{s}.ended_at')} >= ?)", [self.time_from])
        if self.time_to is not None:
            where.add(f"({s}.started_at IS NULL OR {ms_sql(f'{s}.started_at')} <= ?)", [self.time_to])
        return where.sql(), where.params

    def event_sql(self, m: str = "m") -> tuple[str, list]:
        where = _Where()
        where.bounds(event_ms_sql(m), self.time_from, self.time_to)
        where.bounds(f"{m}.seq", self.seq_from, self.seq_to)
        where.values(event_type_sql(m), self.types)
        where.values(speaker_sql(m), self.roles)
        where.values(f"{m}.surface", self.surfaces)
        where.values(f"{m}.model", self.models)
        where.values(branch_sql(m), self.branches)
        where.values(tool_name_sql(m), self.tools)
        if not self.include_meta:
            where.add(f"{m}.is_meta = 0 AND {m}.visibility != 'hidden'")
        if self.semantic_only:
            where.add(semantic_sql(m))
        return where.sql(), where.params


class _Where:
    def __init__(self):
        self.clauses: list[str] = []
        self.params: list = []

    def add(self, clause: str, params=()) -> None:
        self.clauses.append(clause)
        self.params.extend(params)

    def values(self, column: str, values) -> None:
        if values is None:
            return
        present = [v for v in values if v is not None]
        parts = []
        if present:
            parts.append(f"{column} IN ({', '.join('?' * len(present))})")
        if len(present) < len(values):
            parts.append(f"{column} IS NULL")
        self.add("(" + " OR ".join(parts) + ")" if parts else "0", present)

    def bounds(self, expression: str, low, high) -> None:
        if low is not None:
            self.add(f"{expression} >= ?", [low])
        if high is not None:
            self.add(f"{expression} <= ?", [high])

    def sql(self) -> str:
        return " AND ".join(self.clauses) or "1"


def _attributes(attributes) -> tuple | None:
    """``{key: "exact"}`` / ``{key: {"contains": "part"}}`` as sorted (key, op, value); ``{}`` is none."""
    if attributes is None or attributes == {}:
        return None
    if not isinstance(attributes, dict):
        raise invalid("attributes must be an object")
    found = []
    for key, value in attributes.items():
        if isinstance(value, str):
            found.append((key, "equals", value))
        elif isinstance(value, dict) and set(value) == {"contains"} and isinstance(value["contains"], str):
            found.append((key, "contains", value["contains"]))
        else:
            raise invalid(f"attribute {key!r}: use a string or {{\"contains\": string}}")
    return tuple(sorted(found))


def _clauses(filters, name: str) -> list[dict]:
    if filters is None:
        return []
    if not isinstance(filters, (list, tuple)):
        raise invalid(f"{name} must be an array of filter clauses")
    for clause in filters:
        if not isinstance(clause, dict):
            raise invalid(f"{name}: every clause must be an object with a kind")
        keys = CLAUSE_KEYS.get(clause.get("kind")) if isinstance(clause.get("kind"), str) else None
        if keys is not None and not set(clause) <= keys:  # a misspelt "from" would drop the bound
            unknown = ", ".join(sorted(map(str, set(clause) - keys)))
            raise invalid(f"{name}: a {clause['kind']} clause has no {unknown}; its keys are {', '.join(sorted(keys))}")
    return list(filters)


def _values(clause: dict, kind: str) -> list:
    values = clause.get("values")
    if not isinstance(values, (list, tuple)):
        raise invalid(f"{kind}: values must be an array")
    if not all(value is None or isinstance(value, str) for value in values):
        raise invalid(f"{kind}: values must be strings")
    return list(values)


def _admitted(words: list) -> list:
    """The states any of a clause's availability words admits."""
    for word in words:
        if word not in AVAILABILITY:
            raise invalid(f"availability: {word!r} is not one of {', '.join(AVAILABILITY)}")
    return [state for state in STATES if any(state in AVAILABILITY[word] for word in words)]


def _merge_values(options: dict, name: str, values: list) -> None:
    if name in options:  # two clauses of one kind are ANDed: keep the intersection
        keep = set(options[name]) & set(values)
        options[name] = [v for v in options[name] if v in keep]
    else:
        options[name] = values


def _merge_range(options: dict, prefix: str, clause: dict) -> None:
    kind = clause.get("kind")
    low, high = clause.get("from"), clause.get("to")
    for end, value in (("from", low), ("to", high)):
        if value is not None:
            _number(f"{kind}: {end}", value)
    _range(kind, low, high)
    lows = [v for v in (options.get(f"{prefix}_from"), low) if v is not None]
    highs = [v for v in (options.get(f"{prefix}_to"), high) if v is not None]
    options[f"{prefix}_from"] = max(lows) if lows else None
    options[f"{prefix}_to"] = min(highs) if highs else None
