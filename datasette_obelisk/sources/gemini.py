"""Gemini CLI chats: ``$HOME/.gemini/tmp/<project hash>/chats/`` (and, under macOS
Seatbelt, 0.61+, ``$HOME/.cache/.gemini/tmp/``).

Two layouts:

* legacy ``session-*.json``: one ``ConversationRecord`` document
  ``{sessionId, projectHash, startTime, lastUpdated, messages[], summary?}``
  rewritten on every update (layout ``document``);
* ``session-*.jsonl`` (and subagent chats ``chats/<parent id>/<id>.jsonl``, ``.json`` in 0.37-0.38):
  an append log of a metadata line, message records, ``{"$set": {...}}``
  metadata updates and ``{"$rewindTo": <message id>}`` markers.

Message ids are ``gemini:<session id>:<message id>``, so migrating a legacy
``.json`` chat to ``.jsonl`` (which copies every message) yields the same
ids. A tool call's output, written inside the message that made the call,
is also a ``tool_result`` row of its own (``<message uuid>:result:<call
id>``), as Claude Code and Codex write it, so search finds it. Gemini
re-appends the last message when it gains token counts or tool results:
the re-append keeps only what is new (see ``_reappended``), so usage is
counted once. A ``$set`` of the whole ``messages`` list (gemini-cli
syncing its history, e.g. after compressing it) stores the messages it adds;
when it drops messages it is a compaction (see ``_history``), so that line
may give more than one row, each with the line's position. Setting it from
plain contents (masking tool outputs, truncating them) first writes every
message again under a new id: a copy is kept as what it copies (``_copied``).
``tmp/<project hash>/logs.json``, the prompt log, is read apart (``prompt_logs``).
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterator, Mapping


from ..hookspecs import hookimpl
from ..records import (
    LineError,
    Merged,
    Message,
    Position,
    Record,
    Session,
    Subagent,
    Summary,
    TitleCandidate,
    ToolCall,
    ToolResult,
)
from .base import SourceFile, existing_folder, root_location, walk_files
from .lines import load_json
from .prompt_logs import GEMINI_LOG, KIND as PROMPT_LOG, GeminiLogsParser
from .common import (
    as_int,
    as_json,
    blob_note,
    call_text,
    decode_line,
    first_prompt_title,
    first_text,
    item_positions,
    load_document,
    project_slug,
    said_key,
    shell_written_paths,
    thinking_meta,
    unique,
    usage_fields,
)

SOURCE = "gemini"
CONVERSATION_TYPES = {"user": "user", "gemini": "assistant"}
# The subtypes of the rows written (``Message.subtype``), kind by kind: a history
# replacement's boundary (``_boundary``), a reply's token counts (``_usage_row``).
SUBTYPES = {"compaction": frozenset({"compact_boundary"}), "gemini": frozenset({"usage"})}
TOOL_OUTCOMES = {"success": "succeeded", "error": "failed", "cancelled": "cancelled"}
PATH_ARGUMENTS = ("file_path", "absolute_path")
SHELL_TOOLS = {"run_shell_command", "shell"}
# The shell tool reports ``success`` whatever the command's exit status; the
# status is a line after the output (``Exit Code: 1``), or, when there was no
# output, the whole display text.
_EXIT_CODE_LINE = re.compile(r"(?:^|\n)Exit Code: (-?\d+)(?=\n|$)")
_EXIT_CODE_DISPLAY = re.compile(r"Command exited with code: (-?\d+)")
EXIT_SCAN_CHARS = 1024  # the status lines follow the output
KEPT_INJECTED = 64
INJECTED_PREFIXES = (
    "<session_context>", "<hook_context>",  # gemini-cli's own isIgnoredUserContent
    "Here is the user's editor context as a JSON object.",  # IDE mode's context, then its changes
    "Here is a summary of changes in the user's editor context",
)
# Parts added beside a prompt: a hook's context, the project memory an agent's task opens with.
ADDED_PARTS = (*INJECTED_PREFIXES, "<loaded_context>")
# What gemini-cli sends before tool responses: the user's words while the tools
# ran (a steering hint), or what a command left running in the background printed.
STEERING = "User steering update:\n<user_input>"
BESIDE_RESPONSES = (STEERING, "Background execution update:\n<background_output>")
# The reply gemini-cli puts in its history for one a cancelled call cut short (never written as a message).
INTERRUPTED = "[The previous response was interrupted before it completed.]"
# The prompt gemini-cli 0.61+ sends in the user's name when a reply after tool results
# held no text (useGeminiStream / LegacyAgentSession auto-nudge).
EMPTY_REPLY_NUDGE = ("[System: You successfully executed a tool but returned an empty response. "
                     "Please analyze the tool output and explain your progress or final answer.]")
# What gemini-cli sends in the user's name: that nudge, and what its loop detection
# tells the model (``_recoverFromLoop``).
SENT_FOR_THE_USER = (EMPTY_REPLY_NUDGE, "System: Potential loop detected. ")
AGENT_TASK_ARGUMENTS = ("objective", "description", "prompt", "task")
# Where gemini-cli 0.61+ keeps tmp/ (chats, logs, checkpoints) when it runs under macOS
# Seatbelt (SANDBOX=sandbox-exec): beside the home's .gemini, which the profile keeps read-only.
SANDBOX_RUNTIME = Path(".cache") / ".gemini"


class GeminiSource:
    name = SOURCE
    # 2: a call's text holds its argument strings, not their JSON
    # 3: a shell call's exit code is read from its output; non-zero fails it;
    #    a ``$set`` of ``directories`` sets the cwd and project; a summary
    #    read before any message titles the chat with the first message as leaf;
    #    a ``$set`` of ``messages`` stores the messages it adds, and is a
    #    compaction when it drops any
    # 4: a ``$set`` that drops messages and adds none is a compaction too
    #    (a log-only placeholder summary shadows what it dropped)
    # 5: after a ``$set`` that ends on a kept message, a re-append of that
    #    message is known as one (its token counts were dropped)
    # 6: a message a ``$set`` keeps but writes without its ``type`` stays in
    #    the history, so a later ``$set`` that drops it is a compaction
    # 7: a reply with its thoughts says where they end (meta thinking_chars)
    # 8: a tool's output is a ``tool_result`` row of its own
    # 9: a reply without text is typed by what it holds (tool calls, else
    #    thoughts), or has no type when it holds nothing
    # 10: a reply written before its tool calls gets them when re-appended with
    #    them (its row waits for them when it held nothing); a user message of
    #    tool responses repeats their results; parts are joined as gemini-cli
    #    joins them; a ``$set`` that takes back the last messages is a rewind;
    #    a first prompt titles its chat as typed (``displayContent``); the context
    #    gemini-cli writes as the user's (``<session_context>``, ``<hook_context>``)
    #    is injected, and kept out of the history it syncs; a reply's parts marked
    #    as thought are its thoughts; a call that ran a subagent types it
    # 11: the results of all calls are remembered (a resume repeats them all);
    #    an earlier reply written again adds only a result it lacked; subagent
    #    chats written as documents (0.37-0.38) are read; what a compression
    #    keeps under new ids is known by what it says (kept, not stored again),
    #    and the context it opens with stays current; a resume leaving out
    #    replies that held nothing and commands replaces nothing; a command
    #    titles no chat
    # 12: the first prompt taken back by a rewind leaves the title to the next
    # 13: a chat takes its project from its folder's ``.project_root`` (the
    #     chats of gemini-cli 0.3x+ name no folder of their own); a rewind to
    #     the copy a compression kept of the first prompt leaves the title to the next
    # 14: the messages gemini-cli writes again under new ids before it sets its history
    #     from plain contents (masking, truncating) are what they copy, not stored again;
    #     what the user said while tools ran is kept; IDE context is injected; an
    #     agent's project memory titles nothing; the reply gemini-cli puts in for an
    #     interrupted one is injected
    # 15: the prompt gemini-cli sends for a reply that held nothing after tool results, and
    #     what its loop detection tells the model, are meta;
    #     a reply holding nothing that a history sync leaves out before a message it keeps
    #     is neither dropped nor taken back (a resume, a cancelled turn's setHistory)
    # 16: messages carry the chat's folder as known at their line (cwd); a message whose
    #     ``type`` is no string is of unknown type, not a parser error
    # 17: an escaped NUL (``\u0000``) is read as U+FFFD (lines.load_json); a tool's input or
    #     output nested deeper than orjson writes (255 levels) keeps its line
    # 18: a message of a chat written as one JSON document keeps the bytes of its own item
    # 19: a chat's project is the root its tmp folder's marker, the projects registry, the
    #     root whose SHA-256 names the folder or a chat's own directories prove, else its
    #     tmp folder (``gemini-tmp:<folder>``, project_source 'folder')
    parser_version = 19
    trusted_records = True  # held to their shape by the tests, so not checked one by one
    # Gemini CLI has no variable naming this folder: $GEMINI_CLI_HOME (HOME_VARIABLE)
    # names the home directory the .gemini folder is under, in place of the user's.
    root_variable = None
    home_folder = ".gemini"
    folder_layout = "tmp/<project hash>/chats/session-*.json[l] (or a tmp folder itself)"

    def default_root(self, environ: Mapping[str, str]) -> Path | None:
        """``~/.gemini`` (else ``~/.cache/.gemini``), ``~`` being ``$GEMINI_CLI_HOME``
        when that is set, as gemini-cli reads it; None when neither is a folder."""
        named = environ.get(HOME_VARIABLE)
        location = Path(named).expanduser() / self.home_folder if named else root_location(self, environ)
        return existing_folder(location) or existing_folder(location and location.parent / SANDBOX_RUNTIME)

    def folders(self, root: Path) -> list[Path]:
        """``root``'s tmp folder (else ``root``) and, for a ``.gemini`` folder, the one
        gemini-cli writes beside it under macOS Seatbelt (0.61+), whether or not it is there."""
        folders = [root / "tmp" if (root / "tmp").is_dir() else root]
        runtime = root.parent / SANDBOX_RUNTIME / "tmp"
        if root.name == ".gemini" and root.parent.name != ".cache" and runtime.resolve() != folders[0].resolve():
            folders.append(runtime)
        return folders

    def discover(self, root: Path) -> Iterator[SourceFile]:
        known: dict[Path, dict[str, str | None]] = {}  # tmp folder -> {its folder's name: the project root}
        roots_of_tmp = set(self.folders(Path(root)))
        for path in (path for folder in roots_of_tmp for path in walk_files(folder)):
            unit = chat_unit(path)
            if unit is None and path.name == GEMINI_LOG and path.parent.parent in roots_of_tmp:
                unit = SourceFile(path, SOURCE, kind=PROMPT_LOG, layout="document", priority=4)
                project = path.parent
            elif unit is not None:
                project = path.parents[1 if unit.kind == "chat" else 2]
            else:
                continue
            if project.parent not in known:
                known[project.parent] = known_roots(project.parent)
            if project.name not in known[project.parent]:
                known[project.parent][project.name] = hashed_root(project)
            if named := known[project.parent][project.name]:
                unit.hints["project_root"] = named
            else:
                unit.hints["project_folder"] = project.name
            yield unit

    def open_parser(self, unit: SourceFile, state: dict[str, Any] | None):
        if unit.kind == PROMPT_LOG:
            return GeminiLogsParser(unit.hints.get("project_root"))
        return GeminiParser(unit, state)


# What gemini-cli takes for the home directory, when set (utils/paths.ts ``homedir``).
HOME_VARIABLE = "GEMINI_CLI_HOME"


def project_root(folder: Path) -> str | None:
    """The project a ``tmp/<project>`` folder holds the chats of, as its
    ``.project_root`` names it (gemini-cli writes it beside ``chats/``)."""
    try:
        with open(folder / PROJECT_ROOT_FILE, "rb") as fp:
            named = fp.read(MAX_PROJECT_ROOT + 1)
    except OSError:
        return None
    text = named.decode("utf-8", "replace").strip()
    return text if 0 < len(named) <= MAX_PROJECT_ROOT and "\n" not in text else None


def known_roots(tmp: Path) -> dict[str, str]:
    """The project root of each folder of ``tmp`` whose root the files name, by folder name.

    gemini-cli (0.3x+, ``ProjectRegistry``) names a project's folder by a slug of its root's
    basename (``getShortId``), writes the root into the folder's ``.project_root`` (and
    into ``history/<slug>/``'s), and keeps ``projects.json`` (root -> slug) beside ``tmp/``.
    Older versions named the folder by the SHA-256 of the root (``getProjectHash``, which
    chats still write as ``projectHash``); the migration copies that folder to the slug's
    and leaves it, so a hash folder's root is the known root whose hash is its name.
    A folder's own ``.project_root`` comes first, then the registry's entry.
    """
    runtime = tmp.parent
    named: dict[str, str] = {}
    for folder in (tmp, runtime / "history"):
        try:
            children = sorted(child for child in folder.iterdir() if child.is_dir())
        except OSError:
            continue
        for child in children:
            if (root := project_root(child)) and child.name not in named:
                named[child.name] = root
    for root, slug in sorted(registry(runtime).items()):
        named.setdefault(slug, root)
    roots = dict(named)
    for root in named.values():
        roots.setdefault(hashlib.sha256(root.encode("utf-8")).hexdigest(), root)
    return roots


def hashed_root(folder: Path) -> str | None:
    """The root a chat of ``folder`` proves: the first of the folders it names (``directories``,
    which a subagent's chat opens with: the workspace's, the project root first) whose
    SHA-256 is the chat's ``projectHash`` (``getProjectHash`` of the root). Only the first
    line of each log is read, subagents' first, at most ``MAX_PROBED`` of them."""
    chats = folder / "chats"
    try:
        logs = sorted(chats.glob("*/*.jsonl")) + sorted(chats.glob("session-*.jsonl"), reverse=True)
    except OSError:
        return None
    for log in logs[:MAX_PROBED]:
        try:
            with open(log, "rb") as fp:
                first = load_json(fp.readline(MAX_FIRST_LINE))
        except (OSError, ValueError):
            continue
        if not isinstance(first, dict) or not isinstance(first.get("directories"), list):
            continue
        root = first_text(*first["directories"][:1])
        if root and "\n" not in root and len(root) <= MAX_PROJECT_ROOT and (
            hashlib.sha256(root.encode("utf-8")).hexdigest() == first.get("projectHash")
        ):
            return root
    return None


