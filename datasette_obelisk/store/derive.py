"""Facts that need more than one line: recomputed per session after ingest.

- inline sidechain lines (Claude ≤ 1.0) grouped into subagent sessions;
- surfaces: rewound-away branches and compacted history are ``shadowed``,
  with ``replaced_by`` naming what replaced them;
- usage counted once per API message (Claude writes one line per block);
- a prompt queued while the agent worked and then sent is searched as sent only;
- session aggregates, availability and the title by precedence;
- subagents linked to the tool call that started them, and to the session
  that did when the parent their lines name is stored under another name.

What a session's rows and search document need can be planned ahead
(``plan_session`` only reads) and written by ``derive_sessions`` later.

Lines appended to a session are derived alone when nothing before them can
change (``plan_appended``): what the last derivation found is kept per session
(``derive_tallies``), and the new rows are added to it.
"""

from __future__ import annotations

import operator
import re
import sqlite3
from collections import Counter, defaultdict, namedtuple
from dataclasses import dataclass
from functools import partial

import orjson

from ..cjk import search_text
from ..sources.common import SQLITE_INTEGERS
from ..utc import canonical
from .session_index import (
    DocumentPlan,
    SessionWords,
    count_session_words,
    document_stamp,
    plan_document,
    session_stats,
    update_session_documents,
)
from .cold_load import index_pending_text
from .digests import write_search_forms
from .stable_ids import inline_agent
from .units import kept_copy_sql
from .writer import DESCRIBED, SOURCE_RANK

TITLE_PRECEDENCE = ("custom", "ai", "name", "index", "summary", "first_prompt")
DERIVED_TITLE_SQL = ", ".join(f"'{kind}'" for kind in (*TITLE_PRECEDENCE, "subagent"))
SPAWNING_TOOLS = ("Task", "Agent")


def derive_sessions(conn: sqlite3.Connection, session_ids, words=None, plans=None, *, forget_empty=False) -> set[str]:
    """Recompute what depends on more than one line; returns the sessions derived.

    ``words`` are the reader's word counts for the session index (see
    ``session_index``). ``plans`` maps sessions to ``plan_session`` results
    worked out ahead; those looked at are removed from it, and used when the
    session's rows are still the ones planned for. With ``forget_empty`` (no
    file is being read) a session nothing stored names any more is deleted
    (see ``is_forgotten``).
    """
    session_ids = regroup(conn, session_ids, words)
    documents = {}
    for session_id in sorted(session_ids):
        plan = plans.pop(session_id, None) if plans else None
        if plan is None or plan.stats != session_stats(conn, session_id) \
                or plan.stamp != document_stamp(conn, session_id):  # another process derived it
            plan = plan_session(conn, session_id, words)
        documents[session_id] = plan.document
        if forget_empty and plan.source is None and is_forgotten(conn, session_id):
            forget_session(conn, session_id)
            continue
        write_session(conn, session_id, plan)
    conn.executemany(INLINE_AGENTS_PROGRAM, [[s] for s in session_ids])
    link_subagents(conn, session_ids)
    link_workflows(conn, session_ids)
    link_sessions(conn, session_ids)
    link_continuations(conn, session_ids)
    link_resumes(conn, session_ids)
    break_parent_cycles(conn, session_ids)
    update_session_documents(conn, session_ids, words, documents)
    write_search_forms(conn, session_ids)
    return session_ids


# An inline agent's lines are in its parent's file, written by the program
# that wrote the rest: the agent has its parent's version and originator.
INLINE_AGENTS_PROGRAM = """UPDATE sessions SET version = p.version, originator = p.originator
    FROM sessions AS p WHERE p.id = ?1 AND sessions.parent_session_id = ?1 AND sessions.agent_id GLOB 'sidechain-*'
    AND (sessions.version IS NOT p.version OR sessions.originator IS NOT p.originator)"""


# The relationships only another file's word gives (``records.SessionLink``): a
# session holding one got it from a link, which it follows.
LINKED = ("import", "remote")
LINKED_SQL = ", ".join(f"'{relationship}'" for relationship in LINKED)
# The link the first file giving one gives, set on a session with no parent or a link's.
LINK = f"""UPDATE sessions SET parent_session_id = l.parent_session_id, relationship = l.relationship
    FROM (SELECT parent_session_id, relationship FROM session_links WHERE session_id = :s ORDER BY id LIMIT 1) AS l
    WHERE sessions.id = :s AND (sessions.parent_session_id IS NULL OR sessions.relationship IN ({LINKED_SQL}))
      AND (sessions.parent_session_id IS NOT l.parent_session_id OR sessions.relationship IS NOT l.relationship)"""
UNLINK = f"""UPDATE sessions SET parent_session_id = NULL, relationship = NULL
    WHERE id = :s AND relationship IN ({LINKED_SQL}) AND NOT EXISTS (SELECT 1 FROM session_links WHERE session_id = :s)"""


def link_sessions(conn: sqlite3.Connection, session_ids) -> None:
    """A session another file names the child of another (``session_links``: Codex's
    import ledger) is that one's child, whichever of the two files was read first;
    one whose link no stored file gives any more (the record gone from the ledger)
    has no parent again. A parent its own log gives (a fork's) is never replaced."""
    params = [{"s": s} for s in sorted(session_ids)]
    conn.executemany(LINK, params)
    conn.executemany(UNLINK, params)


CONTINUATIONS_OF = """SELECT id, continued_in FROM sessions WHERE id = :s AND continued_in IS NOT NULL
    UNION SELECT id, continued_in FROM sessions WHERE continued_in = :s"""
CONTINUED = """UPDATE sessions SET parent_session_id = :parent, relationship = 'continuation' WHERE id = :child
    AND (parent_session_id IS NULL OR (parent_session_id = :parent AND relationship = 'fork'))"""


def link_continuations(conn: sqlite3.Connection, session_ids) -> None:
    """A session that says it went on in another (``continued_in``) is that one's parent,
    whichever of the two was read first; a copy's ``fork`` link to it gives way."""
    pairs = {tuple(pair) for s in session_ids for pair in conn.execute(CONTINUATIONS_OF, {"s": s})}
    conn.executemany(CONTINUED, [{"parent": parent, "child": child} for parent, child in sorted(pairs)])


# The line a line goes on from: its parent, else (a compaction's boundary, whose
# parent is none) the last line before the compaction.
GOES_ON_FROM = "COALESCE({0}.parent_uuid, {0}.logical_parent_uuid)"
# The session the first of a session's lines that names a stored line goes on
# from: another one when the session's log replayed that one's lines (stored
# there only) before its own, or opens with the boundary of a compaction of that
# one's conversation (Claude Code 2.1 went on in a new file after compacting).
RESUMED_FROM = f"""SELECT p.session_id FROM messages AS c JOIN messages AS p ON p.uuid = {GOES_ON_FROM.format('c')}
    WHERE c.session_id = :s ORDER BY c.seq LIMIT 1"""
UNPARENTED_CLAUDE = "SELECT 1 FROM sessions WHERE id = ? AND source = 'claude' AND parent_session_id IS NULL"
RESUMED = """UPDATE sessions SET parent_session_id = :parent, relationship = 'continuation'
    WHERE id = :s AND source = 'claude' AND parent_session_id IS NULL"""
# The Claude sessions with no parent whose first line naming a parent names a row of one of
# ``:ids`` (a JSON array): read before the session they resumed, they go on from it now. (One
# look at each such session's first lines: joining every row of ``:ids`` to the lines naming
# it read each row and its child, most of a cold ingest's time.)
NAMING = f"""SELECT f.id FROM (
      SELECT s.id, (SELECT {GOES_ON_FROM.format('m')} FROM messages m
                    WHERE m.session_id = s.id AND {GOES_ON_FROM.format('m')} IS NOT NULL
                    ORDER BY m.seq LIMIT 1) AS parent_uuid
      FROM sessions s WHERE s.source = 'claude' AND s.parent_session_id IS NULL) AS f
    JOIN messages p ON p.uuid = f.parent_uuid
    WHERE p.session_id != f.id AND p.session_id IN (SELECT value FROM json_each(:ids))"""


def link_resumes(conn: sqlite3.Connection, session_ids) -> None:
    """A Claude Code 1.0-2.0 session resumed into a new file (``--resume``,
    ``--continue``) replays the lines of the one it resumed, which stay stored
    in that one only; its own first line names the last of them: the session
    it goes on from is its parent (``continuation``), unless its log names one.
    So is the session a compaction went on in (Claude Code 2.1): its file opens
    with the boundary, whose ``logicalParentUuid`` names the compacted one's last line.

    Whichever file is read first: the sessions whose first line naming a parent
    names a row of ``session_ids`` are looked at too, as when read after them."""
    candidates = set(session_ids)
    candidates.update(row[0] for row in conn.execute(NAMING, {"ids": orjson.dumps(sorted(session_ids)).decode()}))
    for session_id in sorted(candidates):
        if not conn.execute(UNPARENTED_CLAUDE, (session_id,)).fetchone():
            continue
        row = conn.execute(RESUMED_FROM, {"s": session_id}).fetchone()
        if row and row[0] != session_id:
            conn.execute(RESUMED, {"s": session_id, "parent": row[0]})


