"""Claude Code: transcripts, subagents and workflows under ``~/.claude/projects``.

Pure: bytes in, records out. Each line yields exactly one ``Message``,
``Merged`` or ``LineError`` (plus tool, session, title, summary and subagent
records); unknown line types and keys are kept, never fatal. Everything that
needs more than one line (title precedence, rewinds, compaction, usage per API
message, inline sidechains, subagent links) is left to the store.

Layout under ``projects/<slug>/`` (``<slug>`` is the escaped cwd)::

    <session>.jsonl                                  kind "session"
    agent-<id>.jsonl                                 kind "subagent" (2.0.x)
    <session>/subagents/agent-<id>.jsonl             kind "subagent" (2.1.x)
    <session>/subagents/agent-<id>.meta.json         kind "subagent_meta"
    <session>/subagents/workflows/<run>/agent-<id>.jsonl   kind "workflow_agent"
    <session>/subagents/workflows/<run>/agent-<id>.meta.json  kind "subagent_meta"
    <session>/subagents/workflows/<run>/journal.jsonl      kind "workflow_journal"
    <session>/workflows/<run>.json                   kind "workflow"
    <session>/tool-results/<tool use id>.txt|.json   kind "tool_output" (layout "text")
    <session>/custom-title.json                      kind "custom_title"
    <session>/before-cleanup/<ms>-<hex>.jsonl.replaced   kind "session" (read before its log)

Claude Code 2.1.3xx keeps the title a session was given (``/rename``, ...) in
``custom-title.json`` too, written after its ``custom-title`` line is appended,
and also when that append failed: it titles the session when no log line gives
one (a line wins, as the line in a log's tail does in Claude Code's list).

With ``CLAUDE_CODE_TRANSCRIPT_LOCAL_GC`` set (2.1.3xx, a print-mode or SDK session),
Claude Code prunes a large log to its last compaction: it writes the rows from the
last compact boundary on (and those kept from before it, with the latest metadata
lines) to ``<session>.jsonl.compact.tmp.<hex>`` and renames that over the log. With
``keep`` it first hard-links the log as
``<session>/before-cleanup/<Date.now()>-<hex>.jsonl.replaced``: the whole conversation
up to the prune, which its cleanup deletes after ``cleanupPeriodDays``. That copy is
read as the session's, before the log, so the rows only it holds come first in the
session; the lines the log holds again are the log's (``store.writer``).

``<session>/remote-agents/remote-agent-<task id>.meta.json`` is not read: Claude Code
keeps it only while a cloud task (an Agent call run remotely, /ultraplan,
/ultrareview, autofix-pr) runs, to poll it again on resume, and deletes it when the
task ends; what it says of an Agent call (its cloud session, prompt and task id) the
call's result line keeps (``toolUseResult``: ``remote_launched``, ``sessionUrl``).
That result (an Agent/Task call's, or a Workflow call's with ``remote: true``) is a
subagent of its own, ``remote-<task id>``: its cloud session's URL
(``subagents.remote_url``) and id (``remote_session_id``, the URL's ``session_…`` or
``cse_…`` segment), which a session log of that id (a teleported session) takes as
its parent (``remote``), whichever file is read first.

A tool result too large for the context (2.x: over its tool's limit, 50,000
characters by default, or the largest of a reply's results over 200,000 together) is saved whole to a file below the
session's folder (its agents' too), and the log's ``tool_result`` holds only a
``<persisted-output>`` note: the start of it and where the rest went. That
file is a message of its own (``output_uuid``), which Claude Code may delete
(its cleanup, after ``cleanupPeriodDays``) while the log stays.

A file beside the sessions is an agent's transcript when its lines say so,
whatever its name: a 2.0.x agent file that was renamed or copied is still
read as the agent its ``agentId`` names, below the session its ``sessionId``
names (see ``ClaudeCodeParser._recognise_agent``).
"""

from __future__ import annotations

import re

from pathlib import Path, PureWindowsPath
from typing import Any, Iterator, Mapping
from urllib.parse import unquote

import orjson

from ..hookspecs import hookimpl
from ..records import (
    LineError,
    Merged,
    Message,
    Position,
    PullRequest,
    Record,
    Session,
    SessionLink,
    Subagent,
    Summary,
    TitleCandidate,
    ToolCall,
    ToolResult,
    Workflow,
    WorkflowAgent,
)
from .base import SourceFile, existing_folder, root_location, walk_files
from .common import as_json, call_text, int_or_none, label, said_end, thinking_meta
from .lines import Line, decode_object, load_json
from .prompt_logs import HISTORY_FILE, KIND as PROMPT_LOG, ClaudeHistoryParser

SOURCE = "claude"

ROLE_TYPES = frozenset({"user", "assistant"})
STRUCTURAL_TYPES = frozenset({"system", "progress", "attachment"})
NOTIFIED_BY = frozenset({"user", "attachment"})  # a task notification: a user line, later a queued_command
AGENT_KINDS = frozenset({"subagent", "workflow_agent"})
COMPACTION_AGENT_TYPE = "compaction"  # agent-acompact-*.jsonl (2.1.39+): the /compact summariser call

# Text Claude Code injects into a user line (a slash command the user typed,
# ``<command-name>``, is no injection: it is the request, unless flagged isMeta).
META_PREFIXES = (
    "<local-command",
    "<system-reminder>",
    "<task-notification>",
    "Caveat: The messages below were generated",
    "<bash-stdout>",  # what a command the user ran with ``!`` printed
    "<bash-stderr>",
    # What an agent team's member sent (2.1.x): its mailbox delivered as a prompt
    # with no ``origin``; the lead's copy is framed as another session's message.
    "<teammate-message",
    "Another Claude session sent a message",
)
# Who sent each message an agent team's member had delivered (``teammate_id``).
TEAMMATE_SENDER = re.compile(r'<teammate-message\s+teammate_id="([^"]*)"')
# Built-in commands that set something up rather than ask for work.
SETTING_COMMANDS = frozenset(
    "add-dir agents bashes clear compact config context cost doctor exit export help hooks ide login logout mcp "
    "memory model output-style permissions plugin privacy-settings release-notes resume rewind sandbox status "
    "statusline terminal-setup todos upgrade usage vim".split()
)
MAX_LAUNCHED = 256
MAX_STORED_ANEW = 256  # prompts stored anew whose copies later lines may name by their first uuid
INTERRUPTED = "[Request interrupted by user"
# What Claude Code answers for a call it never ran because the user
# interrupted the turn (the calls queued beside the one running, too).
CANCELLED = "The user doesn't want to take this action right now"
NOT_A_PROMPT = META_PREFIXES + ("<command-", "<bash-input>", INTERRUPTED)  # no title: a shell command
# What an IDE extension puts before the typed prompt (the open file, the selection).
IDE_CONTEXT = re.compile(r"(?:\s*<(ide_[a-z_]+)>.*?</\1>)+\s*", re.DOTALL)
INTERRUPTION = "interruption"  # the content type of a line that says only that
INTERRUPTION_NOTE = re.compile(r"\[Request interrupted by user[^\]\n]*\][ \t\r\n]*")  # as m027 reads it
SKILL_PREFIX = "Base directory for this skill"
# How a compaction summary opens; logs from before ``isCompactSummary`` say it only
# this way, on a line that starts a new chain.
CONTINUED = "This session is being continued from a previous conversation"

# What a tool result holds in place of an output Claude Code saved to a file
# (2.x): ``<persisted-output>``, the note saying where, and the output's start.
PERSISTED = "<persisted-output>"
SAVED_TO = re.compile(r"(?:Full output saved to|were saved to): ([^\n]+)")
# Where Claude Code 2.1.3xx keeps a session's log as it was before it pruned it to its last
# compaction (``CLAUDE_CODE_TRANSCRIPT_LOCAL_GC=keep``): a hard link to the old file, made
# just before the pruned copy is renamed over the log.
BEFORE_CLEANUP = "before-cleanup"
REPLACED_SUFFIX = ".jsonl.replaced"
TITLE_FILE = "custom-title.json"  # {"customTitle", "by", "at"} in the session's folder (2.1.3xx)
TOOL_RESULTS = "tool-results"  # the folder below the session's that holds them
OUTPUT_SUFFIXES = (".txt", ".json")  # text; JSON for content blocks (an MCP tool's)

# Tool results that say the tool never ran because permission was refused:
# rejected or cancelled in the prompt, not granted in ``-p`` mode, or denied
# by a rule or the working-directory sandbox.
REFUSAL_PREFIXES = (
    "The user doesn't want to proceed with this tool use",
    "Claude requested permissions to ",
    "Permission to use ",
    "File is in a directory that is denied by your permission settings",
)
REFUSAL_MARKERS = (" requires approval", " was blocked. For security")