MAX_PROBED = 64
MAX_FIRST_LINE = 1024 * 1024


def registry(runtime: Path) -> dict[str, str]:
    """``projects.json``'s ``{"projects": {root: slug}}``, the entries that are texts."""
    try:
        with open(runtime / PROJECT_REGISTRY, "rb") as fp:
            data = load_json(fp.read(MAX_REGISTRY + 1))
    except (OSError, ValueError):
        return {}
    projects = data.get("projects") if isinstance(data, dict) else None
    if not isinstance(projects, dict):
        return {}
    return {root: slug for root, slug in projects.items()
            if isinstance(slug, str) and slug and root and len(root) <= MAX_PROJECT_ROOT and "\n" not in root}


def folder_project(name: str) -> str:
    """The project of a chat whose root no file names: its ``tmp/`` folder, marked as such
    (no project named from a path has a colon), so the chats of one folder group together."""
    return f"gemini-tmp:{name}"


PROJECT_ROOT_FILE = ".project_root"
PROJECT_REGISTRY = "projects.json"
MAX_REGISTRY = 16 * 1024 * 1024
MAX_PROJECT_ROOT = 4096


def chat_unit(path: Path) -> SourceFile | None:
    """The unit for a chat file, or None (``logs.json``, checkpoints, …)."""
    name, parent = path.name, path.parent
    if parent.name == "chats" and name.startswith("session-"):
        if name.endswith(".jsonl"):
            return SourceFile(path, SOURCE, kind="chat")
        if name.endswith(".json"):
            return SourceFile(path, SOURCE, kind="chat", layout="document")
        return None
    if parent.parent.name == "chats" and name.endswith((".jsonl", ".json")):
        # A subagent's chat: a log (0.39+), or a document (0.37-0.38), never migrated
        # since a subagent's chat is never resumed.
        hints = {"session_id": name.rsplit(".", 1)[0], "parent_session_id": parent.name}
        layout = "document" if name.endswith(".json") else "jsonl"
        return SourceFile(path, SOURCE, kind="subagent_chat", hints=hints, priority=1, layout=layout)
    return None