PARENT_OF = "SELECT parent_session_id FROM sessions WHERE id = ?"
UNPARENTED = "UPDATE sessions SET parent_session_id = NULL, relationship = NULL WHERE id = ?"
MAX_ANCESTORS = 100_000


def break_parent_cycles(conn: sqlite3.Connection, session_ids) -> None:
    """Logs that contradict each other (two forks each naming the other the one
    they were copied from, a rollout naming itself) would make a session its own
    ancestor, which no lineage can show: the session of the cycle with the
    smallest id has no parent, whichever run closed the cycle, so the
    result is what a first ingest gives."""
    for session_id in sorted(session_ids):
        chain, seen = [session_id], {session_id}
        row = conn.execute(PARENT_OF, [session_id]).fetchone()
        parent = row[0] if row else None
        while parent is not None and parent not in seen and len(chain) < MAX_ANCESTORS:
            seen.add(parent)
            chain.append(parent)
            row = conn.execute(PARENT_OF, [parent]).fetchone()
            parent = row[0] if row else None
        if parent is not None and parent in seen:
            conn.execute(UNPARENTED, [min(chain[chain.index(parent):])])


FORGOTTEN_UNLESS = ("messages", "file_sessions", "titles", "summaries", "workflows", "memories")


def is_forgotten(conn: sqlite3.Connection, session_id: str) -> bool:
    """Whether no row names the session any more: a file read again gave its lines
    another session id (a parser that learnt better), or it was never more than
    a name. Sessions of files gone from disk keep their rows, so they stay."""
    return not any(
        conn.execute(f"SELECT 1 FROM {table} WHERE session_id = ? LIMIT 1", [session_id]).fetchone()
        for table in FORGOTTEN_UNLESS
    )


