"""Messages as events: the event type vocabulary and the row shapes.

Every ``messages`` row is one event of its session, ordered by ``seq``. Its
``type`` is derived from the row, in this order of precedence:

=====================  ========================================================
``compaction/summary``  the summary a compaction put in place of older context
``tool/call``          a tool-use line (``content_type = 'tool_use'``)
``tool/result``        a tool-result line (``content_type = 'tool_result'``)
``assistant/reasoning`` thinking / reasoning text
``<role>/message``     any other conversation line: ``user/message``,
                       ``assistant/message``, ``system/message``, ...
``<type>/<subtype>``   a structural line (``surface = 'log-only'``), e.g.
                       ``system/compact_boundary``, ``progress/agent_progress``
``<type>``             a structural line without a subtype
=====================  ========================================================

A ``<type>`` here is a *kind*: one the built-in parsers write (``BUILT_IN_KINDS``) or
one a stored row has; a type filter naming another (``tool/cal``, ``summry``) is refused
by the session-query contract (``unknown_kind``), with the types it may have meant. So is
one naming a subtype no event of its kind can have (``system/compact_boundry``:
``unknown_subtype``): one its parser neither gives nor reads (``KNOWN_SUBTYPES``), nor, for
a kind whose subtypes are its log's own words (``OPEN_KINDS``) or a plugin's kind, one a
stored row has.

The same expression (``event_type_sql``) computes the type in SQL filters and
in results, so a ``type`` filter always agrees with what is returned; so
does ``event_time_sql`` for ``time``, which gives a line written without a
timestamp the time of the nearest event before it.

Semantic text (the ``text`` of a search document) is the contract's:
messages, reasoning, tool calls and results, and failure or status details
contribute; structural events and stream chunks do not. Here it is the text
of every conversation event and of the log-only events in ``DETAIL_TYPES``;
other log-only events (boundaries, hooks, accounting, rewind markers,
progress) have none. The session-query search looks only at events with
semantic text (``semantic_sql``), so it finds what a text scan finds.
"""

from __future__ import annotations

import difflib

from ..sources import claude_code, codex, gemini
from .moments import moment_sql

# Log-only events whose text is semantic: failures and status notices (a
# hook that blocked a prompt or a call, or failed; a Codex undo that did or
# did not work), todo lists (a Claude Code todo or task reminder, a Codex plan), a Codex
# review, a prompt queued while the agent was busy, a background task's status,
# and the whole of a tool's output that Claude Code saved to a file of its own
# (its result holds the start).
DETAIL_TYPES = (
    # Claude Code
    "system/api_error", "system/api_refusal", "system/error", "system/model_refusal_fallback",
    "attachment/queued_command", "attachment/hook_blocking_error", "attachment/hook_non_blocking_error",
    "attachment/todo_reminder", "attachment/task_reminder", "attachment/task_status", "tool_output",
    # Codex
    "event_msg/error", "event_msg/warning", "event_msg/turn_aborted", "event_msg/item_completed",
    "event_msg/entered_review_mode", "event_msg/exited_review_mode", "event_msg/undo_completed",
    # Gemini CLI notices
    "error", "warning", "info",
)

EVENT_COLUMNS = (
    "id uuid session_id seq type subtype role content_type is_meta is_compact_summary "
    "surface visibility timestamp replaced_by parent_uuid"
).split()


def event_type_sql(alias: str = "m") -> str:
    a = alias
    return (
        f"(CASE WHEN {a}.is_compact_summary THEN 'compaction/summary' "
        f"WHEN {a}.surface != 'log-only' AND {a}.content_type = 'tool_use' THEN 'tool/call' "
        f"WHEN {a}.surface != 'log-only' AND {a}.content_type = 'tool_result' THEN 'tool/result' "
        f"WHEN {a}.surface != 'log-only' AND {a}.content_type = 'thinking' THEN 'assistant/reasoning' "
        f"WHEN {a}.surface != 'log-only' AND {a}.role IS NOT NULL THEN {a}.role || '/message' "
        f"WHEN {a}.subtype IS NOT NULL THEN {a}.type || '/' || {a}.subtype "
        f"ELSE {a}.type END)"
    )