@hookimpl
def obelisk_sources():
    return [GeminiSource()]


@dataclass
class GeminiState:
    """What a chat parser needs to resume after a line."""

    session: str = ""
    session_emitted: bool = False
    first_prompt_seen: bool = False
    first_prompt: str | None = None  # the id of the message that titled the chat
    last_uuid: str | None = None
    last_message: list | None = None  # [message id, has token counts]
    last_results: list = field(default_factory=list)  # uuids of the tool result rows the last message gave
    # call id -> uuid of the row its call belongs to, for the calls of the last message
    last_calls: dict = field(default_factory=dict)
    hollow: bool = False  # the last message was a reply holding nothing yet (its row waits for a re-append)
    # ids of the calls whose result is stored (a dict for its order and lookups),
    # every one: a resume writes the responses of all of them again
    answered: dict = field(default_factory=dict)
    # of the messages in the history: ids with no row of their own (a reply that held
    # nothing yet, tool responses), and the rows an id has besides its own and its results'
    rowless: list = field(default_factory=list)
    extra_rows: dict = field(default_factory=dict)
    injected: list = field(default_factory=list)  # ids of the context messages gemini-cli wrote as the user's
    first_parents: dict = field(default_factory=dict)  # message id -> the row its first row followed
    # a summary read before any message: [title, timestamp, [line, byte offset, byte length] | None]
    pending_summary: list | None = None
    current: list = field(default_factory=list)  # ids of the user and gemini messages in the history
    said: dict = field(default_factory=dict)  # message id of the history -> digest of what it says (_said)
    copies: list = field(default_factory=list)  # ids a compression gave messages it kept (their rows are earlier ones)
    # ids of the history's messages a resume leaves out of what it sends (_unsent)
    unsent: dict = field(default_factory=dict)
    context: list = field(default_factory=list)  # ids of the injected messages the history opens with
    # while gemini-cli writes its history again: where in context + current its next copy goes on from
    replay: int | None = None
    cwd: str | None = None  # the chat's folder as last named: its messages' cwd