def forget_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Delete a session ``is_forgotten`` says nothing names, with its digest and agent links."""
    conn.execute("DELETE FROM sessions WHERE id = ?", [session_id])
    conn.execute("DELETE FROM session_digests WHERE session_id = ?", [session_id])
    forget_tallies(conn, [session_id])
    conn.execute("DELETE FROM subagents WHERE session_id = ?", [session_id])
    conn.execute("UPDATE subagents SET child_session_id = NULL WHERE child_session_id = ?", [session_id])


def regroup(conn: sqlite3.Connection, session_ids, words=None) -> set[str]:
    """``session_ids`` and the sessions deriving them involves, once inline sidechain lines moved out.

    Those include the sessions whose leaf a ``summary`` line of theirs names,
    and so on: each one is derived here and leaves the queue, so the sessions
    its own summary lines name cannot wait for it to be derived again."""
    found: set[str] = set()
    added = set(session_ids)
    while added:
        found |= added
        involved = summary_leaf_sessions(conn, added)
        for session_id in sorted(added):
            involved |= group_inline_sidechains(conn, session_id, words)
        added = involved - found
    return found


@dataclass(slots=True)
class SessionPlan:
    """What deriving a session writes: its rows' surfaces and usage, its
    ``sessions`` row, its search document and its tally."""

    stats: tuple  # session_stats when planned
    stamp: tuple | None  # document_stamp when planned
    surfaces: list  # SURFACE_UPDATE rows
    usage: list  # USAGE_UPDATE rows
    searched: list  # SEARCHED_UPDATE rows (queued prompts sent: ``queued_searched``)
    session: list  # SESSION_UPDATE values
    source: str | None  # for a sessions row still to create; None: no lines, no row
    document: DocumentPlan | None
    tally: list | None = None  # TALLY_UPSERT values; None: none kept (the next derivation is whole)

    def size(self) -> int:
        """Roughly, the bytes it holds."""
        rows = len(self.surfaces) + len(self.usage) + len(self.searched)
        return 100 * rows + 500 + (self.document.size() if self.document else 0)


# How sessions were planned: ``whole`` (every row read) or ``appended`` (the rows
# after those the last derivation saw, ``plan_appended``). Tests read it.
PLANS: Counter = Counter()


def plan_session(conn: sqlite3.Connection, session_id: str, words=None) -> SessionPlan:
    """Read only: what ``derive_sessions`` writes for a session.

    Valid while no other write touches the session: everything here follows
    from its rows, titles, subagents and files, read once. (Regrouping inline
    sidechain lines changes the rows, so ``derive_sessions`` plans again.)"""
    stats = session_stats(conn, session_id)
    appended = plan_appended(conn, session_id, stats)
    if appended is not None:
        PLANS["appended"] += 1
        surfaces, usage, searched, tally, rewound, source = appended
    else:
        PLANS["whole"] += 1
        rows = session_rows(conn, session_id)
        surfaced = surfaces_of(rows)
        counted = counted_usage(rows)
        surfaces = [new + (r.id,) for r in rows if (new := surfaced[r.id]) != (r.surface, r.visibility, r.replaced_by)]
        usage = [(int(r.id in counted), r.id) for r in rows if r.usage_counted != int(r.id in counted) and has_usage(r)]
        searched = queued_searched(conn, session_id, rows)
        tally = Tally.of(conn, session_id, rows, surfaced, counted)
        rewound = {r.uuid for r in rows if surfaced[r.id][1] == "inactive"}
        source = min((r.source for r in rows if r.source is not None), default=None)
    return SessionPlan(
        stats,
        document_stamp(conn, session_id),
        surfaces,
        usage,
        searched,
        session_values(conn, session_id, tally, rewound),
        source,
        plan_document(conn, session_id, (words or {}).get(session_id), stats),
        tally.values(session_id),
    )


# Where a session's rows are: its last place, and the last branch and model its rows name.
PLACES_SQL = """SELECT (SELECT MAX(seq) FROM messages WHERE session_id = :s),
     (SELECT git_branch FROM messages WHERE session_id = :s AND COALESCE(git_branch, '') != ''
      ORDER BY seq DESC LIMIT 1),
     (SELECT model FROM messages WHERE session_id = :s AND model IS NOT NULL
      AND model != '<synthetic>' ORDER BY seq DESC LIMIT 1)"""
# The cwds a session's rows name: how many name each, and the last place naming it.
CWDS_SQL = "SELECT cwd, COUNT(*), MAX(seq) FROM messages WHERE session_id = ? AND cwd IS NOT NULL GROUP BY cwd"


TALLY_UPSERT = """INSERT INTO derive_tallies (session_id, last_id, last_seq, rows, started_at, ended_at,
       conversation, input_tokens, output_tokens, cache_read_tokens, cache_creation_tokens, cwds, git_branch, model,
       time_ordered)
   VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)
   ON CONFLICT (session_id) DO UPDATE SET last_id = ?2, last_seq = ?3, rows = ?4, started_at = ?5, ended_at = ?6,
       conversation = ?7, input_tokens = ?8, output_tokens = ?9, cache_read_tokens = ?10,
       cache_creation_tokens = ?11, cwds = ?12, git_branch = ?13, model = ?14, time_ordered = ?15"""


def write_session(conn: sqlite3.Connection, session_id: str, plan: SessionPlan) -> None:
    """Write a plan's row updates, ``sessions`` row and tally, inside the caller's transaction."""
    conn.executemany(SURFACE_UPDATE, plan.surfaces)
    conn.executemany(USAGE_UPDATE, plan.usage)
    if plan.searched:
        index_pending_text(conn)  # (the update takes the old text out of the index)
        conn.executemany(SEARCHED_UPDATE, plan.searched)
    if plan.source is not None:
        conn.execute("INSERT OR IGNORE INTO sessions (id, source) VALUES (?, ?)", [session_id, plan.source])
    conn.execute(SESSION_UPDATE, plan.session)
    if plan.tally is not None:
        conn.execute(TALLY_UPSERT, plan.tally)
    else:
        forget_tallies(conn, [session_id])


def forget_tallies(conn: sqlite3.Connection, session_ids) -> None:
    """Have these sessions derived whole next time: their stored rows changed otherwise
    than by lines appended (deleted, moved to another session, reordered)."""
    conn.executemany("DELETE FROM derive_tallies WHERE session_id = ?", [[s] for s in sorted(set(session_ids))])


@dataclass(slots=True)
class Tally:
    """What deriving a session found in its rows (those up to ``last_id``, in
    ``seq`` order up to ``last_seq``): the figures of its ``sessions`` row, kept
    so rows appended later are added to them (``plan_appended``)."""

    last_id: int = 0
    last_seq: int = 0
    rows: int = 0
    started: str | None = None  # the earliest row time (canonical)
    ended: str | None = None  # the latest
    conversation: int = 0  # rows is_conversation counts
    tokens: list = None  # input, output, cache read, cache creation tokens of the rows whose usage counts
    cwds: dict = None  # cwd -> [rows naming it, the last seq naming it]
    git_branch: str | None = None  # the last row's that names one
    model: str | None = None  # the last row's that names one (not '<synthetic>')
    # Whether the rows are in time order as logged (``sessions.time_ordered``): every stored
    # timestamp is canonical (its text is its instant) and none is earlier than one before it.
    ordered: bool = True

    def __post_init__(self):
        self.tokens = [0, 0, 0, 0] if self.tokens is None else self.tokens
        self.cwds = {} if self.cwds is None else self.cwds

    @classmethod
    def of(cls, conn, session_id: str, rows: list[SessionRow], surfaces: dict, counted: set) -> "Tally":
        """The tally of all a session's rows; where they are (seq, cwd, branch, model) is
        read by SQL, not held for each row."""
        tally = cls()
        tally.add(rows, {r.id: surfaces[r.id][1] for r in rows})
        tally.count_usage([r for r in rows if r.id in counted], +1)
        last_seq, tally.git_branch, tally.model = conn.execute(PLACES_SQL, {"s": session_id}).fetchone()
        tally.last_seq = last_seq or 0
        tally.cwds = {cwd: [count, seq] for cwd, count, seq in conn.execute(CWDS_SQL, [session_id])}
        return tally

    def add(self, rows: list, visibility: dict) -> None:
        """Add rows (in ``seq`` order, after those counted) with their derived visibility;
        where they are (seq, cwd, branch, model) too, when they are ``AppendedRow`` tuples.
        (Built-ins over the whole list: a whole session's 300,000 rows, one at a time,
        cost a second.)"""
        if not rows:
            return
        self.rows += len(rows)
        self.last_id = max(self.last_id, max(r.id for r in rows))
        times = [t for r in rows if is_moment(r.timestamp) and (t := moment(r.timestamp))]
        if self.ordered:
            self.ordered = in_time_order(list(filter(IS_SOME, map(TIMESTAMP, rows))), times, self.ended)
        if times:
            self.started = min(times) if self.started is None else min(self.started, *times)
            self.ended = max(times) if self.ended is None else max(self.ended, *times)
        self.conversation += sum(is_conversation(r, visibility[r.id]) for r in rows)
        if not isinstance(rows[0], AppendedRow):
            return
        for r in rows:
            self.last_seq = max(self.last_seq, r.seq)
            if r.cwd is not None:
                seen = self.cwds.setdefault(r.cwd, [0, r.seq])
                seen[0] += 1
                seen[1] = max(seen[1], r.seq)
            if r.git_branch:
                self.git_branch = r.git_branch
            if r.model is not None and r.model != "<synthetic>":
                self.model = r.model

    def count_usage(self, rows: list[SessionRow], sign: int) -> None:
        """Add (``sign`` 1) or take away (-1) the tokens of rows whose usage counts."""
        for r in rows:
            for index, value in enumerate((r.input_tokens, r.output_tokens, r.cache_read_tokens, r.cache_creation_tokens)):
                self.tokens[index] += sign * (value or 0)

    def project_path(self) -> str | None:
        """The cwd most rows name (of those, the one named last)."""
        return max(self.cwds.items(), key=lambda item: item[1])[0] if self.cwds else None

    def values(self, session_id: str) -> list | None:
        """``TALLY_UPSERT`` values; None when there is nothing to keep (no rows, or totals
        past what SQLite stores: such a session is derived whole each time)."""
        if not self.rows or not all(SQLITE_INTEGERS[0] <= t <= SQLITE_INTEGERS[-1] for t in self.tokens):
            return None
        return [
            session_id, self.last_id, self.last_seq, self.rows, self.started, self.ended, self.conversation,
            *self.tokens, orjson.dumps(self.cwds).decode(), self.git_branch, self.model, int(self.ordered),
        ]

    @classmethod
    def stored(cls, conn, session_id: str) -> "Tally | None":
        row = conn.execute(
            "SELECT last_id, last_seq, rows, started_at, ended_at, conversation, input_tokens, output_tokens, "
            "cache_read_tokens, cache_creation_tokens, cwds, git_branch, model, time_ordered "
            "FROM derive_tallies WHERE session_id = ?",
            [session_id],
        ).fetchone()
        if row is None:
            return None
        return cls(*row[:6], list(row[6:10]), orjson.loads(row[10]), row[11], row[12], bool(row[13]))


TIMESTAMP = operator.attrgetter("timestamp")
IS_SOME = partial(operator.is_not, None)


def in_time_order(stamps: list, times: list, after: str | None) -> bool:
    """Whether rows whose stored timestamps are ``stamps`` (those not None, in ``seq`` order,
    after rows in time order whose latest time is ``after``) keep the session in time order
    as logged: each timestamp is its own canonical form (``times``, their ``moment``s,
    are the timestamps) and none is earlier than one before it. A thread in time order
    is read in log order (``query.obelisk.in_log_order``). Built-ins over the lists, no
    step a row."""
    return (
        stamps == times
        and (after is None or not times or times[0] >= after)
        and all(map(operator.le, times, times[1:]))
    )


def plan_appended(conn: sqlite3.Connection, session_id: str, stats: tuple):
    """Read only: (surface updates, usage updates, tally, rewound uuids, source) of a
    session derived from the rows appended since its last derivation alone; None when
    it must be derived whole.

    The rows the last derivation saw keep what it found when each new row
    - comes after them (``seq``) and is no compaction (boundary or summary) nor rewind marker;
    - names as its parent no row on a rewound branch or taken back (which it
      could bring back), nor a prompt with no parent (the session's first
      prompts are siblings once answered), and, a prompt itself, names a parent
      no other prompt names (a rewind);
    - is the parent of no row seen before.
    Then the new rows are current (log-only) and visible (hidden) as they were
    written, only the usage of the API messages they are copies of is
    counted again, and only the prompts they send are looked for among the
    prompts queued before and not yet sent (``queued_searched``). Rows moved, reordered or deleted drop the tally
    (``forget_tallies``); a count that disagrees makes sure of it.
    """
    tally = Tally.stored(conn, session_id)
    if tally is None:
        return None
    source = conn.execute("SELECT source FROM sessions WHERE id = ?", [session_id]).fetchone()
    if source is None:
        return None
    new = session_rows(conn, session_id, after=tally.last_id, kind=AppendedRow)
    if tally.rows + len(new) != stats[2] or len(new) > tally.rows:  # (many new rows: as fast read whole)
        return None
    if not all(r.seq > tally.last_seq and not reshapes(r) for r in new):
        return None
    by_uuid = {r.uuid: r for r in new}
    seen = _seen_rows(conn, session_id, tally.last_id, "uuid", {r.parent_uuid for r in new if r.parent_uuid} - set(by_uuid))
    for r in new:
        if not r.parent_uuid:
            continue
        parent = by_uuid.get(r.parent_uuid) or seen.get(r.parent_uuid)
        if parent is not None and (
            (parent.uuid in seen and parent.visibility == "inactive")
            or (not parent.parent_uuid and is_prompt(parent))
        ):
            return None
        if is_prompt(r):
            siblings = [s for s in new if s.parent_uuid == r.parent_uuid and s is not r]
            siblings += _seen_rows(conn, session_id, tally.last_id, "parent_uuid", [r.parent_uuid], all_rows=True)
            if any(map(is_prompt, siblings)):
                return None
    if _seen_rows(conn, session_id, tally.last_id, "parent_uuid", list(by_uuid), all_rows=True):
        return None
    surfaces = {r.id: ("log-only" if r.surface == "log-only" else "current",
                       "hidden" if r.visibility == "hidden" else "visible", None) for r in new}
    usage = []
    for r in new:
        if has_usage(r) and not r.api_message_id:
            tally.count_usage([r], +1)
            if r.usage_counted != 1:
                usage.append((1, r.id))
    for api_message_id in sorted({r.api_message_id for r in new if has_usage(r) and r.api_message_id}):
        copies = session_rows(conn, session_id, api_message_id=api_message_id)
        tally.count_usage([r for r in copies if r.id <= tally.last_id and has_usage(r) and r.usage_counted == 1], -1)
        counted = counted_usage(copies)
        tally.count_usage([r for r in copies if r.id in counted], +1)
        usage += [(int(r.id in counted), r.id) for r in copies if r.usage_counted != int(r.id in counted) and has_usage(r)]
    last_id = tally.last_id
    tally.add(new, {row_id: surface[1] for row_id, surface in surfaces.items()})
    return (
        [new_surface + (r.id,) for r in new if (new_surface := surfaces[r.id]) != (r.surface, r.visibility, r.replaced_by)],
        usage,
        queued_searched(conn, session_id, new, after=last_id),
        tally,
        StoredRewound(conn, session_id, last_id),
        source[0],
    )


def reshapes(row: SessionRow) -> bool:
    """Whether a row may change what rows before it are: a compaction or a rewind marker."""
    return row.subtype == "compact_boundary" or bool(row.is_compact_summary) or row.type == "rewind" \
        or row.subtype in ROLLBACKS


def _seen_rows(conn, session_id: str, last_id: int, column: str, values, all_rows: bool = False):
    """The session's rows up to ``last_id`` whose ``column`` is one of ``values``:
    by uuid (``{uuid: row}``), or all of them (``all_rows``, a list)."""
    found = []
    values = sorted(values)
    for start in range(0, len(values), 500):
        found += session_rows(conn, session_id, up_to=last_id, where=(column, values[start:start + 500]))
    return found if all_rows else {r.uuid: r for r in found}


class StoredRewound:
    """The uuids of a session's rows on a rewound branch or taken back, as stored up to
    ``last_id`` (rows appended after it are neither), looked up one at a time."""

    def __init__(self, conn, session_id: str, last_id: int):
        self.conn, self.session_id, self.last_id = conn, session_id, last_id

    def __contains__(self, uuid) -> bool:
        return uuid is not None and self.conn.execute(
            "SELECT 1 FROM messages WHERE uuid = ? AND session_id = ? AND id <= ? AND visibility = 'inactive'",
            [uuid, self.session_id, self.last_id],
        ).fetchone() is not None


def summary_leaf_sessions(conn, session_ids) -> set[str]:
    """Sessions whose leaf a ``summary`` title line (maybe elsewhere) names."""
    found = set()
    for session_id in session_ids:
        found.update(
            row[0]
            for row in conn.execute(
                "SELECT DISTINCT m.session_id FROM titles t JOIN messages m ON m.uuid = t.leaf_uuid "
                "WHERE t.session_id = ? AND t.kind = 'summary'",
                [session_id],
            )
        )
    return found


# -- inline sidechains ---------------------------------------------------


UNGROUPED_SIDECHAIN = "session_id = ? AND is_sidechain = 1 AND agent_id IS NULL"  # m009's partial index


def has_ungrouped_sidechain(conn, session_id: str) -> bool:
    """Whether the session has inline sidechain lines still to move out."""
    found = conn.execute(f"SELECT 1 FROM messages WHERE {UNGROUPED_SIDECHAIN} LIMIT 1", [session_id])
    return found.fetchone() is not None


def group_inline_sidechains(conn, session_id: str, words: dict[str, SessionWords] | None = None) -> set[str]:
    """Move ≤1.0 inline sidechain lines into subagent sessions of their own.

    Each sidechain root (a sidechain line whose parent is not a sidechain
    line) starts an agent; its descendants follow it. The agent is linked to
    the Task/Agent call whose prompt equals the root's text. Word counts the
    reader made for the session index move with the lines.
    """
    rows = conn.execute(
        f"SELECT id, uuid, parent_uuid, text, is_meta, cwd, git_branch FROM messages WHERE {UNGROUPED_SIDECHAIN} "
        "ORDER BY seq",
        [session_id],
    ).fetchall()
    if not rows:
        return set()
    agent_of: dict[str, tuple[str, str]] = {}  # uuid -> (agent id, child session)
    children = set()
    moved = []
    context: dict[str, list] = {}  # child session -> the last cwd and git branch its lines name
    for row_id, uuid, parent_uuid, text, is_meta, cwd, git_branch in rows:
        owner = agent_of.get(parent_uuid) if parent_uuid else None
        if owner is None and parent_uuid:
            found = conn.execute(
                "SELECT agent_id, session_id FROM messages WHERE uuid = ? AND is_sidechain = 1 "
                "AND agent_id IS NOT NULL",
                [parent_uuid],
            ).fetchone()
            owner = tuple(found) if found else None
        if owner is None:
            owner = start_inline_agent(conn, session_id, uuid, text)
        agent_of[uuid] = owner
        agent_id, child = owner
        seq = conn.execute(
            "SELECT COALESCE(MAX(seq), 0) + 1 FROM messages WHERE session_id = ?", [child]
        ).fetchone()[0]
        conn.execute(
            "UPDATE messages SET agent_id = ?, session_id = ?, seq = ? WHERE id = ?",
            [agent_id, child, seq, row_id],
        )
        for table in ("tool_calls", "tool_results"):
            conn.execute(
                f"UPDATE {table} SET session_id = ? WHERE message_uuid = ?", [child, uuid]
            )
        conn.execute(  # a compaction summary the line gave (found by its session's index)
            "UPDATE summaries SET session_id = ? WHERE session_id = ? AND message_uuid = ?", [child, session_id, uuid]
        )
        children.add(child)
        moved.append(_Moved(child, text, is_meta))
        last = context.setdefault(child, [None, None])
        last[0], last[1] = cwd or last[0], git_branch or last[1]
    # The agent's directory and branch are the last its lines name, as a session's are.
    conn.executemany(
        "UPDATE sessions SET cwd = coalesce(?, cwd), git_branch = coalesce(?, git_branch) WHERE id = ?",
        [(*context[child], child) for child in children],
    )
    conn.executemany(
        "INSERT OR IGNORE INTO file_sessions (file_id, session_id) "
        "SELECT DISTINCT file_id, ? FROM messages WHERE session_id = ?",
        [(child, child) for child in children],
    )
    renumber(conn, session_id)
    forget_tallies(conn, {session_id, *children})  # rows moved out, in and renumbered
    if words is not None and session_id in words:
        for child, counted in count_session_words(moved).items():
            words[session_id].remove(counted)
            words.setdefault(child, SessionWords()).add(counted)
    return children


@dataclass(slots=True)
class _Moved:
    session_id: str
    text: str
    is_meta: int


def renumber(conn, session_id: str) -> None:
    """Close the gaps moved rows leave, keeping the order: seq stays contiguous."""
    conn.execute(
        """WITH ranked AS (
               SELECT id, ROW_NUMBER() OVER (ORDER BY seq) AS n FROM messages WHERE session_id = :s)
           UPDATE messages SET seq = ranked.n FROM ranked
           WHERE messages.id = ranked.id AND messages.seq != ranked.n""",
        {"s": session_id},
    )


def start_inline_agent(conn, session_id: str, root_uuid: str, prompt: str) -> tuple[str, str]:
    agent_id, child = inline_agent(session_id, root_uuid)
    # The agent belongs to its parent's project, also when the parent's comes
    # from the log's folder and the agent ran in another directory. Its row
    # may be there already without its parent: derived from its old lines
    # after a parser change had every session of the file forgotten.
    parent = conn.execute("SELECT source, project, project_source FROM sessions WHERE id = ?", [session_id]).fetchone()
    conn.execute(
        "INSERT INTO sessions (id, source, project, project_source, parent_session_id, relationship, agent_id) "
        "VALUES (?, ?, ?, ?, ?, 'subagent', ?) ON CONFLICT (id) DO UPDATE SET "
        "parent_session_id = excluded.parent_session_id, relationship = excluded.relationship, "
        "agent_id = excluded.agent_id, "
        "project = iif(excluded.project_source = 'log', excluded.project, project), "
        "project_source = iif(excluded.project_source = 'log', excluded.project_source, project_source)",
        [child, *(parent or ("claude", None, None)), session_id, agent_id],
    )
    tool_use_id, agent_type, description = spawning_call_for_prompt(conn, session_id, prompt)
    conn.execute(
        "INSERT INTO subagents (agent_id, session_id, child_session_id, parent_tool_use_id, agent_type, "
        "agent_type_source, description, description_source) VALUES (?, ?, ?, ?, ?, ?, ?, ?) "
        "ON CONFLICT (session_id, agent_id) DO NOTHING",
        [agent_id, session_id, child, tool_use_id, agent_type, "call" if agent_type else None,
         description, "call" if description else None],
    )
    return agent_id, child


def spawning_call_for_prompt(conn, session_id: str, prompt: str):
    """The Task/Agent call in ``session_id`` whose prompt is ``prompt``."""
    for tool_id, input_json in conn.execute(
        "SELECT id, input_json FROM tool_calls WHERE session_id = ? AND name IN (?, ?) ORDER BY timestamp",
        [session_id, *SPAWNING_TOOLS],
    ):
        try:
            spec = orjson.loads(input_json or "{}")
        except orjson.JSONDecodeError:
            continue
        if isinstance(spec, dict) and (spec.get("prompt") or "").strip() == (prompt or "").strip():
            return tool_id, spec.get("subagent_type"), spec.get("description")
    return None, None, None


# -- surfaces ------------------------------------------------------------


SessionRow = namedtuple(
    "SessionRow",
    "id uuid parent_uuid logical_parent_uuid type subtype role timestamp content_type "
    "is_meta is_compact_summary surface visibility replaced_by meta_json source "
    "api_message_id input_tokens output_tokens cache_read_tokens cache_creation_tokens usage_counted",
)
# A row appended since the last derivation, with what ``Tally.add`` reads of it too.
AppendedRow = namedtuple("AppendedRow", (*SessionRow._fields, "seq", "cwd", "git_branch", "model"))


def session_rows(conn, session_id: str, *, after: int | None = None, up_to: int | None = None,
                 api_message_id: str | None = None, where: tuple | None = None, kind=SessionRow) -> list:
    """A session's messages in order, as named tuples of ``kind`` (cheaper than ``sqlite3.Row``):
    all of them, or those with an id after ``after`` or up to ``up_to``, copies of one
    API message, or those whose column ``where[0]`` is one of ``where[1]``."""
    cursor = conn.cursor()
    cursor.row_factory = None
    # (A few rows of a long session: found by their own index, ``+`` keeping SQLite from
    # searching the session's rows for them instead.)
    few = api_message_id is not None or where is not None
    sql = f"SELECT {', '.join(kind._fields)} FROM messages WHERE {'+' if few else ''}session_id = ?"
    params: list = [session_id]
    if after is not None:
        sql += " AND id > ?"
        params.append(after)
    if up_to is not None:
        sql += f" AND {'+' if few else ''}id <= ?"
        params.append(up_to)
    if api_message_id is not None:
        sql += " AND api_message_id = ?"
        params.append(api_message_id)
    if where is not None:
        column, values = where
        sql += f" AND {column} IN (SELECT value FROM json_each(?))"
        params.append(orjson.dumps(list(values)).decode())
    return list(map(kind._make, cursor.execute(sql + " ORDER BY seq", params)))


def is_prompt(row: SessionRow) -> bool:
    return (
        row.role == "user"
        and row.type == "user"
        and not row.is_meta
        and not row.is_compact_summary
        and row.content_type not in ("tool_result", "interruption")  # no one typed a note of an interruption
    )


SURFACE_UPDATE = "UPDATE messages SET surface = ?, visibility = ?, replaced_by = ? WHERE id = ?"
USAGE_UPDATE = "UPDATE messages SET usage_counted = ? WHERE id = ?"


FIRST_PROMPTS = ""  # no uuid is empty: the parent the session's typed roots share


def surfaces_of(rows: list[SessionRow]) -> dict[int, tuple]:
    """(surface, visibility, replaced_by) of each row: rewound-away branches and
    compacted history are shadowed."""
    surface = {}
    visibility = {}
    replaced_by = {}
    children = defaultdict(list)
    roots = []
    compacted = False
    for row in rows:
        compacted = compacted or row.subtype == "compact_boundary" or bool(row.is_compact_summary)
        if row.parent_uuid:
            children[row.parent_uuid].append(row)
        elif not compacted and is_prompt(row) and not row.logical_parent_uuid:  # (one naming what it goes on from)
            roots.append(row)
        surface[row.uuid] = "log-only" if row.surface == "log-only" else "current"
        visibility[row.uuid] = "hidden" if row.visibility == "hidden" else "visible"
    # The first prompt edited and sent again gives a second root: prompts
    # with no parent, each answered (a log that links no lines has no
    # branches), before any compaction (whose orphans follow it), are siblings.
    children[FIRST_PROMPTS] = [row for row in roots if row.uuid in children]
    # Rewinds: several prompts under one parent at different times. The
    # branch holding the newest line goes on; it is the newest prompt's unless
    # the user went back to an older branch (a resume) and carried on there.
    latest = None
    rewinds = []
    for siblings in children.values():
        prompts = [r for r in siblings if is_prompt(r)]
        if len(prompts) < 2 or len({r.timestamp for r in prompts}) < 2:
            continue
        latest = latest or latest_under(rows, children)
        newest = max(prompts, key=lambda r: latest[r.uuid])
        rewinds.append((newest, [prompt for prompt in prompts if prompt is not newest]))
    # The later rewinds first: a rewind inside an abandoned branch names what
    # replaced its own lines, and each line is walked once (nested rewinds
    # walked the same lines again and again).
    abandoned_lines: set[str] = set()
    for newest, abandoned in reversed(rewinds):
        for prompt in abandoned:
            for row in subtree(prompt, children, abandoned_lines):
                visibility[row.uuid] = "inactive"
                replaced_by[row.uuid] = newest.uuid
                if surface[row.uuid] != "log-only":
                    surface[row.uuid] = "shadowed"
    # Rewind markers (Gemini's ``$rewindTo``, Codex's rollback): the rows from the
    # marker's target up to the marker were taken back, or those it names
    # (``meta.taken_uuids``); the marker replaced them.
    index_of = {row.uuid: index for index, row in enumerate(rows)}
    for index, row in enumerate(rows):
        for taken in rewound(rows, index, index_of) if row.type == "rewind" or row.subtype in ROLLBACKS else ():
            visibility[taken.uuid] = "inactive"
            replaced_by.setdefault(taken.uuid, row.uuid)
            if surface[taken.uuid] != "log-only":
                surface[taken.uuid] = "shadowed"
    # Compaction: what the model saw before it is replaced by the summary,
    # except what it kept (named by the boundary before the summary, or by
    # the summary itself: Codex). The boundary line itself was never model
    # context: nothing replaces it.
    # Only rows still current can be replaced: those after the last compaction
    # and those it kept (one pass over the rows, however many compactions).
    preserved: set[str] = set()
    current: list[SessionRow] = []
    for row in rows:
        if row.subtype == "compact_boundary":
            preserved = kept_by(row)
        elif row.is_compact_summary:
            preserved |= kept_by(row)
            kept = []
            for earlier in current:
                uuid = earlier.uuid
                if surface[uuid] != "current":
                    continue
                if uuid in preserved:
                    kept.append(earlier)
                else:
                    surface[uuid] = "shadowed"
                    replaced_by.setdefault(uuid, row.uuid)
            current = kept
            preserved = set()
        current.append(row)
    return {r.id: (surface[r.uuid], visibility[r.uuid], replaced_by.get(r.uuid)) for r in rows}


def latest_under(rows: list[SessionRow], children) -> dict[str, tuple]:
    """Each row's latest ``time_order`` in its subtree (itself included): every
    subtree in one pass, children before their parent."""
    latest: dict[str, tuple] = {}
    for root in rows:
        if root.uuid in latest:
            continue
        stack = [(root, False)]
        while stack:
            row, children_done = stack.pop()
            below = children.get(row.uuid, ())
            if children_done:
                latest[row.uuid] = max([latest[row.uuid], *(latest[child.uuid] for child in below)])
            elif row.uuid not in latest:
                latest[row.uuid] = time_order(row)  # what a link looping back to it finds
                stack.append((row, True))
                stack.extend((child, False) for child in below if child.uuid not in latest)
    return latest


def time_order(row: SessionRow) -> tuple:
    """A sort key putting rows in time order (canonical UTC; the row id breaks ties)."""
    timestamp = (moment(row.timestamp) if is_moment(row.timestamp) else None) or ""
    return timestamp, row.id


def kept_by(row: SessionRow) -> set[str]:
    """The uuids a compaction row names as kept verbatim (``meta.preserved_uuids``)."""
    return _named(row, "preserved_uuids")


ROLLBACKS = frozenset({"thread_rolled_back"})  # Codex: the last turns taken back, the first of them named


def rewound(rows: list[SessionRow], index: int, index_of: dict) -> list[SessionRow]:
    """The rows the rewind marker ``rows[index]`` took back."""
    marker = rows[index]
    named = taken_by(marker)
    if named:
        return [row for row in rows[:index] if row.uuid in named]
    start = index_of.get(marker.logical_parent_uuid)
    return rows[start:index] if start is not None else []


def taken_by(row: SessionRow) -> set[str]:
    """The uuids a rewind marker names as taken back (``meta.taken_uuids``), if it names them."""
    return _named(row, "taken_uuids")


def _named(row: SessionRow, key: str) -> set[str]:
    return set((orjson.loads(row.meta_json) if row.meta_json else {}).get(key) or ())


def subtree(root: SessionRow, children, seen: set | None = None):
    """``root`` and the rows below it, each once; rows already in ``seen`` (and
    what is below them) are left out, and those yielded are added to it."""
    stack = [root]
    seen = set() if seen is None else seen
    while stack:
        row = stack.pop()
        if row.uuid in seen:
            continue
        seen.add(row.uuid)
        yield row
        stack.extend(children.get(row.uuid, ()))


# -- prompts queued ------------------------------------------------------


SEARCHED_UPDATE = "UPDATE messages SET search_text = ? WHERE id = ?"
# What a queued prompt sent is searched as: nothing (its text is its prompt's).
SENT = ""


def is_queued(row: SessionRow) -> bool:
    """A prompt the user typed while the agent worked, as Claude Code queued it."""
    return row.type == "queue-operation" and row.subtype == "enqueue"


def sends_queued(row: SessionRow) -> bool:
    """A row that may be a queued prompt sent: a user line of text (after a ``dequeue``),
    or a ``queued_command`` attachment (after a ``remove`` with reason ``absorbed_mid_turn``)."""
    return row.role == "user" and row.content_type == "text" and (
        row.type == "user" or (row.type == "attachment" and row.subtype == "queued_command"))


def queued_searched(conn, session_id: str, rows: list, after: int | None = None) -> list:
    """Read only: ``SEARCHED_UPDATE`` rows of the session's queued prompts.

    A prompt queued (``queue-operation`` ``enqueue``) and then sent is the row
    that sent it too: the first row after it that sends its very text (Claude
    Code's ``dequeue`` and ``remove`` lines name no enqueue), each row sending
    one, the earliest queued first. Its own row is then kept but not searched
    (``search_text`` ``SENT``), so a search including meta lines finds the prompt
    once; one never sent (taken back, dropped by a hook, left waiting) is
    searched as written. ``rows`` are the session's rows in order, or (``after``:
    the last row the previous derivation saw) those appended since: then only
    the prompts queued and not yet sent are looked for, by the texts the new
    rows send, and the rows queued among the new ones start as written."""
    senders = [r.id for r in rows if sends_queued(r)]
    if after is None:
        queued_ids = [r.id for r in rows if is_queued(r)]
        if not queued_ids:
            return []
        stored = {i: (text, searched) for i, text, searched in conn.execute(
            "SELECT id, text, search_text FROM messages WHERE id IN (SELECT value FROM json_each(?))",
            [orjson.dumps(queued_ids).decode()])}
        texts = {text for text, _ in stored.values()}
        pending: dict[str, list] = defaultdict(list)
    else:
        if not senders:
            return []
        stored = {}
        texts = None
    sent_texts = dict(conn.execute(
        "SELECT id, text FROM messages WHERE id IN (SELECT value FROM json_each(?))"
        + (" AND text IN (SELECT value FROM json_each(?))" if texts is not None else ""),
        [orjson.dumps(senders).decode(), *([orjson.dumps(sorted(texts)).decode()] if texts is not None else [])]))
    if after is not None:
        # The prompts queued before the new rows and not yet sent, holding a text they send: their
        # length and meta flag are in the session's index, so only those of that length are read.
        wanted = sorted(set(sent_texts.values()))
        earlier = conn.execute(
            "SELECT id, text, search_text FROM messages WHERE session_id = ? AND id <= ? AND is_meta = 1 "
            "AND text_length IN (SELECT value FROM json_each(?)) AND type = 'queue-operation' AND subtype = 'enqueue' "
            "AND search_text IS NOT ? AND text IN (SELECT value FROM json_each(?)) ORDER BY seq",
            [session_id, after, orjson.dumps(sorted({len(t) for t in wanted})).decode(), SENT,
             orjson.dumps(wanted).decode()]).fetchall()
        pending = defaultdict(list)
        for row_id, text, searched in earlier:
            stored[row_id] = (text, searched)
            pending[text].append(row_id)
        new_queued = [r.id for r in rows if is_queued(r)]
        if new_queued:
            stored.update({i: (text, searched) for i, text, searched in conn.execute(
                "SELECT id, text, search_text FROM messages WHERE id IN (SELECT value FROM json_each(?))",
                [orjson.dumps(new_queued).decode()])})
    sent = set()
    cursor = {text: 0 for text in pending}
    for row in rows:
        if is_queued(row) and row.id in stored:
            pending[stored[row.id][0]].append(row.id)
        elif row.id in sent_texts:
            text = sent_texts[row.id]
            waiting = pending.get(text)
            if waiting and cursor.setdefault(text, 0) < len(waiting):
                sent.add(waiting[cursor[text]])
                cursor[text] += 1
    updates = []
    for row_id, (text, searched) in stored.items():
        wanted_text = SENT if row_id in sent else search_text(text)
        if (row_id in sent or after is None) and wanted_text != searched:
            updates.append((wanted_text, row_id))
    return sorted(updates, key=lambda update: update[1])


# -- usage ---------------------------------------------------------------


def has_usage(row: SessionRow) -> bool:
    return row.input_tokens is not None or row.output_tokens is not None


def counted_usage(rows: list[SessionRow]) -> set[int]:
    """The rows whose tokens count: per API message, the copy with the most output."""
    best = {}
    for row in filter(has_usage, rows):
        key = row.api_message_id or ("row", row.id)
        current = best.get(key)
        if current is None or (row.output_tokens or 0) >= (current.output_tokens or 0):
            best[key] = row
    return {row.id for row in best.values()}


# -- sessions ------------------------------------------------------------


# The start and a title of a kind derivation chooses follow the stored rows
# alone (a title a source's session record set itself is kept when no
# candidate is left); the other columns keep what a session record gave when
# the rows say nothing.
SESSION_UPDATE = f"""UPDATE sessions SET
     started_at = ?1,
     ended_at = COALESCE(?2, ended_at),
     message_count = ?3, input_tokens = ?4, output_tokens = ?5,
     cache_read_tokens = ?6, cache_creation_tokens = ?7,
     project_path = COALESCE(relocated_cwd, ?8, project_path, cwd),
     project = CASE WHEN project_source = 'log' THEN project ELSE COALESCE(?9, project) END,
     project_source = CASE WHEN project_source = 'log' THEN project_source WHEN ?9 IS NOT NULL THEN 'cwd'
       ELSE COALESCE(project_source, 'cwd') END,
     git_branch = COALESCE(?10, git_branch), model = COALESCE(?11, model),
     jsonl_path = COALESCE(?12, jsonl_path),
     title = CASE WHEN ?14 IS NOT NULL OR title_source IN ({DERIVED_TITLE_SQL}) THEN ?13 ELSE title END,
     title_source = CASE WHEN ?14 IS NOT NULL OR title_source IN ({DERIVED_TITLE_SQL}) THEN ?14 ELSE title_source END,
     availability = CASE WHEN ?15 > 0 OR ?16 = 0 THEN 'live' ELSE 'archived' END,
     time_ordered = ?18,
     updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')
   WHERE id = ?17"""


MAX_INTEGER = SQLITE_INTEGERS[-1]  # token totals of absurd counts stop there

# What a reply holds besides its messages: reasoning, tool calls and their output;
# and the note an interrupted turn leaves in the user's name.
NOT_CONVERSATION = ("thinking", "redacted_thinking", "tool_result", "tool_use", "interruption")
CONVERSATION_SQL = (
    "role IN ('user', 'assistant') AND is_meta = 0 AND is_compact_summary = 0 AND visibility = 'visible' "
    f"AND content_type NOT IN ({', '.join(repr(t) for t in NOT_CONVERSATION)})"
)


def is_conversation(row: SessionRow, visibility: str) -> bool:
    """A user or assistant message that counts in ``message_count`` (``CONVERSATION_SQL``):
    it has content (a line whose content is missing has no type), is not a reply's reasoning or
    tools, and is no compaction's summary (the agent wrote it in the user's name)."""
    return (
        row.role in ("user", "assistant")
        and row.is_meta == 0
        and not row.is_compact_summary
        and visibility == "visible"
        and row.content_type is not None
        and row.content_type not in NOT_CONVERSATION
    )


# A file that keeps a session live: one holding its messages, or one holding
# no message at all that is not an agent's or workflow's document (a copy of
# the session's log whose lines are all replays is one). An agent's log and
# its .meta.json name the parent session too, but the parent is archived once
# its own log is gone. Nor is a tool's output saved apart (a text file) the
# session's log, though it holds a message of the session. Nor is a list naming
# sessions (Codex's session_index.jsonl and import ledger) the log of any: a thread
# whose rollout is gone is archived, and its log is not the list. Nor is the file
# holding a Claude Code session's title (its custom-title.json).
AGENT_DOCUMENTS = ("subagent_meta", "workflow", "workflow_journal")
INDEXES = ("session_index", "import_ledger", "custom_title", "prompt_log")
TITLE_FILES = ("custom_title",)  # a title kept beside a log: any the log's lines give outranks it
NOT_LOGS = ", ".join(repr(k) for k in INDEXES)
# Whether file ``f`` holds a message of session ``:s``: looked up by file
# (``+`` keeps SQLite from scanning the session's rows for every file instead:
# a session whose agents' logs all name it has thousands of files).
FILE_HOLDS_SESSION = "EXISTS (SELECT 1 FROM messages m WHERE m.file_id = f.id AND +m.session_id = :s)"
OWN_FILE = (
    f"f.layout != 'text' AND f.kind NOT IN ({NOT_LOGS}) AND ({FILE_HOLDS_SESSION}"
    " OR (NOT EXISTS (SELECT 1 FROM messages m WHERE m.file_id = f.id)"
    f" AND f.kind NOT IN ({', '.join(repr(k) for k in AGENT_DOCUMENTS)})))"
)


# The log naming a session, and how many of its logs are on disk.
LAST_SQL = f"""SELECT
     (SELECT f.path FROM file_sessions fs JOIN source_files f ON f.id = fs.file_id
      WHERE fs.session_id = :s AND f.layout != 'text' AND f.kind NOT IN ({NOT_LOGS}) ORDER BY f.missing,
        {kept_copy_sql('f')}, {FILE_HOLDS_SESSION} DESC, f.lines_stored DESC, f.id LIMIT 1) AS jsonl_path,
     (SELECT COUNT(*) FROM file_sessions fs JOIN source_files f ON f.id = fs.file_id
      WHERE fs.session_id = :s AND f.missing = 0 AND {OWN_FILE}) AS live_files"""

def session_values(conn, session_id: str, tally: Tally, rewound) -> list:
    """``SESSION_UPDATE`` values: the totals of the rows as ``tally`` counted them, the title
    (``rewound``: the uuids of rows rewound or taken back), and the last cwd, branch and model."""
    bounds = conn.execute(
        "SELECT started_at, ended_at FROM file_sessions WHERE session_id = ? "
        "AND (started_at IS NOT NULL OR ended_at IS NOT NULL)", [session_id]
    ).fetchall()
    recorded = [t for t in (moment(start) for start, _ in bounds if is_moment(start)) if t]
    # the latest time its files' lines give besides its rows (canonical: a Codex turn's completion,
    # a Gemini chat's lastUpdated, a Claude Code queued prompt)
    ends = [end for _, end in bounds if end is not None]
    started = min([*([tally.started] if tally.started else []), *recorded], default=None)
    # A session with no time but its files' starts ends at the last of them.
    ended = max([*([tally.ended] if tally.ended else []), *ends], default=None) or max(recorded, default=None)
    title, title_source = choose_title(conn, session_id, rewound)
    last = conn.execute(LAST_SQL, {"s": session_id}).fetchone()
    project_path = tally.project_path()
    return [
        started, ended,
        tally.conversation,
        *(min(total, MAX_INTEGER) for total in tally.tokens),
        project_path, project_slug(project_path), tally.git_branch, tally.model, last[0],
        title, title_source, last[1], tally.rows, session_id, int(tally.ordered),
    ]


def is_moment(timestamp: str | None) -> bool:
    """Whether a stored timestamp is a date and time (``2026-01-02T…``): a log's
    placeholder (``[trimmed]``) must not become a session's start or end."""
    return bool(timestamp) and timestamp[:4].isdigit() and timestamp[4:5] == "-"


