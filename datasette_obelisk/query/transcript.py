"""A session as a readable transcript: the page model of the session page.

    transcript(conn, session_id, *, start=1, limit=500, rewound=False, meta=False,
               log=False) -> dict
        ``session``: the sessions row; ``parent``, ``children`` (subagents,
        forks, continuations), ``workflows``, ``pull_requests`` (oldest
        first); ``entries`` in log order.
        An entry is one of

        - ``{"kind": "message", "message": row, "text": str, "thinking": str}``:
          a prompt or an answer; ``thinking`` is the reasoning its line
          opened with ("" if none: ``text.split_thinking``), ``text`` the rest;
        - ``{"kind": "thinking", "message": row}``;
        - ``{"kind": "tool", "message": row, "calls": [call...], "text": str, "thinking": str}``:
          a line that made tool calls, with each call's name, input, outcome,
          result and the subagent (``child_archived`` when its session is
          stored) or workflow it started, and ``text``, what
          the line said besides its calls (a "mixed" line's prose, else "").
          A result line is folded into its call and not listed again (the
          call carries its anchor, ``result_anchor``: ``m<seq>``);
        - ``{"kind": "compaction", "message": row, "summary": row | None}``:
          a compact boundary with the summary that replaced the context
          before it (the line right after it: one entry for both), a
          boundary alone (``summary`` None), or a summary alone (``message``
          and ``summary`` the same row; ``continued`` when it opens a page
          whose boundary ended the page before);
        - ``{"kind": "rewound", "count", "first_seq", "last_seq"}``: a run
          of messages a rewind abandoned, folded (``rewound=True`` lists them
          instead, each marked by its ``visibility``).

        Which lines are listed (``shown``): a structural line (``surface =
        'log-only'``) only with ``log``, whatever its ``is_meta``; another
        injected line (``is_meta``) only with ``meta``; compaction markers
        always. Entries cover seqs ``start`` .. ``next_start - 1``: ``limit``
        lines a page may start at and the outputs after the last of them of
        calls made before them (``page_start``: such an output never opens a
        page, as it is shown with its call); ``next_start`` is where the next
        page begins (None at the end), ``previous_start`` where the page
        before it does (None on the first), ``last`` the seq of its last line
        (None when it has none). ``holds`` says which options (``rewound``, ``meta``,
        ``log``) would show a line of the session the view hides without
        them (``holds``). ``start_hidden`` says which option shows the line at
        ``start`` when the view hides it (``meta`` or ``log``);
        ``start_rewound``, that the line is on a rewound branch the view
        folds (``rewound=True`` shows it); ``start_folded``, when that line is
        the output of a call on an earlier page, where that call is shown
        (``message_anchor``). ``unlisted``, when the page has lines but lists
        none of them (``start`` at hidden lines, the session's last ones, say):
        how many need ``log`` or ``meta`` and how many are outputs shown with
        their calls on an earlier page (``folded``); else None. Unknown
        session: ``OBELISK_NOT_FOUND``.

    subagents(conn, session_id) -> [subagent...]
        The subagents a session started, archived or not.

    result_outputs(conn, message_uuids, *, limit=RESULT_CHARS) -> {tool_use_id: output}
        The start of the output of each tool result these lines carry
        (``output``, at most ``limit`` characters), the length of the whole
        (``length``, ``tool_results.content_length``) and its line
        (``message_uuid``).

    tool_anchors(conn, tool_call_ids, *, limit=500) -> {id: options}
        For each call that has an entry, the ``transcript`` options (``start``,
        ``rewound``, ``meta``, ``log``) of the page that shows its
        ``#tool-{id}`` anchor; calls whose line has no entry are left out.
"""

from __future__ import annotations

import bisect
import json
import sqlite3

from ..sources.common import strings_in
from ..store.tool_output import full_content_sql, raw_uuid_sql
from .errors import QueryError
from .indexes import indexed_by
from .obelisk import unknown_session
from .text import split_thinking