# Who can speak in an event (``speaker_sql``): the roles the sources store (Codex's
# ``developer`` and ``system`` items among them) and ``tool`` for a tool's output.
SPEAKERS = ("user", "assistant", "system", "developer", "tool")


# A role beyond ``SPEAKERS`` (a source plugin's own, or an odd one a log wrote) is held by
# few rows, and the partial index ``messages_other_role`` (m060) holds those alone: a lookup
# whose WHERE says this same condition reads that index, not every message.
OTHER_ROLE_SQL = "role NOT IN (" + ", ".join(f"'{role}'" for role in SPEAKERS) + ")"
# A structural line whose subtype is ``message`` has a type of the ``<role>/message`` form too;
# none is known yet, and the partial index ``messages_message_lines`` (m060) would hold them.
MESSAGE_LINES_SQL = "surface = 'log-only' AND subtype = 'message'"


def stored_role(conn, role: str) -> bool:
    """Whether an event can have ``role`` as its speaker: one of ``SPEAKERS``, or a role a
    stored message holds (read from ``messages_other_role``, never by scanning messages)."""
    if role in SPEAKERS:
        return True
    found = conn.execute(f"SELECT 1 FROM messages WHERE role = ? AND {OTHER_ROLE_SQL} LIMIT 1", [role])
    return found.fetchone() is not None


def unknown_message_type(conn, event_type: str) -> str | None:
    """The role of a ``<role>/message`` type that no event can have (``usr/message``,
    ``User/message``): neither a speaker nor a stored role, nor the type of a stored
    structural line; None for any other type."""
    role, slash, subtype = event_type.rpartition("/")
    if not slash or subtype != "message" or stored_role(conn, role):
        return None
    found = conn.execute(f"SELECT 1 FROM messages WHERE type = ? AND {MESSAGE_LINES_SQL} LIMIT 1", [role])
    return role if found.fetchone() is None else None


# The types a conversation event has whatever its log called it (``event_type_sql``), besides
# ``<role>/message``.
DERIVED_TYPES = ("compaction/summary", "tool/call", "tool/result", "assistant/reasoning")
# The kinds (a structural line's ``<kind>/<subtype>`` or ``<kind>``: the ``type`` column) the
# built-in parsers write: Claude Code's line types, Codex's rollout items, Gemini CLI's record
# types and the markers it is given here. Another kind is a source plugin's own, or a line
# type a newer agent writes; the partial index ``messages_other_kind`` (m061) holds the few rows
# of one, so a lookup saying this same condition reads that index, not every message.
BUILT_IN_KINDS = (
    "assistant", "attachment", "progress", "queue-operation", "system", "tool_output", "user",
    "compacted", "event_msg", "inter_agent_communication", "response_item",
    "compaction", "error", "gemini", "info", "rewind", "tool_result", "unknown", "warning",
)
OTHER_KIND_SQL = "type NOT IN (" + ", ".join(f"'{kind}'" for kind in BUILT_IN_KINDS) + ")"
# The built-in kinds whose subtypes are their logs' own words (Claude Code's system, attachment
# and progress lines, ...): a subtype of one is known when a parser names it or a stored row has
# it. Any other built-in kind's subtypes are those its parser gives (``KNOWN_SUBTYPES``), or it
# has none. The rows holding a subtype of an open kind or of a kind not built in (a source
# plugin's, whose subtypes are open too) are indexed apart (``messages_open_subtypes``, m062),
# a few of every message; a lookup saying ``OPEN_SUBTYPE_SQL`` reads that index.
OPEN_KINDS = claude_code.LOG_SUBTYPED
KNOWN_SUBTYPES: dict[str, frozenset] = {}
for _kind, _subtypes in (
    *(item for given in (claude_code.SUBTYPES, codex.SUBTYPES, gemini.SUBTYPES) for item in given.items()),
    *((kind, frozenset({sub})) for kind, _, sub in (name.partition("/") for name in DETAIL_TYPES) if sub),
):
    KNOWN_SUBTYPES[_kind] = KNOWN_SUBTYPES.get(_kind, frozenset()) | _subtypes