# Where an attachment keeps what the user saw of it (after its ``hookName``).
ATTACHMENT_TEXT = {
    "hook_blocking_error": (("blockingError", "blockingError"), ("blockingError",)),
    "hook_non_blocking_error": (("stderr",),),
    "hook_additional_context": (("content",),),
    "hook_stopped_continuation": (("message",),),
    "hook_success": (("content",),),
    "async_hook_response": (("response", "systemMessage"), ("response", "hookSpecificOutput", "additionalContext")),
    "plan_file_reference": (("planContent",),),
    "plugin_note": (("content",),),
    "teammate_mailbox": (("messages", "*", "text"),),
}
# Who, by a user line's ``origin`` (2.1.x), typed it: a person (``human``, or no
# origin at all). Every other kind wrote it in the user's name: another agent, a
# plugin, Claude Code itself (a notification, an observer, an automatic
# "continue"), an MCP channel, a Slack mention, a voice call's notes, an injection
# of unknown provenance; 2.1.332 frames them all as not the user's, an unknown
# kind too (as ``unclassified``).
PERSON_ORIGINS = frozenset({"human"})
# What a prompt may hold besides text (an image, a document), all someone's words.
SAID_TYPES = frozenset({"text", "mixed", "image", "document"})
# A voice call's note (2.1.x, origin ``voice-call``), stored as a system line that
# older builds do not send to the model; Claude Code reads it back as a user line.
VOICE_NOTE = "voice_call_talk"
# A line's subtype (``_subtype``) is its log's own word: a system line's subtype, an
# attachment's or a progress line's data type, or whatever ``subtype`` another line has. These
# kinds' subtypes are open; a queued prompt's is the one this parser gives. ``SUBTYPES`` names,
# kind by kind, those given here or read by name (so known to come).
LOG_SUBTYPED = frozenset({"user", "assistant", "system", "progress", "attachment", "unknown"})
SUBTYPES = {
    "queue-operation": frozenset({"enqueue"}),
    "system": frozenset({"compact_boundary", "turn_duration", "away_summary", VOICE_NOTE}),
    "progress": frozenset({"agent_progress"}),
    "attachment": frozenset({"queued_command"}),
}
# The hooks whose output is added to the model's context.
CONTEXT_HOOK_EVENTS = frozenset({"SessionStart", "UserPromptSubmit", "UserPromptExpansion"})

FILE_TOOLS = frozenset({"Read", "Edit", "Write", "MultiEdit", "NotebookEdit"})
PATH_KEYS = ("file_path", "notebook_path")

TITLE_KEYS = {
    "custom-title": ("custom", "customTitle"),
    "agent-name": ("name", "agentName"),  # /rename, --name, a branch's or plan's name, or a generated one (2.1.x)
    "ai-title": ("ai", "aiTitle"),
    "summary": ("summary", "summary"),
}
# Lines about the session rather than in its conversation, whatever else they carry.
METADATA_TYPES = frozenset(
    {*TITLE_KEYS, "pr-link", "tag", "continued-in", "worktree-state", "fork-context-ref", "agent-color",
     "agent-setting", "last-prompt", "relocated", "cost-state", "ended-by-model"}
)
# The other lines Claude Code writes about a session (no uuid), none read here: what
# it re-reads on resume (modes, latches, the remote-control bridge, an artifact's link,
# its owner, its data-flow records, the API requests it replays), its bookkeeping
# (the message queue, file backups for /rewind, content replaced by stubs) and, from
# older builds, a task's summary, an accepted speculation and context-collapse
# commits. 2.1.332 names them in its transcript writer's table (``appendEntry``);
# 2.1.333 adds ``denial-counts`` (auto mode's refusals so far).
UNREAD_TYPES = frozenset(
    "denial-counts queue-operation file-history-snapshot file-history-delta attribution-snapshot content-replacement "
    "permission-mode mode repl-mode memory-mode isolation-latch atis-latch dev-mods session-owner "
    "hybrid-organization history-suppression bridge-session frame-link artifact-comment-monitor "
    "artifact-autoreact-ledger tools-used data-flow-records data-flow-incomplete data-flow-handover "
    "derived-from api-request api-request-shape api-request-blob api-request-resumed observer-ref "
    "resume-head-vouch host-row task-summary speculation-accept marble-origami-commit "
    "marble-origami-snapshot marble-origami-reset".split()
)
# What a workflow run's ``journal.jsonl`` holds (its agents started, their results).
JOURNAL_TYPES = frozenset({"launched", "started", "result", "failed"})
# Every line type without a uuid this parser knows; any other is merged as
# ``unknown-type`` (named in the ingest summary): a format Claude Code changed.
KNOWN_METADATA_TYPES = METADATA_TYPES | UNREAD_TYPES | JOURNAL_TYPES
# What a cost-state line must hold for Claude Code to take it (and the most it takes).
MAX_COST_USD = 1e9
MAX_FIGURE = 1e15


class ClaudeCodeSource:
    """Claude Code sessions, subagents and workflow runs."""

    name = SOURCE
    # 2: a system line's text keeps its refusal and API error details; a
    # Task/Agent result keeps the started agent's duration and tokens
    # 3: a file beside the sessions whose lines are an agent's is read as that
    # agent (agentId, below its sessionId), whatever the file is called; the
    # agent a main file's line starts is named after that line's sessionId
    # 5: a line opening with thinking and going on says how long its thinking
    # is (meta thinking_chars)
    # 6: a turn_duration line keeps its duration; a result names its file; a
    # call cancelled by an interrupt is cancelled, not blocked
    # 7: a slash command the user typed is a request, not meta (and titles its
    # session when it has arguments); the entrypoint is the session's originator;
    # an async agent's task notification gives its duration and tokens
    # 8: pr-link lines name the session's pull requests; an agent's type and
    # task say where they come from (its .meta.json outranks its call's result);
    # an assistant line's effort is the session's reasoning effort
    # 9: a compaction summary is known by its opening words when unflagged; what
    # a hook added to the context and a task reminder's tasks are searchable (and
    # the logs are read again for titles set back and rewound branches resumed)
    # 10: a tool result beside a note of the interruption is a tool result; what
    # a ``!`` command printed is meta; a title skips IDE context and ``!`` commands
    # (and the logs are read again for the first prompt edited and sent again)
    # 11: a user's stopped command is cancelled; a task notification queued as
    # an attachment gives its agent's totals; the first prompt edited and sent
    # again under a hook's line titles its session
    # 12: a prompt queued while the agent worked is the user's
    # 13: an agent's result with no toolUseResult (an agent's agent) names it and
    # its figures by the footer of its text
    # 15: a user line another sender wrote (``origin``: a peer agent, a plugin...)
    # or a queued command flagged meta is meta; a branched session names the one it
    # was copied from (``forkedFrom``); what stop hooks, task statuses, plans,
    # teammates' mailboxes and plugins' notes said is searchable
    # 16: only a person's origin makes a prompt (a channel, a Slack mention, a
    # kind not known: meta); a session's name titles it, its tag and the session
    # it went on in (``continued-in``) are kept; a voice call's notes are said in
    # it; a forked agent's first line names the context it was forked with
    # 17: what an agent team's member sent (``<teammate-message>``, written with
    # no origin) is no prompt of the user's, and names its sender (meta ``from``);
    # an agent's name (its .meta.json's ``name``, a team member's ``agentName``)
    # titles its session (not a reserved one: a team's lead writes "team-lead"), which
    # keeps it and the team (``teamName``); the cost and
    # the lines changed Claude Code last reported (``cost-state``), the folder it
    # moved the session to (``relocated``: the project's path), the worktree the
    # session last worked in (``worktree-state``) and that the model ended it
    # (``ended-by-model``) describe the session; a prompt stored anew after a
    # compaction (2.1.3xx: a fresh uuid, ``sentAsUuid`` the one it was sent as) is
    # the parent of the lines after it that name the uuid it was sent as; a tool's
    # output Claude Code saved to a file of its own (``<session>/tool-results/``)
    # is read, and its result's stored output is the whole of it (``output_uuid``),
    # not the note's preview
    # 18: an escaped NUL (``\u0000``) is read as U+FFFD (lines.load_json); a tool's input or
    #     output nested deeper than orjson writes (255 levels) keeps its line; an agent's
    #     tokens are its ``subagent_tokens`` too (2.1.3xx), and a footer naming a worktree
    #     still names its agent; an assistant row keeps the reasoning effort its line names
    # 19: a timed line that stores no message (a queued prompt, a pull-request link)
    #     gives its session's end
    # 20: the copies of a log Claude Code kept before pruning it (``before-cleanup/``)
    #     are read before it, so a session pruned before it was first read keeps its
    #     whole conversation in order (and one read before gets its rows back in order)
    # 21: a ``file-history-snapshot`` line's ``snapshot.timestamp`` (when its backups were
    #     taken) gives its session's end, as any timed line; a prompt typed while the agent
    #     worked (``queue-operation`` ``enqueue``) is a message of its own; a log resumed or
    #     branched into a new file read before the one it copies leaves that one its lines,
    #     and a resumed session is its original's continuation in whatever order they are read;
    #     an agent or workflow launched in a cloud session is a subagent keeping its URL
    # 22: a session whose log opens with a compaction's boundary naming another session's
    #     line (``logicalParentUuid``) is that one's continuation
    parser_version = 22
    trusted_records = True  # held to their shape by the tests, so not checked one by one
    root_variable = "CLAUDE_CONFIG_DIR"
    home_folder = ".claude"
    folder_layout = "projects/<project>/<session>.jsonl (or a projects folder, or one project's folder)"

    def default_root(self, environ: Mapping[str, str]) -> Path | None:
        """``$CLAUDE_CONFIG_DIR``, else ``~/.claude``; None when it is not a folder."""
        return existing_folder(root_location(self, environ))

    def discover(self, root: Path) -> Iterator[SourceFile]:
        """Every Claude file below ``root``.

        ``root`` is a config dir (``~/.claude``, which has a ``projects/``
        folder), a ``projects``-like folder whose children are project
        folders, or one project's folder (sessions at its top, named after
        it): a path that fits no layout below ``root`` is tried one level
        down, as if ``root`` were a project folder.
        """
        projects = root / "projects"
        if not projects.is_dir():
            projects = root
        elif (root / HISTORY_FILE).is_file():  # (a config dir's prompt log)
            yield SourceFile(root / HISTORY_FILE, SOURCE, kind=PROMPT_LOG, priority=4)
        for path in walk_files(projects):
            parts = path.relative_to(projects).parts
            unit = classify(path, parts)
            if unit is None and projects is root:
                unit = classify(path, (root.name, *parts))
            if unit is not None:
                yield unit

    def open_parser(self, unit: SourceFile, state: dict[str, Any] | None):
        if unit.kind == PROMPT_LOG:
            return ClaudeHistoryParser()
        return ClaudeCodeParser(unit, state)