PREVIEW_CHARS = 160
RESULT_CHARS = 20_000
MAX_LIMIT = 5_000
TOOL_USE, TOOL_RESULT = "tool_use", "tool_result"
THINKING = ("thinking", "redacted_thinking")


def transcript(conn: sqlite3.Connection, session_id: str, *, start: int = 1, limit: int = 500,
               rewound: bool = False, meta: bool = False, log: bool = False) -> dict:
    if not 1 <= limit <= MAX_LIMIT:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"limit must be between 1 and {MAX_LIMIT}")
    session = _one(conn, "SELECT * FROM sessions WHERE id = ?", [session_id])
    if session is None:
        raise unknown_session(conn, session_id)
    next_start = page_start(conn, session_id, start, limit)
    previous_start = page_start(conn, session_id, start, -limit)
    rows = _all(
        conn,
        "SELECT * FROM messages WHERE session_id = ? AND seq >= ? AND (? IS NULL OR seq < ?) ORDER BY seq",
        [session_id, start, next_start, next_start],
    )
    calls = tool_calls(conn, session_id, [r["uuid"] for r in rows])
    folded = {call["result_uuid"] for group in calls.values() for call in group if call["result_uuid"]}
    folded |= results_of_earlier_calls(conn, session_id, start, [r["uuid"] for r in rows if r["content_type"] == TOOL_RESULT])
    entries = []
    for row in rows:
        entry = entry_for(row, calls, folded, meta=meta, log=log)
        if entry is None:
            continue
        if row["visibility"] == "inactive" and not rewound:
            fold_rewound(entries, row)
            continue
        if entry.get("summary") is row and entries and entries[-1]["kind"] == "compaction" and entries[-1].get("summary") is None:
            entries[-1]["summary"] = row  # the summary of the boundary right before it
            continue
        entries.append(entry)
    anchor_folded_results(entries, folded)
    first = entries[0] if entries else {}
    if first.get("summary") is not None and first["summary"] is first["message"] and _after_boundary(
        conn, first["message"], rewound=rewound, meta=meta, log=log
    ):
        first["continued"] = True  # its boundary ends the page before: no second marker
    return {
        "session": session,
        "parent": _one(conn, "SELECT id, title, source, relationship FROM sessions WHERE id = ?", [session["parent_session_id"]]),
        "children": _all(
            conn,
            "SELECT id, title, relationship, agent_type, message_count, started_at FROM sessions "
            "WHERE parent_session_id = ? ORDER BY started_at, id",
            [session_id],
        ),
        "workflows": _all(conn, "SELECT * FROM workflows WHERE session_id = ? ORDER BY timestamp", [session_id]),
        "pull_requests": _all(
            conn, "SELECT number, url, repository, timestamp FROM pull_requests WHERE session_id = ? "
            "ORDER BY timestamp, id", [session_id],
        ),
        "entries": entries,
        "start": start,
        "last": rows[-1]["seq"] if rows else None,  # (the page's last line: the title names the lines it shows)
        # (a page past the session's end names its last line)
        "last_line": None if rows else conn.execute("SELECT max(seq) FROM messages WHERE session_id = ?", [session_id]).fetchone()[0],
        "next_start": next_start,
        "previous_start": previous_start,
        "start_hidden": hidden_by(rows[0], meta=meta, log=log) if rows and rows[0]["seq"] == start else None,
        "start_folded": output_of_earlier_call(conn, rows[0], folded, limit) if rows and rows[0]["seq"] == start else None,
        "start_rewound": bool(rows and rows[0]["seq"] == start and rows[0]["visibility"] == "inactive" and not rewound),
        "holds": holds(conn, session_id),
        "unlisted": unlisted(rows, folded, meta=meta, log=log) if rows and not entries else None,
    }


def unlisted(rows: list[dict], folded: set, *, meta: bool, log: bool) -> dict:
    """Why a page's lines are not listed: how many each option would show (``log``, ``meta``)
    and how many are outputs of calls made on an earlier page (``folded``)."""
    found = {"log": 0, "meta": 0, "folded": 0}
    for row in rows:
        option = hidden_by(row, meta=meta, log=log)
        found[option or "folded"] += 1
    return found


