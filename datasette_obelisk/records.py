"""Normalized records: what a source parser yields and the store writes.

Sources turn bytes into these records and know nothing of SQLite; the store
turns them into rows. Field names match the column names of the schema
(see ``store/migrations.py``), so a record maps onto a row by ``asdict``.

Every line of a source file ends up accounted for: it becomes a ``Message``
(possibly ``is_meta`` / ``surface='log-only'``), is merged into another record
(a ``Merged`` marker: duplicates, usage, titles, metadata), or is reported as
a ``LineError``. A line read with repairs (bytes that are not UTF-8) also
gets a ``LineRepaired``, which says so without changing how it is counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(slots=True)
class Position:
    """Where a record came from: a line of a source file."""

    line_no: int
    byte_offset: int
    byte_length: int


@dataclass(slots=True)
class Session:
    """A conversation. Non-null fields are merged into an existing row."""

    id: str
    source: str
    title: str | None = None
    title_source: str | None = None
    project: str | None = None
    # None: the log names the project; "folder": a grouping by the folder the log is in,
    # not a path, kept only while the session's rows name no folder
    project_source: str | None = None
    project_path: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    git_commit: str | None = None
    repository: str | None = None
    version: str | None = None
    model: str | None = None
    reasoning_effort: str | None = None  # the effort its model was last asked for (low, medium, high, ...)
    started_at: str | None = None
    # A time the log says the session went on to (a line that is no message: a turn's end, a
    # chat's lastUpdated); the session ends at the latest of these and of its messages' times.
    ended_at: str | None = None
    parent_session_id: str | None = None
    relationship: str | None = None  # subagent | fork | continuation | workflow | import
    agent_id: str | None = None
    agent_type: str | None = None
    originator: str | None = None
    is_excluded: int | None = None  # guardian / auto-review threads
    tag: str | None = None  # a user-set tag (Claude Agent SDK tagSession); "" once cleared
    continued_in: str | None = None  # the session this one went on in (Claude Code: moved to the background)
    agent_name: str | None = None  # the name its agent was given (Claude Code: an Agent call's, an agent team member's)
    team_name: str | None = None  # the agent team its agent is a member of (Claude Code)
    # What Claude Code last reported the session cost and changed (its cost-state
    # lines, whose totals a resume carries on: the last is the session's)
    cost_usd: float | None = None
    lines_added: int | None = None
    lines_removed: int | None = None
    relocated_cwd: str | None = None  # the folder Claude Code moved the session to, its project's (relocated)
    # The git worktree the session last worked in, its branch and the one it was made from
    worktree_path: str | None = None
    worktree_branch: str | None = None
    worktree_base_branch: str | None = None
    ended_by_model: int | None = None  # 1: the model ended the conversation (Claude Code's EndConversation)


@dataclass(slots=True)
class Message:
    """One log line that carries conversation or structure.

    ``uuid`` is the source's own id when it has one (Claude ``uuid``), else a
    deterministic id derived from the file and line, so re-reading a line
    yields the same id.
    """

    uuid: str
    session_id: str
    source: str
    type: str
    position: Position
    role: str | None = None
    subtype: str | None = None
    parent_uuid: str | None = None
    logical_parent_uuid: str | None = None
    timestamp: str | None = None
    text: str = ""
    content_type: str | None = None  # text|thinking|tool_use|tool_result|mixed|...
    is_meta: int = 0
    is_sidechain: int = 0
    is_compact_summary: int = 0
    surface: str | None = None  # preset surface; None lets the store derive it
    agent_id: str | None = None
    model: str | None = None
    cwd: str | None = None
    git_branch: str | None = None
    api_message_id: str | None = None
    request_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_creation_tokens: int | None = None
    stop_reason: str | None = None
    turn_duration_ms: int | None = None  # on a line that reports how long a turn took
    # Small structured facts the store uses, e.g. a compaction's
    # {"preserved_uuids": [...]}; stored as JSON in ``messages.meta_json``.
    meta: dict | None = None


@dataclass(slots=True)
class ToolCall:
    id: str
    message_uuid: str
    session_id: str
    name: str
    input_json: str
    timestamp: str | None = None
    file_paths: list[str] = field(default_factory=list)
    presentation: str = "default"


@dataclass(slots=True)
class ToolResult:
    tool_use_id: str
    message_uuid: str
    session_id: str
    content: str
    is_error: int = 0
    outcome: str = "succeeded"  # succeeded | failed | blocked | cancelled
    timestamp: str | None = None
    agent_id: str | None = None  # the subagent a Task/Agent call started
    exit_code: int | None = None
    # What the log says the started agent took, also when it names no agent
    # (Claude <= 1.0, whose inline agents get their id in the store).
    agent_duration_ms: int | None = None
    agent_tokens: int | None = None
    file_path: str | None = None  # the file the tool read or wrote, as its result names it
    # The message holding the whole output when the line holds only its start: a
    # file of its own, read as a message of that uuid (Claude Code's persisted output).
    output_uuid: str | None = None


@dataclass(slots=True)
class SessionLink:
    """Another file's word on a session's parent: set on the session once stored
    (when it has no parent yet), never a session of its own.

    Kept with its file's rows (``session_links``) and set when the session is
    derived, so a session stored after the file was read takes it too. Its
    ``relationship`` is one no log gives (``derive.LINKED``): a session holding
    one got it from a link, and loses it when no stored file gives it any more.
    """

    session_id: str
    parent_session_id: str
    relationship: str


@dataclass(slots=True)
class TitleCandidate:
    """A possible title; the store picks the winner by precedence."""

    session_id: str
    kind: str  # custom | ai | name | index | summary | first_prompt
    title: str
    timestamp: str | None = None
    leaf_uuid: str | None = None
    position: Position | None = None


@dataclass(slots=True)
class PromptEntry:
    """A prompt as an agent's prompt log keeps it (``prompt_log`` rows): Claude Code's
    and Codex's ``history.jsonl``, Gemini CLI's ``logs.json``. Its line is counted as
    merged (reason ``prompt``); ``session_id`` is the store's id of the session, None
    when the line names none."""

    source: str
    session_id: str | None
    text: str
    timestamp: str | None = None
    project: str | None = None  # the folder it was typed in, when the log names it
    pasted_json: str | None = None  # pasted contents (Claude Code), as JSON
    position: Position | None = None


@dataclass(slots=True)
class Summary:
    id: str
    session_id: str
    kind: str  # away_summary | compaction | summary
    content: str
    timestamp: str | None = None
    message_uuid: str | None = None


@dataclass(slots=True)
class PullRequest:
    """A pull request the session opened or pushed to (Claude Code ``pr-link`` lines)."""

    session_id: str
    url: str
    number: int | None = None
    repository: str | None = None
    timestamp: str | None = None


@dataclass(slots=True)
class Subagent:
    agent_id: str
    session_id: str  # the parent session
    child_session_id: str | None = None
    parent_tool_use_id: str | None = None
    agent_type: str | None = None
    description: str | None = None
    duration_ms: int | None = None
    total_tokens: int | None = None
    described_by: str | None = None  # where its agent_type / description come from: name, agent, result or call
    remote_url: str | None = None  # an agent run in a cloud session: that session's URL
    remote_session_id: str | None = None  # and its id (``session_…``/``cse_…``)


@dataclass(slots=True)
class Workflow:
    run_id: str
    session_id: str
    parent_tool_use_id: str | None = None
    task_id: str | None = None
    script: str | None = None
    result_json: str | None = None
    timestamp: str | None = None
    agent_count: int | None = None
    duration_ms: int | None = None
    total_tokens: int | None = None
    status: str | None = None
    workflow_name: str | None = None


@dataclass(slots=True)
class WorkflowAgent:
    agent_id: str
    run_id: str
    session_id: str
    agent_type: str | None = None
    description: str | None = None
    phase: str | None = None
    label: str | None = None
    model: str | None = None
    state: str | None = None
    duration_ms: int | None = None
    tokens: int | None = None
    tool_calls: int | None = None


@dataclass(slots=True)
class Merged:
    """A line whose content went into another record (or was a replay)."""

    position: Position
    reason: str  # duplicate | metadata | usage | ...
    detail: str | None = None  # unknown-type: the type read ("event_msg/<type>")


@dataclass(slots=True)
class LineError:
    """A line that could not be turned into data."""

    position: Position
    reason: str


@dataclass(slots=True)
class LineRepaired:
    """A line (or a document's item) kept with repairs: bytes of it that are not UTF-8
    were read as U+FFFD, and its records stored. Reported as ``ingest_errors`` rows
    are, but counted as the line's records are (not a failed line). Made by the
    reader (``store.reader``), never by a parser."""

    position: Position
    reason: str


Record = (
    Session
    | SessionLink
    | Message
    | ToolCall
    | ToolResult
    | TitleCandidate
    | PromptEntry
    | Summary
    | Subagent
    | Workflow
    | WorkflowAgent
    | Merged
    | LineError
    | LineRepaired
)