@hookimpl
def obelisk_sources():
    return [ClaudeCodeSource()]


# Discovery


def classify(path: Path, parts: tuple[str, ...]) -> SourceFile | None:
    """The unit for a file at ``parts`` below ``projects/``, or None to skip it."""
    name = parts[-1]
    if len(parts) == 2:
        return _project_file(path, parts[0], name)
    if len(parts) == 4 and parts[2] == BEFORE_CLEANUP and name.endswith(REPLACED_SUFFIX):
        # (read before the log: its rows come first in the session, the log's copies merge into them)
        return _unit(path, "session", {"session_id": parts[1], "project": parts[0]}, priority=-1)
    if len(parts) == 3 and name == TITLE_FILE:
        return _unit(path, "custom_title", {"session_id": parts[1], "project": parts[0]}, priority=2, layout="document")
    if len(parts) == 4 and parts[2] == "subagents":
        return _agent_file(path, name, parts[0], parts[1], run_id=None)
    if len(parts) == 4 and parts[2] == TOOL_RESULTS and name.endswith(OUTPUT_SUFFIXES):
        hints = {"parent_session_id": parts[1], "project": parts[0]}
        return _unit(path, "tool_output", hints, priority=3, layout="text")
    if len(parts) == 4 and parts[2] == "workflows" and name.endswith(".json"):
        hints = {"run_id": name[: -len(".json")], "parent_session_id": parts[1], "project": parts[0]}
        return _unit(path, "workflow", hints, priority=2, layout="document")
    if len(parts) == 6 and parts[2] == "subagents" and parts[3] == "workflows":
        if name == "journal.jsonl":
            hints = {"run_id": parts[4], "parent_session_id": parts[1], "project": parts[0]}
            return _unit(path, "workflow_journal", hints, priority=1)
        return _agent_file(path, name, parts[0], parts[1], run_id=parts[4])
    return None


def _project_file(path: Path, project: str, name: str) -> SourceFile | None:
    """A main session, or a 2.0.x flat ``agent-<id>.jsonl`` beside the sessions."""
    if not name.endswith(".jsonl") or name == ".jsonl":
        return None
    agent_id = agent_id_from_name(name)
    if agent_id:
        return _unit(path, "subagent", {"agent_id": agent_id, "project": project}, priority=1)
    return _unit(path, "session", {"session_id": name[: -len(".jsonl")], "project": project})


def _agent_file(
    path: Path, name: str, project: str, parent: str, run_id: str | None
) -> SourceFile | None:
    """``agent-<id>.jsonl`` / ``agent-<id>.meta.json`` below ``<session>/subagents/``."""
    agent_id = agent_id_from_name(name)
    if not agent_id:
        return None
    hints = {"agent_id": agent_id, "parent_session_id": parent, "project": project}
    if run_id is not None:
        hints["run_id"] = run_id
    if name.endswith(".meta.json"):
        return _unit(path, "subagent_meta", hints, priority=2, layout="document")
    return _unit(path, "workflow_agent" if run_id is not None else "subagent", hints, priority=1)


def agent_id_from_name(name: str) -> str | None:
    """``a93ccab`` for ``agent-a93ccab.jsonl`` or ``agent-a93ccab.meta.json``."""
    if not name.startswith("agent-"):
        return None
    for suffix in (".meta.json", ".jsonl"):
        if name.endswith(suffix):
            return name[len("agent-") : -len(suffix)] or None
    return None


def _unit(
    path: Path, kind: str, hints: dict, *, priority: int = 0, layout: str = "jsonl"
) -> SourceFile:
    return SourceFile(path, SOURCE, kind, layout=layout, hints=hints, priority=priority)


# Parsing