# The forms most logs write, every field in range (a day past the 28th is checked by ``canonical``).
USUAL_MOMENT = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12][0-9]|3[01])T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9](\.[0-9]{3})?Z"
)


def moment(timestamp: str) -> str | None:
    """A session's times are kept in the canonical UTC form (``utc.py``), so text
    order is time order wherever sessions are sorted; None for a time no calendar
    has (``2024-13-45``, year 0). The usual forms are only checked, not parsed."""
    usual = USUAL_MOMENT.fullmatch(timestamp)
    if usual and not timestamp.startswith("0000") and timestamp[8:10] <= "28":  # a day every month has
        return timestamp if usual.group(1) else timestamp[:19] + ".000Z"
    return canonical(timestamp)


def project_slug(path: str | None) -> str | None:
    """The folder name Claude Code gives a project: every other character a dash."""
    if not path:
        return None
    return "".join(c if c.isascii() and c.isalnum() else "-" for c in path)


TITLE_CHARS = 200


def shorten(title: str) -> str:
    """A title fit for a list: whitespace folded, at most ``TITLE_CHARS``."""
    folded = " ".join(title.split())
    return folded if len(folded) <= TITLE_CHARS else folded[: TITLE_CHARS - 1] + "…"


def choose_title(conn, session_id: str, rewound: set[str] = frozenset()) -> tuple[str | None, str | None]:
    """The title by precedence: custom > ai > name > index > summary > first prompt.

    Within a kind the newest wins (one a log's line gives before one kept in a
    file beside the log, a Claude Code custom-title.json), except the first prompt, which is first:
    the first whose message (its leaf uuid) is not in ``rewound``, the rows
    on a rewound branch (the first prompt edited and sent again), if any.
    A ``summary`` line names its conversation by leaf uuid, and may sit in
    another file: the one whose leaf is latest in the log and not rewound wins.
    """
    candidates = conn.execute(
        f"""SELECT t.kind, t.title, t.id, t.leaf_uuid, NULL, f.kind IN ({', '.join(map(repr, TITLE_FILES))})
           FROM titles t LEFT JOIN source_files f ON f.id = t.file_id WHERE t.session_id = :s AND t.kind != 'summary'
           UNION ALL
           SELECT t.kind, t.title, t.id, t.leaf_uuid, m.seq, 0 FROM titles t JOIN messages m ON m.uuid = t.leaf_uuid
           WHERE t.kind = 'summary' AND m.session_id = :s""",
        {"s": session_id},
    ).fetchall()
    best = {}
    for kind, title, row_id, leaf, leaf_seq, beside in candidates:
        if not title or not title.strip():
            continue
        keep = best.get(kind)
        if kind == "first_prompt":  # (the first one not rewound, ranked before the others)
            row_id = (leaf in rewound, row_id)
        elif kind == "summary":  # (the one of the latest leaf not rewound, whatever file holds it)
            row_id = (leaf not in rewound, leaf_seq, row_id)
        else:  # (one a log's line gives before one kept in a file beside it)
            row_id = (not beside, row_id)
        if keep is None or (row_id < keep[1] if kind == "first_prompt" else row_id > keep[1]):
            best[kind] = (title.strip(), row_id)
    for kind in TITLE_PRECEDENCE:
        if kind in best:
            title = best[kind][0]
            return (shorten(title) if kind == "first_prompt" else title), kind
    row = conn.execute(
        "SELECT description FROM subagents WHERE child_session_id = ? AND description IS NOT NULL",
        [session_id],
    ).fetchone()
    if row:
        return row[0], "subagent"
    return None, None