class GeminiParser:
    """Records for the lines (or the legacy document) of one chat file."""

    def __init__(self, unit: SourceFile, state: dict[str, Any] | None = None):
        self.unit = unit
        self.parent = unit.hints.get("parent_session_id")
        self.project_root = first_text(unit.hints.get("project_root"))
        self.project_folder = first_text(unit.hints.get("project_folder"))
        if state:
            self.s = GeminiState(**state)
        else:
            self.s = GeminiState(session=unit.hints.get("session_id") or unit.path.name.split(".", 1)[0])

    def state(self) -> dict[str, Any]:
        return asdict(self.s)

    @property
    def session_id(self) -> str:
        return f"gemini:{self.s.session}"

    def feed(self, line: bytes, position: Position) -> list[Record]:
        out: list[Record] = []
        data = decode_line(line, position)
        if isinstance(data, LineError):
            return [data]
        self._record(data, position, out)
        self._placed_summary(out)
        return out

    def document(self, data: bytes) -> list[Record]:
        """A legacy ``session-*.json`` ConversationRecord."""
        record = load_document(data, "messages", "Gemini chat")
        if isinstance(record, LineError):
            return [record]
        out: list[Record] = []
        self._metadata(record, out, summary=False)
        messages = record["messages"]
        for message, position in zip(messages, item_positions(data, "messages", len(messages))):
            if isinstance(message, dict) and isinstance(message.get("id"), str):
                self._message_record(message, position, out)
            else:
                out.append(LineError(position, "message is not a message record"))
        self._summary(record, out)
        return out

    # -- records ------------------------------------------------------------

    def _record(self, data: dict, position: Position, out: list) -> None:
        if not (isinstance(data.get("id"), str) or _stamp(data)):
            self.s.replay = None  # gemini-cli writes its copies with nothing else between them
        if isinstance(data.get("$rewindTo"), str):
            self._rewind(data["$rewindTo"], position, out)
        elif isinstance(data.get("id"), str):
            if not self._copied(data, position, out):
                self._message_record(data, position, out)
        elif isinstance(data.get("$set"), dict):
            self._update(data["$set"], position, out)
        elif isinstance(data.get("sessionId"), str):
            self._metadata(data, out, position)
            out.append(Merged(position, "metadata"))
        else:
            self._ensure_session(out)
            out.append(Merged(position, "unknown-type"))

    def _metadata(self, record: dict, out: list, position: Position | None = None, *, summary: bool = True) -> None:
        """The chat's identity (first line, or the legacy document)."""
        s = self.s
        s.session = first_text(record.get("sessionId")) or s.session
        parent = self.parent
        subagent = bool(parent) or record.get("kind") == "subagent"
        out.append(
            Session(
                id=self.session_id,
                source=SOURCE,
                **self._folder(record),
                started_at=first_text(record.get("startTime")),
                ended_at=first_text(record.get("lastUpdated")),  # the chat's last write (gemini-cli sets it at each)
                parent_session_id=f"gemini:{parent}" if parent else None,
                relationship="subagent" if parent else None,
                agent_id=s.session if subagent else None,
                agent_type="subagent" if subagent else None,
            )
        )
        s.session_emitted = True
        if parent:
            out.append(Subagent(s.session, session_id=f"gemini:{parent}", child_session_id=self.session_id))
        if summary:
            self._summary(record, out, position)

    def _summary(self, record: dict, out: list, position: Position | None = None) -> None:
        """The chat's ``summary`` as a title candidate.

        The store takes a ``summary`` title for the session that holds its
        leaf message (Claude's summary lines name one), so the summary names
        the newest message read so far. One read before any message (a
        migrated chat's first line) waits for the first message to name.
        """
        summary = (first_text(record.get("summary")) or "").strip()
        if not summary:
            return
        updated = first_text(record.get("lastUpdated"))
        if self.s.last_uuid is None:
            where = [position.line_no, position.byte_offset, position.byte_length] if position else None
            self.s.pending_summary = [summary, updated, where]
            return
        out.append(
            TitleCandidate(self.session_id, "summary", summary, updated, leaf_uuid=self.s.last_uuid, position=position)
        )

    def _placed_summary(self, out: list) -> None:
        """The summary read before any message, now naming the first one."""
        if self.s.pending_summary and self.s.last_uuid:
            summary, updated, where = self.s.pending_summary
            self.s.pending_summary = None
            position = Position(*where) if where else None
            out.append(
                TitleCandidate(self.session_id, "summary", summary, updated, leaf_uuid=self.s.last_uuid, position=position)
            )

    def _ensure_session(self, out: list) -> None:
        if not self.s.session_emitted:
            self.s.session_emitted = True
            out.append(Session(id=self.session_id, source=SOURCE, **self._folder({})))

    def _folder(self, record: dict) -> dict:
        """``cwd`` and ``project`` from the folders ``record`` names, else from
        the project its chats folder is for (``known_roots``), else the folder's own
        grouping (``folder_project``)."""
        workspace = _workspace(record)
        if workspace["cwd"] is None and self.project_root:
            workspace = {"cwd": self.project_root, "project": project_slug(self.project_root)}
        elif workspace["cwd"] is None and self.project_folder:  # no root known: the folder groups it
            return {"project": folder_project(self.project_folder), "project_source": "folder"}
        self.s.cwd = workspace["cwd"] or self.s.cwd
        return workspace

    def _update(self, update: dict, position: Position, out: list) -> None:
        self._ensure_session(out)
        workspace = _workspace(update)
        if workspace["cwd"]:
            self.s.cwd = workspace["cwd"]
            out.append(Session(id=self.session_id, source=SOURCE, **workspace))
        if updated := first_text(update.get("lastUpdated")):  # written again then: the chat ends no earlier
            out.append(Session(id=self.session_id, source=SOURCE, ended_at=updated))
        stored = isinstance(update.get("messages"), list) and self._history(update, position, out)
        self._summary(update, out, position)
        if not stored:
            out.append(Merged(position, "history-sync" if "messages" in update else "metadata"))

    def _history(self, update: dict, position: Position, out: list) -> bool:
        """A ``$set`` of the whole history; whether it stored a message.

        Messages it keeps are already stored. Messages it adds are stored
        here. When it drops the last ones it took them back, as a
        ``$rewindTo`` does. When it drops others it replaced them: a log-only
        ``compact_boundary`` row names the kept ones, and the first added
        message (gemini-cli's compression summary) is the compaction summary;
        when it adds none, a log-only placeholder stands in for the summary,
        so the dropped messages are shadowed either way.
        """
        records = [m for m in update["messages"] if isinstance(m, dict) and isinstance(m.get("id"), str)
                   and m["id"] not in self.s.injected]
        ids = [m["id"] for m in records]
        dropped = [i for i in self.s.current if i not in set(ids)]
        added = [m for m in records if m["id"] not in self.s.current]
        kept = [i for i in ids if i in self.s.current]
        # What gemini-cli never sends (a reply holding nothing, a command) before a message it keeps
        # is left out without being replaced or taken back (a resume, a history written anew).
        keep = set(kept)
        last_kept = max((n for n, i in enumerate(self.s.current) if i in keep), default=0)
        silent = {i for i in self.s.current[:last_kept] if i in self.s.unsent}
        dropped = [i for i in dropped if i not in silent]
        if not added and all(i in self.s.unsent for i in dropped):
            dropped = []  # a resume leaves out what gemini-cli never sends: nothing replaced, nothing taken back
        # (a compression that keeps nothing adds its summary: not a rollback)
        history = [i for i in self.s.current if i not in silent]
        rollback = bool(dropped) and history == kept + dropped and bool(kept or not added)
        if rollback:
            # the last messages taken back (gemini-cli rolls a cancelled or failed request back,
            # and may add what closes an interrupted turn)
            self._rewind(dropped[0], position, out, first_text(update.get("lastUpdated")))
        copies = {}
        if dropped and not rollback:
            # newer gemini-cli gives what a compression keeps new ids: a copy
            # saying what a dropped message said is that message, kept
            copies = self._copies(added[1:], dropped)
            timestamp = first_text(update.get("lastUpdated"))
            kept_uuids = [uuid for m in update["messages"]  # the context it opens with
                          if isinstance(m, dict) and m.get("id") in self.s.injected for uuid in self._rows_of(m["id"])]
            kept_uuids += [uuid for m in records if m["id"] in self.s.current for uuid in self._uuids_of(m)]
            kept_uuids += [uuid for m in added if m["id"] in copies for i in copies[m["id"]] for uuid in self._rows_of(i)]
            boundary = self._boundary(
                kept_uuids, len(kept) + len(copies), len(dropped) - sum(map(len, copies.values())), position, timestamp, out)
            if not added:
                out.append(
                    self._message(
                        position, "compaction", timestamp, uuid=f"{boundary}:summary",
                        text="[history replaced without a summary]", is_meta=1, surface="log-only",
                        is_compact_summary=1,
                    )
                )
        for index, record in enumerate(added):
            if record["id"] in copies:
                self._alias(record, copies[record["id"]])
            else:
                self._message_record(record, position, out, compact_summary=bool(dropped) and not rollback and index == 0)
        added = [record for record in added if record["id"] not in copies]
        opening = _opening(update["messages"], self.s.injected)  # as it says it now (a resume renews it)
        self.s.context = [m["id"] for m in opening]
        self.s.said.update((m["id"], _said(m)) for m in opening)
        # A message it keeps stays current even written without its type.
        before = set(self.s.current)
        self.s.current = [m["id"] for m in records if (m["id"] in before or first_text(m.get("type")) in CONVERSATION_TYPES)
                          and m["id"] not in self.s.injected]
        self._forget_gone()
        if records and records[-1] is not (added[-1] if added else None):
            # A kept message is the history's last now: it is what gemini-cli may re-append.
            last = records[-1]
            counted = self.s.last_message[1] if self.s.last_message and self.s.last_message[0] == last["id"] else False
            self.s.last_message = [last["id"], counted or bool(_usage(last.get("tokens")))]
            self.s.last_results = self._result_uuids(last)
            uuid = f"{self.session_id}:{last['id']}"
            self.s.last_calls = {_call_id(call, index, uuid): uuid for index, call in enumerate(_tool_calls(last))}
            self.s.hollow = (last["id"] in self.s.rowless and last["id"] not in self.s.copies
                             and first_text(last.get("type")) == "gemini")
        return bool(dropped or added)

    def _copies(self, added: list, dropped: list) -> dict:
        """The added messages (by id) that are what was dropped last, saying the same
        in the same order: the turns a compression kept, from a prompt on (id -> the
        messages it says: one, or consecutive ones of a role said as one; gemini-cli
        leaves out what it never sent)."""
        pairs = []
        end = len(dropped)
        for record in reversed(added):
            while end and dropped[end - 1] in self.s.unsent:
                end -= 1
            parts = _parts(record.get("content"))
            said, window = _part_digests(record, parts), dropped[:end]
            originals = next((found for start in range(end - 1, -1, -1)
                              if (found := self._said_again(window, start, parts, said))
                              and found[-1] == dropped[end - 1]), None)
            if not originals or (len(originals) == 1 and self.s.said.get(originals[0]) != _said(
                    {**record, "content": [part for part in parts if not _is_injected(part)]})):
                break
            pairs.append((record["id"], originals, _is_prompt(record)))
            end = dropped.index(originals[0])
        while pairs and not pairs[-1][2]:  # what it keeps starts with a prompt
            pairs.pop()
        return {copy: originals for copy, originals, _ in pairs}

    def _alias(self, record: dict, originals: list[str]) -> None:
        """``record`` is the history's new id of ``originals`` (one, or consecutive ones
        said as one): its rows are theirs."""
        copy = record["id"]
        self.s.rowless.append(copy)
        self.s.extra_rows[copy] = [row for original in originals for row in self._rows_of(original)]
        if originals[0] in self.s.first_parents:
            self.s.first_parents[copy] = self.s.first_parents[originals[0]]
        self.s.said[copy] = _said(record)
        self.s.copies.append(copy)

    def _copied(self, record: dict, position: Position, out: list) -> bool:
        """Whether ``record`` is a copy gemini-cli writes of messages of its history (see
        ``_copy_of``): it takes their place in the history, with their rows, and gives none."""
        originals = self._copy_of(record)
        if not originals:
            return False
        self._ensure_session(out)
        self._alias(record, originals)
        gone = set(originals)
        if gone & set(self.s.current):
            self.s.current = _replaced(self.s.current, gone, record["id"])
            self.s.context = [i for i in self.s.context if i not in gone]
        else:  # a copy of the context is context
            self.s.context = _replaced(self.s.context, gone, record["id"])
            self.s.injected = [*self.s.injected, record["id"]][-KEPT_INJECTED:]
        self.s.replay = [*self.s.context, *self.s.current].index(record["id"]) + 1
        self.s.last_message, self.s.last_results, self.s.last_calls, self.s.hollow = None, [], {}, False
        self._forget_gone()
        out.append(Merged(position, "history-copy"))
        return True

    def _copy_of(self, record: dict) -> list[str]:
        """The messages of the history ``record`` says again, when gemini-cli writes its
        history anew (``setHistory`` of plain contents): every message under a new id, in
        order, from the context it opens with, consecutive ones of a role as one. A copy
        may skip messages (dropped, or changed: those are stored as new); empty when it
        copies none."""
        history = [*self.s.context, *self.s.current]
        if self.s.replay is not None:
            starts = range(self.s.replay, len(history))
        elif record.get("type") == "user" and _is_injected(record.get("content")):
            starts = range(1)  # it opens with the context: what no prompt says
        else:
            return []
        if first_text(record.get("type")) not in CONVERSATION_TYPES or record["id"] in {*history, *self.s.injected}:
            return []  # (a message written again under its own id is no copy)
        parts = _parts(record.get("content"))
        said = _part_digests(record, parts)
        for start in starts:
            if originals := self._said_again(history, start, parts, said):
                return originals
        return []

    def _said_again(self, history: list[str], start: int, parts: list, said) -> list[str]:
        """The messages from ``history[start]`` on that the ``parts`` of a copy say
        in turn (``said(i, j)``: the digest of parts i to j), skipping those gemini-cli never
        sends, and the parts of context it wrote as the user's (IDE context: kept apart
        from the history, it comes back merged into the prompt it preceded); empty unless
        the parts say them all."""
        originals: list[str] = []
        index, count = 0, len(parts)
        while index < count:
            while start < len(history) and history[start] in self.s.unsent:
                start += 1
            if start == len(history):
                return []
            want = self.s.said.get(history[start])
            end = next((end for end in range(count, index, -1) if said(index, end) == want), None)
            if end is None and _is_injected(parts[index]):
                index += 1  # an injected message's text, merged with its neighbours
                continue
            if end is None:
                return []
            originals.append(history[start])
            index, start = end, start + 1
        return originals

    def _boundary(self, preserved: list[str], kept: int, dropped: int, position: Position, timestamp, out: list) -> str:
        """The log-only row that marks a history replacement and names the rows of what it kept; its uuid."""
        boundary = self._message(
            position, "compaction", timestamp, uuid=f"{self.session_id}:compaction@{position.byte_offset}",
            subtype="compact_boundary", text=f"history replaced: {dropped} dropped, {kept} kept",
            is_meta=1, surface="log-only", meta={"preserved_uuids": preserved} if preserved else None,
        )
        out.append(boundary)
        return boundary.uuid

    def _rewind(self, target: str, position: Position, out: list, timestamp=None) -> None:
        """``$rewindTo``: the messages from ``target`` on were taken back (from the
        first of them that has a row)."""
        self._ensure_session(out)
        self.s.last_message, self.s.last_results, self.s.last_calls, self.s.hollow = None, [], {}, False
        current = self.s.current
        # (the context gemini-cli wrote as the user's is not in the history: it came first)
        taken = current[current.index(target):] if target in current else current if target in self.s.injected else []
        first_row = next((row for i in taken for row in self._rows_of(i)), f"{self.session_id}:{target}")
        # Rows of kept copies come before the compaction: what was taken back is named, not a run of rows.
        meta = {"taken_uuids": [row for i in taken for row in self._rows_of(i)]} if set(taken) & set(self.s.copies) else None
        self.s.current = current[: len(current) - len(taken)] if taken else []
        first = f"{self.session_id}:{self.s.first_prompt}"
        if any(first in self._rows_of(i) for i in taken):  # the chat's first prompt (or its copy) taken back
            self.s.first_prompt_seen, self.s.first_prompt = False, None
        # the marker (and after it what comes next) follows what the first message taken back followed
        if taken and taken[0] in self.s.first_parents:
            self.s.last_uuid = self.s.first_parents[taken[0]]
        self._forget_gone()
        out.append(
            self._message(
                position,
                "rewind",
                timestamp,
                text=f"rewind to {target}",
                is_meta=1,
                surface="log-only",
                logical_parent_uuid=first_row,
                uuid=f"{self.session_id}:rewind@{position.byte_offset}",
                meta=meta,
            )
        )

    def _rows_of(self, message_id: str) -> list[str]:
        """The rows a message of the history has, its own first."""
        own = [] if message_id in self.s.rowless else [f"{self.session_id}:{message_id}"]
        return own + self.s.extra_rows.get(message_id, [])

    def _forget_gone(self) -> None:
        """Let go of what is noted about messages no longer in the history."""
        current = {*self.s.current, *self.s.context}
        self.s.rowless = [i for i in self.s.rowless if i in current]
        self.s.extra_rows = {i: rows for i, rows in self.s.extra_rows.items() if i in current}
        self.s.first_parents = {i: row for i, row in self.s.first_parents.items() if i in current}
        self.s.said = {i: key for i, key in self.s.said.items() if i in current}
        self.s.copies = [i for i in self.s.copies if i in current]
        self.s.unsent = {i: 1 for i in self.s.unsent if i in current}

    def _message(self, position: Position, type: str, timestamp, *, uuid: str, **fields) -> Message:
        message = Message(
            uuid=uuid,
            session_id=self.session_id,
            source=SOURCE,
            type=type,
            position=position,
            parent_uuid=self.s.last_uuid,
            timestamp=timestamp,
            agent_id=self.s.session if self.parent else None,
            cwd=self.s.cwd,
            **fields,
        )
        self.s.last_uuid = uuid
        return message

    def _message_record(self, record: dict, position: Position, out: list, *, compact_summary: bool = False) -> None:
        if record["id"] not in self.s.first_parents:  # where a rewind to it goes back to
            self.s.first_parents[record["id"]] = self.s.last_uuid
        self._message_rows(record, position, out, compact_summary=compact_summary)

    def _message_rows(self, record: dict, position: Position, out: list, *, compact_summary: bool = False) -> None:
        self._ensure_session(out)
        if first_text(record.get("type")) in CONVERSATION_TYPES:
            self.s.said[record["id"]] = _said(record)
            if _unsent(record):
                self.s.unsent[record["id"]] = 1
            else:
                self.s.unsent.pop(record["id"], None)
        if self.s.last_message and self.s.last_message[0] == record["id"]:
            self._reappended(record, position, out)
            return
        if record["id"] in self.s.current and first_text(record.get("type")) == "gemini":
            self._rewritten(record, position, out)
            return
        kind = first_text(record.get("type")) or "unknown"
        role = CONVERSATION_TYPES.get(kind)
        uuid = f"{self.session_id}:{record['id']}"
        timestamp = first_text(record.get("timestamp"))
        usage = _usage(record.get("tokens"))
        self.s.last_message = [record["id"], bool(usage)]
        self.s.last_results, self.s.last_calls, self.s.hollow = [], {}, False
        injected = role == "user" and _is_injected(record.get("content"))
        if injected:  # kept apart from the history gemini-cli syncs (it leaves them out too)
            self.s.injected = [*self.s.injected, record["id"]][-KEPT_INJECTED:]
        elif record["id"] not in self.s.current and role is not None:
            self.s.current.append(record["id"])
        if role is None:  # info / warning / error notices
            notice = self._message(
                position, kind, timestamp, uuid=uuid, text=_parts_text(record.get("content")),
                content_type="text", is_meta=1, surface="log-only",
            )
            out.append(notice)
            return
        if role == "user" and _responses(record.get("content")):
            self._tool_responses(record, position, out)
            return
        if role == "assistant" and not _holds(record) and not compact_summary:
            # Gemini writes a reply, then again with its tool calls: its row waits for them
            self.s.hollow = True
            self.s.rowless.append(record["id"])
            if usage:
                out.append(row := self._usage_row(record, position))
                self.s.extra_rows[record["id"]] = [row.uuid]
            else:
                out.append(Merged(position, "update"))
            return
        self._reply(record, position, out, usage, compact_summary=compact_summary)

    def _reply(self, record: dict, position: Position, out: list, usage: dict, *, compact_summary=False) -> None:
        """The row of a user or gemini message record, its title or summary, and its tool calls.
        Context gemini-cli wrote in the user's name is an injected row, never a title."""
        kind = first_text(record.get("type")) or "unknown"
        role = CONVERSATION_TYPES[kind]
        uuid = f"{self.session_id}:{record['id']}"
        timestamp = first_text(record.get("timestamp"))
        content = _parts_text(record.get("content"))
        thoughts = _reply_thoughts(record)
        calls = _tool_calls(record)
        said = content or "\n".join(map(_call_summary, calls))  # a reply that only calls tools says the calls
        text = "\n\n".join(t for t in (thoughts, said) if t)
        message = self._message(
            position,
            kind,
            timestamp,
            uuid=uuid,
            role=role,
            text=text,
            content_type=_content_type(content, thoughts, calls),
            model=first_text(record.get("model")),
            is_compact_summary=int(compact_summary),
            is_meta=int(record["id"] in self.s.injected or (role == "assistant" and content == INTERRUPTED)
                        or (role == "user" and content.lstrip().startswith(SENT_FOR_THE_USER))),
            meta=thinking_meta(thoughts, text),
            **usage,
        )
        out.append(message)
        typed = _parts_text(record.get("displayContent")) or _parts_text(_typed_parts(record.get("content")))
        typed = _steering_words(typed)  # (a hint sent while the agent was idle is a prompt of its own)
        if compact_summary:
            out.append(Summary(uuid, self.session_id, "compaction", text, timestamp, message_uuid=uuid))
        elif role == "user" and typed.strip() and not message.is_meta and not self.s.first_prompt_seen \
                and record["id"] not in self.s.unsent:  # a command names no task
            self.s.first_prompt_seen, self.s.first_prompt = True, record["id"]
            # as typed: displayContent, else content without a hook's context (nor, with
            # displayContent, the files an @ reference read)
            out.append(first_prompt_title(message, typed))
        self.s.last_calls = {_call_id(call, index, uuid): uuid for index, call in enumerate(calls)}
        for index, call in enumerate(calls):
            self._tool_call(call, index, uuid, timestamp, position, out)

    def _usage_row(self, record: dict, position: Position) -> Message:
        """A log-only row for token counts the message's row does not carry."""
        return self._message(
            position, first_text(record.get("type")) or "unknown", first_text(record.get("timestamp")),
            uuid=f"{self.session_id}:{record['id']}:usage", subtype="usage", role="assistant",
            model=first_text(record.get("model")), is_meta=1, surface="log-only", **_usage(record.get("tokens")),
        )

    def _rewritten(self, record: dict, position: Position, out: list) -> None:
        """An earlier reply of the history written again: gemini-cli 0.39-0.43
        writes every reply with calls again when it sets its history (a rewind,
        a resume, tool output masked). Its row, tokens and calls are stored
        already; a result not stored yet is added, nothing else."""
        uuid = f"{self.session_id}:{record['id']}"
        timestamp = first_text(record.get("timestamp"))
        out.append(Merged(position, "update"))
        for index, call in enumerate(_tool_calls(record)):
            call_id = _call_id(call, index, uuid)
            if call_id not in self.s.answered:
                self._result(call, call_id, first_text(call.get("name")) or "tool", uuid, index, timestamp, position, out)

    def _reappended(self, record: dict, position: Position, out: list) -> None:
        """The previous message again, with token counts, tool calls or their
        results added: only what is new is kept (the first copy stays the Message).

        Token counts the first copy lacked become a log-only usage Message. A
        reply first written holding nothing gets its row now; calls the first
        copy lacked get a ``tool_use`` row of their own. When nothing is new,
        the line is ``Merged("update")``. Tool calls and results are repeated
        under the same ids (the store keeps the first of each).
        """
        uuid = f"{self.session_id}:{record['id']}"
        timestamp = first_text(record.get("timestamp"))
        usage = _usage(record.get("tokens"))
        if usage and not self.s.last_message[1]:
            self.s.last_message[1] = True  # carried by the one row this line gives
        else:
            usage = {}
        calls = _tool_calls(record)
        new: list = []
        if self.s.hollow and _holds(record):
            self.s.hollow = False
            self.s.rowless = [i for i in self.s.rowless if i != record["id"]]
            self._reply(record, position, out, usage)
            return
        fresh = [(index, call) for index, call in enumerate(calls)
                 if _call_id(call, index, uuid) not in self.s.last_calls]
        if fresh:
            owner = f"{uuid}:calls@{position.byte_offset}"
            new.append(self._message(
                position, first_text(record.get("type")) or "unknown", timestamp, uuid=owner, role="assistant",
                text="\n".join(_call_summary(call) for _, call in fresh), content_type="tool_use",
                model=first_text(record.get("model")), **usage,
            ))
            self.s.last_calls.update({_call_id(call, index, uuid): owner for index, call in fresh})
            self.s.extra_rows.setdefault(record["id"], []).append(owner)
        elif usage:
            new.append(self._usage_row(record, position))
        for index, call in enumerate(calls):
            owner = self.s.last_calls.get(_call_id(call, index, uuid), uuid)
            self._tool_call(call, index, uuid, timestamp, position, new, owner=owner)
        if not any(isinstance(r, Message) and r.type != "tool_result" for r in new):  # results are extras
            out.append(Merged(position, "update"))
        out.extend(new)

    def _tool_responses(self, record: dict, position: Position, out: list) -> None:
        """A user message holding tool responses (``functionResponse`` parts,
        gemini-cli 0.44+): each repeats the result of its call, stored with the
        call; one whose call gave none is stored as that call's result, the
        message's other parts (a file the tool read) with it."""
        uuid = f"{self.session_id}:{record['id']}"
        timestamp = first_text(record.get("timestamp"))
        content = record.get("content")
        parts = [content] if isinstance(content, dict) else content
        others = [p for p in parts if not (isinstance(p, dict) and isinstance(p.get("functionResponse"), dict))]
        beside = [p["text"] for p in others if isinstance(p, dict) and str(p.get("text")).startswith(BESIDE_RESPONSES)]
        others = [p for p in others if not (isinstance(p, dict) and p.get("text") in beside)]
        if beside:  # the message's row: what it says besides the responses (of a hint, the user's words)
            said = [_steering_words(text) for text in beside]
            out.append(self._message(position, "user", timestamp, uuid=uuid, role="user", text="\n\n".join(said),
                                     content_type="text", is_meta=int(said == beside)))
        else:
            self.s.rowless.append(record["id"])
            out.append(Merged(position, "tool-response"))
        for index, response in enumerate(_responses(content)):
            call_id = first_text(response.get("id"))
            if call_id is None or call_id in self.s.answered:  # none: no call to answer
                continue
            answer = response.get("response") if isinstance(response.get("response"), dict) else {}
            call = {"id": call_id, "name": response.get("name"), "status": "error" if "error" in answer else "success",
                    "result": [{"functionResponse": response}, *others]}
            name = first_text(response.get("name")) or "tool"
            self._result(call, call_id, name, uuid, index, timestamp, position, out)
            others = []  # said once, with the first

    def _uuids_of(self, record: dict) -> list[str]:
        """The rows a message record is stored as: its own, one per tool result it
        holds, and those it gave besides (see ``_rows_of``)."""
        own = [] if record["id"] in self.s.rowless else [f"{self.session_id}:{record['id']}"]
        return unique([*own, *self._result_uuids(record), *self.s.extra_rows.get(record["id"], [])])

    def _result_uuids(self, record: dict) -> list[str]:
        uuid = f"{self.session_id}:{record['id']}"
        return [
            _result_uuid(uuid, call, index) for index, call in enumerate(_tool_calls(record))
            if TOOL_OUTCOMES.get(first_text(call.get("status")))
        ]

    def _tool_call(
        self, call: dict, index: int, message_uuid: str, timestamp, position: Position, out: list, owner=None
    ) -> None:
        """A call (of the row ``owner``, else of ``message_uuid``), and once it has one
        its result (see ``_result``)."""
        call_id = _call_id(call, index, message_uuid)
        tool_use_id = f"{self.session_id}:{call_id}"
        name = first_text(call.get("name")) or "tool"
        args = call.get("args") if isinstance(call.get("args"), dict) else {}
        timestamp = first_text(call.get("timestamp"), timestamp)
        out.append(
            ToolCall(
                id=tool_use_id,
                message_uuid=owner or message_uuid,
                session_id=self.session_id,
                name=name,
                input_json=as_json(args),
                timestamp=timestamp,
                file_paths=_file_paths(name, args),
            )
        )
        agent = first_text(call.get("agentId"))
        if agent:  # the call ran a subagent: it says its kind (the tool's name) and its task
            out.append(Subagent(
                agent, session_id=self.session_id, child_session_id=f"gemini:{agent}", parent_tool_use_id=tool_use_id,
                agent_type=name, description=first_text(*(args.get(key) for key in AGENT_TASK_ARGUMENTS)),
                described_by="call",
            ))
        self._result(call, call_id, name, message_uuid, index, timestamp, position, out)

    def _result(self, call, call_id, name, message_uuid, index, timestamp, position, out) -> None:
        """A call's result, once it has one: a ToolResult and, so that search finds the
        output as it finds other sources', a tool_result Message."""
        tool_use_id = f"{self.session_id}:{call_id}"
        outcome = TOOL_OUTCOMES.get(first_text(call.get("status")))
        if outcome:
            self.s.answered[call_id] = 1
            content = _result_text(call)
            exit_code = _exit_code(call, content) if name in SHELL_TOOLS else None
            if outcome == "succeeded" and exit_code:
                outcome = "failed"
            result_uuid = _result_uuid(message_uuid, call, index)
            if result_uuid not in self.s.last_results:  # a re-append repeats it: stored once
                self.s.last_results.append(result_uuid)
                out.append(self._message(
                    position, "tool_result", timestamp, uuid=result_uuid, role="user", text=content,
                    content_type="tool_result",
                ))
                # a row of the message's (what a compression keeps under a new id keeps it)
                rows = self.s.extra_rows.setdefault(message_uuid.removeprefix(f"{self.session_id}:"), [])
                if result_uuid not in rows:
                    rows.append(result_uuid)
            out.append(
                ToolResult(
                    tool_use_id=tool_use_id,
                    message_uuid=result_uuid,
                    session_id=self.session_id,
                    content=content,
                    is_error=int(outcome == "failed"),
                    outcome=outcome,
                    timestamp=timestamp,
                    agent_id=first_text(call.get("agentId")),
                    exit_code=exit_code,
                )
            )