# A line each option (``rewound``, ``meta``, ``log``) shows that the view would hide without
# it; compaction markers show in every view, so they are none of them. Most sessions have one
# soon or none at all: one pass finds whether any option would show a line (reading every line
# only when none would), then each is looked for alone, the rewound and injected ones through
# the index that holds ``visibility`` and ``is_meta``, read before any line is.
LISTED = "COALESCE(subtype, '') != 'compact_boundary' AND NOT is_compact_summary AND type != 'compacted'"
HOLDS = {
    "rewound": "visibility = 'inactive'",
    "meta": "is_meta AND surface != 'log-only'",
    "log": "surface = 'log-only'",
}
HOLDS_ANY_SQL = (
    "SELECT EXISTS (SELECT 1 FROM messages {by_seq} WHERE session_id = ? "
    f"AND (visibility = 'inactive' OR is_meta OR surface = 'log-only') AND {LISTED})"
)
HOLDS_SQL = {
    key: f"SELECT EXISTS (SELECT 1 FROM messages {{{index}}} WHERE session_id = ? AND {HOLDS[key]} AND {LISTED})"
    for key, index in (("rewound", "by_rows"), ("meta", "by_rows"), ("log", "by_seq"))
}


def holds(conn, session_id: str) -> dict:
    """Which options (``rewound``, ``meta``, ``log``) would show a line of the session the view
    otherwise hides: whether it has a line on a rewound branch, an injected line, a log-only line
    (each found by its first such line, not counted)."""
    by = {"by_seq": indexed_by(conn, "messages_session_seq"), "by_rows": indexed_by(conn, "messages_session_rows")}
    if not conn.execute(HOLDS_ANY_SQL.format(**by), [session_id]).fetchone()[0]:
        return dict.fromkeys(HOLDS, False)
    return {key: bool(conn.execute(sql.format(**by), [session_id]).fetchone()[0]) for key, sql in HOLDS_SQL.items()}


# How pages are cut: a page holds ``limit`` lines a page may start at (``opens_page``) and
# the lines after the last of them that may not: the output of a call on an earlier line,
# shown with that call, never opens a page (nor is counted), so the next page does not start
# at a line this one already shows. Going forward or back counts the same lines.
def opens_page(m: str) -> str:
    """SQL: whether the messages row ``m`` (an alias) is a line a transcript page may start at."""
    return f"""NOT ({m}.content_type = 'tool_result' AND EXISTS (
        SELECT 1 FROM tool_results pr JOIN tool_calls pc ON pc.id = pr.tool_use_id
        JOIN messages pm ON pm.uuid = pc.message_uuid AND pm.session_id = {m}.session_id
        WHERE pr.message_uuid = {m}.uuid AND pm.seq < {m}.seq))"""


def page_start(conn, session_id: str, start: int, pages: int) -> int | None:
    """Where the page ``pages`` lines away from the page at ``start`` begins: with ``limit``,
    the next page (None at the end); with ``-limit``, the page before (1 when fewer lines
    are before it, None on the first page). Only lines a page may start at are counted."""
    if pages > 0:
        found = conn.execute(
            f"SELECT seq FROM messages m WHERE session_id = ? AND seq >= ? AND {opens_page('m')} "
            "ORDER BY seq LIMIT 1 OFFSET ?", [session_id, start, pages],
        ).fetchone()
        return found[0] if found else None
    found = conn.execute(
        f"SELECT seq FROM messages m WHERE session_id = ? AND seq < ? AND {opens_page('m')} "
        "ORDER BY seq DESC LIMIT 1 OFFSET ?", [session_id, start, -pages - 1],
    ).fetchone()
    return found[0] if found else (1 if start > 1 else None)


def anchor_folded_results(entries: list, folded: set) -> None:
    """Give each call whose result line is folded into it that line's anchor (``m<seq>``,
    ``result_anchor``), so a link to the output opens the call; once per line, and never
    one an entry of the page already has."""
    listed = {entry[key]["seq"] for entry in entries for key in ("message", "summary") if entry.get(key)}
    for entry in entries:
        for call in entry.get("calls", ()):
            seq = call.get("result_seq")
            call["result_anchor"] = None
            if seq is not None and seq not in listed and call["result_uuid"] in folded:
                call["result_anchor"] = f"m{seq}"
                listed.add(seq)