OPEN_SUBTYPE_SQL = "subtype IS NOT NULL AND type NOT IN (" + ", ".join(
    f"'{kind}'" for kind in BUILT_IN_KINDS if kind not in OPEN_KINDS) + ")"
# At most this many stored subtypes of a kind are read to offer one in place of a misspelt one.
MAX_STORED_SUBTYPES = 500
# How like a known type (or kind) a misspelt one must be to be offered in its place.
NEAR = 0.75


def stored_kinds(conn) -> list[str]:
    """The kinds stored rows have beyond ``BUILT_IN_KINDS`` (read from ``messages_other_kind``)."""
    return [kind for (kind,) in conn.execute(f"SELECT DISTINCT type FROM messages WHERE {OTHER_KIND_SQL} ORDER BY type")]


def stored_kind(conn, kind: str) -> bool:
    """Whether a stored row has ``kind``, one not built in (read from ``messages_other_kind``)."""
    found = conn.execute(f"SELECT 1 FROM messages WHERE type = ? AND {OTHER_KIND_SQL} LIMIT 1", [kind])
    return found.fetchone() is not None


def stored_subtype(conn, kind: str, subtype: str) -> bool:
    """Whether a stored row of ``kind`` (an open one, or one not built in) has ``subtype``
    (read from ``messages_open_subtypes``)."""
    found = conn.execute(
        f"SELECT 1 FROM messages WHERE type = ? AND subtype = ? AND {OPEN_SUBTYPE_SQL} LIMIT 1", [kind, subtype])
    return found.fetchone() is not None


def stored_subtypes(conn, kind: str) -> list[str]:
    """The subtypes stored rows of ``kind`` (an open one, or one not built in) have, in order
    (at most ``MAX_STORED_SUBTYPES``): one step of ``messages_open_subtypes`` each, not a read of
    every row of the kind."""
    found: list[str] = []
    while len(found) < MAX_STORED_SUBTYPES:
        (subtype,) = conn.execute(
            f"SELECT MIN(subtype) FROM messages WHERE type = ? AND subtype > ? AND {OPEN_SUBTYPE_SQL}",
            [kind, found[-1] if found else ""]).fetchone()
        if subtype is None:
            break
        found.append(subtype)
    return found


def kind_subtypes(kind: str) -> tuple[frozenset, bool]:
    """The subtypes named for ``kind`` (``KNOWN_SUBTYPES``), and whether it has others: an open
    kind's or a kind not built in, whatever their stored rows have."""
    return KNOWN_SUBTYPES.get(kind, frozenset()), kind in OPEN_KINDS or kind not in BUILT_IN_KINDS


def unknown_subtype(conn, event_type: str) -> tuple[str, str] | None:
    """The kind and subtype of a ``<kind>/<subtype>`` type whose kind is known (``unknown_kind``
    tells) but whose subtype no event of it can have (``system/compact_boundry``,
    ``compaction/summry``): none the parsers give that kind (``KNOWN_SUBTYPES``) nor, for an
    open kind or one not built in, one a stored row has. None for any other type. A kind not
    built in may hold a ``/``: the type is known when any reading of it is."""
    _, slash, last = event_type.rpartition("/")
    if not slash or event_type in DERIVED_TYPES or last == "message":
        return None
    parts = event_type.split("/")
    first = None
    for n in range(1, len(parts)):
        kind, subtype = "/".join(parts[:n]), "/".join(parts[n:])
        named, open_ = kind_subtypes(kind)
        if subtype in named or (open_ and stored_subtype(conn, kind, subtype)):
            return None
        if first is None and (kind in BUILT_IN_KINDS or stored_kind(conn, kind)):
            first = (kind, subtype)
    if event_type not in BUILT_IN_KINDS and stored_kind(conn, event_type):
        return None
    return first


def near_subtypes(conn, kind: str, subtype: str) -> list[str]:
    """The types of ``kind`` a misspelt ``subtype`` may have been meant as (at most two, nearest
    first): a subtype named for it or stored, spelt in another case or nearly."""
    named, open_ = kind_subtypes(kind)
    known = sorted(named | set(stored_subtypes(conn, kind) if open_ else ()))
    same = [name for name in known if name.casefold() == subtype.casefold()]
    scores = {name: difflib.SequenceMatcher(None, subtype.casefold(), name.casefold()).ratio() for name in known}
    near = same or sorted((name for name in known if scores[name] >= NEAR), key=lambda name: (-scores[name], name))
    return [f"{kind}/{name}" for name in near[:2]]