# -- pure helpers -----------------------------------------------------------


def _workspace(record: dict) -> dict:
    """``cwd`` and ``project`` from a record's ``directories``: the first is where the chat runs."""
    directories = record.get("directories") if isinstance(record.get("directories"), list) else []
    cwd = first_text(*directories[:1])
    return {"cwd": cwd, "project": project_slug(cwd)}


def _parts_text(content: Any) -> str:
    """Text of a Gemini ``PartListUnion`` (string, part, or list of parts): text
    parts joined as gemini-cli joins them (as they are), a note for each blob
    on a line of its own."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return ""
    pieces: list[list[str]] = [[]]  # runs of text parts, between notes
    for part in content:
        if isinstance(part, str):
            pieces[-1].append(part)
        elif isinstance(part, dict) and part.get("thought") is not True:  # a thought is no text (_thought_parts)
            if isinstance(part.get("text"), str):
                pieces[-1].append(part["text"])
            elif isinstance(part.get("inlineData"), dict):
                data = part["inlineData"]
                pieces += [[blob_note(data.get("data"), data.get("mimeType"))], []]
            elif isinstance(part.get("fileData"), dict):
                pieces += [[f"[file: {part['fileData'].get('fileUri') or ''}]"], []]
    return "\n".join(text for text in map("".join, pieces) if text)


def _stamp(data: dict) -> bool:
    """Whether a line only updates ``lastUpdated`` (as after every message gemini-cli records)."""
    return isinstance(data.get("$set"), dict) and data.keys() == {"$set"} and data["$set"].keys() == {"lastUpdated"}


def _opening(messages: list, injected: list) -> list[dict]:
    """The injected messages a history opens with."""
    return list(itertools.takewhile(lambda m: isinstance(m, dict) and m.get("id") in injected, messages))


def _replaced(ids: list[str], gone: set, new: str) -> list[str]:
    """``ids`` with the first of ``gone`` replaced by ``new``, and the others left out."""
    at = next(index for index, i in enumerate(ids) if i in gone)
    return [*ids[:at], new, *(i for i in ids[at:] if i not in gone)]


def _parts(content: Any) -> list:
    """A message's content as a list of parts."""
    return content if isinstance(content, list) else [content] if isinstance(content, (str, dict)) else []