def output_of_earlier_call(conn, row: dict, folded: set, limit: int) -> dict | None:
    """Where the call is shown whose output ``row`` is, when a page starts at that output:
    its call is on an earlier page, which shows the output with it (``message_anchor``)."""
    if row["content_type"] != TOOL_RESULT or row["uuid"] not in folded:
        return None
    where = message_anchor(conn, row["session_id"], row["seq"], limit=limit)
    return where if where and where["anchor"].startswith("tool-") else None


def _after_boundary(conn, row: dict, *, rewound: bool, meta: bool, log: bool) -> bool:
    """Whether the entry before ``row`` (lines these options hide passed over) is a compact
    boundary with no summary of its own, as one page would join them."""
    for before in _all(
        conn, "SELECT * FROM messages WHERE session_id = ? AND seq < ? ORDER BY seq DESC LIMIT ?",
        [row["session_id"], row["seq"], MAX_PASSED_OVER],
    ):
        if before["visibility"] == "inactive" and not rewound:
            return False  # (folded into a rewound branch's entry)
        if hidden_by(before, meta=meta, log=log) is None:
            return is_compaction(before) and not before["is_compact_summary"]
    return False


MAX_PASSED_OVER = 50  # hidden lines looked past for a boundary


def hidden_by(row: dict, *, meta: bool, log: bool) -> str | None:
    """The option (``meta`` or ``log``) a row needs to be shown, or None when it is."""
    if is_compaction(row) or shown(row, meta=meta, log=log):
        return None
    return "log" if row["surface"] == "log-only" else "meta"


def entry_for(row: dict, calls: dict, folded: set, *, meta: bool, log: bool) -> dict | None:
    if is_compaction(row):
        return {"kind": "compaction", "message": row, "summary": row if row["is_compact_summary"] else None}
    if not shown(row, meta=meta, log=log):
        return None
    thinking, said = split_thinking(row["text"] or "", row["meta_json"])
    if calls.get(row["uuid"]):
        made = calls[row["uuid"]]
        return {"kind": "tool", "message": row, "calls": made, "text": text_besides(row, made, said),
                "thinking": thinking}
    if row["content_type"] == TOOL_RESULT and row["uuid"] in folded:
        return None
    if row["content_type"] in THINKING:
        return {"kind": "thinking", "message": row}
    return {"kind": "message", "message": row, "text": said, "thinking": thinking}


def is_compaction(row: dict) -> bool:
    return bool(row["subtype"] == "compact_boundary" or row["is_compact_summary"] or row["type"] == "compacted")


def shown(row: dict, *, meta: bool, log: bool) -> bool:
    """Structural lines need ``log``; other injected lines need ``meta``."""
    if row["surface"] == "log-only":
        return log
    return meta or not row["is_meta"]


def text_besides(row: dict, calls: list[dict], text: str | None = None) -> str:
    """A line's text (or ``text``, part of it) without the part each tool call contributed
    (its name and input strings)."""
    if row["content_type"] == TOOL_USE:
        return ""
    text = (row["text"] or "") if text is None else text
    for call in calls:
        part = call_text(call)
        for piece in ("\n" + part, part + "\n", part):
            if piece in text:
                text = text.replace(piece, "", 1)
                break
    return text.strip()


def call_text(call: dict) -> str:
    """The searchable text a source stores for a call: its name, then every string of its input."""
    try:
        data = json.loads(call["input_json"] or "null")
    except (ValueError, RecursionError):  # (nested deeper than Python decodes)
        data = None
    return "\n".join([call["name"], *strings_in(data)])


def fold_rewound(entries: list, row: dict) -> None:
    last = entries[-1] if entries else None
    if last and last["kind"] == "rewound":
        last["count"] += 1
        last["last_seq"] = row["seq"]
    else:
        entries.append({"kind": "rewound", "count": 1, "first_seq": row["seq"], "last_seq": row["seq"]})


