"""Write a batch of records inside the caller's transaction."""

from __future__ import annotations

import operator
import sqlite3
from collections import Counter
from dataclasses import dataclass, field

import orjson

from ..cjk import search_text
from ..records import (
    LineError,
    LineRepaired,
    Merged,
    Message,
    PromptEntry,
    PullRequest,
    Session,
    Subagent,
    Summary,
    SessionLink,
    TitleCandidate,
    ToolCall,
    ToolResult,
    Workflow,
    WorkflowAgent,
)
from ..sources.common import normal_path
from ..utc import canonical
from .cold_load import index_pending_text
from .stable_ids import PROMPT_SAME, RESULT_SAME, Held, hold_top, insert_past_top
from .session_index import recount_documents
from .tool_output import is_failure, stored_content
from .units import is_kept_copy, kept_copies, kept_from, retired_from

# A title longer than this is cut (a log can hold a title of any size; one of
# 50 MB was copied into the session row, its digest and their indexes).
MAX_TITLE = 1_000

# The tables whose rows each name the source file they were read from
# (``file_id``): deleted when the file is read again, moved with its copy.
# A title set again (a session renamed back) becomes the newest of its kind
# again: the row takes the next id. A first prompt stays the first.
TITLE_INSERT = """INSERT INTO titles (session_id, kind, title, timestamp, leaf_uuid, file_id) VALUES (?, ?, ?, ?, ?, ?)
   ON CONFLICT (session_id, kind, title, ifnull(leaf_uuid, '')) DO UPDATE
   SET id = (SELECT max(id) FROM titles) + 1, timestamp = COALESCE(excluded.timestamp, timestamp)
   WHERE kind != 'first_prompt'"""
FILE_TABLES = (
    "messages", "tool_calls", "tool_results", "summaries", "titles", "pull_requests", "session_links", "prompt_log",
)
PROMPT_COLUMNS = (
    "source session_id project timestamp text search_text pasted_json file_id line_no byte_offset byte_length"
).split()
PROMPT_INSERT = f"INSERT INTO prompt_log ({', '.join(PROMPT_COLUMNS)}) VALUES ({', '.join('?' * len(PROMPT_COLUMNS))})"
# A prompt given its id: one past those given (``stable_ids``).
PROMPT_INSERT_ID = (
    f"INSERT INTO prompt_log ({', '.join(PROMPT_COLUMNS)}, id) VALUES ({', '.join('?' * (len(PROMPT_COLUMNS) + 1))})"
)
# The values of a prompt row that tell it from another (``stable_ids.PROMPT_SAME``).
PROMPT_KEY = operator.itemgetter(*(PROMPT_COLUMNS.index(c) for c in PROMPT_SAME.split(", ")))
# The same prompt, kept by a file gone from this path (``retired_path``): one row each.
PROMPT_HELD = (
    "SELECT id, file_id FROM prompt_log WHERE source = ? AND session_id IS ? AND timestamp IS ? AND text = ? "
    "AND file_id IN ({}) ORDER BY id LIMIT 1"
)

# CPython's sqlite3 module (3.11) binds ``None`` through its adapter
# registry, at about seven times the cost of an int; a float NaN is bound
# as it is, and SQLite stores a NaN as NULL. Rows with many empty columns
# (messages have about eleven) are written with ``NULL`` instead of ``None``:
# 1.2 s less for the 226k messages of the benchmark's 500 MB corpus.
NULL = float("nan")


def nulls(values) -> tuple:
    """``values`` as a row to bind, ``None`` written as ``NULL``."""
    return tuple([NULL if value is None else value for value in values])

# A message row as the reader builds it (``message_row``); the writer adds
# ``seq`` and ``file_id``, which only the database knows.
MESSAGE_COLUMNS = (
    "uuid session_id source type subtype role parent_uuid logical_parent_uuid "
    "timestamp text search_text text_length content_type is_meta surface is_sidechain "
    "is_compact_summary agent_id model cwd git_branch api_message_id request_id "
    "input_tokens output_tokens cache_read_tokens cache_creation_tokens stop_reason meta_json "
    "turn_duration_ms line_no byte_offset byte_length seq file_id"
).split()
TEXT = MESSAGE_COLUMNS.index("text")
TYPE, META = MESSAGE_COLUMNS.index("type"), MESSAGE_COLUMNS.index("meta_json")
SAME_LINE = "type, subtype, role, content_type, text"  # what a replay repeats
SAME_ITEMS = operator.itemgetter(*(MESSAGE_COLUMNS.index(c) for c in SAME_LINE.split(", ")[:-1]))
BYTE_OFFSET, LINE_NO = MESSAGE_COLUMNS.index("byte_offset"), MESSAGE_COLUMNS.index("line_no")
BYTE_LENGTH = MESSAGE_COLUMNS.index("byte_length")
SIDECHAIN = MESSAGE_COLUMNS.index("is_sidechain")
PARENT, LOGICAL_PARENT = MESSAGE_COLUMNS.index("parent_uuid"), MESSAGE_COLUMNS.index("logical_parent_uuid")
# (A record's end is its file's, ``file_sessions.ended_at``: derivation sets the session's.)
SESSION_FIELDS = [f for f in Session.__dataclass_fields__ if f not in ("id", "ended_at")]
SAID_FIELDS = [f for f in SESSION_FIELDS if f != "source"]  # what a record says of its session besides its end
_SAID = operator.attrgetter(*SAID_FIELDS)
_NONE_SAID = (None,) * len(SAID_FIELDS)
# A subagents row says, field by field, where its type and task came from (``Subagent.described_by``).
DESCRIBED = ("agent_type", "description")
SUBAGENT_FIELDS = [f for f in Subagent.__dataclass_fields__ if f not in ("agent_id", "session_id", "described_by")] + [
    f"{f}_source" for f in DESCRIBED]
WORKFLOW_FIELDS = [f for f in Workflow.__dataclass_fields__ if f != "run_id"]
WORKFLOW_AGENT_FIELDS = [f for f in WorkflowAgent.__dataclass_fields__ if f != "agent_id"]


def unknown_line(kind: str | None) -> str:
    """What the summary says of a line whose type its parser does not know (merged, not stored)."""
    named = f" ({kind})" if isinstance(kind, str) and kind else ""
    return f"a line of a type the parser does not know{named}: counted as merged, not stored"


@dataclass
class WriteCounts:
    stored: int = 0
    merged: int = 0
    failed: int = 0
    merged_reasons: Counter = field(default_factory=Counter)
    sessions: set = field(default_factory=set)
    mentioned: set = field(default_factory=set)  # sessions with a line in this file, replays too
    # the other files holding the rows of lines this file replays (their sessions are ``mentioned``)
    replayed_from: set = field(default_factory=set)
    errors: list = field(default_factory=list)
    repaired: list = field(default_factory=list)  # (path, line, reason) of lines kept with repairs
    unknown: list = field(default_factory=list)  # (path, line, reason) of lines of a type not known: not stored
    prompts: int = 0  # prompt_log rows written (prompt logs' lines, counted as merged)