ORPHAN = """SELECT c.agent_id, c.parent_session_id FROM sessions c
   WHERE c.id = ? AND c.relationship = 'subagent' AND c.agent_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM sessions p WHERE p.id = c.parent_session_id)"""
# (``+``: the agent's rows are found by the agent, not among every agent of its parent)
ADOPTED = """SELECT sa.id, c.parent_session_id FROM sessions c
   JOIN subagents sa ON sa.child_session_id = c.id AND +sa.session_id = c.parent_session_id
   WHERE c.id = ? AND c.relationship = 'subagent' AND EXISTS (
     SELECT 1 FROM subagents o WHERE o.child_session_id = c.id AND o.id != sa.id
       AND NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = o.session_id))"""
# Stored sessions whose spawning call names the agent: by the agent's session,
# or (a row from before calls were named by sessionId) by its id alone.
CLAIMS = """SELECT sa.id, sa.session_id FROM subagents sa JOIN sessions p ON p.id = sa.session_id
   WHERE sa.child_session_id = :child AND sa.session_id IS NOT :named"""
CLAIMS_BY_AGENT = """SELECT sa.id, sa.session_id FROM subagents sa JOIN sessions p ON p.id = sa.session_id
   WHERE sa.agent_id = :agent AND sa.session_id IS NOT :named AND sa.parent_tool_use_id IS NOT NULL
     AND NOT EXISTS (SELECT 1 FROM sessions c WHERE c.id = sa.child_session_id)"""