SUBAGENT_COLUMNS = """sa.agent_id, sa.child_session_id, sa.agent_type, sa.description AS agent_description,
    EXISTS (SELECT 1 FROM sessions cs WHERE cs.id = sa.child_session_id) AS child_archived,
    sa.remote_url, sa.remote_session_id,
    EXISTS (SELECT 1 FROM sessions rs WHERE rs.id = sa.remote_session_id) AS remote_archived"""


def source_gone(session: dict | None) -> bool:
    """Whether every log a session was read from is gone (no raw line to show)."""
    return session is not None and session["availability"] == "archived"


def archived(conn, session_ids: list) -> set:
    """Those of these sessions whose every log is gone (``source_gone``): no raw line to link."""
    return {row[0] for row in conn.execute(
        "SELECT id FROM sessions WHERE availability = 'archived' AND id IN (SELECT value FROM json_each(?))",
        [json.dumps(list(dict.fromkeys(session_ids)))],
    )}


def subagents(conn, session_id: str) -> list[dict]:
    """The subagents a session started, in log order: agent id, type, description, the call
    that started it (``tool_use_id``, ``tool_name``, ``tool_seq``) and ``child_archived``,
    whether the agent's own session is stored; an agent run in a cloud session has its
    ``remote_url``, ``remote_session_id`` and ``remote_archived`` (that session's log is stored)."""
    return _all(
        conn,
        f"""SELECT {SUBAGENT_COLUMNS}, sa.parent_tool_use_id AS tool_use_id, c.name AS tool_name, m.seq AS tool_seq
            FROM subagents sa
            LEFT JOIN tool_calls c ON c.id = sa.parent_tool_use_id AND c.session_id = sa.session_id
            LEFT JOIN messages m ON m.uuid = c.message_uuid AND m.session_id = c.session_id
            WHERE sa.session_id = ? ORDER BY m.seq IS NULL, m.seq, sa.id""",
        [session_id],
    )


# From the page's results to their calls' lines (``+``: never every line of the
# session before ``start``, which made a page cost as much as its place in the session).
EARLIER_CALLS_SQL = """SELECT r.message_uuid FROM tool_results r
    JOIN tool_calls c ON c.id = r.tool_use_id
    JOIN messages m ON m.uuid = c.message_uuid AND +m.session_id = ?
    WHERE +m.seq < ? AND r.message_uuid IN ({marks})"""


def results_of_earlier_calls(conn, session_id: str, start: int, result_uuids: list[str]) -> set[str]:
    """Which of ``result_uuids`` answer a call made before ``start``: the
    page that shows the call shows its result too, so this one folds it."""
    if not result_uuids:
        return set()
    return {
        row["message_uuid"]
        for row in _all(
            conn,
            EARLIER_CALLS_SQL.format(marks=", ".join("?" * len(result_uuids))),
            [session_id, start, *result_uuids],
        )
    }


# The calls of a page's tool-use lines, each with its result and the agent or workflow it
# started (found by the calling id: subagents_tool_call, workflows_tool_call).
PAGE_CALLS_SQL = f"""SELECT c.id, c.message_uuid, c.name, c.input_json, c.file_path, c.timestamp,
           r.message_uuid AS result_uuid, r.outcome, r.exit_code,
           substr({full_content_sql('r')}, 1, {RESULT_CHARS}) AS result, r.content_length AS result_length,
           {raw_uuid_sql('r')} AS result_raw_uuid,
           (SELECT rm.seq FROM messages rm WHERE rm.uuid = r.message_uuid AND rm.session_id = c.session_id)
             AS result_seq,
           c.id AS tool_use_id, c.name AS tool_name, {SUBAGENT_COLUMNS},
           w.run_id AS workflow_run_id, w.workflow_name
    FROM tool_calls c
    LEFT JOIN tool_results r ON r.tool_use_id = c.id
    LEFT JOIN subagents sa ON sa.parent_tool_use_id = c.id AND sa.session_id = c.session_id
    LEFT JOIN workflows w ON w.parent_tool_use_id = c.id
    WHERE c.session_id = ? AND c.message_uuid IN ({{marks}}) ORDER BY c.rowid"""