class ClaudeCodeParser:
    """Records for the lines (or the document) of one Claude Code file."""

    def __init__(self, unit: SourceFile, state: dict[str, Any] | None = None):
        state = state or {}
        hints = unit.hints
        self.kind = unit.kind
        self.unit_path = unit.path
        self.project = hints.get("project")
        self.run_id = hints.get("run_id")
        if self.run_id is None and unit.kind in ("workflow_agent", "workflow_journal"):
            self.run_id = unit.path.parent.name
        self.agent_id = hints.get("agent_id") or agent_id_from_name(unit.path.name)
        self.parent = hints.get("parent_session_id") or state.get("parent")
        # Beside the sessions (not below one): what the file is comes from its lines.
        self.flat = unit.kind in ("session", "subagent") and not hints.get("parent_session_id")
        self.agent_from_lines = state.get("agent")
        if self.agent_from_lines:
            self.kind, self.agent_id = "subagent", self.agent_from_lines
        self.own_id = hints.get("session_id") or unit.path.stem
        self.cwd = state.get("cwd")
        self.git_branch = state.get("git_branch")
        self.version = state.get("version")
        self.entrypoint = state.get("entrypoint")
        self.effort = state.get("effort")
        self.forked_from = state.get("forked_from")  # the session a branch was copied from
        self.agent_name = state.get("agent_name")  # an agent team member's name and team (its lines')
        self.team_name = state.get("team_name")
        self.fork_context = state.get("fork_context")  # a forked agent's fork-context-ref, until its first line
        self.launched: list = state.get("launched", [])  # agents this session's calls started, latest last
        self.agent_calls: list = state.get("agent_calls", [])  # this file's Agent/Task calls, latest last
        self.session_emitted = state.get("session", False)
        self.first_prompt_emitted = state.get("first_prompt", False)
        # whether a line named its parent, and whether a compaction came: before
        # one, a prompt with no parent, or with the first prompt's parent (a hook's
        # line), is the first prompt edited and sent again
        self.first_parent = state.get("first_parent")
        self.linked = state.get("linked", False)
        self.compacted = state.get("compacted", False)
        # A prompt Claude Code stored anew (a copy with a fresh uuid, its ``sentAsUuid``
        # the uuid it was sent as): the uuid it was sent as -> the copy's, latest last.
        self.stored_anew: dict[str, str] = state.get("stored_anew", {})
        self.is_agent = self.kind in AGENT_KINDS
        self.session_id = self._session_id()

    def state(self) -> dict[str, Any]:
        return {
            "parent": self.parent,
            "agent": self.agent_from_lines,
            "cwd": self.cwd,
            "git_branch": self.git_branch,
            "version": self.version,
            "entrypoint": self.entrypoint,
            "effort": self.effort,
            "forked_from": self.forked_from,
            "agent_name": self.agent_name,
            "team_name": self.team_name,
            "fork_context": self.fork_context,
            "launched": self.launched,
            "agent_calls": self.agent_calls,
            "session": self.session_emitted,
            "first_prompt": self.first_prompt_emitted,
            "first_parent": self.first_parent,
            "linked": self.linked,
            "compacted": self.compacted,
            "stored_anew": self.stored_anew,
        }

    def feed(self, line: bytes, position: Position) -> list[Record]:
        obj = decode_object(Line(line, position))
        if isinstance(obj, LineError):
            return [obj]
        return self._line_records(obj, position)

    def document(self, data: bytes) -> list[Record]:
        position = Position(1, 0, len(data))
        obj = decode_object(Line(data, position))
        if isinstance(obj, LineError):
            return [obj]
        if self.kind == "custom_title":
            records = self._title_file(obj)
        else:
            records = self._workflow(obj) if self.kind == "workflow" else self._agent_meta(obj)
        records.append(Merged(position, "metadata"))
        return records

    def text(self, data: bytes, size: int, left: int) -> list[Record]:
        """A tool's output saved to a file of its own: ``data``, its first bytes (all of
        it but for ``left`` characters more, not held), of ``size`` bytes in all.

        One message of the session whose folder holds it (an agent's output is
        saved in its root session's), found by the uuid the log's result names
        (``output_uuid``): structural (log-only) but searchable (type
        ``tool_output``), its tool use id and size in ``meta``. A ``.json`` file
        holds the output's content blocks: their text, as a result's.
        """
        position = Position(1, 0, len(data))
        if not data and not size:
            return [Merged(position, "empty")]
        name = self.unit_path.name
        text = data.decode("utf-8", errors="replace")
        if name.endswith(".json") and not left:
            try:
                blocks = load_json(data)
            except orjson.JSONDecodeError:
                blocks = None
            if isinstance(blocks, list):
                text = _render_parts(blocks)
        meta: dict[str, Any] = {"tool_use_id": unquote(name.rsplit(".", 1)[0]), "bytes": size}
        if left:
            meta["length"] = len(text) + left  # (what was not held is not searched)
        session = self.parent or ""
        return [
            Session(session, SOURCE, project=self.project),
            Message(
                uuid=output_uuid(session, name), session_id=session, source=SOURCE, type="tool_output",
                position=position, text=text, content_type="tool_result", surface="log-only", meta=meta,
            ),
        ]

    # Identity

    def _session_id(self) -> str:
        """The file's session: its name, or ``<parent>:agent-<id>`` for agents."""
        if not self.is_agent:
            return self.own_id
        return self._child_session_id(self.agent_id) if self.parent else f"agent-{self.agent_id}"

    def _child_session_id(self, agent_id: str, obj: dict | None = None) -> str:
        """An agent's session, ``<parent>:agent-<id>``.

        The parent is the agent file's own parent, or, for the line ``obj`` of
        a main file, that line's ``sessionId``: the parent the agent's own
        lines name (2.0.x) and its folder is called after (2.1.x), also when
        the main file was renamed. The file's name when the line names none.
        """
        named = None if self.is_agent or obj is None else _text(obj.get("sessionId"))
        return f"{named or self.parent or self.own_id}:agent-{agent_id}"

    def _recognise_agent(self, obj: dict) -> None:
        """Take a file beside the sessions for the agent its first line names.

        A 2.0.x agent transcript is sidechain lines only, each naming its
        agent (``agentId``) and its parent (``sessionId``); a main file never
        starts with one (its inline sidechains, up to 1.0.x, name no agent).
        So the lines tell a renamed or copied agent file from a session, and
        which agent it is even where its name says another.
        """
        agent_id = _text(obj.get("agentId"))
        if obj.get("isSidechain") is not True or not agent_id:
            return
        self.kind, self.is_agent = "subagent", True
        self.agent_id = self.agent_from_lines = agent_id
        self.session_id = self._session_id()

    def _adopt_parent(self, obj: dict) -> None:
        """A 2.0.x flat agent file names its parent only in ``sessionId``."""
        parent = _text(obj.get("sessionId"))
        if parent:
            self.parent = parent
            self.session_id = self._session_id()

    # Lines

    def _line_records(self, obj: dict, position: Position) -> list[Record]:
        if self.kind == "workflow_journal":
            return self._journal_line(obj, position)
        if self.flat and not self.session_emitted and not self.agent_from_lines:
            self._recognise_agent(obj)
        if self.is_agent and not self.parent:
            self._adopt_parent(obj)
        line_type = _text(obj.get("type"))
        if line_type not in METADATA_TYPES and (  # (the Agent SDK's session store gives those a uuid too)
                line_type in ROLE_TYPES or line_type in STRUCTURAL_TYPES or _text(obj.get("uuid"))):
            return self._conversation_line(obj, line_type or "unknown", position)
        return self._metadata_line(obj, line_type, position)

    def _metadata_line(self, obj: dict, line_type: str | None, position: Position) -> list[Record]:
        """A line about the session, not in its conversation (titles, tags, snapshots, queue, modes, ...)."""
        records: list[Record] = []
        if line_type in TITLE_KEYS:
            kind, key = TITLE_KEYS[line_type]
            title = _text(obj.get(key))
            if title:
                leaf = _text(obj.get("leafUuid")) if kind == "summary" else None
                records.append(
                    TitleCandidate(
                        self.session_id,
                        kind,
                        title,
                        timestamp=_text(obj.get("timestamp")),
                        leaf_uuid=leaf,
                        position=position,
                    )
                )
        elif line_type == "tag" and isinstance(obj.get("tag"), str):
            # the Agent SDK's tagSession; "" clears it, the last one wins
            records.append(Session(self.session_id, SOURCE, project=self.project, tag=obj["tag"].strip()))
        elif line_type == "continued-in":
            # moved to the background (/background, <-): the rest is in a new session
            child = _text(obj.get("continuedInSessionId"))
            if child and child != self.session_id and not self.is_agent:
                records.append(Session(self.session_id, SOURCE, project=self.project, continued_in=child))
        elif line_type in SESSION_STATE_LINES and not self.is_agent:
            # (written to the main session's log only)
            described = SESSION_STATE_LINES[line_type](obj)
            if described:
                records.append(Session(self.session_id, SOURCE, project=self.project, **described))
        elif line_type == "fork-context-ref" and self.is_agent:
            # a forked agent's context is its parent's conversation up to parentLastUuid
            self.fork_context = {key: obj[key] for key in ("parentSessionId", "parentLastUuid", "contextLength")
                                 if isinstance(obj.get(key), (str, int))} or None
        elif line_type == "pr-link":
            url = _text(obj.get("prUrl"))
            if url:
                records.append(PullRequest(
                    self.session_id, url, int_or_none(obj.get("prNumber")),
                    _text(obj.get("prRepository")), _text(obj.get("timestamp")),
                ))
        moment = _text(obj.get("timestamp")) or _snapshot_time(obj, line_type)
        if moment:  # the session went on to then (a prompt queued, a pull request linked,
            # the files backed up for a prompt): its end is no earlier
            said_end(records, Session(self.session_id, SOURCE, ended_at=moment))
        queued = _queued_text(obj) if line_type == "queue-operation" else None
        if queued is not None:
            records.append(self._queued_message(obj, queued, moment, position))
            return records
        records.append(_metadata(obj, line_type, position, KNOWN_METADATA_TYPES))
        return records

    def _queued_message(self, obj: dict, text: str, moment: str | None, position: Position) -> Message:
        """A prompt the user typed while the agent worked, as Claude Code queued it
        (``queue-operation`` ``enqueue``): log-only and meta, the prompt it is sent as
        being its own line (a user line, a ``queued_command`` attachment) when it is."""
        return Message(
            uuid=f"{self.session_id}:{position.byte_offset}", session_id=self.session_id, source=SOURCE,
            type="queue-operation", subtype="enqueue", role="user", position=position, timestamp=moment,
            text=text, content_type="text", is_meta=1, surface="log-only",
        )

    def _journal_line(self, obj: dict, position: Position) -> list[Record]:
        """A workflow ``journal.jsonl`` line (``started`` / ``result``)."""
        records: list[Record] = []
        agent_id = _text(obj.get("agentId"))
        if agent_id:
            records.append(WorkflowAgent(agent_id, self.run_id, self.parent or ""))
        records.append(_metadata(obj, _text(obj.get("type")), position, JOURNAL_TYPES))
        return records

    def _conversation_line(self, obj: dict, line_type: str, position: Position) -> list[Record]:
        """A line with a uuid: one Message plus what its content states.

        Parser state changes only after the line's records are built, so a
        line that fails half-way leaves the state as it was.
        """
        uuid = _text(obj.get("uuid")) or f"{self.session_id}:{position.byte_offset}"
        payload = obj.get("message")
        payload = payload if isinstance(payload, dict) else None
        content = payload.get("content") if payload else None
        if line_type in STRUCTURAL_TYPES or (payload is None and line_type not in ROLE_TYPES):
            text, content_type, tools = _structural_text(obj, line_type), line_type, []
        else:
            text, content_type, tools = self._content(content, obj, uuid)
        message = self._message(obj, line_type, uuid, payload, text, content_type, position)
        if content_type == "mixed" and message.meta is None:
            message.meta = thinking_meta(leading_thinking(content), text)
        if self.fork_context:  # (an agent's first line: what it was forked with)
            message.meta = {**(message.meta or {}), "fork_context": self.fork_context}
        if line_type == "user" and content_type == "text" and (senders := _teammate_senders(text)):
            message.meta = {**(message.meta or {}), "from": senders[0] if len(senders) == 1 else senders}
        if line_type == "assistant" and (effort := label(obj.get("effort"))):
            message.meta = {**(message.meta or {}), "effort": effort}  # (the session's is only the last)
        facts = list(self._line_facts(obj, message, payload, tools, position))
        records = [*self._session_records(obj), message, *tools, *facts]
        self._note_stored_anew(obj, uuid)
        return records

    def _session_records(self, obj: dict) -> list[Record]:
        """The Session on the first conversation line, again when cwd/branch/version change;
        the name of an agent team's member (its lines' ``agentName``) titles it.

        Inline sidechain lines (<= 1.0.x main files) run in the subagent's
        context, so they never change the session's.
        """
        known = (self.cwd, self.git_branch, self.version, self.entrypoint, self.effort, self.forked_from,
                 self.agent_name, self.team_name)
        if obj.get("isSidechain") is True and not self.is_agent:
            context = known
        else:
            fork = None if self.is_agent or self.forked_from else _fork_parent(obj)
            context = (
                _text(obj.get("cwd")) or self.cwd,
                _text(obj.get("gitBranch")) or self.git_branch,
                _text(obj.get("version")) or self.version,
                _text(obj.get("entrypoint")) or self.entrypoint,
                label(obj.get("effort")) or self.effort,  # on an assistant line (2.1.x): its reasoning effort
                self.forked_from or (fork if fork != self.session_id else None),
                _text(obj.get("agentName")) or self.agent_name,  # (2.1.x: a team member's own session)
                _text(obj.get("teamName")) or self.team_name,
            )
        if self.session_emitted and context == known:
            return []
        named = context[6] if context[6] != self.agent_name and not _reserved_name(context[6]) else None
        (self.cwd, self.git_branch, self.version, self.entrypoint, self.effort, self.forked_from,
         self.agent_name, self.team_name) = context
        records: list[Record] = [self._session()]
        if named:
            records.append(TitleCandidate(self.session_id, "name", named, _text(obj.get("timestamp"))))
        if not self.session_emitted and self.is_agent and self.parent:
            records.append(self._agent_link())
        self.session_emitted = True
        return records

    def _session(self) -> Session:
        session = Session(
            self.session_id,
            SOURCE,
            project=self.project,
            cwd=self.cwd,
            git_branch=self.git_branch,
            version=self.version,
            originator=self.entrypoint,  # cli, sdk-cli, sdk-ts...: which client ran it
            reasoning_effort=self.effort,
            agent_name=self.agent_name,
            team_name=self.team_name,
        )
        if self.is_agent:
            session.parent_session_id = self.parent
            session.relationship = "workflow" if self.kind == "workflow_agent" else "subagent"
            session.agent_id = self.agent_id
            session.agent_type = self._own_agent_type()
        elif self.forked_from:
            session.parent_session_id, session.relationship = self.forked_from, "fork"
        return session

    def _own_agent_type(self) -> str | None:
        """An agent's type told by its file name: ``agent-acompact-*`` is the compaction summariser."""
        return COMPACTION_AGENT_TYPE if (self.agent_id or "").startswith("acompact-") else None

    def _agent_link(self) -> Record:
        """What ties an agent transcript to its parent session."""
        if self.kind == "workflow_agent":
            return WorkflowAgent(self.agent_id, self.run_id, self.parent)
        agent_type = self._own_agent_type()
        return Subagent(self.agent_id, self.parent, child_session_id=self.session_id, agent_type=agent_type,
                        described_by="name" if agent_type else None)

    def _message(
        self,
        obj: dict,
        line_type: str,
        uuid: str,
        payload: dict | None,
        text: str,
        content_type: str | None,
        position: Position,
    ) -> Message:
        is_role = line_type in ROLE_TYPES
        flagged_meta = obj.get("isMeta") is True
        if flagged_meta and text.startswith(SKILL_PREFIX):
            content_type = "skill_instructions"
        elif line_type == "user" and content_type == "text" and INTERRUPTION_NOTE.fullmatch(text):
            content_type = INTERRUPTION  # Claude Code's note in the user's name: no one typed it
        message = Message(
            uuid=uuid,
            session_id=self.session_id,
            source=SOURCE,
            type=line_type,
            position=position,
            subtype=_subtype(obj, line_type),
            parent_uuid=self._parent(obj.get("parentUuid")),
            logical_parent_uuid=self._parent(obj.get("logicalParentUuid")),
            timestamp=_text(obj.get("timestamp")),
            text=text,
            content_type=content_type,
            is_meta=int(
                flagged_meta
                or not is_role
                or (line_type == "user" and content_type == "text" and _looks_meta(text))
                or (line_type == "user" and content_type in SAID_TYPES and _sent_for(obj) and not _answers(payload))
            ),
            is_sidechain=int(obj.get("isSidechain") is True),
            is_compact_summary=int(obj.get("isCompactSummary") is True or _unflagged_summary(obj, line_type, content_type, text)),
            surface=None if is_role else "log-only",
            agent_id=self._member_agent_id(obj),
            cwd=_text(obj.get("cwd")) or None,
            git_branch=_text(obj.get("gitBranch")) or None,
            request_id=_text(obj.get("requestId")),
        )
        if payload:
            _add_api_fields(message, payload)
        elif line_type == "attachment" and _queued_prompt(obj.get("attachment")):
            # typed while the agent worked, and sent on within its turn: said by the user
            message.role, message.content_type, message.surface = "user", "text", None
            message.is_meta = int(flagged_meta or obj["attachment"].get("isMeta") is True or _looks_meta(text))
        elif line_type == "system" and message.subtype == VOICE_NOTE and _voice_note(obj):
            # what was said on a voice call beside the session: no prompt, but words to find
            message.role, message.content_type, message.surface, message.is_meta = "user", "text", None, 1
        if message.subtype == "compact_boundary":
            message.meta = _compaction_meta(obj)
        elif message.subtype == "turn_duration":
            message.turn_duration_ms = int_or_none(obj.get("durationMs"))
        return message

    def _parent(self, value: Any) -> str | None:
        """The line a link names: a prompt stored anew, for the uuid it was sent as.

        Claude Code writes a prompt again after a compaction that cut its turn
        off (a client sent it again: ``promptRowIsStoredAnew``) under a fresh
        uuid, ``sentAsUuid`` the one it had, and goes on naming that one: the
        lines after the copy are its own, not the compacted first line's (which
        the transcript's own compaction may have removed from the file)."""
        uuid = _text(value)
        return self.stored_anew.get(uuid, uuid) if uuid else uuid

    def _note_stored_anew(self, obj: dict, uuid: str) -> None:
        """Remember a prompt stored anew (``sentAsUuid``), as Claude Code writes it: a main
        line of the user's whose uuid is not the one it was sent as."""
        sent_as = _text(obj.get("sentAsUuid"))
        if obj.get("type") != "user" or not sent_as or sent_as == uuid or obj.get("isSidechain") is True:
            return
        self.stored_anew.pop(sent_as, None)
        self.stored_anew[sent_as] = uuid
        while len(self.stored_anew) > MAX_STORED_ANEW:
            del self.stored_anew[next(iter(self.stored_anew))]

    def _member_agent_id(self, obj: dict) -> str | None:
        """The agent a line belongs to (not one it merely refers to)."""
        if self.is_agent:
            return self.agent_id
        if obj.get("isSidechain") is True:
            return _text(obj.get("agentId"))
        return None

    def _line_facts(
        self,
        obj: dict,
        message: Message,
        payload: dict | None,
        tools: list,
        position: Position,
    ) -> Iterator[Record]:
        """Summaries, the first prompt and subagent links a line states."""
        if message.type == "system" and message.subtype == "away_summary":
            yield self._summary(message, "away_summary")
        if message.is_compact_summary:
            yield self._summary(message, "compaction")
        if message.type == "progress" and message.subtype == "agent_progress":
            yield from self._progress_subagent(obj)
        if tools:
            yield from self._spawned_subagent(obj, tools)
            yield from self._remote_subagent(obj, tools)
        if message.type in NOTIFIED_BY and self.launched and "<task-notification>" in message.text[:64]:
            yield from self._finished_agent(message.text, obj)
        parent = message.parent_uuid
        sent_again = not self.compacted and not message.logical_parent_uuid and (
            (self.linked and not parent) or (parent and parent == self.first_parent)
        )
        if message.type == "user" and (not self.first_prompt_emitted or sent_again):
            title = self._first_prompt(message, payload)
            if title:  # (the store titles the session with the first one not rewound)
                if not self.first_prompt_emitted:
                    self.first_parent = parent
                self.first_prompt_emitted = True
                yield TitleCandidate(
                    self.session_id, "first_prompt", title, message.timestamp, message.uuid, position=position
                )
        self.fork_context = None
        self.linked = self.linked or bool(message.parent_uuid)
        self.compacted = self.compacted or message.subtype == "compact_boundary" or bool(message.is_compact_summary)

    def _summary(self, message: Message, kind: str) -> Summary:
        return Summary(
            message.uuid,
            self.session_id,
            kind,
            message.text,
            timestamp=message.timestamp,
            message_uuid=message.uuid,
        )

    def _first_prompt(self, message: Message, payload: dict | None) -> str | None:
        """The prompt text when this is a real human prompt, else None."""
        if message.is_meta or message.is_compact_summary or payload is None:
            return None
        if message.is_sidechain and not self.is_agent:
            return None
        if message.content_type not in ("text", "mixed"):
            return None
        prompt = _prompt_text(payload.get("content")).strip()
        context = IDE_CONTEXT.match(prompt)
        prompt = prompt[context.end():] if context else prompt
        if prompt.startswith(("<command-name>", "<command-message>")):
            return _command_request(prompt)
        if not prompt or prompt.startswith(NOT_A_PROMPT):
            return None
        return prompt

    def _progress_subagent(self, obj: dict) -> Iterator[Subagent]:
        """2.1.x ``agent_progress``: which Task/Agent call runs which agent."""
        data = obj.get("data")
        agent_id = _text(data.get("agentId")) if isinstance(data, dict) else None
        if agent_id:
            yield Subagent(
                agent_id,
                self.session_id,
                child_session_id=self._child_session_id(agent_id, obj),
                parent_tool_use_id=_text(obj.get("parentToolUseID")),
            )

    def _spawned_subagent(self, obj: dict, tools: list) -> Iterator[Subagent]:
        """A Task/Agent tool result naming the agent it ran (``toolUseResult.agentId``)."""
        result = next((tool for tool in tools if isinstance(tool, ToolResult)), None)
        if result is None or not result.agent_id:
            return
        details = obj.get("toolUseResult")
        details = details if isinstance(details, dict) else {}
        if result.agent_id not in self.launched:  # idempotent: a line read again changes nothing
            self.launched = (self.launched + [result.agent_id])[-MAX_LAUNCHED:]
        yield Subagent(
            result.agent_id,
            self.session_id,
            child_session_id=self._child_session_id(result.agent_id, obj),
            parent_tool_use_id=result.tool_use_id,
            agent_type=_text(details.get("agentType")),
            description=_text(details.get("description")),
            duration_ms=result.agent_duration_ms,
            total_tokens=result.agent_tokens,
            described_by="result" if _text(details.get("agentType")) or _text(details.get("description")) else None,
        )

    def _remote_subagent(self, obj: dict, tools: list) -> Iterator[Subagent | SessionLink]:
        """An Agent/Task or Workflow call run in a cloud session (``toolUseResult.status``
        ``remote_launched``): an agent ``remote-<taskId>`` with its session's URL and id,
        and that session's link to this one. Its type and task are its call's
        (``derive.link_subagents``); a Workflow's task is its name or summary."""
        details = obj.get("toolUseResult")
        if not isinstance(details, dict) or details.get("status") != "remote_launched":
            return
        result = next((tool for tool in tools if isinstance(tool, ToolResult)), None)
        task_id = _text(details.get("taskId"))
        if result is None or not task_id:
            return
        url = _text(details.get("sessionUrl"))
        cloud_session = _cloud_session_id(url)
        description = _text(details.get("description")) or _text(details.get("workflowName")) or _text(
            details.get("summary"))
        yield Subagent(
            f"remote-{task_id}",
            self.session_id,
            parent_tool_use_id=result.tool_use_id,
            description=description,
            described_by="result" if description else None,
            remote_url=url,
            remote_session_id=cloud_session,
        )
        if cloud_session and cloud_session != self.session_id:
            yield SessionLink(cloud_session, self.session_id, "remote")

    def _finished_agent(self, text: str, obj: dict) -> Iterator[Subagent]:
        """Async agents' ``<task-notification>`` blocks: how long each ran and the tokens
        it used (its spawning call's result only says it was launched). Only agents this
        session's calls started: other background tasks (shell commands) notify the same
        way, and a notification may land in another session after ``/clear``. An agent's
        own output (``<result>``) is no field of the block."""
        for block in re.findall(r"<task-notification>(.*?)</task-notification>", text, re.S):
            block = re.sub(r"<result>.*?</result>", "", block, flags=re.S)
            agent = re.search(r"<task-id>\s*(.*?)\s*</task-id>", block, re.S)
            if agent is None or agent.group(1) not in self.launched:
                continue
            usage = re.search(r"<usage>(.*?)</usage>", block, re.S)
            counts = _usage_counts(usage.group(1)) if usage else {}
            yield Subagent(
                agent.group(1),
                self.session_id,
                child_session_id=self._child_session_id(agent.group(1), obj),
                duration_ms=int_or_none(counts.get("duration_ms")),
                total_tokens=int_or_none(_usage_tokens(counts)),
            )

    # Content

    def _content(self, content: Any, obj: dict, uuid: str) -> tuple[str, str | None, list]:
        """Searchable text, content type and tool records of ``message.content``."""
        if isinstance(content, str):
            return content, "text", []
        if not isinstance(content, list):
            return "", None, []
        parts: list[str] = []
        kinds: set[str] = set()
        tools: list[ToolCall | ToolResult] = []
        notes_only = True  # every text block is a note of an interruption
        for index, block in enumerate(content):
            if isinstance(block, str):
                kinds.add("text")
                parts.append(block)
                notes_only = False
                continue
            if not isinstance(block, dict):
                continue
            kind = _text(block.get("type")) or "unknown"
            kinds.add(kind)
            if kind == "tool_use":
                call = self._tool_call(block, index, obj, uuid)
                tools.append(call)
                # Raw strings, not JSON: escaped newlines and quotes would
                # glue words together for search and hide secrets from redaction.
                text = call_text(call.name, block.get("input"))
            elif kind == "tool_result":
                result = self._tool_result(block, index, obj, uuid)
                tools.append(result)
                text = result.content
            else:
                text = _block_text(block, kind)
                notes_only = notes_only and kind == "text" and bool(INTERRUPTION_NOTE.fullmatch(text))
            if text:
                parts.append(text)
        if kinds == {"tool_result", "text"} and notes_only:
            kinds = {"tool_result"}  # results with Claude Code's note of the interruption beside them
        content_type = next(iter(kinds)) if len(kinds) == 1 else ("mixed" if kinds else None)
        return "\n".join(parts), content_type, tools

    def _tool_call(self, block: dict, index: int, obj: dict, uuid: str) -> ToolCall:
        name = _text(block.get("name")) or ""
        tool_input = block.get("input")
        call_id = _text(block.get("id")) or f"{uuid}:{index}"
        if name in AGENT_TOOLS:
            self.agent_calls = [*self.agent_calls, call_id][-MAX_AGENT_CALLS:]
        return ToolCall(
            id=call_id,
            message_uuid=uuid,
            session_id=self.session_id,
            name=name,
            input_json=as_json({} if tool_input is None else tool_input),
            timestamp=_text(obj.get("timestamp")),
            file_paths=_file_paths(name, tool_input),
            presentation="skill" if name == "Skill" else "default",
        )

    def _tool_result(self, block: dict, index: int, obj: dict, uuid: str) -> ToolResult:
        content = _render_parts(block.get("content"))
        is_error = block.get("is_error") is True
        details = obj.get("toolUseResult")
        details = details if isinstance(details, dict) else {}
        call_id = _text(block.get("tool_use_id")) or f"{uuid}:{index}"
        # (only the result of an agent call of this file's, written with no details, says it there)
        footer_agent, footer = _agent_footer(content) if not details and call_id in self.agent_calls else (None, {})
        return ToolResult(
            tool_use_id=call_id,
            message_uuid=uuid,
            session_id=self.session_id,
            content=content,
            is_error=int(is_error),
            outcome=_outcome(content, is_error, obj),
            timestamp=_text(obj.get("timestamp")),
            agent_id=self._spawned_agent_id(obj) or footer_agent,
            exit_code=_exit_code(content),
            agent_duration_ms=int_or_none(details.get("totalDurationMs", footer.get("duration_ms"))),
            agent_tokens=int_or_none(details.get("totalTokens", _usage_tokens(footer))),
            file_path=_result_file_path(details),
            output_uuid=persisted_output(content),
        )

    def _spawned_agent_id(self, obj: dict) -> str | None:
        """The agent a tool result refers to: ``toolUseResult.agentId``, or the
        2.0.x trunk line's own ``agentId`` (a reference there, not membership)."""
        details = obj.get("toolUseResult")
        if isinstance(details, dict):
            agent_id = _text(details.get("agentId"))
            if agent_id:
                return agent_id
        if self.is_agent or obj.get("isSidechain") is True:
            return None
        return _text(obj.get("agentId"))

    # Documents

    def _agent_meta(self, doc: dict) -> list[Record]:
        """``agent-<id>.meta.json``: type, description and spawning tool call; the name
        the agent was given (an Agent call's ``name``, a team member's), which titles
        its session, and its agent team (``teamName``, an in-process member's)."""
        parent = self.parent or ""
        agent_type = _text(doc.get("agentType"))
        description = _text(doc.get("description"))
        if self.run_id:
            return [WorkflowAgent(self.agent_id, self.run_id, parent, agent_type, description)]
        child = self._child_session_id(self.agent_id)
        records: list[Record] = [
            Subagent(
                self.agent_id,
                parent,
                child_session_id=child,
                parent_tool_use_id=_text(doc.get("toolUseId")),
                agent_type=agent_type,
                description=description,
                described_by="agent" if agent_type or description else None,
            )
        ]
        name, team = _text(doc.get("name")), _text(doc.get("teamName"))
        if (name or team) and parent:
            records.append(Session(child, SOURCE, project=self.project, parent_session_id=parent,
                                   relationship="subagent", agent_id=self.agent_id, agent_name=name, team_name=team))
        if name and parent and not _reserved_name(name):
            records.append(TitleCandidate(child, "name", name))
        return records

    def _title_file(self, doc: dict) -> list[Record]:
        """``<session>/custom-title.json``: the title the session was last given (``at``
        when); it ranks below a ``custom-title`` line (``derive.choose_title``)."""
        title = doc.get("customTitle")
        if not isinstance(title, str) or not title.strip():
            return []
        return [TitleCandidate(self.session_id, "custom", title.strip(), timestamp=_text(doc.get("at")))]

    def _workflow(self, doc: dict) -> list[Record]:
        """``workflows/<run>.json``: the run and the agents it fanned out to."""
        run_id = _text(doc.get("runId")) or self.run_id or self.own_id
        session_id = self.parent or ""
        progress = doc.get("workflowProgress")
        agents = [
            item
            for item in (progress if isinstance(progress, list) else ())
            if isinstance(item, dict) and item.get("type") == "workflow_agent"
        ]
        agent_count = int_or_none(doc.get("agentCount"))
        if agent_count is None and isinstance(progress, list):
            agent_count = len(agents)
        result = doc.get("result")
        records: list[Record] = [
            Workflow(
                run_id,
                session_id,
                parent_tool_use_id=_text(doc.get("toolUseId")),
                task_id=_text(doc.get("taskId")),
                script=_text(doc.get("script")),
                result_json=None if result is None else as_json(result),
                timestamp=_text(doc.get("timestamp")),
                agent_count=agent_count,
                duration_ms=int_or_none(doc.get("durationMs")),
                total_tokens=int_or_none(doc.get("totalTokens")),
                status=_text(doc.get("status")),
                workflow_name=_text(doc.get("workflowName")),
            )
        ]
        for agent in agents:
            agent_id = _text(agent.get("agentId"))
            if agent_id:
                records.append(
                    WorkflowAgent(
                        agent_id,
                        run_id,
                        session_id,
                        phase=_text(agent.get("phaseTitle")),
                        label=_text(agent.get("label")),
                        model=_text(agent.get("model")),
                        state=_text(agent.get("state")),
                        duration_ms=int_or_none(agent.get("durationMs")),
                        tokens=int_or_none(agent.get("tokens")),
                        tool_calls=int_or_none(agent.get("toolCalls")),
                    )
                )
        return records