def unknown_kind(conn, event_type: str) -> bool:
    """Whether no event can have ``event_type`` for its kind (``tool/cal``, ``summry``,
    ``System/error``): it is none of ``DERIVED_TYPES``, no ``<role>/message`` (which
    ``unknown_message_type`` tells), and its kind (what comes before a ``/``) is neither built in
    nor a stored row's. Its subtype is ``unknown_subtype``'s to check."""
    _, slash, last = event_type.rpartition("/")
    if event_type in DERIVED_TYPES or (slash and last == "message"):
        return False
    parts = event_type.split("/")
    if parts[0] in BUILT_IN_KINDS:
        return False
    kinds = ["/".join(parts[:n]) for n in range(1, len(parts) + 1)]  # (a plugin's kind may hold a /)
    return not any(stored_kind(conn, kind) for kind in kinds)


def near_types(conn, event_type: str) -> list[str]:
    """The types ``event_type`` may have been meant as (at most two, nearest first): a derived
    type or a role's message it spells in another case or nearly (``tool/cal``: tool/call), or
    whose last part or kind it spells (``summry``: compaction/summary; ``tool``: tool/call or
    tool/result), or the same type of a kind it nearly spells (``atachment/file``: attachment/file;
    ``note/v3``: note/v2, a plugin's kind holding a /)."""
    slash = "/" in event_type
    named = (*DERIVED_TYPES, *(f"{role}/message" for role in SPEAKERS))
    same = [name for name in named if name.casefold() == event_type.casefold()]
    if same:
        return same
    compared = []  # (a known name, the type offered for it, what of event_type is compared with it)
    for name in named:
        compared.append((name, name, event_type))
    for name in DERIVED_TYPES:
        head, _, last = name.partition("/")
        compared.append((last, name, event_type))
        if not slash:
            compared.append((head, name, event_type))
    parts = event_type.split("/")
    for known in (*BUILT_IN_KINDS, *stored_kinds(conn)):
        held = known.count("/") + 1  # (a plugin's kind may hold a /: as many parts are compared)
        compared.append((known, "/".join([known, *parts[held:]]), "/".join(parts[:held])))
    scores: dict[str, float] = {}
    for name, offered, probe in compared:
        score = difflib.SequenceMatcher(None, probe.casefold(), name.casefold()).ratio()
        if score >= NEAR and offered != event_type:
            scores[offered] = max(score, scores.get(offered, 0))
    return sorted(scores, key=lambda offered: (-scores[offered], offered))[:2]


def speaker_sql(alias: str = "m") -> str:
    """Who speaks in an event: its role, except ``tool`` for a tool's output
    (logged as a ``user`` line by Claude Code)."""
    return f"(CASE WHEN {alias}.content_type = 'tool_result' THEN 'tool' ELSE {alias}.role END)"


def tool_name_sql(alias: str = "m") -> str:
    """The tool an event calls, or whose result it holds."""
    a = alias
    return (
        f"COALESCE((SELECT c.name FROM tool_calls c WHERE c.message_uuid = {a}.uuid LIMIT 1),"
        f" (SELECT c.name FROM tool_results r JOIN tool_calls c ON c.id = r.tool_use_id"
        f"  WHERE r.message_uuid = {a}.uuid LIMIT 1))"
    )


def tool_sessions_sql(count: int) -> str:
    """The sessions holding a call of one of ``count`` tool names (each a ``?``; the names
    are given twice), or the result of one: every session ``tool_name_sql`` can find an
    event of, found through the index of the names (``tool_calls_name``, m060) rather than
    by asking each event of every session for its tool."""
    marks = ", ".join("?" * count)
    return (
        f"SELECT c.session_id FROM tool_calls c WHERE c.name IN ({marks}) UNION "
        f"SELECT r.session_id FROM tool_calls c JOIN tool_results r ON r.tool_use_id = c.id WHERE c.name IN ({marks})"
    )