def tool_calls(conn, session_id: str, message_uuids: list[str]) -> dict[str, list[dict]]:
    """The calls each tool-use line made, with result, outcome and any child session."""
    if not message_uuids:
        return {}
    found: dict[str, list[dict]] = {}
    marks = ", ".join("?" * len(message_uuids))
    for row in _all(conn, PAGE_CALLS_SQL.format(marks=marks), [session_id, *message_uuids]):
        row["preview"] = preview(row["input_json"])
        found.setdefault(row["message_uuid"], []).append(row)
    return found


def saved_output_uuids(conn, tool_use_ids: list[str]) -> dict[str, str]:
    """``{tool_use_id: uuid}`` of the results among these whose output was saved to a file
    of its own: the message whose raw text holds it whole (``raw_uuid_sql``)."""
    return dict(conn.execute(
        f"SELECT r.tool_use_id, {raw_uuid_sql('r')} FROM tool_results r WHERE r.output_uuid IS NOT NULL "
        "AND r.tool_use_id IN (SELECT value FROM json_each(?))",
        [json.dumps(tool_use_ids)],
    ))


def result_outputs(conn, message_uuids: list[str], *, limit: int = RESULT_CHARS) -> dict[str, dict]:
    """``{tool_use_id: {"output", "length", "message_uuid", "raw_uuid"}}`` for the tool results these
    lines carry: the first ``limit`` characters of each output, the length of the whole and the
    message whose raw text holds it whole (``raw_uuid_sql``)."""
    if not message_uuids:
        return {}
    return {
        row["tool_use_id"]: row
        for row in _all(
            conn,
            f"""SELECT r.tool_use_id, r.message_uuid, substr({full_content_sql('r')}, 1, ?) AS output,
                       r.content_length AS length, {raw_uuid_sql('r')} AS raw_uuid
                FROM tool_results r WHERE r.message_uuid IN ({", ".join("?" * len(message_uuids))})""",
            [limit, *message_uuids],
        )
    }


FIRST = -(2**63)  # (before every line)


class PageCuts:
    """Where the transcript pages of ``limit`` lines that show a session's lines start, as
    ``page_start`` cuts them from the first line: a line's page is the count of the lines a
    page may start at (``opens_page``) up to it, divided by ``limit``; the count is kept for
    each line asked about, so the next one counts on from the nearest line before it."""

    def __init__(self, conn, limit: int):
        self.conn, self.limit, self.counted, self.seqs, self.starts = conn, limit, {}, {}, {}

    def start_of(self, session_id: str, seq: int) -> int | None:
        """The first line of the page that shows line ``seq``; None for the first page."""
        index = max(self.openers_through(session_id, seq) - 1, 0)  # (of the last such line up to seq)
        page = index // self.limit * self.limit
        if not page:
            return None
        if (session_id, page) not in self.starts:  # (the page's first line, whichever of its lines asks)
            found = self.conn.execute(  # (fewer than ``limit`` such lines back from seq)
                f"SELECT seq FROM messages m WHERE session_id = ? AND seq <= ? AND {opens_page('m')} "
                "ORDER BY seq DESC LIMIT 1 OFFSET ?", [session_id, seq, index - page],
            ).fetchone()
            self.starts[session_id, page] = found[0]
        return self.starts[session_id, page]

    def openers_through(self, session_id: str, seq: int) -> int:
        """How many lines of the session up to ``seq`` a page may start at."""
        counted = self.counted.setdefault(session_id, {})
        if seq in counted:
            return counted[seq]
        seqs = self.seqs.setdefault(session_id, [])  # (the lines counted, in order)
        at = bisect.bisect_left(seqs, seq)
        after, openers = (seqs[at - 1], counted[seqs[at - 1]]) if at else (FIRST, 0)
        lines = self.conn.execute(
            "SELECT COUNT(*) FROM messages WHERE session_id = ? AND seq > ? AND seq <= ?", [session_id, after, seq],
        ).fetchone()[0]
        counted[seq] = openers + lines - self.outputs_of_earlier_calls(session_id, after, seq, lines)
        seqs.insert(at, seq)
        return counted[seq]

    def outputs_of_earlier_calls(self, session_id: str, after: int, seq: int, lines: int) -> int:
        """How many lines after ``after`` up to ``seq`` carry the output of a call made on an
        earlier line (``opens_page`` false): over a few lines, each line is looked at; over
        many, each tool result of the session, to its line and its call's (ordered by none)."""
        if lines <= 4 * self.limit:
            return self.conn.execute(
                "SELECT COUNT(*) FROM messages m WHERE session_id = ? AND seq > ? AND seq <= ? "
                f"AND NOT {opens_page('m')}", [session_id, after, seq],
            ).fetchone()[0]
        return self.conn.execute(
            """SELECT COUNT(DISTINCT m.seq) FROM tool_results r
               JOIN messages m ON m.uuid = r.message_uuid AND m.session_id = r.session_id
               JOIN tool_calls c ON c.id = r.tool_use_id
               JOIN messages pm ON pm.uuid = c.message_uuid AND pm.session_id = m.session_id
               WHERE r.session_id = ? AND m.content_type = 'tool_result' AND m.seq > ? AND m.seq <= ?
               AND pm.seq < m.seq""",
            [session_id, after, seq],
        ).fetchone()[0]


