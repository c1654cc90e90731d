"""The agents' prompt logs: what the user typed, kept apart from the transcripts.

* Claude Code: ``<config dir>/history.jsonl``, one ``{display, pastedContents,
  timestamp (ms), project, sessionId}`` a line (older lines lack ``sessionId``);
* Codex: ``$CODEX_HOME/history.jsonl``, one ``{session_id, ts (seconds), text}`` a line;
* Gemini CLI: ``~/.gemini/tmp/<project hash>/logs.json``, a JSON array of
  ``{sessionId, messageId, type, message, timestamp}``, rewritten whole
  (layout ``document``); only its ``user`` entries are prompts.

An agent keeps its prompt log when it cleans up old transcripts (Claude Code
deletes them after 30 days by default), so a session stored nowhere else is
still found by what was typed in it. Each prompt is a ``PromptEntry``
(``prompt_log`` rows) and its line is counted as merged (reason ``prompt``):
it stores no message. A prompt log names no session of the store's, so it is
in no family: reading it again reads no transcript again.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ..records import LineError, Merged, Position, PromptEntry, Record
from .common import array_positions, decode_line
from ..utc import canonical
from .lines import dump_json, load_json

KIND = "prompt_log"
HISTORY_FILE = "history.jsonl"
GEMINI_LOG = "logs.json"


def ms_iso(ms: Any) -> str | None:
    """Milliseconds since the epoch in the canonical UTC form; None for anything else."""
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms != ms:
        return None
    try:
        moment = datetime.fromtimestamp(ms / 1000, tz=timezone.utc)
    except (OverflowError, OSError, ValueError):
        return None
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _iso(value: Any) -> str | None:
    return canonical(value) if isinstance(value, str) and value else None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


class _HistoryLines:
    """A ``history.jsonl``: each line a prompt (``prompt``), or an error saying what it lacks."""

    source: str

    def feed(self, line: bytes, position: Position) -> list[Record]:
        data = decode_line(line, position)
        if isinstance(data, LineError):
            return [data]
        entry = self.prompt(data, position)
        if isinstance(entry, str):
            return [LineError(position, f"a prompt log line without {entry}")]
        return [entry, Merged(position, "prompt")]

    def prompt(self, data: dict, position: Position) -> PromptEntry | str:
        raise NotImplementedError

    def document(self, data: bytes) -> list[Record]:
        return []

    def state(self) -> dict[str, Any]:
        return {}


class ClaudeHistoryParser(_HistoryLines):
    """Claude Code's ``history.jsonl``. A session is the store's id of it (the raw
    ``sessionId``, as its transcript's file name is); pasted contents are kept as JSON."""

    source = "claude"

    def prompt(self, data: dict, position: Position) -> PromptEntry | str:
        text = _text(data.get("display"))
        if text is None:
            return "its text (display)"
        session = data.get("sessionId")
        pasted = data.get("pastedContents")
        return PromptEntry(
            source=self.source,
            session_id=session if isinstance(session, str) and session else None,
            text=text,
            timestamp=ms_iso(data.get("timestamp")) or _iso(data.get("timestamp")),
            project=_text(data.get("project")) or None,
            pasted_json=dump_json(pasted).decode() if pasted else None,
            position=position,
        )


class CodexHistoryParser(_HistoryLines):
    """Codex's ``history.jsonl``; sessions are ``codex:<session_id>``."""

    source = "codex"

    def prompt(self, data: dict, position: Position) -> PromptEntry | str:
        text = _text(data.get("text"))
        if text is None:
            return "its text (text)"
        session = data.get("session_id")
        ts = data.get("ts")
        return PromptEntry(
            source=self.source,
            session_id=f"codex:{session}" if isinstance(session, str) and session else None,
            text=text,
            timestamp=ms_iso(ts * 1000) if isinstance(ts, (int, float)) and not isinstance(ts, bool) else _iso(ts),
            position=position,
        )


class GeminiLogsParser:
    """Gemini CLI's ``logs.json`` (a document: a JSON array); sessions are
    ``gemini:<sessionId>``; the project is the folder's (``project_root`` hint)."""

    source = "gemini"

    def __init__(self, project: str | None = None):
        self.project = project

    def feed(self, line: bytes, position: Position) -> list[Record]:
        return []

    def document(self, data: bytes) -> list[Record]:
        whole = Position(0, 0, len(data))
        try:
            value = load_json(data)
        except ValueError as exc:
            return [LineError(whole, f"invalid JSON: {exc}")]
        if not isinstance(value, list):
            return [LineError(whole, "not a Gemini prompt log (a JSON array)")]
        out: list[Record] = []
        for item, position in zip(value, array_positions(data, len(value))):
            if not isinstance(item, dict):
                out.append(LineError(position, f"not a JSON object: {type(item).__name__}"))
                continue
            text = _text(item.get("message"))
            if item.get("type") != "user" or text is None:
                out.append(Merged(position, "metadata"))  # (a reply, or no text: no prompt)
                continue
            session = item.get("sessionId")
            out.append(PromptEntry(
                source=self.source,
                session_id=f"gemini:{session}" if isinstance(session, str) and session else None,
                text=text,
                timestamp=_iso(item.get("timestamp")),
                project=self.project,
                position=position,
            ))
            out.append(Merged(position, "prompt"))
        return out

    def state(self) -> dict[str, Any]:
        return {}