def branch_sql(alias: str = "m", session: str | None = None) -> str:
    """The git branch an event was written on: its own, else its session's
    (``session`` is the alias of its joined ``sessions`` row, if any)."""
    sessions_branch = f"{session}.git_branch" if session else f"(SELECT b.git_branch FROM sessions b WHERE b.id = {alias}.session_id)"
    return f"COALESCE(NULLIF({alias}.git_branch, ''), {sessions_branch})"


def event_time_sql(alias: str = "m") -> str:
    """The event's timestamp; for a line written without one (or with one that
    is no time: a log's ``[trimmed]`` placeholder), the nearest earlier event's,
    else the nearest later one's, else the session's start. (In a log without
    any, ``time`` is 0, as the session's ``createdAt``.)"""
    a = alias
    near = (
        "(SELECT t.timestamp FROM messages t WHERE t.session_id = {a}.session_id "
        f"AND t.seq {{op}} {{a}}.seq AND {moment_sql('t.timestamp')} IS NOT NULL ORDER BY t.seq {{order}} LIMIT 1)"
    )
    return (
        f"COALESCE(CASE WHEN {moment_sql(f'{a}.timestamp')} IS NOT NULL THEN {a}.timestamp END, "
        f"{near.format(a=a, op='<', order='DESC')}, {near.format(a=a, op='>', order='ASC')}, "
        f"(SELECT s.started_at FROM sessions s WHERE s.id = {a}.session_id))"
    )


def event_ms_sql(alias: str = "m") -> str:
    """The event's ``time`` in epoch ms (0 when it has none), one expression for records,
    search hits and ``time`` filters, so that a filter matches the time a record shows
    (SQLite rounds a fraction past the millisecond half up)."""
    return f"COALESCE(CAST(ROUND((julianday({event_time_sql(alias)}) - 2440587.5) * 86400000) AS INTEGER), 0)"


def event_select(alias: str = "m", text: bool = False) -> str:
    """The columns ``event_record`` and ``full_event`` read (``timestamp`` as ``event_time_sql``,
    ``time_ms`` as ``event_ms_sql``)."""
    columns = [f"{alias}.{c}" for c in EVENT_COLUMNS if c != "timestamp"]
    columns.append(f"{event_time_sql(alias)} AS timestamp")
    columns.append(f"{event_ms_sql(alias)} AS time_ms")
    columns.append(f"{event_type_sql(alias)} AS event_type")
    if text:
        columns.append(f"{alias}.text AS text")
    return ", ".join(columns)


def semantic_sql(alias: str = "m") -> str:
    """SQL true for an event whose text is semantic (see ``semantic_text``)."""
    types = ", ".join(f"'{name}'" for name in DETAIL_TYPES)
    return f"({alias}.surface != 'log-only' OR {event_type_sql(alias)} IN ({types}))"


def semantic_text(row) -> str:
    """The event's text, or "" for a structural event (``row`` has ``event_type``)."""
    if row["surface"] == "log-only" and row["event_type"] not in DETAIL_TYPES:
        return ""
    return row["text"] or ""


def event_record(row) -> dict:
    """The contract's ``SessionEventRecord``, and the event's ``id`` (an extension): the
    message's uuid, which names the same event when an ingest appends to, renumbers or
    reads again its session's log, where ``seq`` is only its place in the log as it is now."""
    return {
        "sessionId": row["session_id"],
        "seq": row["seq"],
        "id": row["uuid"],
        "type": row["event_type"],
        "time": row["time_ms"],
        "surface": row["surface"],
    }


def full_event(row, tools: dict | None = None) -> dict:
    """A ``SessionEvent``: the record (its id included) plus the row's payload."""
    event = event_record(row)
    event.update(
        {
            "visibility": row["visibility"],
            "data": {
                "role": row["role"],
                "rawType": row["type"],
                "subtype": row["subtype"],
                "contentType": row["content_type"],
                "isMeta": bool(row["is_meta"]),
                "parentId": row["parent_uuid"],
                "replacedBy": row["replaced_by"],
                "text": row["text"],
            },
        }
    )
    if tools:
        event["data"].update(tools)
    return event