# Line-local helpers


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _metadata(obj: dict, line_type: str | None, position: Position, known: frozenset) -> Merged:
    """A line about the session, merged: ``metadata`` when its type is ``known`` (or it
    is a ``history.jsonl`` entry, the prompt history: no type, its ``display``),
    ``unknown-type`` naming its type otherwise."""
    if line_type in known or ("type" not in obj and isinstance(obj.get("display"), str)):
        return Merged(position, "metadata")
    return Merged(position, "unknown-type", line_type)


def _add_api_fields(message: Message, payload: dict) -> None:
    """Role, model, API message id, stop reason and usage of ``message``."""
    message.role = _text(payload.get("role"))
    message.model = _text(payload.get("model"))
    message.api_message_id = _text(payload.get("id"))
    message.stop_reason = _text(payload.get("stop_reason"))
    usage = payload.get("usage")
    if isinstance(usage, dict):
        message.input_tokens = int_or_none(usage.get("input_tokens"))
        message.output_tokens = int_or_none(usage.get("output_tokens"))
        message.cache_read_tokens = int_or_none(usage.get("cache_read_input_tokens"))
        message.cache_creation_tokens = int_or_none(usage.get("cache_creation_input_tokens"))


def _compaction_meta(obj: dict) -> dict | None:
    """``{"preserved_uuids": [...]}``: lines a compaction kept verbatim."""
    metadata = obj.get("compactMetadata")
    kept = metadata.get("preservedMessages") if isinstance(metadata, dict) else None
    if not isinstance(kept, dict):
        return None
    uuids = {}
    for key in ("allUuids", "uuids"):
        value = kept.get(key)
        if isinstance(value, list):
            uuids.update((uuid, None) for uuid in value if isinstance(uuid, str))
    return {"preserved_uuids": list(uuids)} if uuids else None