def adopt_agents(conn, session_ids) -> set[str]:
    """Give an agent whose parent is no stored session the session that started it;
    the agents' sessions adopted so.

    A Claude agent names its parent by its lines' ``sessionId`` (2.0.x) or
    its folder (2.1.x), while a main file is stored under its file name: when
    that file was renamed, the agent's parent is missing. The main file's
    Task/Agent result still names the agent's session (its line's
    ``sessionId`` and ``toolUseResult.agentId``), so the one stored session
    that does becomes the parent; the row the agent's file made for the
    missing parent goes, what it knew kept. Claimed by two sessions, the
    agent is left alone. Either side may be derived first.
    """
    candidates = set()
    for session_id in session_ids:
        candidates.add(session_id)
        candidates.update(
            row[0]
            for row in conn.execute(
                "SELECT child_session_id FROM subagents WHERE session_id = ? AND child_session_id IS NOT NULL",
                [session_id],
            )
        )
    adopted = set()
    for child in sorted(candidates):
        orphan = conn.execute(ORPHAN, [child]).fetchone()
        if orphan is None:
            # Adopted already, its file read again (moved to another folder):
            # the row it made for the missing parent goes again.
            again = conn.execute(ADOPTED, [child]).fetchone()
            if again is not None:
                adopt_agent(conn, child, *again)
                adopted.add(child)
            continue
        agent_id, named = orphan
        claims = conn.execute(CLAIMS, {"child": child, "named": named}).fetchall()
        if not claims:
            claims = conn.execute(CLAIMS_BY_AGENT, {"agent": agent_id, "named": named}).fetchall()
        if len(claims) == 1:
            adopt_agent(conn, child, *claims[0])
            adopted.add(child)
    return adopted