def _upsert_sql(table: str, keys: list[str], fields: list[str], last_wins=(), chosen=None) -> str:
    """An upsert that fills columns from non-null values, keeping the rest.

    Columns in ``last_wins`` take the newest non-null value; those in
    ``chosen`` (a dict) take its SQL expression; the others keep the first
    one they got.
    """
    chosen = chosen or {}
    columns = keys + fields
    sets = ", ".join(
        f"{f} = {chosen[f]}" if f in chosen
        else f"{f} = COALESCE(excluded.{f}, {f})" if f in last_wins else f"{f} = COALESCE({f}, excluded.{f})"
        for f in fields
    )
    return (
        f"INSERT INTO {table} ({', '.join(columns)}) VALUES ({', '.join('?' * len(columns))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets}"
    )


# A session's worktree is the last one a record names, its columns taken together.
WORKTREE_FIELDS = ("worktree_path", "worktree_branch", "worktree_base_branch")
SESSION_UPSERT = _upsert_sql(
    "sessions",
    ["id"],
    SESSION_FIELDS,
    last_wins={"cwd", "git_branch", "git_commit", "version", "model", "reasoning_effort", "title", "title_source", "tag", "continued_in",
               "agent_name", "team_name", "cost_usd", "lines_added", "lines_removed", "relocated_cwd", "ended_by_model"},
    chosen={
        **{f: f"CASE WHEN excluded.worktree_path IS NOT NULL THEN excluded.{f} ELSE {f} END" for f in WORKTREE_FIELDS},
        # said along with the project it fills (a project the log names is marked 'log' below)
        "project_source": "CASE WHEN project IS NULL THEN COALESCE(excluded.project_source, project_source) "
                          "ELSE project_source END",
    },
)
# An agent's type and its task each come from the most telling source that gave
# them, in whatever order the files arrive: its file's name (agent-acompact-*),
# its own files (.meta.json, a Codex child's log), its call's result, the
# call's input (``derive.SPAWN_SPEC_UPDATE``).
SOURCE_RANK = "(CASE {} WHEN 'name' THEN 4 WHEN 'agent' THEN 3 WHEN 'result' THEN 2 WHEN 'call' THEN 1 ELSE 0 END)"


def _ranked(field: str, source: str) -> str:
    outranks = f"{SOURCE_RANK.format(f'excluded.{source}')} >= {SOURCE_RANK.format(source)}"
    return f"CASE WHEN {outranks} THEN COALESCE(excluded.{field}, {field}) ELSE COALESCE({field}, excluded.{field}) END"