def _subtype(obj: dict, line_type: str) -> str | None:
    """System subtype, attachment type or progress data type."""
    if line_type == "attachment":
        nested = obj.get("attachment")
    elif line_type == "progress":
        nested = obj.get("data")
    else:
        return _text(obj.get("subtype"))
    return _text(nested.get("type")) if isinstance(nested, dict) else None


def _structural_text(obj: dict, line_type: str) -> str:
    """What is searchable on a system / attachment / progress / unknown line."""
    if line_type == "progress":
        return ""
    if line_type == "attachment":
        attachment = obj.get("attachment")
        return _attachment_text(attachment) if isinstance(attachment, dict) else ""
    parts = [
        _text(obj.get("content")), _text(obj.get("apiRefusalExplanation")), *_error_details(obj.get("error")),
        *_texts_at(obj, ("stopReason",), ("hookErrors", "*")),  # what stop hooks said
    ]
    return "\n".join(dict.fromkeys(part for part in parts if part))


def _cost_state(obj: dict) -> dict | None:
    """What a ``cost-state`` line says the session cost and changed so far.

    Claude Code writes one when its process leaves the session (exit, ``/clear``,
    another session resumed) and restores its totals from the last one when the
    session is resumed: each line holds the session's totals so far (not what
    one process added), so the last one wins. A line Claude Code would refuse
    (a figure that is no finite non-negative number, or beyond its bounds) is
    left out, as Claude Code leaves it out.
    """
    cost, added, removed = (obj.get(key) for key in ("totalCostUSD", "totalLinesAdded", "totalLinesRemoved"))
    figures = (cost, MAX_COST_USD), (added, MAX_FIGURE), (removed, MAX_FIGURE)
    if not all(_figure(value, most) for value, most in figures):
        return None
    lines = int_or_none(added), int_or_none(removed)
    if None in lines:
        return None
    return {"cost_usd": float(cost), "lines_added": lines[0], "lines_removed": lines[1]}