def adopt_agent(conn, child: str, keep: int, parent: str) -> None:
    """Make ``parent`` (whose ``subagents`` row is ``keep``) the parent of the agent session ``child``."""
    fold_agent_rows(conn, child, keep, parent, "NOT EXISTS (SELECT 1 FROM sessions s WHERE s.id = subagents.session_id)")


# An agent started by a call in another agent's transcript (Claude Code
# 2.1.172+ nests agents, their files flat beside the others): rows naming
# such a call that are not yet under that agent's session, or whose child
# has another row or another parent still.
NESTED = """SELECT sa.id, sa.agent_id, sa.session_id, sa.child_session_id, c.session_id
   FROM subagents sa JOIN tool_calls c ON c.id = sa.parent_tool_use_id
   WHERE {scope} AND sa.child_session_id IS NOT NULL
     AND c.session_id LIKE '%:agent-%' AND c.session_id != sa.child_session_id
     AND (c.session_id != sa.session_id
          OR EXISTS (SELECT 1 FROM subagents o WHERE o.child_session_id = sa.child_session_id AND o.id != sa.id)
          OR EXISTS (SELECT 1 FROM sessions k WHERE k.id = sa.child_session_id
                                                AND k.parent_session_id IS NOT c.session_id))"""
NESTED_SCOPES = (
    "sa.session_id = :s",
    "sa.child_session_id = :s",
    f"sa.parent_tool_use_id IN (SELECT id FROM tool_calls WHERE session_id = :s AND name IN {SPAWNING_TOOLS!r})",
)