def tool_anchors(conn, tool_call_ids: list[str], *, limit: int = 500, cuts: PageCuts | None = None) -> dict[str, dict]:
    ids = sorted(set(tool_call_ids))
    if not ids:
        return {}
    cuts = cuts or PageCuts(conn, limit)
    rows = _all(
        conn,
        f"""SELECT c.id AS call_id, m.*
            FROM tool_calls c JOIN messages m ON m.uuid = c.message_uuid AND m.session_id = c.session_id
            WHERE c.id IN ({", ".join(f":id{i}" for i in range(len(ids)))})""",
        {f"id{i}": value for i, value in enumerate(ids)},
    )
    found = {}
    for row in rows:
        options = options_showing(row)
        if options is not None:
            found[row["call_id"]] = {**options, "start": cuts.start_of(row["session_id"], row["seq"])}
    return found


def call_anchor(conn, session_id: str, call_id: str, *, limit: int = 500) -> dict | None:
    """Where the transcript of ``session_id`` shows its tool call ``call_id`` (the page
    options, as ``tool_anchors``); None for a call of another session or none shown."""
    if _one(conn, "SELECT 1 FROM tool_calls WHERE id = ? AND session_id = ?", [call_id, session_id]) is None:
        return None
    return tool_anchors(conn, [call_id], limit=limit).get(call_id)


def spawning_call(conn, session_id: str, parent_id: str, *, limit: int = 500) -> dict | None:
    """The call of the parent ``parent_id`` that started the agent ``session_id``, where the
    parent's transcript shows it: ``{"id", "anchors"}`` (``tool_anchors``), else None."""
    spawned = _one(
        conn,
        "SELECT parent_tool_use_id FROM subagents WHERE child_session_id = ? AND session_id = ? "
        "AND parent_tool_use_id IS NOT NULL ORDER BY id LIMIT 1",
        [session_id, parent_id],
    )
    if spawned is None:
        return None
    anchors = tool_anchors(conn, [spawned["parent_tool_use_id"]], limit=limit)
    return {"id": spawned["parent_tool_use_id"], "anchors": anchors} if anchors else None