def _unsent(record: dict) -> bool:
    """Whether gemini-cli leaves a message out of the history it resumes with: a
    reply holding nothing, a command (``/``) or a help request (``?``)."""
    if first_text(record.get("type")) == "gemini":
        return not _holds(record)
    return _is_prompt(record) and _parts_text(record.get("content")).lstrip().startswith(("/", "?"))


def _is_prompt(record: dict) -> bool:
    """A user message that is no tool responses."""
    return first_text(record.get("type")) == "user" and not _responses(record.get("content"))


def _said(record: dict) -> str:
    """A digest of what a message says: its text, and the ids of its calls (in
    ``toolCalls``, or as ``functionCall`` parts) and tool responses."""
    content = record.get("content")
    parts = [content] if isinstance(content, dict) else content if isinstance(content, list) else []
    calls = [first_text(call.get("id")) for call in _tool_calls(record)] + [
        first_text(part["functionCall"].get("id")) for part in parts
        if isinstance(part, dict) and isinstance(part.get("functionCall"), dict)]
    responses = [first_text(response.get("id")) for response in _responses(content)]
    ids = "\0".join(sorted(i or "" for i in calls)) + "\1" + "\0".join(sorted(i or "" for i in responses))
    return said_key(str(record.get("type")), " ".join(_parts_text(content).split()) + "\1" + ids)