SUBAGENT_UPSERT = _upsert_sql("subagents", ["session_id", "agent_id"], SUBAGENT_FIELDS, chosen={
    column: _ranked(column, f"{f}_source") for f in DESCRIBED for column in (f, f"{f}_source")
})
WORKFLOW_UPSERT = _upsert_sql(
    "workflows", ["run_id"], WORKFLOW_FIELDS + ["file_id"], last_wins=set(WORKFLOW_FIELDS)
)
WORKFLOW_AGENT_UPSERT = _upsert_sql(
    "workflow_agents",
    ["agent_id"],
    WORKFLOW_AGENT_FIELDS + ["file_id"],
    last_wins=set(WORKFLOW_AGENT_FIELDS),
)
CALL_INSERT = (
    "INSERT OR IGNORE INTO tool_calls (id, message_uuid, session_id, name, presentation, "
    "input_json, file_path, timestamp, file_id) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
# The paths of a call this file stored (a call replayed from another file keeps its own).
CALL_FILE_INSERT = (
    "INSERT OR IGNORE INTO tool_call_files (tool_call_id, path) SELECT ?, ? "
    "WHERE EXISTS (SELECT 1 FROM tool_calls WHERE id = ? AND file_id = ?)"
)
RESULT_COLUMNS = (
    "tool_use_id message_uuid session_id content content_length is_error outcome exit_code agent_id timestamp "
    "file_id agent_duration_ms agent_tokens file_path search_content output_uuid"
).split()
# A result's file is the one it names, else its call's first (calls are inserted first).
RESULT_INTO = (
    f"INSERT OR IGNORE INTO tool_results ({', '.join(RESULT_COLUMNS)}{{}}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, "
    "?9, ?10, ?11, ?12, ?13, coalesce(?14, (SELECT file_path FROM tool_calls WHERE id = ?1)), ?15, ?16{})"
)
# The values of a result row that tell it from another of its tool call (``stable_ids.RESULT_SAME``).
RESULT_KEY = operator.itemgetter(*(RESULT_COLUMNS.index(c) for c in RESULT_SAME.split(", ")))
RESULT_INSERT = RESULT_INTO.format("", "")
# (one taken back, or one past those given: ``stable_ids``)
RESULT_INSERT_ID = RESULT_INTO.format(", id", ", ?17")
# A message holding a tool's whole output, read from a file of its own (see
# ``ToolResult.output_uuid``): its text, and the length of the whole when it was
# too long to hold (``meta.length``).
OUTPUT_TYPE = "tool_output"
RESULTS_OF_OUTPUT = "SELECT id, outcome, is_error FROM tool_results WHERE output_uuid = ?"
OUTPUT_SELECT = (
    "SELECT text, coalesce(json_extract(meta_json, '$.length'), text_length) FROM messages WHERE uuid = ?"
)
ALIAS_UPSERT = (
    "INSERT INTO message_aliases (file_id, uuid, stored_as) VALUES (?, ?, ?) "
    "ON CONFLICT (file_id, uuid) DO UPDATE SET stored_as = excluded.stored_as"
)
# The earliest start and the latest end a file's session records give (lines read
# later may only move them out); derivation reads them.
FILE_SESSION_UPSERT = (
    "INSERT INTO file_sessions (file_id, session_id, started_at, ended_at) VALUES (?, ?, ?, ?) "
    "ON CONFLICT (file_id, session_id) DO UPDATE SET "
    "started_at = CASE WHEN excluded.started_at < started_at OR started_at IS NULL "
    "THEN excluded.started_at ELSE started_at END, "
    "ended_at = CASE WHEN excluded.ended_at > ended_at OR ended_at IS NULL THEN excluded.ended_at ELSE ended_at END "
    "WHERE excluded.started_at < started_at OR (started_at IS NULL AND excluded.started_at IS NOT NULL) "
    "OR excluded.ended_at > ended_at OR (ended_at IS NULL AND excluded.ended_at IS NOT NULL)"
)
MESSAGE_INSERT = (
    f"INSERT INTO messages ({', '.join(MESSAGE_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(MESSAGE_COLUMNS))})"
)
# A row given its id: one taken back (the same message read again), or one past those given (``stable_ids``).
MESSAGE_INSERT_ID = (
    f"INSERT INTO messages ({', '.join(MESSAGE_COLUMNS)}, id) "
    f"VALUES ({', '.join('?' * (len(MESSAGE_COLUMNS) + 1))})"
)


class Writer:
    """Turns records into rows for one source file inside one transaction."""

    def __init__(self, conn: sqlite3.Connection, file_id: int, path: str, kept_seqs: dict | None = None,
                 kept_ids: Held | None = None):
        self.conn = conn
        self.file_id = file_id
        self.path = path
        # {uuid: (session, seq)}: the places the rows of a file read again alone had
        # (``Ingester``), taken again by the same lines (and used up)
        self.kept_seqs = kept_seqs if kept_seqs is not None else {}
        # the ids of the messages, tool results and prompts of the files read again
        # (``stable_ids.held_ids``), taken again by the same rows (used up)
        self.kept_ids = kept_ids if kept_ids is not None else Held()
        # (the FTS index leaves them to the caller: ``Ingester.commit``)
        self.ids_taken_back: list[int] = []
        self.results_taken_back: list[int] = []
        self.counts = WriteCounts()
        self._next_seq: dict[str, int] = {}
        self._starts: dict[str, str] = {}  # session -> the earliest started_at its records gave
        self._ends: dict[str, str] = {}  # session -> the latest ended_at its records gave (canonical)
        self._retired: list[int] | None = None  # the files gone from this path (``retired_path``), once looked up
        self._left: set[int] = set()  # those of them that gave rows up to this file
        # (the highest message and tool result ids left once archived rows were deleted
        # (``_move_retired_lines``): the rows written after them take ids up from there)
        self.ids_after_deletes: tuple[int, int] | None = None

    def seq_for(self, session_id: str, uuid: str | None = None) -> int:
        """The next place in ``session_id``; the one ``uuid`` had, when its file is read again alone."""
        following = self._following(session_id)
        kept = self.kept_seqs.pop(uuid, None) if self.kept_seqs else None
        seq = kept[1] if kept is not None and kept[0] == session_id else following
        self._next_seq[session_id] = max(following, seq + 1)
        return seq

    def _following(self, session_id: str) -> int:
        following = self._next_seq.get(session_id)
        if following is None:
            stored = self.conn.execute("SELECT COALESCE(MAX(seq), 0) FROM messages WHERE session_id = ?", [session_id])
            held = [place for session, place in self.kept_seqs.values() if session == session_id]
            following = self._next_seq[session_id] = max([stored.fetchone()[0], 0, *held]) + 1  # (places set aside are negative)
        return following

    def write(self, records, message_rows=None, marks=None) -> None:
        """Write ``records``, or, as the reader hands them over (``split_messages``),
        the other records with ``message_rows`` and their ``marks``.

        Messages, tool calls, tool results and prompts go in one ``executemany`` each.
        A message stored under a new name (``<uuid>@<offset>``) takes along the
        tool calls, results and summary its line gave.
        """
        if message_rows is None:
            records, message_rows, marks = split_messages(records)
        self._calls: list[tuple] = []
        self._call_files: list[tuple] = []
        self._results: list[tuple] = []
        self._prompts: list[tuple] = []
        self._prompts_again: list[tuple] = []  # (with the ids they take back)
        self._texts: dict[str, str] = {row[0]: row[TEXT] for row in message_rows}
        self._renamed: tuple | None = None  # (uuid, stored as) of the line being handled
        self._held: list[tuple] = []  # (uuid, SAME_LINE, byte offset, length, line) of the lines merged
        renamed = self._insert_messages(message_rows)
        owners = _owners(marks, renamed, len(records)) if renamed else {}
        for index, record in enumerate(records):
            handler = self.handlers.get(type(record))
            if handler is None:
                raise TypeError(f"unknown record type {type(record).__name__}")
            if owners:
                self._renamed = owners.get(index)
            handler(self, record)
        self.conn.executemany(CALL_INSERT, self._calls)
        self.conn.executemany(CALL_FILE_INSERT, self._call_files)
        self._insert_results()
        insert_past_top(self.conn, "prompt_log", PROMPT_INSERT, PROMPT_INSERT_ID, self._prompts)
        self.conn.executemany(PROMPT_INSERT_ID, self._prompts_again)
        self._complete_results(message_rows)
        replayed = sorted({held[0] for held in self._held})
        self._take_over_retired()
        self._note_replayed(replayed, {row[1] for row in message_rows})
        self.conn.executemany(
            FILE_SESSION_UPSERT,
            [(self.file_id, s, self._starts.get(s), self._ends.get(s))
             for s in self.counts.mentioned | self.counts.sessions],
        )

    def _insert_results(self) -> None:
        """Insert the results; one read again the same as a result of the files read again
        (its tool call id and ``RESULT_KEY``) takes back its id. Of the rows of one tool
        call id only the first is stored (``INSERT OR IGNORE``): the others are left out
        here, so one going in with a new id does not take the place of one taking back its own."""
        rows = self._results
        again = []
        if self.kept_ids.results:
            rows, seen = [], set()
            for row in self._results:
                if row[0] in seen:
                    continue
                seen.add(row[0])
                if (result_id := self.kept_ids.result_id(row[0], _result_key(row))) is not None:
                    again.append(row + (result_id,))
                else:
                    rows.append(row)
        insert_past_top(self.conn, "tool_results", RESULT_INSERT, RESULT_INSERT_ID, rows)
        if again:
            self.conn.executemany(RESULT_INSERT_ID, again)
            self.results_taken_back += [row[-1] for row in again]

    def _complete_results(self, message_rows: list[tuple]) -> None:
        """The results stored before the whole of their output (a file of its own,
        read after their log's line) take it now: what a result read after it
        takes (``_tool_result``)."""
        for row in message_rows:
            if row[TYPE] == OUTPUT_TYPE:
                take_output(self.conn, row[0], row[TEXT], row[META])

    def _message_uuid(self, uuid: str | None) -> str | None:
        """``uuid`` as stored, for a record of the line being handled."""
        renamed = self._renamed
        return renamed[1] if renamed is not None and renamed[0] == uuid else uuid

    def _insert_messages(self, messages: list[tuple]) -> None:
        """Insert the message rows whose uuid is new; count the rest as replays.

        A repeated uuid with the same ``SAME_LINE`` (type, subtype, role,
        content type and text) is a resumed session replaying history: stored once. Anything else is no replay (a damaged
        line before the real one, an id reused by hand): it is stored too, as
        ``<uuid>@<byte offset>``, so no text is lost, and from there on the
        file's lines that name that uuid as their parent point to this copy
        (``message_aliases`` keeps the link for later batches).
        Known uuids are looked up first, so sequence numbers stay contiguous
        and the many rows go through a single ``executemany``. Returns the
        renamed rows: ``{index in messages: (uuid, stored as)}``.
        """
        if not messages:
            return {}
        renamed: dict[int, tuple[str, str]] = {}
        moved = self._move_retired_lines(messages)
        kept = self.kept_ids if self.kept_ids.messages else None
        again = []  # the rows of messages stored before, with their ids
        texts = self._stored_lines([row[0] for row in messages])
        aliases = self._aliases()
        with_copies: set[str] = set()
        rows = []
        self.counts.mentioned.update(row[1] for row in messages)
        for index, row in enumerate(messages):
            if aliases and (row[PARENT] in aliases or row[LOGICAL_PARENT] in aliases):
                row = _with_parents(row, aliases)
            uuid, text = row[0], row[TEXT]
            kind, subtype, role, content_type = SAME_ITEMS(row)  # NULL (a NaN) is read back as None
            same = (kind, subtype if subtype == subtype else None, role if role == role else None,
                    content_type if content_type == content_type else None, text)
            copies = texts.setdefault(uuid, set())
            if copies and same not in copies and uuid not in with_copies:
                copies.update(self._copies_of(uuid))  # rare: only a changed line needs them
                with_copies.add(uuid)
            if same in copies:
                self._merge("duplicate")
                self._held.append((uuid, same, row[BYTE_OFFSET], row[BYTE_LENGTH], row[LINE_NO]))
                if uuid in with_copies and (name := self._retired_copy(uuid, same)) is not None:
                    # the line a gone file kept as a changed copy (``<uuid>@<offset>``), this file's
                    # now (``_take_over_lines``): its later lines naming ``uuid`` mean that copy
                    aliases[uuid] = name
                    self.conn.execute(ALIAS_UPSERT, [self.file_id, uuid, name])
                continue
            if copies:
                name, k = f"{uuid}@{row[BYTE_OFFSET]}", 1
                while name in self._texts or self._stored(name):  # one line holding two changed copies
                    k += 1
                    name = f"{uuid}@{row[BYTE_OFFSET]}.{k}"
                row = (name,) + row[1:]
                aliases[uuid] = row[0]
                renamed[index] = (uuid, row[0])
                self._texts[row[0]] = text
                self.conn.execute(ALIAS_UPSERT, [self.file_id, uuid, row[0]])
            copies.add(same)
            if index in moved:
                again.append(row + (moved[index][1], self.file_id, moved[index][2]))
            elif kept is not None and (held := kept.message_id(  # (by the name it is stored under)
                    row[0], row[1], row[SIDECHAIN] == 1, _line_key(row)[1:])) is not None:
                again.append(row + (self.seq_for(row[1], row[0]), self.file_id, held))
            else:
                rows.append(row + (self.seq_for(row[1], row[0]), self.file_id))
            self.counts.sessions.add(row[1])
        insert_past_top(self.conn, "messages", MESSAGE_INSERT, MESSAGE_INSERT_ID, rows)
        if again:
            self.conn.executemany(MESSAGE_INSERT_ID, again)
            self.ids_taken_back += [row[-1] for row in again]
        self.counts.stored += len(rows) + len(again)
        if moved:  # what named an archived row moved names the line's row (not one of this file at its old place)
            retired = self._retired_files()
            marks = ",".join("?" * len(retired))
            for index, (old, *_) in moved.items():
                name = renamed[index][1] if index in renamed else messages[index][0]
                for column in ("parent_uuid", "logical_parent_uuid"):
                    self.conn.execute(f"UPDATE messages SET {column} = ? WHERE {column} = ? AND file_id IN ({marks})",
                                      [name, old, *retired])
                # (a title the line gives again takes the archived one's place: ``_take_over``)
                self.conn.execute(f"UPDATE OR IGNORE titles SET leaf_uuid = ? WHERE leaf_uuid = ? AND file_id IN ({marks})",
                                  [name, old, *retired])
                for column in ("message_start", "message_end"):
                    self.conn.execute(f"UPDATE memories SET {column} = ? WHERE {column} = ?", [name, old])
        return renamed

    def _move_retired_lines(self, messages: list[tuple]) -> dict[int, tuple[str, int, int]]:
        """The messages named after their place in this file (``<session>:<byte offset>``, as
        Codex's are) whose line a file gone from this path (``retired_path``) holds at another
        place, the same (``SAME_LINE`` and time): the same message, moved. Its archived row, and
        the tool calls, results and summary its line gave, are deleted; the row of this file takes
        its place in the session (``seq``) and its id, and the rows that followed it follow this
        one (see ``_insert_messages``). (One held at the same place keeps its name: ``_take_over_lines``.)
        Returns ``{index in messages: (archived uuid, seq, id)}``."""
        placed = [index for index, row in enumerate(messages)
                  if isinstance(row[BYTE_OFFSET], int) and row[0] == f"{row[1]}:{row[BYTE_OFFSET]}"]
        if not placed or not self._retired_files():
            return {}
        retired = self._retired_files()
        archived: dict[tuple, list[tuple]] = {}
        for uuid, file_id, seq, message_id, *key in self.conn.execute(
            f"SELECT uuid, file_id, seq, id, session_id, timestamp, {SAME_LINE} FROM messages "
            f"WHERE file_id IN ({','.join('?' * len(retired))}) AND uuid = session_id || ':' || byte_offset "
            "ORDER BY seq", retired,
        ):
            archived.setdefault(tuple(key), []).append((uuid, file_id, seq, message_id))
        if not archived:
            return {}
        keys = {index: _line_key(messages[index]) for index in placed}
        in_place = {messages[index][0] for index in placed
                    if any(held[0] == messages[index][0] for held in archived.get(keys[index], ()))}
        moved: dict[int, tuple[str, int, int]] = {}
        for index in placed:
            if messages[index][0] in in_place:
                continue
            found = next((held for held in archived.get(keys[index], ()) if held[0] not in in_place), None)
            if found is None:
                continue
            archived[keys[index]].remove(found)
            moved[index] = (found[0], found[2], found[3])
            self._following(messages[index][1])  # (the places after the row's stay taken)
            self._forget_archived_row(*found[:2], messages[index][1])
        if moved:
            self.ids_after_deletes = tuple(self.conn.execute(
                "SELECT (SELECT COALESCE(MAX(id), 0) FROM messages), (SELECT COALESCE(MAX(id), 0) FROM tool_results)"
            ).fetchone())
        return moved

    def _forget_archived_row(self, uuid: str, file_id: int, session_id: str) -> None:
        """Delete an archived message row and what its line gave, its line now this file's
        (the tool results it gave again the same take back their ids)."""
        index_pending_text(self.conn)  # (the delete takes the row out of the index)
        hold_top(self.conn, "messages", "tool_results")
        self.kept_ids.hold_results(self.conn, "message_uuid = ? AND file_id = ?", [uuid, file_id])
        self.conn.execute(
            "DELETE FROM tool_call_files WHERE tool_call_id IN "
            "(SELECT id FROM tool_calls WHERE message_uuid = ? AND file_id = ?)", [uuid, file_id])
        for table in ("tool_calls", "tool_results", "summaries"):
            self.conn.execute(f"DELETE FROM {table} WHERE message_uuid = ? AND file_id = ?", [uuid, file_id])
        self.conn.execute("DELETE FROM message_aliases WHERE stored_as = ? AND file_id = ?", [uuid, file_id])
        self.conn.execute("DELETE FROM messages WHERE uuid = ?", [uuid])
        # The line is stored here now, merged there: read = stored + merged + failed still holds for both.
        self.conn.execute(
            "UPDATE source_files SET lines_stored = max(lines_stored - 1, 0), lines_merged = lines_merged + 1 "
            "WHERE id = ?", [file_id],
        )
        recount_documents(self.conn, [session_id])
        self.conn.execute("DELETE FROM derive_tallies WHERE session_id = ?", [session_id])
        self._left.add(file_id)

    def _retired_files(self) -> list[int]:
        """The stored files gone from this file's path, kept under a name of their own (``retired_path``),
        and the copies kept of this log from before it was pruned (``kept_copies``; for such a
        copy, those kept before it): both held lines this file holds now, which are this file's."""
        if self._retired is None:
            self._retired = [file_id for file_id, path in self.conn.execute(
                "SELECT id, path FROM source_files WHERE path > ? AND path < ? AND missing = 1 ORDER BY id",
                [self.path + "#gone-", self.path + "#gone."],
            ) if retired_from(path) == self.path]
            log = kept_from(self.path) or self.path
            if (kept := kept_copies(log)) is not None:
                self._retired += [file_id for file_id, path in self.conn.execute(
                    "SELECT id, path FROM source_files WHERE path > ? AND path < ? ORDER BY id", kept,
                ) if is_kept_copy(path, log) and (log == self.path or path < self.path)]
        return self._retired

    def _take_over_retired(self) -> None:
        """The rows of a file gone from this path (``retired_path``) whose line this file
        holds now, the same, are this file's: they take its place (the line's offset,
        length and number, and the file), so ``raw()`` reads them here. A gone file
        left holding nothing goes (``forget_retired``)."""
        left, self._left = self._left, set()
        if self._held and self._retired_files():
            left |= self._take_over_lines()
        forgotten = forget_retired(self.conn, sorted(left))
        if forgotten:
            self._retired = [file_id for file_id in self._retired if file_id not in forgotten]

    def _retired_copy(self, uuid: str, same: tuple) -> str | None:
        """The name of the changed copy of ``uuid`` (``<uuid>@<offset>``) saying ``same`` that a
        file gone from this path holds, if any."""
        retired = self._retired_files()
        if not retired:
            return None
        return next((row[0] for row in self.conn.execute(
            f"SELECT uuid, {SAME_LINE} FROM messages WHERE uuid > ? AND uuid < ? "
            f"AND file_id IN ({','.join('?' * len(retired))}) ORDER BY id", [uuid + "@", uuid + "A", *retired],
        ) if tuple(row[1:]) == same), None)

    def _take_over_lines(self) -> set[int]:
        retired = self._retired_files()
        marks = ",".join("?" * len(retired))
        left: set[int] = set()
        for uuid, same, offset, length, line_no in self._held:
            found = next((row for row in self.conn.execute(  # (the line, or a changed copy of it: ``<uuid>@<offset>``)
                f"SELECT uuid, file_id, session_id, {SAME_LINE} FROM messages WHERE (uuid = ? OR (uuid > ? AND uuid < ?)) "
                f"AND file_id IN ({marks}) ORDER BY uuid != ?, id", [uuid, uuid + "@", uuid + "A", *retired, uuid],
            ) if tuple(row[3:]) == same), None)
            if found is None:
                continue
            uuid, old, session_id = found[0], found[1], found[2]
            if session_id not in self.counts.mentioned:  # (an inline agent's line, moved to its session: derive)
                self.conn.execute(
                    "INSERT OR IGNORE INTO file_sessions (file_id, session_id) VALUES (?, ?)", [self.file_id, session_id]
                )
                self.counts.sessions.add(session_id)
            self.conn.execute(
                "UPDATE messages SET file_id = ?, byte_offset = ?, byte_length = ?, line_no = ? WHERE uuid = ?",
                [self.file_id, offset, length, line_no, uuid],
            )
            for table in ("tool_calls", "tool_results", "summaries"):  # what the line gave
                self.conn.execute(
                    f"UPDATE {table} SET file_id = ? WHERE message_uuid = ? AND file_id = ?", [self.file_id, uuid, old]
                )
            # The line is stored here now, merged there: read = stored + merged + failed still holds for both.
            self.conn.execute(
                "UPDATE source_files SET lines_stored = max(lines_stored - 1, 0), lines_merged = lines_merged + 1 "
                "WHERE id = ?", [old],
            )
            self.conn.execute(
                "UPDATE source_files SET lines_stored = lines_stored + 1, lines_merged = lines_merged - 1 WHERE id = ?",
                [self.file_id],
            )
            left.add(old)
        self._held = []
        return left

    def _take_over(self, table: str, where: str, values: list) -> None:
        """A row a file gone from this path (``retired_path``) holds, which a line of this file
        gives again the same (``where``): this file's now, as a first ingest of it has it."""
        retired = self._retired_files()
        if not retired:
            return
        marks = ",".join("?" * len(retired))
        found = [row[0] for row in self.conn.execute(
            f"SELECT DISTINCT file_id FROM {table} WHERE {where} AND file_id IN ({marks})", [*values, *retired])]
        if not found:
            return
        if table == "session_links":  # (not unique: this file stored its own)
            self.conn.execute(f"DELETE FROM {table} WHERE {where} AND file_id IN ({marks})", [*values, *retired])
        else:
            self.conn.execute(
                f"UPDATE {table} SET file_id = ? WHERE {where} AND file_id IN ({marks})",
                [self.file_id, *values, *retired],
            )
        self._left.update(found)

    def _note_replayed(self, uuids: list[str], own: set[str]) -> None:
        """The sessions and files holding the rows of the lines this batch replays that another
        file stored under another session than the batch's lines name (``own``: a log resumed
        or branched into a new file, and the one it copies): the file names those sessions
        too, so the two are read again together (``families``). An inline agent's row names
        the session whose lines hold it (where it is until derived)."""
        for start in range(0, len(uuids), 500):
            part = uuids[start:start + 500]
            for session_id, file_id in self.conn.execute(
                "SELECT DISTINCT CASE WHEN s.agent_id GLOB 'sidechain-*' AND s.parent_session_id IS NOT NULL "
                "THEN s.parent_session_id ELSE m.session_id END, m.file_id "
                "FROM messages m LEFT JOIN sessions s ON s.id = m.session_id "
                f"WHERE m.uuid IN ({','.join('?' * len(part))}) AND m.file_id IS NOT ?", [*part, self.file_id]
            ):
                if session_id not in own:
                    self.counts.mentioned.add(session_id)
                    if file_id is not None:
                        self.counts.replayed_from.add(file_id)

    def _stored(self, uuid: str) -> bool:
        return self.conn.execute("SELECT 1 FROM messages WHERE uuid = ?", [uuid]).fetchone() is not None

    def _aliases(self) -> dict[str, str]:
        """The uuids this file's later copies took over (see ``_insert_messages``)."""
        return dict(self.conn.execute("SELECT uuid, stored_as FROM message_aliases WHERE file_id = ?", [self.file_id]))

    def _stored_lines(self, uuids: list[str]) -> dict[str, set[tuple]]:
        """``SAME_LINE`` of the message stored under each of ``uuids`` that is known."""
        found: dict[str, set[tuple]] = {}
        for start in range(0, len(uuids), 500):
            part = uuids[start:start + 500]
            for uuid, *line in self.conn.execute(
                f"SELECT uuid, {SAME_LINE} FROM messages WHERE uuid IN ({','.join('?' * len(part))})", part
            ):
                found[uuid] = {tuple(line)}
        return found

    def _copies_of(self, uuid: str) -> list[tuple]:
        """``SAME_LINE`` of the messages stored as ``<uuid>@<offset>``: later, other lines."""
        return [tuple(line) for line in self.conn.execute(
            f"SELECT {SAME_LINE} FROM messages WHERE uuid > ? AND uuid < ?", [uuid + "@", uuid + "A"]
        )]

    def _merge(self, reason: str) -> None:
        self.counts.merged += 1
        self.counts.merged_reasons[reason] += 1

    def _merged(self, m: Merged) -> None:
        self._merge(m.reason)
        if m.reason == "unknown-type":  # (kept nowhere: said in the summary)
            self.counts.unknown.append((self.path, m.position.line_no, unknown_line(m.detail)))

    def _error(self, e: LineError) -> None:
        self.counts.failed += 1
        self.counts.errors.append((self.path, e.position.line_no, e.reason))
        self._report(e)

    def _repaired(self, e: LineRepaired) -> None:
        # The line's own records say how it is counted; its row says what was changed.
        self.counts.repaired.append((self.path, e.position.line_no, e.reason))
        self._report(e)

    def _report(self, e: LineError | LineRepaired) -> None:
        """The ``ingest_errors`` row of a line that failed or was read with repairs."""
        p = e.position
        self.conn.execute(
            "INSERT INTO ingest_errors (file_id, path, line_no, byte_offset, byte_length, reason, created_at) "
            "VALUES (?, ?, ?, ?, ?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now')) "
            "ON CONFLICT (path, line_no, byte_offset) DO UPDATE SET reason = excluded.reason, "
            "byte_length = excluded.byte_length, file_id = excluded.file_id",
            [self.file_id, self.path, p.line_no, p.byte_offset, p.byte_length, e.reason],
        )

    def _session(self, s: Session) -> None:
        if s.ended_at is not None:
            end = end_of(s)
            if end and end > self._ends.get(s.id, ""):
                self._ends[s.id] = end
            if says_only_end(s):
                # A line's time alone: its file names the session (so it is derived, and an
                # appended line moves the end), but no row is made for it.
                self.counts.sessions.add(s.id)
                return
        self.conn.execute(SESSION_UPSERT, [s.id] + [getattr(s, f) for f in SESSION_FIELDS])
        if s.started_at and (s.id not in self._starts or s.started_at < self._starts[s.id]):
            self._starts[s.id] = s.started_at
        if s.project and s.project_source is None:
            self.conn.execute(
                "UPDATE sessions SET project = ?, project_source = 'log' WHERE id = ? "
                "AND project_source IS NOT 'log'",
                [s.project, s.id],
            )
        self.counts.sessions.add(s.id)

    def _session_link(self, link: SessionLink) -> None:
        # Kept, as a title is, until the session is stored: deriving it sets the link (derive.link_sessions).
        self.conn.execute(
            "INSERT INTO session_links (session_id, parent_session_id, relationship, file_id) VALUES (?, ?, ?, ?)",
            [link.session_id, link.parent_session_id, link.relationship, self.file_id],
        )
        self._take_over("session_links", "session_id = ? AND parent_session_id = ? AND relationship = ?",
                        [link.session_id, link.parent_session_id, link.relationship])
        self.counts.sessions.add(link.session_id)  # (derived now, and its file is read again with the session's)

    def _tool_call(self, t: ToolCall) -> None:
        # A file's path is stored in its normal form (one spelling of one file, two spellings
        # of it in a call one row), once redacted: what redaction finds reads the agent's spelling.
        paths = list(dict.fromkeys(normal_path(path) for path in t.file_paths))
        self._calls.append(
            nulls((
                t.id, self._message_uuid(t.message_uuid), t.session_id, t.name, t.presentation, t.input_json,
                paths[0] if paths else None, t.timestamp, self.file_id,
            ))
        )
        self._call_files.extend((t.id, path, t.id, self.file_id) for path in paths)

    def _tool_result(self, r: ToolResult) -> None:
        message_uuid = self._message_uuid(r.message_uuid)
        failure = is_failure(r.outcome, r.is_error)
        content = stored_content(r.content, failure, self._texts.get(message_uuid))
        length = len(r.content)
        output = self.conn.execute(OUTPUT_SELECT, [r.output_uuid]).fetchone() if r.output_uuid else None
        if output is not None:  # its whole output, read already (else it takes it then: _complete_results)
            content, length = stored_content(output[0], failure, output[0]), output[1]
        self._results.append(
            nulls((
                r.tool_use_id, message_uuid, r.session_id, content, length,
                r.is_error, r.outcome, r.exit_code, r.agent_id, r.timestamp, self.file_id,
                r.agent_duration_ms, r.agent_tokens, None if r.file_path is None else normal_path(r.file_path),
                search_text(content) if failure else None,  # what tool_errors_fts indexes
                r.output_uuid,
            ))
        )

    def _title(self, t: TitleCandidate) -> None:
        title = stored_title(t)
        self.conn.execute(TITLE_INSERT, [t.session_id, t.kind, title, t.timestamp, t.leaf_uuid, self.file_id])
        self._take_over("titles", "session_id = ? AND kind = ? AND title = ? AND ifnull(leaf_uuid, '') = ifnull(?, '')",
                        [t.session_id, t.kind, title, t.leaf_uuid])
        self.counts.sessions.add(t.session_id)

    def _prompt(self, p: PromptEntry) -> None:
        # A prompt log names no session of the store's (no file_sessions row): it is in no
        # family, and reading it again reads no transcript again.
        position = p.position
        row = (
            p.source, p.session_id, p.project, p.timestamp, p.text, search_text(p.text), p.pasted_json, self.file_id,
            *((position.line_no, position.byte_offset, position.byte_length) if position else (None, None, None)),
        )
        taken = None
        retired = self._retired_files()
        if retired:  # (the line a gone copy of this log held: that row is this file's now, under its id)
            held = self.conn.execute(PROMPT_HELD.format(",".join("?" * len(retired))),
                                     [p.source, p.session_id, p.timestamp, p.text, *retired]).fetchone()
            if held is not None:
                hold_top(self.conn, "prompt_log")
                self.conn.execute("DELETE FROM prompt_log WHERE id = ?", [held[0]])
                self._left.add(held[1])
                taken = held[0]
        if taken is None and self.kept_ids.prompts:
            taken = self.kept_ids.prompt_id(PROMPT_KEY(row))
        if taken is None:
            self._prompts.append(row)
        else:
            self._prompts_again.append(row + (taken,))
        self.counts.prompts += 1

    def _summary(self, s: Summary) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO summaries (id, session_id, timestamp, source, content, "
            "message_uuid, file_id) VALUES (?, ?, ?, ?, ?, ?, ?)",
            [self._message_uuid(s.id), s.session_id, s.timestamp, s.kind, s.content,
             self._message_uuid(s.message_uuid), self.file_id],
        )

    def _pull_request(self, p: PullRequest) -> None:
        self.conn.execute(
            "INSERT OR IGNORE INTO pull_requests (session_id, url, number, repository, timestamp, file_id) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [p.session_id, p.url, p.number, p.repository, p.timestamp, self.file_id],
        )
        self._take_over("pull_requests", "session_id = ? AND url = ?", [p.session_id, p.url])
        self.counts.sessions.add(p.session_id)

    def _subagent(self, s: Subagent) -> None:
        sources = {f"{f}_source": s.described_by if getattr(s, f) else None for f in DESCRIBED}
        self.conn.execute(
            SUBAGENT_UPSERT,
            [s.session_id, s.agent_id] + [sources[f] if f in sources else getattr(s, f) for f in SUBAGENT_FIELDS],
        )
        self.counts.sessions.add(s.session_id)

    def _workflow(self, w: Workflow) -> None:
        self.conn.execute(
            WORKFLOW_UPSERT, [w.run_id] + [getattr(w, f) for f in WORKFLOW_FIELDS] + [self.file_id]
        )
        self.counts.sessions.add(w.session_id)  # its call may be in the session's log (derive.link_workflows)

    def _workflow_agent(self, a: WorkflowAgent) -> None:
        self.conn.execute(
            WORKFLOW_AGENT_UPSERT,
            [a.agent_id] + [getattr(a, f) for f in WORKFLOW_AGENT_FIELDS] + [self.file_id],
        )
        if a.session_id:  # its agent's session takes the type it names (derive.link_workflows)
            self.counts.sessions.add(a.session_id)

    handlers = {
        Merged: _merged,
        LineError: _error,
        LineRepaired: _repaired,
        Session: _session,
        SessionLink: _session_link,
        ToolCall: _tool_call,
        ToolResult: _tool_result,
        TitleCandidate: _title,
        PromptEntry: _prompt,
        Summary: _summary,
        PullRequest: _pull_request,
        Subagent: _subagent,
        Workflow: _workflow,
        WorkflowAgent: _workflow_agent,
    }


def stored_title(t: TitleCandidate) -> str:
    """A title as ``titles`` keeps it: at most ``MAX_TITLE`` characters, a first
    prompt's whitespace folded first (as its session's title is)."""
    title = t.title
    if t.kind == "first_prompt" and len(title) > MAX_TITLE:
        title = " ".join(title.split(None, MAX_TITLE)[:MAX_TITLE])
    return title if len(title) <= MAX_TITLE else title[: MAX_TITLE - 1] + "…"


def end_of(s: Session) -> str | None:
    """The time ``s.ended_at`` says, canonical; None when it is no time (a placeholder, "[trimmed]")."""
    text = s.ended_at if isinstance(s.ended_at, str) else ""
    return canonical(text) if text[:4].isdigit() and text[4:5] == "-" else None


def says_only_end(s: Session) -> bool:
    """Whether a session record says nothing but its end (``ended_at``; its ``source`` aside)."""
    return s.ended_at is not None and _SAID(s) == _NONE_SAID


def latest_ends(records: list) -> list:
    """``records`` with, of those that say only a session's end (``says_only_end``: one
    per line that stores no message), one per session: the one of its latest end (the
    first when none says a time). The writer makes the same of them as of all of them
    (``file_sessions.ended_at`` keeps the latest; the file names the session), and they
    need not be sent, redacted and written one by one. Records are not changed."""
    out: list = []
    kept: dict[str, list] = {}  # session -> [its record's index in out, its end]
    for record in records:
        if type(record) is not Session or record.ended_at is None or _SAID(record) != _NONE_SAID:
            out.append(record)
            continue
        end = _end_key(record)
        held = kept.get(record.id)
        if held is None:
            kept[record.id] = [len(out), end]
            out.append(record)
        elif end is not None and (held[1] is None or end > held[1]):
            out[held[0]] = record
            held[1] = end
    if len(out) == len(records):
        return records
    for session, (index, end) in kept.items():
        if end is not None and end_of(out[index]) != end:  # of the canonical shape, but no time
            ends = [(e, r) for r in records if type(r) is Session and r.id == session and says_only_end(r)
                    and (e := end_of(r)) is not None]
            if ends:
                out[index] = max(ends, key=lambda pair: pair[0])[1]
    return out


def _end_key(s: Session) -> str | None:
    """``end_of(s)``, but a text of its canonical shape is taken as it is (``latest_ends``
    checks the one it keeps): most logs write their times so."""
    text = s.ended_at
    if type(text) is str and len(text) == 24 and text[23] == "Z" and text[10] == "T" and text[19] == ".":
        return text
    return end_of(s)


def split_messages(records) -> tuple[list, list[tuple], list[int]]:
    """``records`` as ``Writer.write`` takes them: the records but messages, the messages'
    rows, and for each message how many of the other records came before it."""
    others, rows, marks = [], [], []
    for record in records:
        if type(record) is Message:
            rows.append(message_row(record))
            marks.append(len(others))
        else:
            others.append(record)
    return others, rows, marks


def _owners(marks: list[int], renamed: dict[int, tuple], count: int) -> dict[int, tuple]:
    """For each record index following a renamed message (up to the next message), that
    message's ``(uuid, stored as)``: a line's records come right after its message."""
    owners = {}
    for index, names in renamed.items():
        end = marks[index + 1] if index + 1 < len(marks) else count
        owners.update(dict.fromkeys(range(marks[index], end), names))
    return owners


def message_row(m: Message) -> tuple:
    """The row of a message, but for ``seq`` and ``file_id`` (see ``MESSAGE_COLUMNS``)."""
    p = m.position
    return nulls((
        m.uuid, m.session_id, m.source, m.type, m.subtype, m.role,
        m.parent_uuid, m.logical_parent_uuid, m.timestamp, m.text, search_text(m.text), len(m.text),
        m.content_type, m.is_meta, m.surface or "current", m.is_sidechain,
        m.is_compact_summary, m.agent_id, m.model, m.cwd, m.git_branch,
        m.api_message_id, m.request_id, m.input_tokens, m.output_tokens,
        m.cache_read_tokens, m.cache_creation_tokens, m.stop_reason,
        orjson.dumps(m.meta).decode() if m.meta else None, m.turn_duration_ms,
        p.line_no, p.byte_offset, p.byte_length,
    ))


def _line_key(row: tuple) -> tuple:
    """What tells a message row's line from another: its session, time and ``SAME_LINE``
    (as the database reads them back: NULL, a NaN here, as None)."""
    values = (row[1], row[MESSAGE_COLUMNS.index("timestamp")], *SAME_ITEMS(row), row[TEXT])
    return tuple(None if value != value else value for value in values)


def _result_key(row: tuple) -> tuple:
    """``RESULT_KEY`` of a result row, as the database reads it back (NULL, a NaN here, as None)."""
    return tuple(None if value != value else value for value in RESULT_KEY(row))


def _with_parents(row: tuple, aliases: dict[str, str]) -> tuple:
    """``row`` with its parent uuids replaced by the copies they now stand for."""
    values = list(row)
    for index in (PARENT, LOGICAL_PARENT):
        values[index] = aliases.get(values[index], values[index])
    return tuple(values)


# The tables of the rows a file's lines became (``file_sessions`` and ``message_aliases``
# only say which sessions and uuids it named).
READ_ROW_TABLES = (*FILE_TABLES, "workflows", "workflow_agents")


def file_holds_rows(conn: sqlite3.Connection, file_id: int) -> bool:
    """Whether anything was read from one file (its errors aside)."""
    tables = (*READ_ROW_TABLES, "file_sessions", "message_aliases")
    return any(conn.execute(f"SELECT 1 FROM {table} WHERE file_id = ? LIMIT 1", [file_id]).fetchone() for table in tables)


def holds_read_rows_sql(alias: str) -> str:
    """SQL: the source file ``alias`` holds a row one of its lines became."""
    return " OR ".join(f"EXISTS (SELECT 1 FROM {table} WHERE file_id = {alias}.id)" for table in READ_ROW_TABLES)


def forget_retired(conn: sqlite3.Connection, file_ids) -> set[int]:
    """Delete the files gone from disk among ``file_ids`` that hold nothing any more
    (no row read from them, no error): their rows all went to another file. Returns their ids."""
    forgotten = set()
    for file_id in file_ids:
        if any(conn.execute(f"SELECT 1 FROM {table} WHERE file_id = ? LIMIT 1", [file_id]).fetchone()
               for table in (*READ_ROW_TABLES, "ingest_errors")):
            continue
        if not conn.execute("SELECT 1 FROM source_files WHERE id = ? AND missing = 1", [file_id]).fetchone():
            continue
        for table in ("file_sessions", "message_aliases"):
            conn.execute(f"DELETE FROM {table} WHERE file_id = ?", [file_id])
        conn.execute("DELETE FROM source_files WHERE id = ?", [file_id])
        forgotten.add(file_id)
    return forgotten


def delete_file_rows(conn: sqlite3.Connection, file_id: int) -> set[str]:
    """Remove every row read from one file (before re-reading it).

    Returns the sessions touched so their derived fields are recomputed.
    """
    hold_top(conn, "messages", "tool_results", "prompt_log")
    sessions = {
        row[0]
        for row in conn.execute(
            "SELECT session_id FROM file_sessions WHERE file_id = ? "
            "UNION SELECT DISTINCT session_id FROM messages WHERE file_id = ?",
            [file_id, file_id],
        )
    }
    conn.execute(
        "DELETE FROM tool_call_files WHERE tool_call_id IN "
        "(SELECT id FROM tool_calls WHERE file_id = ?)",
        [file_id],
    )
    for table in (*FILE_TABLES, "ingest_errors", "file_sessions", "message_aliases"):
        conn.execute(f"DELETE FROM {table} WHERE file_id = ?", [file_id])
    # Rows read again may take back their ids (the same messages: ``stable_ids``), and the
    # session's stats, as they were, would not tell it was read again.
    recount_documents(conn, sessions)
    # Nor are the rows a session's last derivation saw all there: it is derived whole (derive.forget_tallies).
    conn.executemany("DELETE FROM derive_tallies WHERE session_id = ?", [[s] for s in sorted(sessions)])
    return sessions


def delete_copied_rows(
    conn: sqlite3.Connection, file_id: int, lines: set[str] | None = None
) -> tuple[set[str], int]:
    """Remove the rows one file kept of the history it copied of another session
    (its messages marked ``meta.copied_from``, with the tool calls, results and
    summaries of those messages and the aliases naming them), now that the
    session's own log holds that history: the file read again keeps none. With
    ``lines``, only the rows of the copied lines it names (``meta.copied_line``):
    those a log of a session further up holds.

    Returns the sessions touched, so they are derived whole again, and how many
    of the file's lines held those rows: lines that now merge into the session's.
    """
    copies = conn.execute(
        "SELECT uuid, session_id, line_no, seq FROM messages "
        "WHERE file_id = ? AND json_extract(meta_json, '$.copied_from') IS NOT NULL"
        + ("" if lines is None else
           " AND json_extract(meta_json, '$.copied_line') IN (SELECT value FROM json_each(?))"),
        [file_id] + ([] if lines is None else [orjson.dumps(sorted(lines)).decode()]),
    ).fetchall()
    if not copies:
        return set(), 0
    uuids = orjson.dumps(sorted({row[0] for row in copies})).decode()
    sessions = {row[1] for row in copies}
    lines = len({row[2] for row in copies if row[2] is not None})
    seqs = {session: sorted(row[3] for row in copies if row[1] == session) for session in sessions}
    hold_top(conn, "messages", "tool_results")
    conn.execute(
        "DELETE FROM tool_call_files WHERE tool_call_id IN (SELECT id FROM tool_calls "
        "WHERE file_id = ? AND message_uuid IN (SELECT value FROM json_each(?)))",
        [file_id, uuids],
    )
    for table in ("tool_calls", "tool_results", "summaries"):
        conn.execute(
            f"DELETE FROM {table} WHERE file_id = ? AND message_uuid IN (SELECT value FROM json_each(?))",
            [file_id, uuids],
        )
    conn.execute(
        "DELETE FROM message_aliases WHERE file_id = ? AND stored_as IN (SELECT value FROM json_each(?))",
        [file_id, uuids],
    )
    conn.execute(
        "DELETE FROM messages WHERE file_id = ? AND uuid IN (SELECT value FROM json_each(?))", [file_id, uuids]
    )
    # What was read after the copy follows nothing of it, and takes the places it left.
    for column in ("parent_uuid", "logical_parent_uuid"):
        conn.execute(
            f"UPDATE messages SET {column} = NULL WHERE session_id IN (SELECT value FROM json_each(?)) "
            f"AND {column} IN (SELECT value FROM json_each(?))",
            [orjson.dumps(sorted(sessions)).decode(), uuids],
        )
    for session, gone in sorted(seqs.items()):
        conn.execute(
            "UPDATE messages SET seq = seq - (SELECT COUNT(*) FROM json_each(?1) WHERE value < messages.seq) "
            "WHERE session_id = ?2 AND seq > ?3",
            [orjson.dumps(gone).decode(), session, gone[0]],
        )
    recount_documents(conn, sessions)
    conn.executemany("DELETE FROM derive_tallies WHERE session_id = ?", [[s] for s in sorted(sessions)])
    return sessions, lines


def take_output(conn: sqlite3.Connection, uuid: str, text: str, meta_json: str | None) -> None:
    """The results whose whole output is the message ``uuid`` (``ToolResult.output_uuid``)
    take its ``text``."""
    results = conn.execute(RESULTS_OF_OUTPUT, [uuid]).fetchall()
    if not results:
        return
    length = orjson.loads(meta_json).get("length", len(text)) if isinstance(meta_json, str) else len(text)
    if any(is_failure(outcome, is_error) for _, outcome, is_error in results):
        index_pending_text(conn)  # (the update takes the old output out of the index)
    for result_id, outcome, is_error in results:
        failure = is_failure(outcome, is_error)
        content = stored_content(text, failure, text)
        conn.execute(
            "UPDATE tool_results SET content = ?, content_length = ?, search_content = ? WHERE id = ?",
            [content, length, search_text(content) if failure else None, result_id],
        )


def retake_outputs(conn: sqlite3.Connection, file_ids) -> None:
    """The results whose whole output is a message of ``file_ids`` take its text again
    (redacted in place by new rules: their copies are not the files' rows)."""
    for uuid, text, meta_json in conn.execute(
        "SELECT uuid, text, meta_json FROM messages WHERE type = ? AND file_id IN (SELECT value FROM json_each(?))",
        [OUTPUT_TYPE, orjson.dumps(list(file_ids)).decode()],
    ).fetchall():
        take_output(conn, uuid, text, meta_json)