def nest_agents(conn, session_ids) -> set[str]:
    """Put an agent that another agent started under that agent's session; the
    agents' sessions moved so (their rows are then no longer those of ``session_ids``).

    Its ``.meta.json`` names the starting call (``toolUseId``), which sits in
    the other agent's transcript; the file itself names only the main session.
    """
    moved = set()
    for session_id in session_ids:
        scopes = NESTED_SCOPES if ":agent-" in session_id else NESTED_SCOPES[:2]
        for scope in scopes:
            for row_id, agent_id, named, child, caller in conn.execute(NESTED.format(scope=scope), {"s": session_id}).fetchall():
                if named != caller:
                    taken = conn.execute(
                        "SELECT id FROM subagents WHERE session_id = ? AND agent_id = ?", [caller, agent_id]
                    ).fetchone()
                    if taken is None:
                        conn.execute("UPDATE subagents SET session_id = ? WHERE id = ?", [caller, row_id])
                    else:
                        fold_agent_rows(conn, child, taken[0], caller, "id = :row", row=row_id)
                        row_id = taken[0]
                fold_agent_rows(conn, child, row_id, caller, "parent_tool_use_id IS NULL")
                moved.add(child)
    return moved


def fold_agent_rows(conn, child: str, keep: int, parent: str, which: str, **params) -> None:
    """Fold into the ``subagents`` row ``keep`` the other rows of ``child`` that
    ``which`` picks, and make ``parent`` its session's parent. What they knew is
    kept: an agent's type and task from the most telling source any of them had
    (as ``writer.SUBAGENT_UPSERT`` ranks them), its figures where ``keep`` has none."""
    others = f"FROM subagents WHERE child_session_id = :child AND id != :keep AND {which}"
    params = {"child": child, "keep": keep, **params}
    for field in DESCRIBED:
        conn.execute(
            f"""UPDATE subagents SET {field} = best.value, {field}_source = best.source
                FROM (SELECT {field} AS value, {field}_source AS source FROM subagents
                      WHERE {field} IS NOT NULL AND (id = :keep OR id IN (SELECT id {others}))
                      ORDER BY {SOURCE_RANK.format(f"{field}_source")} DESC, value DESC LIMIT 1) AS best
                WHERE subagents.id = :keep""",
            params,
        )
    conn.execute(
        f"""UPDATE subagents SET child_session_id = :child,
               duration_ms = COALESCE(subagents.duration_ms, o.duration_ms),
               total_tokens = COALESCE(subagents.total_tokens, o.total_tokens)
           FROM (SELECT MAX(duration_ms) AS duration_ms, MAX(total_tokens) AS total_tokens {others}) AS o
           WHERE subagents.id = :keep""",
        params,
    )
    conn.execute(f"DELETE {others}", params)
    conn.execute("UPDATE sessions SET parent_session_id = ? WHERE id = ? AND parent_session_id IS NOT ?", [parent, child, parent])


def _spawn_field(key: str) -> str:
    return f"""(SELECT CASE WHEN json_type(input_json, '$.{key}') = 'text'
                            THEN json_extract(input_json, '$.{key}') END
                FROM tool_calls WHERE id = subagents.parent_tool_use_id AND json_valid(input_json))"""


SPAWN_SPEC_UPDATE = f"""UPDATE subagents SET
       agent_type = COALESCE(agent_type, {_spawn_field('subagent_type')}),
       agent_type_source = CASE WHEN agent_type IS NULL AND {_spawn_field('subagent_type')} IS NOT NULL
                                THEN 'call' ELSE agent_type_source END,
       description = COALESCE(description, {_spawn_field('description')}),
       description_source = CASE WHEN description IS NULL AND {_spawn_field('description')} IS NOT NULL
                                 THEN 'call' ELSE description_source END
   WHERE (session_id = :s OR child_session_id = :s) AND parent_tool_use_id IS NOT NULL
     AND (agent_type IS NULL OR description IS NULL)"""


# The agent's type as its subagents row has it, also when its session was read
# before the call or the .meta.json that tells it (a parent's files arrive in
# any order, and a .meta.json outranks the call). Both sides of the OR are
# subagents columns, so each is an index search (not a scan of sessions).
AGENT_TYPE_UPDATE = """UPDATE sessions SET agent_type = sa.agent_type
   FROM subagents sa
   WHERE sa.child_session_id = sessions.id AND sa.agent_type IS NOT NULL
     AND sessions.agent_type IS NOT sa.agent_type AND sessions.relationship = 'subagent'
     AND (sa.child_session_id = :s OR sa.session_id = :s)"""


# A workflow agent's type, from its run's document: looked up from the agent's
# session and from its parent's (two statements, so each takes an index).
WORKFLOW_AGENT_TYPE_UPDATES = tuple(
    f"""UPDATE sessions SET agent_type = wa.agent_type FROM workflow_agents wa
       WHERE {where} AND sessions.relationship = 'workflow' AND wa.agent_id = sessions.agent_id
         AND wa.session_id = sessions.parent_session_id AND wa.agent_type IS NOT NULL
         AND sessions.agent_type IS NOT wa.agent_type"""
    for where in ("sessions.id = :s", "sessions.parent_session_id = :s")
)
WORD = re.compile(r"[\w-]+")  # how a run or task id is written (wf_sp01, task_sp01)
WORKFLOW_RESULTS = """SELECT tr.tool_use_id, tr.content FROM tool_results tr JOIN tool_calls tc ON tc.id = tr.tool_use_id
   WHERE tr.session_id = ? AND tc.name = 'Workflow' ORDER BY tr.timestamp, tr.tool_use_id"""


def link_workflows(conn, session_ids) -> None:
    """Each workflow run to its spawning call, each workflow agent's session to its type.

    A run's document may not name its call: the call is then the session's
    first ``Workflow`` call whose result names the run or its task, as a
    whole word (``task_1`` is not ``task_12``)."""
    for session_id in session_ids:
        for sql in WORKFLOW_AGENT_TYPE_UPDATES:
            conn.execute(sql, {"s": session_id})
        unlinked = conn.execute(
            "SELECT run_id, task_id FROM workflows WHERE session_id = ? AND parent_tool_use_id IS NULL", [session_id]
        ).fetchall()
        if not unlinked:
            continue
        # Each result's words, read once; the first result naming a run or its task is its call's.
        named: dict[str, tuple[int, str]] = {}
        for order, (call_id, said) in enumerate(conn.execute(WORKFLOW_RESULTS, [session_id])):
            for word in WORD.findall(said or ""):
                named.setdefault(word, (order, call_id))
        for run_id, task_id in unlinked:
            calls = [named[name] for name in (run_id, task_id) if name in named]
            if calls:
                conn.execute("UPDATE workflows SET parent_tool_use_id = ? WHERE run_id = ?", [min(calls)[1], run_id])


def link_subagents(conn, session_ids) -> None:
    """Fill in what one file knows about a subagent and another does not.

    ``subagents`` keeps only what the logs say (durations and token totals
    from the spawning call's result); figures computed from a transcript
    belong to its session row.
    """
    moved = adopt_agents(conn, session_ids) | nest_agents(conn, session_ids)
    for session_id in [*session_ids, *sorted(moved - set(session_ids))]:
        conn.execute(
            """UPDATE subagents SET parent_tool_use_id = (
                   SELECT tr.tool_use_id FROM tool_results tr
                   WHERE tr.agent_id = subagents.agent_id
                     AND tr.session_id = subagents.session_id LIMIT 1)
               WHERE parent_tool_use_id IS NULL AND (session_id = :s OR child_session_id = :s)""",
            {"s": session_id},
        )
        # What the spawning call says of its agent: a 2.0.x agent file records
        # neither its type nor its task, and an agent without a prompt of its
        # own is titled by its task.
        conn.execute(SPAWN_SPEC_UPDATE, {"s": session_id})
        conn.execute(
            """UPDATE sessions SET title = sa.description, title_source = 'subagent'
               FROM subagents sa
               WHERE sa.child_session_id = sessions.id
                 AND (sessions.title IS NULL OR sessions.title_source = 'subagent')
                 AND sessions.title IS NOT sa.description
                 AND sa.description IS NOT NULL AND (sa.session_id = :s OR sa.child_session_id = :s)""",
            {"s": session_id},
        )
        # Totals a result records without naming its agent (Claude <= 1.0),
        # also when the result was read after the agent's lines.
        conn.execute(
            """UPDATE subagents SET
                   duration_ms = COALESCE(duration_ms, (SELECT agent_duration_ms FROM tool_results
                                                        WHERE tool_use_id = subagents.parent_tool_use_id)),
                   total_tokens = COALESCE(total_tokens, (SELECT agent_tokens FROM tool_results
                                                          WHERE tool_use_id = subagents.parent_tool_use_id))
               WHERE session_id = :s AND parent_tool_use_id IS NOT NULL
                 AND (duration_ms IS NULL OR total_tokens IS NULL)""",
            {"s": session_id},
        )
        conn.execute(AGENT_TYPE_UPDATE, {"s": session_id})