def _holds(record: dict) -> bool:
    """Whether a reply holds anything yet: text, thoughts or tool calls."""
    return bool(_parts_text(record.get("content")) or _reply_thoughts(record) or _tool_calls(record))


def _reply_thoughts(record: dict) -> str:
    """A reply's thoughts: its ``thoughts``, and the parts of its content marked as thought."""
    texts = (_thoughts_text(record.get("thoughts")), _thought_parts(record.get("content")))
    return "\n\n".join(text for text in texts if text)


def _thought_parts(content: Any) -> str:
    """The text of the parts of a reply's content that are the model's thoughts."""
    parts = content if isinstance(content, list) else [content]
    return "\n\n".join(part["text"] for part in parts if isinstance(part, dict) and part.get("thought") is True
                       and isinstance(part.get("text"), str) and part["text"])


def _thoughts_text(thoughts: Any) -> str:
    if not isinstance(thoughts, list):
        return ""
    texts = []
    for thought in thoughts:
        if isinstance(thought, dict):
            parts = (thought.get("subject"), thought.get("description"))
            texts.append(": ".join(part for part in parts if isinstance(part, str) and part))
    return "\n\n".join(text for text in texts if text)


def _content_type(content: str, thoughts: str, calls: list) -> str | None:
    """``mixed`` for text with reasoning or calls (the reasoning comes first: ``thinking_meta``);
    without text, what the record holds (calls before reasoning); None when it holds nothing."""
    if content:
        return "mixed" if thoughts or calls else "text"
    return "tool_use" if calls else "thinking" if thoughts else None