def message_anchor(conn, session_id: str, seq: int, *, limit: int = 500, cuts: PageCuts | None = None) -> dict | None:
    """Where the transcript shows a message: the page options (as ``tool_anchors``)
    and ``anchor``, ``m<seq>`` or, for a result shown with its call, ``tool-<call id>``.
    None for a message no transcript page lists."""
    row = _one(conn, "SELECT * FROM messages WHERE session_id = ? AND seq = ?", [session_id, seq])
    if row is None:
        return None
    cuts = cuts or PageCuts(conn, limit)
    if row["content_type"] == TOOL_RESULT:
        call = _one(conn, "SELECT tool_use_id FROM tool_results WHERE message_uuid = ? LIMIT 1", [row["uuid"]])
        options = tool_anchors(conn, [call["tool_use_id"]], cuts=cuts).get(call["tool_use_id"]) if call else None
        if options is not None:
            return {**options, "anchor": f"tool-{call['tool_use_id']}"}
    if is_compaction(row):
        options = {"start": None, "rewound": False, "meta": False, "log": False}
    else:
        options = options_showing(row)
    return None if options is None else {**options, "start": cuts.start_of(session_id, seq), "anchor": f"m{seq}"}


def message_anchor_of(conn, session_id: str, uuid: str, *, limit: int = 500) -> dict | None:
    """``message_anchor`` of the message ``uuid`` of ``session_id`` wherever it now stands (an
    ingest may have renumbered the session since a link named it); None when the session does
    not hold it, or no transcript page lists it."""
    row = conn.execute("SELECT seq FROM messages WHERE session_id = ? AND uuid = ?", [session_id, uuid]).fetchone()
    return None if row is None else message_anchor(conn, session_id, row[0], limit=limit)


def result_anchors(conn, results: list, *, limit: int = 500) -> dict:
    """``message_anchor`` of each ``(session id, message uuid)`` of ``results`` that is stored, by message uuid."""
    found, cuts = {}, PageCuts(conn, limit)
    for session_id, uuid in results:
        row = conn.execute("SELECT seq FROM messages WHERE session_id = ? AND uuid = ?", [session_id, uuid]).fetchone()
        if row is not None:
            found[uuid] = message_anchor(conn, session_id, row[0], cuts=cuts)
    return found


def options_showing(row: dict) -> dict | None:
    """The fewest transcript options under which ``row`` is listed as an entry of its own."""
    if is_compaction(row):
        return None
    flags = next(
        ({"meta": meta, "log": log} for meta in (False, True) for log in (False, True) if shown(row, meta=meta, log=log)),
        None,
    )
    if flags is None:
        return None
    return {"start": None, "rewound": row["visibility"] == "inactive", **flags}


def preview(input_json: str | None) -> str:
    """One line of a call's input: the command, path or pattern when there is one."""
    try:
        data = json.loads(input_json or "null")
    except (ValueError, RecursionError):  # (nested deeper than Python decodes)
        data = input_json
    if isinstance(data, dict):
        for key in ("command", "cmd", "file_path", "path", "pattern", "query", "url", "description", "prompt"):
            value = data.get(key)
            if isinstance(value, list):
                value = " ".join(map(str, value))
            if isinstance(value, str) and value.strip():
                return _clip(" ".join(value.split()))
    text = input_json if isinstance(data, (dict, list)) or data is None else str(data)
    return _clip(" ".join((text or "").split()))


def _clip(text: str) -> str:
    return text if len(text) <= PREVIEW_CHARS else text[: PREVIEW_CHARS - 1] + "…"


def _dicts(cursor) -> list[dict]:
    names = [d[0] for d in cursor.description]
    return [dict(zip(names, row)) for row in cursor]


def parents(conn: sqlite3.Connection, sessions) -> dict[str, dict]:
    """For each of ``sessions`` (rows) whose parent is stored: ``{id, title, relationship}`` of that parent."""
    ids = sorted({s["parent_session_id"] for s in sessions if s.get("parent_session_id")})
    found = {
        row["id"]: row
        for row in _all(conn, "SELECT id, title FROM sessions WHERE id IN (SELECT value FROM json_each(?))", [json.dumps(ids)])
    }
    return {
        s["id"]: {**found[s["parent_session_id"]], "relationship": s.get("relationship") or "child"}
        for s in sessions if s.get("parent_session_id") in found
    }


def _all(conn, sql: str, params) -> list[dict]:
    return _dicts(conn.execute(sql, params))


def _one(conn, sql: str, params) -> dict | None:
    found = _all(conn, sql, params)
    return found[0] if found else None