def _figure(value: Any, most: float) -> bool:
    """A finite number from 0 to ``most`` (a bool is no number here)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value <= most


def _relocated(obj: dict) -> dict | None:
    """``relocated``: the folder Claude Code moved the session's log to (its project's),
    entering or leaving a worktree or moving to another folder; the last one is where it is."""
    folder = _text(obj.get("relocatedCwd"))
    return {"relocated_cwd": folder} if folder else None


def _worktree(obj: dict) -> dict | None:
    """``worktree-state``: the git worktree the session works in (EnterWorktree,
    ``--worktree``), its branch and the branch it was made from. Leaving it writes
    ``null``, which says nothing here: the session still worked there."""
    state = obj.get("worktreeSession")
    path = _text(state.get("worktreePath")) if isinstance(state, dict) else None
    if not path:
        return None
    return {"worktree_path": path, "worktree_branch": _text(state.get("worktreeBranch")) or None,
            "worktree_base_branch": _text(state.get("originalBranch")) or None}


# Lines that describe the session (Claude Code 2.1.x), each read into Session fields.
SESSION_STATE_LINES = {
    "cost-state": _cost_state,
    "relocated": _relocated,
    "worktree-state": _worktree,
    "ended-by-model": lambda obj: {"ended_by_model": 1},  # EndConversation: no prompt may follow
}


def _origin_kind(obj: dict) -> str | None:
    """Who a line says wrote it (2.1.x ``origin.kind``); None when it does not say."""
    origin = obj.get("origin")
    return _text(origin.get("kind")) if isinstance(origin, dict) else None


def _sent_for(obj: dict) -> bool:
    """A user line another sender wrote in the user's name."""
    kind = _origin_kind(obj)
    return kind is not None and kind not in PERSON_ORIGINS


def _answers(payload: dict | None) -> bool:
    """A user line that holds tool results (they carry the origin of the prompt they answer)."""
    content = payload.get("content") if payload else None
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _voice_note(obj: dict) -> bool:
    """A 2.1.x voice call's note: a system line holding the talk and its ``voice-call`` origin."""
    return _origin_kind(obj) == "voice-call" and isinstance(obj.get("content"), str)


# Names Claude Code keeps for an agent team's own roles (a team's lead writes its
# lines as "team-lead"): no name anyone gave an agent, so none titles its session.
RESERVED_AGENT_NAMES = frozenset({"team-lead", "main", "user", "system"})


def _reserved_name(name: str | None) -> bool:
    return name is not None and name.lower() in RESERVED_AGENT_NAMES


def _snapshot_time(obj: dict, line_type: str | None) -> str | None:
    """When a ``file-history-snapshot`` line's backups were taken (``snapshot.timestamp``:
    as a prompt is sent, a few milliseconds after that prompt's line's time; an update
    keeps the time of the snapshot it updates). The line has no time of its own."""
    snapshot = obj.get("snapshot") if line_type == "file-history-snapshot" else None
    return _text(snapshot.get("timestamp")) if isinstance(snapshot, dict) else None


def _fork_parent(obj: dict) -> str | None:
    """The session a branched session's lines were copied from (``forkedFrom``)."""
    forked = obj.get("forkedFrom")
    return _text(forked.get("sessionId")) if isinstance(forked, dict) else None


def _queued_text(obj: dict) -> str | None:
    """What the user typed into the queue (a ``queue-operation`` ``enqueue``'s text); None
    for another operation, and for what Claude Code queued itself (a background task's
    notification, a ``!`` command's output, a message of another session's)."""
    content = obj.get("content")
    if obj.get("operation") != "enqueue" or not isinstance(content, str) or not content.strip():
        return None
    return None if content.lstrip().startswith(NOT_A_PROMPT + ("<channel",)) else content


def _queued_prompt(attachment) -> bool:
    """A ``queued_command`` attachment holding a prompt the user typed (not a task's
    notification, nor a ``!`` command)."""
    if not isinstance(attachment, dict) or attachment.get("type") != "queued_command":
        return False
    return attachment.get("commandMode") in (None, "prompt") and not _sent_for(attachment)


def _attachment_text(attachment: dict) -> str:
    """The searchable text of an attachment: a prompt queued while the agent was busy,
    what a hook said or added to the context, a background task's status, a plan,
    teammates' and plugins' notes, the todo or task list a reminder repeats."""
    kind = _text(attachment.get("type"))
    if kind == "queued_command":
        return _render_parts(attachment.get("prompt"))
    if kind in ("todo_reminder", "task_reminder"):
        todos = attachment.get("content") if isinstance(attachment.get("content"), list) else []
        parts = [_todo_line(todo) for todo in todos if isinstance(todo, dict)]
    elif kind == "task_status":
        parts = [_todo_line(attachment), *_texts_at(attachment, ("deltaSummary",), ("shell", "command"))]
    elif kind == "hook_success" and _text(attachment.get("hookEvent")) not in CONTEXT_HOOK_EVENTS:
        return ""  # (only these hooks' output reaches the model)
    elif kind in ATTACHMENT_TEXT:
        said = _texts_at(attachment, *ATTACHMENT_TEXT[kind])
        parts = [_text(attachment.get("hookName")), *said] if said else []
    else:
        return ""
    return "\n".join(part for part in parts if part)


def _texts_at(value: Any, *paths: tuple[str, ...]) -> list[str]:
    """The texts found at ``paths`` (``*`` stands for every item of a list), each
    a string or a list of content parts."""
    found = []
    for path in paths:
        values = [value]
        for key in path:
            if key == "*":
                values = [item for v in values if isinstance(v, list) for item in v]
            else:
                values = [v.get(key) for v in values if isinstance(v, dict)]
        found.extend(text for v in values if (text := _render_parts(v) if isinstance(v, list) else _text(v)))
    return found