def _part_digests(record: dict, parts: list):
    """``said(i, j)``: the digest of what parts i to j of ``record`` say, each worked out once."""
    return functools.cache(lambda i, j: _said({"type": record.get("type"), "content": parts[i:j]}))


def _is_injected(content: Any) -> bool:
    """A user message gemini-cli wrote: its environment context, or a hook's."""
    return _parts_text(content).lstrip().startswith(INJECTED_PREFIXES)


def _steering_words(text: str) -> str:
    """What the user typed, of a steering hint (``<user_input>`` of ``STEERING``); other text as it is."""
    if not text.startswith(STEERING):
        return text
    words, closed, _ = text[len(STEERING):].rpartition("</user_input>")  # (the words may hold the tag)
    return words.strip() if closed else text


def _typed_parts(content: Any) -> Any:
    """A message's content without the parts added beside the prompt (``ADDED_PARTS``)."""
    if not isinstance(content, list):
        return content
    return [part for part in content
            if not (isinstance(part, dict) and _parts_text(part).lstrip().startswith(ADDED_PARTS))]


def _call_id(call: dict, index: int, message_uuid: str) -> str:
    return first_text(call.get("id")) or f"{message_uuid}#{index}"


def _responses(content: Any) -> list[dict]:
    """The ``functionResponse`` parts of a message's content."""
    parts = [content] if isinstance(content, dict) else content if isinstance(content, list) else []
    return [part["functionResponse"] for part in parts
            if isinstance(part, dict) and isinstance(part.get("functionResponse"), dict)]


def _result_uuid(message_uuid: str, call: dict, index: int) -> str:
    return f"{message_uuid}:result:{first_text(call.get('id')) or index}"


def _tool_calls(record: dict) -> list[dict]:
    calls = record.get("toolCalls")
    return [call for call in calls if isinstance(call, dict)] if isinstance(calls, list) else []


def _call_summary(call: dict) -> str:
    args = call.get("args")
    return call_text(str(call.get("name") or "tool"), args)


def _usage(tokens: Any) -> dict:
    if not isinstance(tokens, dict):
        return {}
    fields = usage_fields(
        input_total=as_int(tokens.get("input")) + as_int(tokens.get("tool")),
        cached=as_int(tokens.get("cached")),
        output=as_int(tokens.get("output")) + as_int(tokens.get("thoughts")),
    )
    return fields


def _file_paths(name: str, args: dict) -> list[str]:
    paths = [args[key] for key in PATH_ARGUMENTS if isinstance(args.get(key), str)]
    if isinstance(args.get("paths"), list):
        paths += [p for p in args["paths"] if isinstance(p, str)]
    if name in SHELL_TOOLS and isinstance(args.get("command"), str):
        paths += shell_written_paths(args["command"])
    return unique(paths)


def _result_text(call: dict) -> str:
    result = call.get("result")
    texts = []
    parts = result if isinstance(result, list) else [result]
    for part in parts:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict) and isinstance(part.get("functionResponse"), dict):
            response = part["functionResponse"].get("response")
            if isinstance(response, dict):
                value = response.get("output", response.get("error", response))
                texts.append(value if isinstance(value, str) else as_json(value))
            elif response is not None:
                texts.append(as_json(response))
        elif isinstance(part, dict) and isinstance(part.get("text"), str):
            texts.append(part["text"])
    if not texts and isinstance(call.get("resultDisplay"), str):
        texts.append(call["resultDisplay"])
    return "\n".join(texts)


def _exit_code(call: dict, content: str) -> int | None:
    """The exit code a shell call's output states: its last ``Exit Code: N``
    line, else a display of just ``Command exited with code: N``."""
    codes = _EXIT_CODE_LINE.findall(content[-EXIT_SCAN_CHARS:])
    if codes:
        return int(codes[-1])
    display = call.get("resultDisplay")
    match = _EXIT_CODE_DISPLAY.fullmatch(display.strip()) if isinstance(display, str) else None
    return int(match.group(1)) if match else None