def _unflagged_summary(obj: dict, line_type: str, content_type: str | None, text: str) -> bool:
    """A compaction summary from before ``isCompactSummary``: the first line of a new
    chain (``parentUuid`` null) in the summary's words. A prompt quoting them has a
    parent, and a line that names no parent at all says nothing either way."""
    starts_chain = "parentUuid" in obj and obj["parentUuid"] is None
    return line_type == "user" and content_type == "text" and starts_chain and text.startswith(CONTINUED)


def _todo_line(todo: dict) -> str | None:
    """``[status] content`` of a todo; a task says ``subject: description``."""
    content, status = _text(todo.get("content")), _text(todo.get("status"))
    if content is None:
        content = ": ".join(part for part in (_text(todo.get("subject")), _text(todo.get("description"))) if part) or None
    return f"[{status}] {content}" if content and status else content


def _error_details(error: Any) -> Iterator[str | None]:
    """Message, type and HTTP status of an API error and of the errors it wraps."""
    while isinstance(error, dict):
        status = int_or_none(error.get("status"))
        yield _text(error.get("message"))
        yield _text(error.get("type"))
        yield f"status {status}" if status else None
        error = error.get("error")


def _command_request(text: str) -> str | None:
    """``/orchestrator create a TODO app`` from a slash command line; None for a command
    without arguments (``/clear``, ``/exit``) or one that changes a setting (``/model
    opus``): those say nothing to title a session with."""
    name = re.search(r"<command-name>\s*/?(.*?)\s*</command-name>", text, re.S)
    args = re.search(r"<command-args>\s*(.*)\s*</command-args>", text, re.S)  # to the last closing tag
    if not name or not name.group(1) or not args or not args.group(1).strip():
        return None
    if name.group(1) in SETTING_COMMANDS:
        return None
    return f"/{name.group(1)} {args.group(1).strip()}"


def _looks_meta(text: str) -> bool:
    return text[:64].lstrip().startswith(META_PREFIXES)


def _teammate_senders(text: str) -> list[str]:
    """The members of an agent team whose messages a line delivers, in order: none
    unless it opens with them (the lead's copy, with their frame)."""
    if not text[:64].lstrip().startswith(("<teammate-message", "Another Claude session sent a message")):
        return []
    return list(dict.fromkeys(TEAMMATE_SENDER.findall(text)))


def leading_thinking(content: Any) -> str:
    """The text of the thinking blocks a content list opens with (joined as ``_content`` joins)."""
    parts = []
    for block in content if isinstance(content, list) else ():
        if not (isinstance(block, dict) and block.get("type") == "thinking"):
            break
        if text := _block_text(block, "thinking"):
            parts.append(text)
    return "\n".join(parts)


def _block_text(block: dict, kind: str) -> str:
    """The searchable text of a content block other than tool_use/tool_result."""
    if kind == "thinking":
        return _text(block.get("thinking")) or ""
    if kind in ("image", "document"):
        return _media_placeholder(block, kind)
    if kind == "tool_reference":
        return _text(block.get("tool_name")) or ""
    return _text(block.get("text")) or ""


def _render_parts(value: Any) -> str:
    """A string, or a list of parts (tool result content, queued prompt) joined."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    parts = []
    for part in value:
        if isinstance(part, str):
            text = part
        elif isinstance(part, dict):
            text = _block_text(part, _text(part.get("type")) or "unknown")
        else:
            continue
        if text:
            parts.append(text)
    return "\n".join(parts)


def _prompt_text(content: Any) -> str:
    """The typed text of a user prompt (text blocks only; no tool results)."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    parts = []
    for block in content:
        if isinstance(block, str):
            parts.append(block)
        elif isinstance(block, dict):
            kind = block.get("type")
            if kind == "tool_result":
                return ""
            if kind == "text" and isinstance(block.get("text"), str):
                parts.append(block["text"])
    return "\n".join(parts)


def persisted_output(content: str) -> str | None:
    """The uuid of the message holding the output a ``<persisted-output>`` note
    stands for: ``<session>:tool-results/<file name>``, from the path it names."""
    if not content.lstrip()[: len(PERSISTED)] == PERSISTED:
        return None
    saved = SAVED_TO.search(content, 0, 8192)
    if saved is None:
        return None
    parts = PureWindowsPath(saved.group(1).strip()).parts  # (either separator)
    if len(parts) < 3 or parts[-2] != TOOL_RESULTS or not parts[-1].endswith(OUTPUT_SUFFIXES):
        return None
    return output_uuid(parts[-3], parts[-1])


def output_uuid(session_id: str, name: str) -> str:
    """The uuid of the message read from ``<session>/tool-results/<name>``."""
    return f"{session_id}:{TOOL_RESULTS}/{name}"


def _media_placeholder(block: dict, kind: str) -> str:
    """``[image image/png 1234 bytes]``: never the base64 payload itself."""
    source = block.get("source")
    if not isinstance(source, dict):
        return f"[{kind}]"
    media_type = _text(source.get("media_type")) or _text(source.get("type")) or ""
    data = source.get("data")
    if isinstance(data, str):
        size = len(data) * 3 // 4 - data[-2:].count("=")
        return f"[{kind} {media_type} {size} bytes]"
    url = _text(source.get("url"))
    return f"[{kind} {media_type} {url}]" if url else f"[{kind} {media_type}]"


def _file_paths(name: str, tool_input: Any) -> list[str]:
    if name not in FILE_TOOLS or not isinstance(tool_input, dict):
        return []
    return [path for key in PATH_KEYS if (path := _text(tool_input.get(key)))]


def _result_file_path(details: dict) -> str | None:
    """The file a Read, Edit or Write result names (``filePath``, a Read's ``file.filePath``)."""
    read = details.get("file")
    return _text(details.get("filePath")) or (_text(read.get("filePath")) if isinstance(read, dict) else None)


def _outcome(content: str, is_error: bool, obj: dict) -> str:
    """succeeded | failed | blocked (permission refused) | cancelled (interrupted)."""
    if obj.get("toolDenialKind"):
        return "blocked"
    if content.startswith(INTERRUPTED):
        return "cancelled"
    details = obj.get("toolUseResult")
    if is_error and isinstance(details, dict) and details.get("interrupted") is True:
        return "cancelled"  # a command the user stopped (Bash: its output, then the abort)
    if not is_error:
        return "succeeded"
    head = _without_error_prefix(content)[:240]
    if head.startswith(CANCELLED):
        return "cancelled"
    if head.startswith(REFUSAL_PREFIXES) or any(marker in head for marker in REFUSAL_MARKERS):
        return "blocked"
    return "failed"


# What an Agent/Task result's text ends with (2.1.x): the agent it ran and its
# figures, the only record of them where the line has no toolUseResult (an
# agent another agent started, 2.1.172+); 2.1.3xx names the worktree the agent
# ran in (if it did) between the two.
AGENT_FOOTER = re.compile(
    r"(?:\A|\n)agentId: ([\w-]+)\b[^\n]*\n(?:worktree(?:Path|Branch): [^\n]*\n)*<usage>(.*?)</usage>\s*\Z", re.S
)
# A figure of a <usage> block: ``name: N`` lines (an agent's result, notifications
# before 2.1.3xx), or ``<name>N</name>`` (2.1.3xx notifications).
USAGE_FIGURE = re.compile(r"<(\w+)>\s*(\d+)\s*</\1>|(\w+):\s*(\d+)")
# An agent's tokens: ``total_tokens`` until 2.1.2xx, ``subagent_tokens`` in 2.1.3xx.
TOKEN_FIGURES = ("total_tokens", "subagent_tokens")
AGENT_TOOLS = ("Agent", "Task")
MAX_AGENT_CALLS = 64
# A cloud session's id, as Claude Code writes it in a URL's path (``/code/session_…``).
CLOUD_SESSION_ID = re.compile(r"(?:session|cse)_[A-Za-z0-9_]{1,184}")


def _cloud_session_id(url: str | None) -> str | None:
    """The cloud session an http(s) ``sessionUrl`` names: the first segment of its path
    that is a ``session_…`` or ``cse_…`` id (``https://claude.ai/code/session_01…?from=cli``)."""
    if not url or not re.match(r"https?://", url, re.I):
        return None
    path = re.split(r"[?#]", url, maxsplit=1)[0]
    return next((part for part in path.split("/")[3:] if CLOUD_SESSION_ID.fullmatch(part)), None)


def _agent_footer(content: str) -> tuple[str | None, dict]:
    """The agent id and the ``<usage>`` counts a result's text ends with, if it does."""
    tail = content[-2000:]
    found = AGENT_FOOTER.search(tail) if "</usage>" in tail else None
    if found is None:
        return None, {}
    return found.group(1), _usage_counts(found.group(2))


def _usage_counts(usage: str) -> dict[str, int]:
    """The figures of a ``<usage>`` block, by name (the last of a name wins)."""
    return {tag or name: int(tagged or value) for tag, tagged, name, value in USAGE_FIGURE.findall(usage)}


def _usage_tokens(counts: dict[str, int]) -> int | None:
    """An agent's tokens among the figures of its ``<usage>``, under either name."""
    return next((counts[name] for name in TOKEN_FIGURES if name in counts), None)


def _exit_code(content: str) -> int | None:
    """N from a result starting ``Exit code N`` (Bash failures)."""
    head = _without_error_prefix(content)
    if not head.startswith("Exit code "):
        return None
    words = head[len("Exit code ") : 32].split(maxsplit=1)
    try:
        return int(words[0]) if words else None
    except ValueError:
        return None


def _without_error_prefix(content: str) -> str:
    return content[len("Error: ") :] if content.startswith("Error: ") else content
