"""OpenAI Codex CLI rollouts: ``$CODEX_HOME/sessions/**/rollout-*.jsonl``.

All four generations are read by one parser:

1. the TypeScript CLI's single JSON document ``{session, items}``
   (``rollout-*.json``, layout ``document``);
2. pre-envelope JSONL: a bare ``{id, timestamp, instructions, git}`` first
   line, ``{"record_type": "state"}`` markers and bare response items;
3. the ``{timestamp, type, payload}`` envelope;
4. the same envelope with ``ordinal`` and ``history_mode``/``history_base``.

Mapping decisions (see the tests for the counts they give on the corpus):

* Line accounting: conversation lines, tool calls and outputs, compactions
  and structural events worth reading (aborts, errors, reviews, plans,
  usage) are Messages (structural ones ``is_meta``, surface ``log-only``);
  the rest is ``Merged`` with reason ``duplicate`` (the other form of a
  message, tool events repeating a response item), ``metadata``
  (session_meta, turn_context, task events, encrypted-only reasoning, …),
  ``usage``, ``title``, ``replay`` or ``unknown-type``. A turn that ends
  before any message of the rollout was read, after lines of unknown types,
  is format drift: its end is an ingest error (see ``_drift``).
* Identity: the first ``session_meta`` of a file names the session
  (``payload.id``; ``session_id`` names the root thread in subagents); its
  ``cwd`` names the project (as Claude Code's ``projects/`` folder would), so
  the project does not move with the folders later turns work in.
* Message ids are ``codex:<thread>:<byte offset>``, so a ``.zst`` copy or an
  archived copy of a rollout yields the same ids.
* Duplicates: Codex writes user text, agent text and reasoning summaries
  both as an ``event_msg`` (or ``item_completed``) and as a ``response_item``,
  in either order and next to each other but for structural lines
  (``task_started``, ``turn_context``, ``token_count``, …) in between; some
  versions write only one of the two. The first of such an event/item pair of
  the same kind becomes the Message, the second is ``Merged("duplicate")``.
  Text is not compared: the two forms differ legitimately (image markers,
  redaction).
* Usage: ``token_count`` events repeat the same totals (after compaction,
  on rate-limit updates). An event whose ``total_token_usage`` differs from
  the previous one is a new API response: it becomes an ``is_meta`` Message
  of its own (surface ``log-only``) carrying ``last_token_usage``; repeats and
  ``info: null`` events are ``Merged("usage")``. When the total grew by more
  than that (responses without an event of their own: a log cut or resumed),
  the growth is counted instead, from zero for a rollout's first event unless
  it is a fork's or subagent's. Summing the usage Messages gives the
  rollout's final ``total_token_usage`` exactly.
* Outcomes: non-zero exit code or Codex's own error report (a patch that
  does not apply, …) → failed; ``aborted`` output → cancelled; a rejection
  by the user, or an escalation request (``sandbox_permissions:
  require_escalated``) left unanswered when the turn moves on → blocked;
  otherwise succeeded. A call of an aborted turn waits for the output
  Codex may write right after the abort (which then gives its outcome);
  when another line comes first it gets a placeholder result, cancelled
  (blocked if it asked for escalation).
* Compaction: ``compacted`` lines are recognised from the line prefix and
  checked to be whole JSON objects; ``context_compacted`` right after one is
  its duplicate, alone it marks a compaction of its own. What the model kept
  stays current (``preserved_uuids`` in the compaction's meta): the user and
  assistant messages its ``replacement_history`` repeats word for word, or,
  when an older build wrote none, the most recent prompts within the budget
  Codex rebuilds history with (``KEPT_PROMPT_CHARS``). The history is never
  decoded: only the text strings of its messages are, found by pattern
  (``_kept_texts``). The parser remembers the text digests of its last
  ``KEPT_REMEMBERED`` messages to recognise them. The compaction's summary
  is the one it wrote (``message``), else the one a local compaction hands
  over as its history's prompt opening with ``HANDOVER_OPENING``.
* Lineage and replay: forks (``forked_from_id``, ``history_base``) and
  spawned threads (``source.subagent.thread_spawn``) name their parent.
  Paginated forks (``history_base``) copy nothing of their own accord. A child
  that names where its own history starts (``subagent_history_start_ordinal``,
  0.15x+) is told by that alone: its lines of a lower ``ordinal`` are its
  parent's, the others its own, whatever their times and turns. Otherwise a
  message multi-agent v2 marks inherited (``metadata.inherited_user_message``) is
  a copy, and the parent history other children copy is ``Merged("replay")``:
  lines older than the child's
  creation, lines of turns whose UUIDv7 turn id predates it, and everything
  after a copied foreign ``session_meta`` until the child's own content: a
  UUIDv7 turn id minted after its creation, the child's own
  ``session_meta``, the first line not older than the child after
  old-timestamped copies. Lines of a copied turn stay copies whenever they
  were written; only lines outside copied turns without a turn id (and all
  lines of rollouts older than turn ids) are judged by the copy's single
  flush: a line more than 50 ms after the copied line before it is the
  child's (see ``_is_replay``). The copy is merged only while the parent's
  own log is stored or found by the same run: of a parent stored nowhere
  (deleted, never copied over), it is all that is left, so the child keeps
  it, read as its own lines but that its messages say whose history they
  copy (``meta.copied_from``) and it titles nothing, names no agent and
  links nothing (``copies_of`` in the file's hints, ``settle_hints``). Of a
  parent that is itself a fork, the lines of the copy the log of the nearest
  thread up its chain (``ancestors``: its parent, that one's parent, ... as the
  ``session_meta`` lines copied one after another name them) begins with, stored
  or found, are replays of that log (``replays_in``): the copy's lines up to one
  are, as a copy repeats a line (all but its time), that log's first lines in
  order (``chained_line_key``; a line of a thread between that repeats one of
  the log's elsewhere is no replay). How many lines that is, and the chain of
  the last, is kept in the fork's hints (``replayed``, ``replay_extent``: read
  once, comparing the two logs' heads, while that log is there, and again when the
  fork's log is another file, its device and inode, than the one read), and a read of
  the copy gives up that many of its first lines while they are still those:
  read again from its start once that log is gone (a new parser version, the
  fork's log replaced), it gives up the same lines as before, the rows of that
  log staying archived. A fork first read once that log is gone (deleted after it
  was read) is told how far its copy replays it by the log's rows stored
  (``archived_replay_extent``): the copy repeats the log line for line from the
  ``session_meta`` of its thread, and read keeping the copy whole, the fork's lines
  give the messages the log's lines gave, up to the first that does not (or the log's
  last line), and the lines after the last that does that give none are the log's
  while they start no turn and say what those said. Only the lines of the threads stored
  nowhere between are kept. It is
  read in a state of its own (``COPY_FIELDS``): its turn context (model,
  effort, cwd), its last message, its calls leave the child's own lines as
  they are when the copy is merged; only the usage baseline moves on, as
  over a replay. When
  the parent's log comes, in any run, the child is read again and leaves the
  copy to it: the database is the one reading both at once gives. A child whose
  log is gone by then (deleted, or emptied) is not read again: the rows it kept
  of the copy are deleted instead (``Ingester.give_up_copies``); when the log
  of a thread further up the chain comes, the rows it kept of the lines that
  log begins with (``meta.copied_line``: the copy's lines up to theirs, as
  ``chained_line_key`` has them) are (``Ingester.give_up_replays``).
* Imports: a session of another agent Codex imported is a rollout of
  its own, a new thread's, its text as turns of prompts and answers (tool
  calls and results as text, thinking dropped) ending in Codex's marker. The
  rollout does not say where it came from; the import ledger beside the
  sessions does (``ImportLedgerParser``): a thread imported from a Claude Code
  session is that session's child, relationship ``import``.
* Sealed segments: with session segmentation, a compaction or a fork seals what a
  rollout holds at an immutable path outside ``sessions/`` (see ``SEGMENT_KEY``) and the
  rollout starts over from a same-thread ``rollout_reference``: the segment is read as a
  rollout of the thread (a copy of the lines read before keeps their ids), and the
  rollout going on from it titles nothing and counts only the usage of its own responses.
* Deliveries: a response item recording that an assistant message Codex already
  wrote was delivered (``metadata.delivered_assistant_message``, 0.16x+: kept for
  review, a placeholder when its text is incomplete) is ``Merged("duplicate")``.
"""

from __future__ import annotations

import copy
import hashlib
import html
import itertools
import os
import re
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping

import orjson

from ..hookspecs import hookimpl
from ..records import (
    LineError,
    Merged,
    Message,
    Position,
    Record,
    Session,
    SessionLink,
    Subagent,
    Summary,
    TitleCandidate,
    ToolCall,
    ToolResult,
)
from .base import SourceFile, existing_folder, root_location, walk_files
from .common import (
    absolute_path,
    as_int,
    call_text,
    as_json,
    blob_note,
    decode_line,
    dig,
    first_prompt_title,
    first_text,
    is_json_object,
    iso_ms,
    label,
    item_positions,
    load_document,
    loads_or_none,
    normalize_repository,
    patch_paths,
    project_slug,
    said_end,
    said_key,
    shell_written_paths,
    strings_in,
    unique,
    usage_fields,
    uuid7_ms,
)
from .lines import as_utf8, dump_json
from .prompt_logs import HISTORY_FILE, KIND as PROMPT_LOG, CodexHistoryParser

SOURCE = "codex"
KEPT_PROMPT_CHARS = 80_000  # Codex rebuilds a compacted history with prompts of up to 20,000 tokens
KEPT_REMEMBERED = 4096  # messages whose text digests a parser keeps
KEPT_REPEATS = 64  # Messages remembered for one text said again and again
KEPT_TWINS = 16  # Messages of one run whose twins a parser waits for
# How a local compaction's replacement history hands its summary over: a
# prompt opening with this paragraph, then the summary.
HANDOVER_OPENING = "Another language model started to solve this problem"
HANDOVER_END = "use the information in this summary to assist with your own analysis:"

# -- line prefix probing ----------------------------------------------------

PROBE_BYTES = 256
_ENVELOPE = re.compile(
    rb'^\{"timestamp":"([^"\\]{0,64})",(?:"ordinal":(-?\d+),)?"type":"([a-z_]{1,64})"'
)
HISTORY_KEY = b',"replacement_history":'
# A user or assistant message of a replacement history (an ``id`` may come before or
# after its role), and a text part of its content.
_HISTORY_ID = rb'(?:"id":(?:"(?:[^"\\]|\\.)*"|null),)?'
_HISTORY_MESSAGE = re.compile(
    rb'\{"type":"message",' + _HISTORY_ID + rb'"role":"(user|assistant)",' + _HISTORY_ID + rb'"content":\['
)
_TEXT_PART = re.compile(rb'\{"type":"(?:input|output)_text","text":"((?:[^"\\]|\\.)*)"')
_HISTORY_ITEM = re.compile(
    rb'\{"type":"(?:message|reasoning|function_call|function_call_output|'
    rb"custom_tool_call|custom_tool_call_output|local_shell_call|web_search_call|"
    rb"tool_search_call|tool_search_output|image_generation_call|ghost_snapshot|"
    rb'compaction|context_compaction|agent_message|additional_tools)"'
)

# Top-level types that carry no conversation: merged without being decoded (a
# security review's score, what a realtime session shows, context a compaction
# retained that the history also holds, a reference to another rollout, the
# dynamic tools offered from then on, ids set aside for the thread: 0.17x; what one thread
# observed of another agent's responses, after 0.171).
UNDECODED_METADATA = {
    "world_state", "inter_agent_communication_metadata", "security_risk_score", "realtime_item",
    "retained_context", "rollout_reference", "dynamic_tools_updated", "id_allocation",
    "agent_response_observation",
}

# -- vocabularies -----------------------------------------------------------

EVENT_TWINS = {
    "user_message": "user",
    "agent_message": "assistant",
    "agent_reasoning": "thinking",
    "agent_reasoning_raw_content": "thinking",
}
# Tool events repeating a response item (``collab_*`` events too, see _event).
TOOL_EVENT_DUPLICATES = {
    "exec_command_begin",
    "exec_command_end",
    "patch_apply_begin",
    "patch_apply_end",
    "mcp_tool_call_begin",
    "mcp_tool_call_end",
    "web_search_begin",
    "web_search_end",
    "image_generation_begin",
    "image_generation_end",
    "view_image_tool_call",
    "dynamic_tool_call_request",
    "dynamic_tool_call_response",
}
METADATA_EVENTS = {
    "task_started",
    "task_complete",
    "turn_started",
    "turn_complete",
    "thread_settings_applied",
    "thread_goal_updated",
    "guardian_assessment",
    "sub_agent_activity",
    "session_configured",
    "mcp_startup_update",
    "mcp_startup_complete",
    "background_event",
    "plan_update",
    "turn_diff",
    "stream_error",
    "shutdown_complete",
    "deprecation_notice",
    "exec_approval_request",
    "apply_patch_approval_request",
    "request_user_input",
    "elicitation_request",
    "agent_message_delta",
    "agent_reasoning_delta",
    "agent_reasoning_section_break",
    "raw_response_item",
    "get_history_entry_response",
    "list_custom_prompts_response",
    "conversation_path",
    "entered_plan_mode",
}
LOG_ONLY_EVENTS = {
    "turn_aborted",
    "error",
    "warning",
    "entered_review_mode",
    "exited_review_mode",
    "thread_rolled_back",
    "undo_started",
    "undo_completed",
}
MESSAGE_ROLES = {"user", "assistant", "developer", "system"}
TURN_STARTS = {"task_started", "turn_started"}
TURN_ENDS = {"task_complete", "turn_complete"}
TURN_CLOSES = TURN_ENDS | {"turn_aborted"}
SPAWN_EVENTS = {"collab_agent_spawn_end", "collab_tool_call", "sub_agent_activity"}
COMPLETED_ITEM_TWINS = {"UserMessage": "user", "AgentMessage": "assistant", "Reasoning": "thinking"}
# The completed items naming the thread a spawn_agent call started (``_spawned_by_item``)
SPAWN_ITEMS = {"SubAgentActivity", "CollabAgentToolCall"}
# The completed items a paginated rollout keeps in place of the review events (stored as those are)
REVIEW_ITEMS = {"EnteredReviewMode": "entered_review_mode", "ExitedReviewMode": "exited_review_mode"}
# The kinds of item an ``item_started`` may announce (codex-rs ``TurnItem``; Sleep before it became
# an Extension item, WorkSwarmActivity of later builds). 0.171 writes the start of its agent items
# (CollabAgentToolCall, SubAgentActivity): metadata, as any start is: what the item became (the
# thread a spawn started, a wait's agents) is in its item_completed, written after it with the same id.
TURN_ITEMS = {
    "UserMessage", "HookPrompt", "AgentMessage", "Plan", "Reasoning", "CommandExecution", "DynamicToolCall",
    "CollabAgentToolCall", "SubAgentActivity", "WorkSwarmActivity", "WebSearch", "ImageView", "Extension",
    "ImageGeneration", "EnteredReviewMode", "ExitedReviewMode", "FileChange", "McpToolCall",
    "ContextCompaction", "Sleep",
}
CALL_ITEMS = {"function_call", "custom_tool_call", "local_shell_call", "tool_search_call"}
IMMEDIATE_CALL_ITEMS = {"web_search_call", "image_generation_call"}
OUTPUT_ITEMS = {"function_call_output", "custom_tool_call_output", "tool_search_output"}
COMPACTION_ITEMS = {"compaction", "context_compaction", "compaction_summary"}
# Response items with no conversation: an undo point, the tools offered from then on (0.17x)
METADATA_ITEMS = {"ghost_snapshot", "additional_tools"}
# The subtypes of the rows written (``Message.subtype``), kind by kind: of a line of another
# type nothing is stored (``_unknown``), so no other subtype ever is.
SUBTYPES = {
    "event_msg": frozenset({
        *EVENT_TWINS, "token_count", "context_compacted", "item_completed", *LOG_ONLY_EVENTS,
        *REVIEW_ITEMS.values(),
    }),
    "response_item": frozenset({
        "message", "reasoning", "agent_message", *CALL_ITEMS, *IMMEDIATE_CALL_ITEMS, *OUTPUT_ITEMS,
        *COMPACTION_ITEMS,
    }),
}
SHELL_TOOLS = {"shell", "shell_command", "exec_command", "local_shell", "container.exec", "bash"}
INJECTED_PREFIXES = (
    "<environment_context>",
    "<user_instructions>",
    "<permissions instructions>",
    "# AGENTS.md instructions",
    "<INSTRUCTIONS>",
    "<turn_aborted>",
    "<codex_internal_context",  # (and its ``source="…"``)
    "<goal_context>",
    "<extension_context>",
    "<external_",  # context a client added (``<external_{key}>``)
    "<hook_prompt",  # what a hook told the model to do next
    "<collaboration_mode>",
    "<skills_instructions>",
    "<skill>",
    "<subagent_notification>",
    "<user_shell_command>",
    "<personality_spec>",
    "<app-context>",
    "<recommended_plugins>",  # plugins Codex suggests installing (0.13x+), first in the context message
    "<user_action>",  # a /review's findings handed back (no prompt of the user's)
    "<agent_message_board_notification>",  # a post on an agent message board (0.15x; see NOTICE_KINDS)
    # (after 0.171) the task the user gave an agent directly, written in the root thread
    # (UserAgentTask), the note a context rewind carries forward, an image left out of a request
    "<user_agent_task>",
    "<context_rewind_carry_forward>",
    "<image_history_omission>",
    # What Codex tells the model in the user's name (``record_model_warning``)
    "Warning: apply_patch was requested via ",
    "Warning: update_plan was requested via ",
    "Warning: The maximum number of ",
    "Warning: Your account was flagged for potentially high-risk cyber activity",
)
INJECTED_PREFIXES_FOLDED = tuple(prefix.lower() for prefix in INJECTED_PREFIXES)  # (Codex matches in any case)
# Content kinds (``internal_chat_message_metadata_passthrough.content_item_kinds``) of what Codex
# writes in another's name with no marker in its text: a board post's notice, an assistant-role
# message since 0.16x ("Message Type: CHANNEL_POST\nSender: …").
NOTICE_KINDS = {"agent_message_board.notification"}
REJECTION_MARKERS = (
    "rejected by user", "rejected by the user", "denied by user", "declined by user",
    "rejected due to unacceptable risk",  # the automatic approval reviewer's refusal
)
# A shell call the user stopped: Codex's own output for it (``aborted by user after 2.2s`` for other tools).
SHELL_ABORTED = re.compile(r"wall time: [\d.]+ seconds\naborted by user")
# How Codex words its own refusal to run a built-in tool call (the start of
# the output it records: a patch that does not apply, arguments it cannot
# parse, a tool it does not know, an execution that never produced output).
# What a prompt item holds around an attached image (0.10x+): its name tags
# and, stored, the image's placeholder.
IMAGE_MARKUP = re.compile(  # (bounded: a long line of unclosed tags stays linear)
    r"</?(?:image|audio)\b[^>\n]{0,400}>|\[(?:image|audio)(?:[: ][^\]\n]{0,400})?\]|\[data audio/[^\]\n]{0,400}\]"
)
ENVIRONMENT_CWD = re.compile(r"\s*<environment_context>.*?<cwd>([^<]*)</cwd>", re.S)
MCP_ERROR_PREFIX = "err: "  # an MCP call that failed (0.2x-0.4x: ``err: {error:?}``)
TOOL_ERROR_PREFIXES = (
    "apply_patch verification failed:",
    "apply_patch handler received ",
    "failed to parse function arguments:",
    "failed to parse tool_search arguments:",
    "unsupported call:",
    "unsupported custom tool call:",
    "execution error:",
    "exec_command failed:",
    "write_stdin failed:",
)
_EXIT_CODE = re.compile(r"(?:^|\n)(?:Exit code:|Process exited with code) ?(-?\d+)")
# Where Codex's header (exit code, wall time) ends and the command's own output
# begins: nothing after it is Codex speaking.
_OUTPUT_START = re.compile(r"(?:^|\n)Output:(?:\n|$)")
EXIT_SCAN_CHARS = 1024
HEADER_STARTS = ("Exit code:", "Chunk ID:", "Wall time:", "Process exited with code")
# Last resort of the fork rule (see ``_is_replay``): a re-stamped copy of
# parent history is written in one flush, its lines milliseconds apart.
COPY_BURST_GAP_MS = 50
MAX_OPEN_CALLS = 64
# What a realtime (voice) session hands Codex as the user's (0.14x+): the task said,
# XML-escaped, and the talk since the last hand-off; ``<source>transcript_tail_flush``
# hands over only the talk's tail.
REALTIME_DELEGATION = "<realtime_delegation>"
_DELEGATED = re.compile(r"\s*<realtime_delegation>\s*(?:<source>([^<]*)</source>\s*)?<input>(.*?)</input>", re.S)
# A task another thread hands this one (0.15x+, ``create_thread``/``send_message_to_thread``
# of the app's or TUI's task tools): its ``<input>`` XML-escaped; a tool output without a call
# since 0.16x, a user message before. Compact (cloud) or indented (Desktop, TUI).
_THREAD_DELEGATED = re.compile(
    r"\s*<codex_delegation>\s*<source_thread_id>[^<]*</source_thread_id>\s*"
    r"<input>(.*)</input>\s*</codex_delegation>\s*\Z",
    re.S,
)
DELEGATION_TOOLS = {"create_thread", "send_message_to_thread"}
# What an automation's scheduled run sends in the user's name (content kind ``user.heartbeat``,
# turn trigger ``automation_heartbeat_scheduled``): the instructions it was given, not escaped.
_HEARTBEAT = re.compile(
    r"\s*<heartbeat>\s*<automation_id>[^<]*</automation_id>\s*<current_time_iso>[^<]*</current_time_iso>\s*"
    r"<instructions>(.*)</instructions>\s*</heartbeat>\s*\Z",
    re.S,
)
# The agent message an imported session (another agent's, e.g. Claude Code's) ends with: Codex's, not the model's.
IMPORT_MARKER = "<EXTERNAL SESSION IMPORTED>"
# Where Codex keeps the sessions it imported and the threads it imported them into (ImportLedgerParser).
IMPORT_LEDGER = "external_agent_session_imports.json"
# How multi-agent v2 heads a message to another agent (``InterAgentMessage``, the payload after it).
_AGENT_ENVELOPE = re.compile(r"Message Type: [A-Z_]+\nTask name: [^\n]*\nSender: [^\n]*\nPayload:\n?")
_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
# ``…-<thread>.jsonl``, or ``…-<thread>_<rollout>.jsonl`` for a rollout thread/revert started
_THREAD_ID = re.compile(rf"({_UUID})(?:_({_UUID}))?$")
# The id Codex gives what the model of a parent is told of a background agent's end (its
# "completion context": an ``agent_message`` from the agent, or a ``<subagent_notification>``),
# ``amsg_x_<uuid>`` (``amsg_subagent_completion_context_<uuid>`` before); the completed
# AgentMessage item with ``sub_agent_completion`` written after it shows the same end.
_COMPLETION_CONTEXT_ID = re.compile(rf"amsg_(?:x|subagent_completion_context)_{_UUID}\Z")
_NOTIFICATION = re.compile(r"\s*<subagent_notification>(.*)</subagent_notification>\s*\Z", re.S)
# How many completion contexts still waiting for their completed item a state keeps.
MAX_COMPLETION_CONTEXTS = 16
_UUID_NAME = re.compile(_UUID)
# Session segmentation (Codex's ``session_segmentation`` feature) seals what a rollout holds
# when its thread is compacted or forked: a copy at an immutable path, ``<CODEX_HOME>/<folder>/
# <thread>/<segment id, or initial>/<the rollout's name>``, outside sessions/ and
# archived_sessions/ (codex-rs thread-store ``rotated_segment_path``), while the rollout starts
# over with the thread's session_meta (a new ``segment_id``) and a ``rollout_reference`` to the
# copy. The folder is known by that layout, not by its name (``sealed_segments``).
SEGMENT_KEY = re.compile(rf"{_UUID}|initial")


# -- the source -------------------------------------------------------------


class CodexSource:
    name = SOURCE
    # 2: a call's text holds its argument strings, not their JSON
    # 3: Codex's own tool error reports are failures; compacted lines are validated;
    #    reasoning parts stored once; fork copies end at the copy's flush; partial
    #    drift reported; outputs after an abort win; context blocks are meta;
    #    data: URLs inside texts are placeholders
    # 4: lines of a copied turn stay copies however late they were flushed; the
    #    child's own session_meta ends a copy; partial drift is reported at the end
    #    of a turn without messages, not at an unknown line before the first one
    # 5: a compaction's summary is the summary it wrote, and only when it wrote
    #    one (not the note on the history it replaced, nor a placeholder)
    # 6: what a compaction kept stays current (its meta's preserved_uuids)
    # 7: usage counts what the total grew by when responses had no event of their
    #    own; patch paths follow a relative workdir; a call left without output
    #    is closed at the time of the abort or prompt that closed it; a spawned
    #    agent's role and nickname from its own log outrank the parent's event;
    #    a turn's reasoning effort is the session's
    # 8: an exit code is read from Codex's header only, a refusal from the first
    #    line only; a tool search's result holds the tools it found
    # 9: a response's events written before its items (0.4x) are twins of them;
    #    a compaction's history keeps messages that carry an id; a completed
    #    item's text is recognised when a compaction repeats it
    # 10: an MCP call that failed is failed (its end event, or ``err:``); a
    #    local shell's working directory places the files it writes; an
    #    attached image's markup titles nothing; an environment context names the
    #    session's folder when its first line does not; a rollback names the first
    #    prompt it took back; 0.4x's first prompt, written after the environment
    #    alone, is a prompt (not context) whose event is its twin
    # 11: a rollback counts a compaction's summary as a turn, takes back all turns
    #    when asked for more, and leaves the title to the next prompt when it takes
    #    back the first
    # 12: a review's findings and Codex's warnings in the user's name are injected;
    #    a shell call the user stopped is cancelled; a spawn_agent output names its agent
    # 13: an agent's message to another (``inter_agent_communication``, or an
    #    ``agent_message`` item) is a message and a turn a rollback counts, its
    #    sender and recipient in its meta too; hooks', goals' and extensions'
    #    context is injected; a failed MCP call of a paginated history is failed
    # 14: recommended plugins are injected; a reverted thread's rollout is no fork
    #    of itself; a compaction's guardian history is not what it kept; audio
    #    attachments are noted; a named output without a call has its call; custom
    #    tools keep their namespace (an MCP server's prefixes its tool, as before); cache
    #    writes of uncounted responses counted;
    #    an agent's task envelope titles nothing; a realtime hand-off titles with its
    #    task, a flush of its talk is injected; newer metadata lines are metadata
    # 15: an internal thread (0.16x+: ``source.internal``, a Guardian review's or a memory
    #    consolidation's) is an agent's, not a fork of the thread it reviews; a Guardian's excluded;
    #    an agent message board's notices are injected (a user's prompt in 0.15x, an answer since);
    #    0.17x's ``dynamic_tools_updated`` and ``id_allocation`` lines are metadata, not unknown;
    #    a child's lines before its ``subagent_history_start_ordinal`` and messages marked inherited
    #    are its parent's copy; a delivery record repeating an assistant message is its duplicate;
    #    a task another thread delegated (``<codex_delegation>``, a prompt or a tool output) titles with
    #    its input, unescaped, and a scheduled automation's run (``<heartbeat>``) with its instructions;
    #    the marker ending an imported session is Codex's (log-only), not an answer, and the import
    #    ledger (``external_agent_session_imports.json``) makes a thread imported from a Claude Code
    #    session that session's child (relationship ``import``)
    # 16: a ``type`` that is no string (a list, an object) is an unknown type, not a parser error
    # 17: an escaped NUL (``\u0000``) is read as U+FFFD (lines.load_json); a tool's input or
    #     output nested deeper than orjson writes (255 levels) keeps its line; an answer
    #     keeps the reasoning effort its turn asked for (``meta_json.effort``)
    # 18: document items keep their own bytes; ``additional_tools`` is metadata; a fork keeps
    #     the copy of a parent stored nowhere; lines that store no message give the session's end
    # 19: a sealed segment's rollout (session segmentation) goes on from it: it titles nothing
    #     and counts only its own usage; a fork's kept copy of a parent stored nowhere leaves the lines the
    #     grandparent's stored log holds to it
    # 20: the context Codex writes in the user's name for a task, a rewind or an omitted image
    #     is injected; a subagent's completion in its parent is a note from the agent; review
    #     items of a paginated rollout are kept; a fork's copy replays the nearest stored log up
    #     its chain, only while its lines are that log's first lines in order
    parser_version = 20
    trusted_records = True  # held to their shape by the tests, so not checked one by one
    root_variable = "CODEX_HOME"
    home_folder = ".codex"
    folder_layout = "sessions/YYYY/MM/DD/rollout-*.jsonl[.zst] or archived_sessions/rollout-* (or a sessions folder itself)"

    def default_root(self, environ: Mapping[str, str]) -> Path | None:
        """``$CODEX_HOME``, else ``~/.codex``; None when it is not a folder."""
        return existing_folder(root_location(self, environ))

    def discover(self, root: Path) -> Iterator[SourceFile]:
        root = Path(root)
        index = root / "session_index.jsonl"
        if index.is_file():
            yield SourceFile(index, SOURCE, kind="session_index", priority=2)
        ledger = root / IMPORT_LEDGER
        if ledger.is_file():
            yield SourceFile(ledger, SOURCE, kind="import_ledger", layout="document", priority=2)
        folders = [(root / "sessions", 0), (root / "archived_sessions", 1)]
        if not any(folder.is_dir() for folder, _ in folders):
            folders = [(root, 0)]  # pointed at a sessions folder itself
        elif (root / HISTORY_FILE).is_file():  # (a Codex home's prompt log)
            yield SourceFile(root / HISTORY_FILE, SOURCE, kind=PROMPT_LOG, priority=4)
        for folder, priority in folders:
            for path in walk_files(folder):
                unit = rollout_unit(path, priority)
                if unit is not None:
                    yield unit
        if folders[0][0] != root:
            yield from sealed_segments(root)

    def settle_hints(self, units: list[SourceFile], stored: dict[str, dict]) -> dict[str, dict]:
        """Note in each rollout's hints the thread whose history it may copy (``parent``,
        read from its head once it is written, then kept) and, when no log of that thread is stored
        (``stored``: the hints of this source's stored files) nor found by this run, that
        the copy is kept (``copies_of``): it is all there is of that history. Returns
        the hints of stored files not in ``units`` that are to change (their parent's
        log came since): read again, they leave the copy to it."""
        # (a thread's log: the one found by this run, else a stored one)
        logs = {hints.get("thread_id") or _thread_of(path): path for path, hints in stored.items() if _thread_of(path)}
        logs |= {unit.hints.get("thread_id"): str(unit.path) for unit in units if unit.kind == "rollout"}
        logs.pop(None, None)
        present = {hints.get("thread_id") or _thread_of(path) for path, hints in stored.items()}
        present |= {unit.hints.get("thread_id") for unit in units}
        present.discard(None)
        for unit in units:
            if unit.kind != "rollout":
                continue
            before = stored.get(str(unit.path)) or {}
            parent, settled = (before["parent"], True) if "parent" in before else rollout_parent(unit)
            unit.hints.pop("copies_of", None)
            if not settled:  # (read again next time)
                unit.hints.pop("parent", None)
                continue
            unit.hints["parent"] = parent
            unit.hints.pop("replays_in", None)
            unit.hints.pop("replayed", None)
            if parent and parent not in present:
                unit.hints["copies_of"] = parent
                # (the threads the parent's copy descends from, nearest first, read from the head
                # until they are kept)
                unit.hints.pop("grandparent", None)
                if "ancestors" in before:
                    ancestors = unit.hints["ancestors"] = _ancestors(before)
                else:
                    ancestors, whole = rollout_ancestors(unit)
                    ancestors = ancestors or _ancestors(before)
                    if ancestors and whole:  # (else read again next time: more of them may follow)
                        unit.hints["ancestors"] = ancestors
                if (nearest := _nearest_log(ancestors, logs)) is not None:
                    unit.hints["replays_in"] = nearest
                    # (how far the copy replays that log, kept while it is there: of a log gone
                    # since, a read of the copy again from its start gives up the same lines), and
                    # read again while it is there when the fork's log is another file than the one
                    # it was read from (its device and inode: a log replaced by another copy)
                    extent = before.get("replayed") if before.get("replays_in") == nearest else None
                    if not isinstance(extent, dict) or not _same_file(extent, unit.path) or extent.get("archived"):
                        extent = replay_extent(str(unit.path), nearest) or extent
                    if extent is not None:
                        unit.hints["replayed"] = extent
        found = {str(unit.path) for unit in units}
        changed = {}
        for path, hints in stored.items():
            if path in found or not hints.get("copies_of"):
                continue
            if hints["copies_of"] in present:
                changed[path] = {key: value for key, value in hints.items()
                                 if key not in ("copies_of", "grandparent", "ancestors", "replays_in", "replayed")}
            elif (nearest := _nearest_log(_ancestors(hints), logs)) != hints.get("replays_in"):
                changed[path] = {key: value for key, value in hints.items() if key not in ("replays_in", "replayed")}
                if nearest is not None:
                    changed[path]["replays_in"] = nearest
        return changed

    def settle_archived_replays(self, units: list[SourceFile], archived, redact=None) -> None:
        """Note in the hints of this run's forks whose copy replays a log up their chain
        (``replays_in``) that cannot be read, yet whose rows are stored (deleted since it was
        read, before the fork was first read), how far the copy replays it (``replayed``, as
        ``archived_replay_extent`` tells from those rows), as ``settle_hints`` notes it of a
        log there: a read of the copy gives those lines up as it would with that log there.
        ``archived(log)``: that log's stored hints, how many of its lines were read, and its
        rows (``archived_replay_extent``); None when it is stored nowhere. ``redact``: what
        the store passes the records of a read through. Reads nothing of any other file."""
        for unit in units:
            log = unit.hints.get("replays_in") if unit.kind == "rollout" else None
            extent = unit.hints.get("replayed")
            if not log or (isinstance(extent, dict) and ("size" not in extent or _same_file(extent, unit.path))):
                continue
            try:
                with open(log, "rb"):
                    continue  # (read by ``replay_extent``)
            except OSError:
                pass
            stored = archived(log)
            if stored is None:
                continue
            hints, lines, rows = stored
            thread = first_text(hints.get("thread_id"), _thread_of(log))
            try:
                found = archived_replay_extent(unit, thread.lower(), lines, rows, redact) if thread else None
            finally:
                if (close := getattr(rows, "close", None)) is not None:
                    close()
            if found is not None:
                unit.hints["replayed"] = found

    def replayed_lines(self, log: str, among: set[str]) -> set[str]:
        """Of ``among`` (the ``meta.copied_line`` of the messages a fork kept of a copy), the
        lines of the rollout at ``log`` as a copy repeats them, each with those before it: of a
        gone fork whose copy begins with that log's lines, the rows those lines kept are deleted
        (``Ingester.give_up_replays``). The log is read as a stream: no more is held than ``among``."""
        return {line for line in (chain.hex() for chain in rollout_line_chains(log)) if line in among}

    def open_parser(self, unit: SourceFile, state: dict[str, Any] | None):
        if unit.kind == "session_index":
            return SessionIndexParser()
        if unit.kind == "import_ledger":
            return ImportLedgerParser()
        if unit.kind == PROMPT_LOG:
            return CodexHistoryParser()
        return CodexParser(unit, state)


def rollout_unit(path: Path, priority: int = 0) -> SourceFile | None:
    """The unit for a rollout file name, or None for anything else."""
    name = path.name
    if not name.startswith("rollout-"):
        return None
    if name.endswith(".jsonl"):
        stem, layout, compression = name[: -len(".jsonl")], "jsonl", None
    elif name.endswith(".jsonl.zst"):
        stem, layout, compression = name[: -len(".jsonl.zst")], "jsonl", "zstd"
    elif name.endswith(".json"):
        stem, layout, compression = name[: -len(".json")], "document", None
    else:
        return None
    hints = {}
    match = _THREAD_ID.search(stem)
    if match:
        hints["thread_id"] = match.group(1).lower()
        if match.group(2):
            hints["rollout_id"] = match.group(2).lower()
    return SourceFile(
        path, SOURCE, kind="rollout", layout=layout, compression=compression, hints=hints, priority=priority
    )


def sealed_segments(root: Path) -> Iterator[SourceFile]:
    """The sealed segments of the rollouts of the Codex home ``root`` (see ``SEGMENT_KEY``)."""
    for folder in _subfolders(root):
        if folder.name in ("sessions", "archived_sessions"):
            continue
        for thread in _subfolders(folder):
            if not _UUID_NAME.fullmatch(thread.name):
                continue
            for path in walk_files(thread):
                unit = rollout_unit(path)
                if (unit is not None and unit.hints.get("thread_id") == thread.name.lower()
                        and path.parent.parent == thread and SEGMENT_KEY.fullmatch(path.parent.name)):
                    yield unit


def _subfolders(folder: Path) -> list[Path]:
    """The folders in ``folder`` (not through links), sorted; none when it cannot be read."""
    try:
        return sorted(Path(e.path) for e in os.scandir(folder) if e.is_dir(follow_symlinks=False))
    except OSError:
        return []


def _thread_of(path: str) -> str | None:
    """The thread a rollout's file name names, if it names one."""
    unit = rollout_unit(Path(path))
    return unit.hints.get("thread_id") if unit is not None else None


def rollout_parent(unit: SourceFile) -> tuple[str | None, bool]:
    """The thread whose history a rollout may copy, as its head says (see
    ``lineage_of``); for a fork that names none, the thread of a ``session_meta``
    copied right after its own. And whether that is settled: not while the head
    is still being written (a line the agent has not ended, unless its writer has
    been quiet for ``QUIET_SECONDS``), nor when the file cannot be read
    (unreadable, corrupt: reported when read)."""
    if unit.layout != "jsonl":
        return None, True
    try:
        with open(unit.path, "rb") as raw:
            st = os.fstat(raw.fileno())
            quiet = st.st_size > 0 and time.time() - st.st_mtime >= QUIET_SECONDS  # (an empty one may be refilled)
            lines, whole = _head_of(raw, unit.compression)
    except Exception:
        return None, False
    whole = whole or quiet  # (a session left before its first prompt is its session_meta alone)
    metas = []
    for line in lines:
        data = loads_or_none(as_utf8(line))  # (as the reader reads it)
        if not isinstance(data, dict):
            return None, True
        if data.get("type") == "session_meta" and isinstance(data.get("payload"), dict):
            metas.append(data["payload"])
        elif not metas and "type" not in data and "id" in data:
            return None, True  # (a pre-envelope rollout: no fork)
        else:
            break
    if not metas:
        return None, whole or bool(lines)
    thread = first_text(metas[0].get("id"), unit.hints.get("thread_id"))
    parent = lineage_of(metas[0], thread, reverted_file=bool(unit.hints.get("rollout_id"))).parent
    if parent is None:
        if len(lines) < 2 and not whole:
            return None, False  # (the copied session_meta may follow)
        if len(metas) > 1:
            parent = first_text(metas[1].get("id"))
            parent = None if parent is None or thread is None or parent.lower() == thread.lower() else parent
    return (parent.lower() if parent else None), True


def _head_of(raw, compression: str | None) -> tuple[list[bytes], bool]:
    """``_head_lines`` of the open file ``raw``, decompressed as it is read when ``compression`` is zstd."""
    if compression == "zstd":
        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
            return _head_lines(stream)
    return _head_lines(raw)


def _same_file(extent: dict, path) -> bool:
    """Whether the fork's rollout at ``path`` is still the file its ``replayed`` extent was
    read from (``file``: its device and inode; ``size``: its size, of a rollout that ended
    within the lines it replays), by one ``stat``; not when it cannot be read."""
    try:
        st = os.stat(path)
    except OSError:
        return False
    return extent.get("file") == [st.st_dev, st.st_ino] and extent.get("size", st.st_size) == st.st_size


def _ancestors(hints: dict) -> list[str]:
    """The threads a fork's hints name its parent's copy descending from, nearest first
    (``ancestors``; a file's hints of before name the nearest alone, ``grandparent``)."""
    ancestors = hints.get("ancestors")
    if isinstance(ancestors, list):
        return [thread for thread in ancestors if isinstance(thread, str)]
    return [hints["grandparent"]] if isinstance(hints.get("grandparent"), str) else []


def _nearest_log(ancestors: list[str], logs: dict[str, str]) -> str | None:
    """The log, stored or found, of the nearest of ``ancestors`` that has one."""
    return next((logs[thread] for thread in ancestors if thread in logs), None)


def rollout_ancestors(unit: SourceFile) -> tuple[list[str], bool]:
    """The threads the parent's copy in a fork's head descends from, nearest first: the
    parent each copied ``session_meta`` (the parent's, then its parent's, one after
    another as a fork of a fork copies them) names, for as long as the next one copied
    is that parent's. And whether that is settled: the lines after them are written (or
    the writer has been quiet for ``QUIET_SECONDS``)."""
    if unit.layout != "jsonl":
        return [], True
    try:
        with open(unit.path, "rb") as raw:
            quiet = time.time() - os.fstat(raw.fileno()).st_mtime >= QUIET_SECONDS
            metas, whole = _head_metas(raw, unit.compression)
    except Exception:
        return [], False
    ancestors: list[str] = []
    for meta, following in zip(metas[1:], [*metas[2:], None]):
        parent = lineage_of(meta, first_text(meta.get("id"))).parent
        if not parent or parent.lower() in ancestors:
            break
        ancestors.append(parent.lower())
        if following is None or (first_text(following.get("id")) or "").lower() != parent.lower():
            break  # (the copy of that parent's log goes on otherwise: its history is not copied here)
    return ancestors, whole or quiet


def _head_metas(raw, compression: str | None) -> tuple[list[dict], bool]:
    """The ``session_meta`` payloads the file ``raw`` begins with, one after another
    (as far as ``LINEAGE_HEAD_BYTES`` holds them), and whether no more are to come: an
    ended line of another kind follows them, or that many bytes were read."""
    if compression == "zstd":
        import io

        import zstandard

        with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
            return _head_metas(io.BufferedReader(stream), None)
    metas: list[dict] = []
    read = 0
    while read < LINEAGE_HEAD_BYTES:
        line = raw.readline(LINEAGE_HEAD_BYTES - read)
        if not line.endswith(b"\n"):
            return metas, len(line) >= LINEAGE_HEAD_BYTES - read
        read += len(line)
        data = loads_or_none(as_utf8(line))  # (as the reader reads it)
        if not (isinstance(data, dict) and data.get("type") == "session_meta"
                and isinstance(data.get("payload"), dict)):
            return metas, True
        metas.append(data["payload"])
    return metas, True


def copied_line_key(line: bytes) -> bytes | None:
    """A line as a copy of it repeats it: all but its time (a copy is re-stamped)."""
    data = loads_or_none(line)
    if not isinstance(data, dict):
        return None
    data.pop("timestamp", None)
    return hashlib.blake2b(orjson.dumps(data, option=orjson.OPT_SORT_KEYS), digest_size=16).digest()


def chained_line_key(chain: bytes | None, key: bytes) -> bytes:
    """The ``copied_line_key`` of the lines of a copy up to one (``chain``: up to the line
    before it, None at the copy's first line), that line's ``key`` added: equal for two
    copies when they copy the same lines, in the same order, so far."""
    return hashlib.blake2b((chain or b"") + key, digest_size=16).digest()


def rollout_line_chains(path: str) -> Iterator[bytes]:
    """``chained_line_key`` of each line of a rollout a fork's copy of it repeats as a line
    of history, in order (none when it cannot be read, none after a part that cannot):
    whose lines are, up to that one, those of the rollout in order (its ``session_meta``
    lines and lines of no envelope aside)."""
    chain = None

    def chains(lines) -> Iterator[bytes]:
        nonlocal chain
        for line in lines:
            line = as_utf8(line)  # (as the reader reads it: its parser's chain of the copy is of these bytes)
            data = loads_or_none(line)
            if (isinstance(data, dict) and isinstance(data.get("type"), str) and data["type"] != "session_meta"
                    and isinstance(data.get("payload"), dict) and (key := copied_line_key(line)) is not None):
                chain = chained_line_key(chain, key)
                yield chain

    try:
        with open(path, "rb") as raw:
            if path.endswith(".zst"):
                import io

                import zstandard

                with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
                    yield from chains(io.BufferedReader(stream))
            else:
                yield from chains(raw)
    except Exception:
        return


def replay_extent(fork: str, log: str) -> dict | None:
    """How far the copy the fork's rollout at ``fork`` begins with replays the rollout at
    ``log``: how many of its first lines are, in order, that log's first lines
    (``rollout_line_chains`` of both alike), and the chain of the last of them (hex;
    None for none), that a read of the fork gives up as replays whether that log is
    still there or not; while the fork's rollout ends within them (more may be written),
    its size then; and the file it read (``file``: its device and inode). None when ``log``
    cannot be read. Reads no further than the line after them in either."""
    try:
        with open(log, "rb"):
            pass
        st = os.stat(fork)
    except OSError:
        return None
    theirs = rollout_line_chains(log)
    lines, last = 0, None
    extent: dict[str, Any] = {"file": [st.st_dev, st.st_ino]}
    for mine in rollout_line_chains(fork):
        if next(theirs, None) != mine:
            break
        lines, last = lines + 1, mine
    else:
        extent["size"] = st.st_size
    return extent | {"lines": lines, "last": last.hex() if last else None}


def replayed_head(fork: str, extent: Any, *, check: bool = True) -> Iterator[bytes] | None:
    """The ``rollout_line_chains`` of the first lines of the fork's rollout at ``fork`` that
    replay a log (``extent``: see ``replay_extent``), read as they are asked for; None when
    it does not begin with the lines it began with then (``check``: the chain of the last
    one is read first, and differs)."""
    if not (isinstance(extent, dict) and type(extent.get("lines")) is int and extent["lines"] >= 0):
        return None
    if check:
        read, last = 0, None
        for read, last in enumerate(itertools.islice(rollout_line_chains(fork), extent["lines"]), start=1):
            pass
        if read != extent["lines"] or (last.hex() if last else None) != extent.get("last"):
            return None
    return itertools.islice(rollout_line_chains(fork), extent["lines"])


def archived_replay_extent(
    unit: SourceFile, thread: str, lines: int, rows: Iterable[tuple], redact=None
) -> dict | None:
    """How far the copy the fork ``unit`` begins with replays the log of the nearest thread up
    its chain with a log (``thread``) that cannot be read any more, told from what is stored of
    that log: how many of its lines were read (``lines``) and, of each line that gave messages,
    in the order of the lines, its line number and the ``type, subtype, role, content_type,
    text`` of each (``rows``). As ``replay_extent`` has it (its ``lines``, ``last``, ``file``,
    and ``size`` while the fork's rollout ends within them; ``archived``: read again from the
    log, should it be there again), but not comparing the two logs' lines: a copy repeats the
    log line for line from the ``session_meta`` of that thread it copies, so the fork's line
    that many lines after that one's is the log's line of that number. Read keeping its copy whole (``redact``: as the store would pass its records), the
    fork's rollout gives, for each line of the log that gave messages, the same messages, up to
    the first that does not (or the log's last line); the copy replays the log up to the last
    line that does, and on over the lines after it that, as far as can be told, are still the
    log's (see ``_ends_copy``), no further than the line before that first one (or the log's
    last line). None when the fork's head does not copy that ``session_meta``; ``lines`` 0
    when no line that gave messages is repeated."""
    path = str(unit.path)
    try:
        st = os.stat(path)
    except OSError:
        return None
    dry = SourceFile(unit.path, unit.source, kind=unit.kind, layout=unit.layout, compression=unit.compression,
                     hints={key: value for key, value in unit.hints.items() if key not in ("replays_in", "replayed")},
                     priority=unit.priority)
    parser = CodexParser(dry, None)
    theirs = itertools.groupby(rows, key=lambda row: row[0])
    pending = next(theirs, None)  # (the next line of the log that gave messages, and its messages)
    base = limit = None  # (the fork's line before the copied session_meta; the log's last line it may replay)
    matched = 0  # (the log's last line that gave messages the fork's line repeats)
    after: list[tuple[int, bool]] = []  # (the log's lines the fork's after that one repeat, if any, and
    # whether the fork's may be none of the log's: see ``_ends_copy``)
    said: list[str] = []  # (the texts of the messages of the last lines matched)
    turn = None  # (the turn id the fork's lines read so far last named)
    chain_lines: list[int] = []  # (the numbers of the fork's lines ``rollout_line_chains`` reads)
    try:
        for line in _numbered_lines(path, unit.compression):
            number = line.position.line_no
            if line.data is None or not line.data.strip():
                continue
            data = loads_or_none(as_utf8(line.data))
            kind = data.get("type") if isinstance(data, dict) else None
            payload = data.get("payload") if isinstance(data, dict) else None
            if isinstance(kind, str) and kind != "session_meta" and isinstance(payload, dict):
                chain_lines.append(number)
            if base is None:
                if not (kind == "session_meta" and isinstance(payload, dict)):
                    return None  # (its head ended before that thread's session_meta)
                if number > 1 and (first_text(payload.get("id")) or "").lower() == thread:
                    base = number - 1
            if limit is not None:
                if chain_lines[-1:] and chain_lines[-1] > base + limit:
                    break  # (a line after all it may replay: the fork goes on after them)
                continue
            found = sorted(
                (record.type, record.subtype, record.role, record.content_type, record.text)
                for record in (redact(r) if redact is not None else r for r in parser.feed(line.data, line.position)
                               if type(r) is Message and "copied_from" in (r.meta or {}))
            )
            mine = number - base if base is not None else 0  # (the log's line this one repeats)
            if mine < 1:
                continue
            ends = bool(found) or _ends_copy(kind, payload, turn, said, redact)
            if isinstance(payload, dict) and (kind == "turn_context" or (
                    kind == "event_msg" and payload.get("type") in TURN_STARTS)):
                turn = payload.get("turn_id")
            if pending is not None and pending[0] < mine:
                limit = pending[0] - 1  # (that line of the log is none of the fork's)
            elif pending is not None and pending[0] == mine:
                if found != sorted(tuple(row[1:]) for row in pending[1]):
                    limit = mine - 1
                else:
                    matched, pending, after = mine, next(theirs, None), []
                    said = [*said[-KEPT_TWINS:], *(text for *_, text in found)]
            else:
                after.append((mine, ends))
                if mine >= lines or (pending is None and ends):
                    limit = lines
    except Exception:
        return None
    if base is None:
        return None
    end = matched
    for mine, stops in after:
        if stops or mine != end + 1 or (limit is not None and mine > limit):
            break
        end = mine
    extent: dict[str, Any] = {"file": [st.st_dev, st.st_ino]}
    if limit is None or not any(number > base + end for number in chain_lines):
        extent["size"] = st.st_size  # (it ends within the copy: read again as it grows)
    chained = sum(1 for number in chain_lines if number <= base + end) if matched else 0
    heads = list(itertools.islice(rollout_line_chains(path), chained))
    if len(heads) != chained:
        return None
    return extent | {"lines": chained, "last": heads[-1].hex() if heads else None, "archived": True}


def _ends_copy(kind, payload, turn, said: list[str], redact) -> bool:
    """Whether a line of a fork's copy that gave no message, read after the last line of a
    log it was found to repeat (see ``archived_replay_extent``), may be none of the log's: one
    that starts a turn (a turn context of no turn begun before it), or a message whose other
    form is merged, saying nothing any of the messages of the lines matched last says (the
    log's line there was the other form of one of those, if any: one text of it at least, as
    the two forms of a message with images differ)."""
    if not isinstance(payload, dict):
        return False
    if kind == "turn_context":
        return not payload.get("turn_id") or payload.get("turn_id") != turn
    if kind == "event_msg" and payload.get("type") in TURN_STARTS:
        return True
    if kind == "event_msg" and payload.get("type") in ("user_message", "agent_message", "agent_reasoning"):
        texts = [payload.get("text" if payload["type"] == "agent_reasoning" else "message")]
    elif kind == "response_item" and payload.get("type") in ("message", "reasoning"):
        parts = payload.get("summary" if payload["type"] == "reasoning" else "content")
        texts = [part.get("text") for part in parts if isinstance(part, dict)] if isinstance(parts, list) else []
    else:
        return False
    texts = [text for text in texts if isinstance(text, str) and text.strip()]
    if redact is not None:
        texts = [redact(Message(uuid="", session_id="", source=SOURCE, type=kind, position=Position(0, 0, 0),
                                text=text)).text for text in texts]
    return bool(texts) and not any(text.strip() in line for text in texts for line in said)


def _numbered_lines(path: str, compression: str | None) -> Iterator:
    """The lines of the rollout at ``path`` as the reader reads them (``lines.read_lines``)."""
    from .lines import read_lines

    with open(path, "rb") as raw:
        if compression == "zstd":
            import io

            import zstandard

            with zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True) as stream:
                yield from read_lines(io.BufferedReader(stream))
        else:
            yield from read_lines(raw)


LINEAGE_HEAD_BYTES = 4 << 20  # (a session_meta holds the whole system prompt)
QUIET_SECONDS = 10.0  # a head unchanged so long is complete (as ``store.ingest.SETTLE_SECONDS``)


def _head_lines(stream) -> tuple[list[bytes], bool]:
    """The first two ended lines of ``stream`` (as far as ``LINEAGE_HEAD_BYTES`` holds
    them), and whether nothing more is to come of them (the head was read whole, or
    its first line is longer than that)."""
    head = b""
    while head.count(b"\n") < 2 and len(head) < LINEAGE_HEAD_BYTES:
        chunk = stream.read(16384)
        if not chunk:
            break
        head += chunk
    lines = head.split(b"\n")[:-1][:2]  # (the part after the last newline is no ended line)
    return lines, len(lines) == 2 or (not lines and len(head) >= LINEAGE_HEAD_BYTES)


@hookimpl
def obelisk_sources():
    return [CodexSource()]


# -- session_index.jsonl ----------------------------------------------------


class SessionIndexParser:
    """``session_index.jsonl``: one ``{id, thread_name, updated_at}`` a line."""

    def feed(self, line: bytes, position: Position) -> list[Record]:
        data = decode_line(line, position)
        if isinstance(data, LineError):
            return [data]
        thread, title = data.get("id"), data.get("thread_name")
        if not (isinstance(thread, str) and isinstance(title, str) and title.strip()):
            return [Merged(position, "unknown-type")]
        return [
            TitleCandidate(
                session_id=f"codex:{thread}",
                kind="index",
                title=title.strip(),
                timestamp=first_text(data.get("updated_at")),
                position=position,
            ),
            Merged(position, "title"),
        ]

    def document(self, data: bytes) -> list[Record]:
        return []

    def state(self) -> dict[str, Any]:
        return {}


# -- external_agent_session_imports.json ------------------------------------


class ImportLedgerParser:
    """``external_agent_session_imports.json``: the sessions of other agents Codex imported
    (``external-agent-migration``), ``{records: [{source_path, content_sha256,
    imported_thread_id, imported_at, source_modified_at, connector_names, title}]}``, one
    record a source file, rewritten whole on every import.

    The rollout of an imported session names nothing of where it came from
    (its ``session_meta`` is a new thread's), so a record whose source is a
    Claude Code session file (``projects/<project>/<session>.jsonl``) makes the
    thread it was imported into a child of that session, relationship
    ``import``. Its text stays in both: Codex's copy is lossy (no thinking,
    tool calls and results clipped), but may be the only one left. Sources
    of other agents (Cursor's ``agent-transcripts``) link nothing.
    """

    def feed(self, line: bytes, position: Position) -> list[Record]:
        return []

    def document(self, data: bytes) -> list[Record]:
        value = load_document(data, "records", "Codex import ledger")
        if isinstance(value, LineError):
            return [value]
        out: list[Record] = []
        records = value["records"]
        for record, position in zip(records, item_positions(data, "records", len(records))):
            thread = record.get("imported_thread_id") if isinstance(record, dict) else None
            if not (isinstance(thread, str) and thread):
                out.append(Merged(position, "unknown-type"))
                continue
            original = imported_claude_session(record.get("source_path"))
            if original is not None:
                out.append(SessionLink(f"codex:{thread}", original, "import"))
            out.append(Merged(position, "metadata"))
        return out

    def state(self) -> dict[str, Any]:
        return {}


def imported_claude_session(source_path: Any) -> str | None:
    """The session a Claude Code session file is (as the claude source names it: its
    file name), for the path Codex imported it from; None for any other file."""
    if not isinstance(source_path, str):
        return None
    parts = re.split(r"[\\/]", source_path)
    if len(parts) < 3 or parts[-3] != "projects" or not parts[-1].endswith(".jsonl"):
        return None
    session = parts[-1][: -len(".jsonl")]
    return session if session and not session.startswith("agent-") else None


# -- rollouts ---------------------------------------------------------------


@dataclass
class CodexState:
    """Everything a rollout parser needs to resume after a line: small."""

    thread: str = ""
    identity_seen: bool = False
    session_emitted: bool = False
    created_ms: int | None = None
    parent: str | None = None  # parent thread id
    reverted: bool = False  # a reverted thread's new rollout, no child of another
    sealed_before: bool = False  # the rollout goes on from a sealed segment of its thread (SEGMENT_KEY)
    relationship: str | None = None
    is_subagent: bool = False
    excluded: bool = False
    agent_id: str | None = None
    history_start: int | None = None  # the ordinal of the child's first own line (subagent_history_start_ordinal)
    # replay of copied parent history
    replaying: bool = False
    replay_old_timestamps: bool = False
    replay_turn: bool = False  # inside a copied turn (opened by an old turn id, not yet ended)
    last_replay_ms: int | None = None
    own_content: bool = False  # a Message of this session was read
    conversation_read: bool = False  # a Message other than a structural (log-only) one was read
    first_unknown: list | None = None  # [line_no, type] of an unknown line read before any such Message
    drift_reported: bool = False
    in_turn: bool = False  # a turn started (task_started, turn_context) and has not ended
    context_block: bool = False  # the last Message was injected context, in a block a developer item opened
    # context
    cwd: str | None = None
    model: str | None = None
    effort: str | None = None  # the last reasoning effort a turn asked for
    git_branch: str | None = None
    last_uuid: str | None = None
    first_prompt_seen: bool = False
    first_prompt: str | None = None  # the uuid of the prompt that titled the session
    # uuids of the user turns of Codex's history, oldest first: prompts and a
    # compaction's summary (what a rollback counts); whether older ones were let go
    turns: list = field(default_factory=list)
    turns_cut: bool = False
    previous: list | None = None  # ["compacted"] right after a compacted line
    # [kind, form, parts left, uuid, digests of what it said] of the Messages of the
    # current run whose twins may follow, oldest first
    twins: list = field(default_factory=list)
    last_said: str | None = None  # the last conversation Message, while no other Message followed
    last_total: list | None = None  # previous total_token_usage
    open_calls: list = field(default_factory=list)  # [call_id, message_uuid, escalated, an MCP server's tool, spawn_agent]
    failed_calls: list = field(default_factory=list)  # calls whose end event said they failed
    closed_calls: list = field(default_factory=list)  # synthetic results already given
    aborted_calls: list = field(default_factory=list)  # open when their turn was aborted
    aborted_at: str | None = None  # when that was
    last_spawn: list | None = None  # [call_id, new thread id]
    # the agents whose end a completion context told this thread of, its completed item
    # (``sub_agent_completion``) not yet read, oldest first
    completion_contexts: list = field(default_factory=list)
    # digest of a user or assistant text -> its sayings, oldest first: each the uuids of
    # the Messages that said it (several when said in parts)
    said: dict = field(default_factory=dict)
    prompts: list = field(default_factory=list)  # [uuid, characters] of the prompts, oldest first
    # the copy of the parent's history a rollout keeps (``copies_of``) is read with a state
    # of its own: its ``COPY_FIELDS`` as the last copied line left them
    copy_state: dict | None = None
    # the ``chained_line_key`` (hex) of the copy's lines read so far
    copy_chain: str | None = None


# What a copied line kept (``CodexParser._keeps_copy``) moves in the copy's state only:
# the rollout's own lines read on as if the copy were merged (a replay).
COPY_FIELDS = (
    "own_content", "conversation_read", "first_unknown", "drift_reported", "in_turn", "context_block",
    "cwd", "model", "effort", "git_branch", "last_uuid", "first_prompt_seen", "first_prompt", "turns",
    "turns_cut", "previous", "twins", "last_said", "last_total", "open_calls", "failed_calls",
    "closed_calls", "aborted_calls", "aborted_at", "last_spawn", "said", "prompts", "excluded",
    "completion_contexts",
)


class CodexParser:
    """Feeds one rollout line at a time; see the module docstring."""

    def __init__(self, unit: SourceFile, state: dict[str, Any] | None = None):
        self.unit = unit
        if state:
            self.s = CodexState(**state)
            # (a state saved before a text's sayings were groups holds bare uuids)
            self.s.said = {
                key: [[u] if isinstance(u, str) else u for u in sayings] for key, sayings in self.s.said.items()
            }
        else:
            self.s = CodexState(thread=unit.hints.get("thread_id") or _fallback_thread(unit.path))
        # the parent thread whose log is stored nowhere: its history this rollout copies
        # is kept here (``copies_of``, see ``CodexSource.settle_hints``)
        self.copies_of = first_text(unit.hints.get("copies_of"))
        # the log of the nearest thread up the parent's chain that is stored: the lines of the
        # copy it holds are replays of it, not kept (read when first needed)
        self.replays_in = first_text(unit.hints.get("replays_in")) if self.copies_of else None
        # (the ``chained_line_key`` of this rollout's first lines that replay that log, those
        # not yet passed: see ``_replays``)
        self._replay_head: Iterator[bytes] | None = None
        self._line_bytes: bytes | None = None  # the line being read
        self._line_chain: str | None = None  # of a line of a copy: its ``chained_line_key`` (hex)
        self._copy = False  # the line being read is a copy kept
        self._own: dict | None = None  # while it is: the rollout's own COPY_FIELDS
        self._out: list = []  # the records of the line being read
        self._output_line = False  # the line being read is a tool output
        self._line_time: str | None = None  # the time the line being read was written

    def state(self) -> dict[str, Any]:
        return asdict(self.s)

    @property
    def session_id(self) -> str:
        return f"codex:{self.s.thread}"

    # -- entry points -------------------------------------------------------

    def feed(self, line: bytes, position: Position) -> list[Record]:
        out: list[Record] = []
        self._line_time = None
        self._line(line, position, out)
        self._went_on(out)
        return out

    def document(self, data: bytes) -> list[Record]:
        """The TypeScript CLI's ``{session: {...}, items: [...]}`` rollout."""
        value = load_document(data, "items", "Codex rollout")
        if isinstance(value, LineError):
            return [value]
        out: list[Record] = []
        meta = value.get("session") if isinstance(value.get("session"), dict) else {}
        self._identity(meta, meta.get("timestamp"), out)
        items = value["items"]
        for index, (item, position) in enumerate(zip(items, item_positions(data, "items", len(items))), start=1):
            if not isinstance(item, dict):
                out.append(LineError(position, "item is not a JSON object"))
                continue
            self._item(item, None, position, out, uuid=f"{self.session_id}:item-{index}")
        return out

    # -- one line -----------------------------------------------------------

    def _line(self, line: bytes | None, position: Position, out: list) -> None:
        s, start = self.s, len(out)
        self._copy, self._out, self._output_line = False, out, False
        self._line_bytes, self._line_chain = line, None
        self._read_line(line, position, out)
        if self._copy:
            self._copy = False
            self._line_time = None  # (a copy says nothing of when this thread went on)
            baseline = (s.copy_state or {}).get("last_total", self._own["last_total"])
            self._copy_state_out()
            if s.copy_state["last_total"] != baseline:  # (as a replay, the usage baseline moves on)
                s.last_total = s.copy_state["last_total"]
            self._copied(out, start)
        elif s.copy_state and s.copy_state["aborted_calls"] and not self._output_line:
            # the copy ended on an aborted turn: its calls that got no output were cancelled
            settled: list = []
            self._copy_state_in()
            self._settle_aborted_calls(settled, self._line_time)
            self._copy_state_out()
            out[start:start] = settled

    def _keeps_copy(self) -> bool:
        """Whether a line found to be a copy of the parent's history is kept (read as
        this rollout's own, then marked ``_copied``): when the parent's log is stored nowhere.
        The copy is read in a state of its own (``_copy_state_in``)."""
        if not self.copies_of:
            return False
        if not self._copy and self._line_bytes is not None and self._line_chain is None:
            # (the copy's lines so far, this one's added: a replay of a log up the chain while
            # they are, in order, that log's first lines)
            key = copied_line_key(self._line_bytes)
            if key is not None:
                chain = chained_line_key(bytes.fromhex(self.s.copy_chain) if self.s.copy_chain else None, key)
                self._line_chain = self.s.copy_chain = chain.hex()
                if self.replays_in and self._replays(chain):
                    return False  # (the history a stored log up the chain holds: a replay of it)
        if not self._copy:
            self._copy = True
            self._copy_state_in()
            if self.s.aborted_calls and not self._output_line:
                self._settle_aborted_calls(self._out, self._line_time)
        return True

    def _replays(self, chain: bytes) -> bool:
        """Whether the copy's lines up to the one read (``chain``: their ``chained_line_key``)
        replay the log up the chain (``replays_in``): whether they are this rollout's first
        lines, as many as its hints say replayed that log when it was there or fewer
        (``replayed``, see ``replay_extent``; so a read again from the start gives up the same
        lines once that log is gone), while those are the lines it held then; else as many as
        replay that log now. Those lines are read as the copy's are, once: a line that is not
        one of them is none of the later either, as the copy's lines after it are not."""
        if self._replay_head is None:
            path = str(self.unit.path)
            head = replayed_head(path, self.unit.hints.get("replayed"))
            if head is None:
                head = replayed_head(path, replay_extent(path, self.replays_in), check=False) or iter(())
            self._replay_head = head
        return any(line == chain for line in self._replay_head)

    def _copy_state_in(self) -> None:
        """The kept copy's ``COPY_FIELDS`` in (at first, the rollout's own as they are), the
        rollout's own put aside: what the copy's lines set (a turn context's model, effort
        and cwd, the last message, calls, titles, usage) is the parent's."""
        s = self.s
        self._own = {name: getattr(s, name) for name in COPY_FIELDS}
        copy_state = s.copy_state if s.copy_state is not None else copy.deepcopy(self._own)
        for name, value in copy_state.items():
            setattr(s, name, value)
        s.turns_cut = s.turns_cut or self._own["turns_cut"]

    def _copy_state_out(self) -> None:
        """The rollout's own ``COPY_FIELDS`` back, the copy's kept for its next line."""
        s = self.s
        s.copy_state = {name: getattr(s, name) for name in COPY_FIELDS}
        for name, value in self._own.items():
            setattr(s, name, value)
        self._own = None

    def _copied(self, out: list, start: int) -> None:
        """The records of a copied line kept (``_keeps_copy``): its messages say whose
        history they copy (``meta.copied_from``); a title, a subagent or a link it names
        are the parent's, not this rollout's."""
        parent = f"codex:{self.s.parent or self.copies_of}"
        # (the copy's lines up to this one as a copy repeats them: the rows it kept are a replay
        # of a log up the chain that begins with them, should it come once this rollout is gone)
        copied = {"copied_from": parent} | ({"copied_line": self._line_chain} if self._line_chain else {})
        kept = []
        for record in out[start:]:
            if isinstance(record, (TitleCandidate, Subagent, SessionLink)):
                continue
            if isinstance(record, Session):  # (its model, effort, exclusion are the parent's)
                record = Session(id=self.session_id, source=SOURCE)
            if isinstance(record, Message):
                record.meta = {**(record.meta or {}), **copied}
            kept.append(record)
        out[start:] = kept

    def _read_line(self, line: bytes | None, position: Position, out: list) -> None:
        probe = _ENVELOPE.match(line[:PROBE_BYTES]) if line is not None else None
        if probe:
            kind = probe.group(3).decode()
            timestamp = self._line_time = probe.group(1).decode()
            ordinal = int(probe.group(2)) if probe.group(2) else None
            if self.s.aborted_calls and kind in ("compacted", *UNDECODED_METADATA):
                self._settle_aborted_calls(out, timestamp)
            if kind == "compacted":
                self._compacted(line, timestamp, ordinal, position, out)
                return
            if kind in UNDECODED_METADATA:
                self._undecoded_metadata(kind, line, timestamp, ordinal, position, out)
                return
        data = decode_line(line, position)
        if isinstance(data, LineError):
            out.append(data)
            return
        self._record(data, position, out)

    def _record(self, data: dict, position: Position, out: list) -> None:
        kind = data.get("type")
        payload = data.get("payload")
        timestamp = self._line_time = first_text(data.get("timestamp"))
        self._output_line = first_text(dig(payload if isinstance(payload, dict) else data, "type")) in OUTPUT_ITEMS
        if self.s.aborted_calls and not self._output_line:
            self._settle_aborted_calls(out, timestamp)
        if isinstance(kind, str) and isinstance(payload, dict):  # envelope
            if kind == "session_meta":
                self._session_meta(payload, timestamp, position, out)
            elif (self._is_replay(timestamp, payload, data.get("ordinal"), _harness(data, "inherited_user_message"))
                  and not self._keeps_copy()):
                self._replayed(kind, payload, position, out)
            elif kind == "response_item" and _harness(data, "delivered_assistant_message"):
                self._ensure_session(out)  # (a record for review of a message already read)
                out.append(Merged(position, "duplicate"))
            elif kind == "response_item":
                self._item(payload, timestamp, position, out)
            elif kind == "event_msg":
                self._event(payload, timestamp, position, out)
            elif kind == "turn_context":
                self._turn_context(payload, position, out)
            elif kind == "compacted":  # only reached by lines the probe missed
                meta, summary = self._kept(_history_json(payload), _compaction_summary(payload))
                self._compaction_message(
                    position, timestamp, _compaction_text(payload, summary=summary), out, type="compacted",
                    summary=summary, meta=meta,
                )
            elif kind == "inter_agent_communication":
                text = first_text(payload.get("content")) or ""
                self._agent_message(payload, text, timestamp, position, out, type=kind)
            elif kind in UNDECODED_METADATA:
                self._ensure_session(out)
                out.append(Merged(position, "metadata"))
            elif kind == "token_usage_record":
                self._ensure_session(out)
                out.append(Merged(position, "usage"))
            else:
                self._ensure_session(out)
                self._unknown(kind, position, out)
        elif "record_type" in data:  # pre-envelope state marker
            self._ensure_session(out)
            out.append(Merged(position, "metadata"))
        elif not self.s.identity_seen and "type" not in data and "id" in data:
            self._identity(data, timestamp, out)
            out.append(Merged(position, "metadata"))
        elif isinstance(kind, str):  # pre-envelope bare response item
            self._item(data, None, position, out)
        else:
            self._ensure_session(out)
            self._unknown(None, position, out)

    def _went_on(self, out: list) -> None:
        """A line of the thread's own that gave no message (a turn's start or end, its
        context, an event repeating an item, a type not known yet) still says the
        session went on to its time: the session ends no earlier (``Session.ended_at``).
        A line copied from another thread (a replay) says nothing of this one."""
        if self._line_time is None or not self.s.identity_seen:
            return
        if any(type(r) is Message or (type(r) is Merged and r.reason == "replay") for r in out):
            return
        said_end(out, Session(id=self.session_id, source=SOURCE, ended_at=self._line_time))

    def _unknown(self, kind: str | None, position: Position, out: list) -> None:
        """A line of a type this parser does not know: merged. The first one
        read before any message is kept for the drift check (``_drift``)."""
        s = self.s
        if s.identity_seen and not s.conversation_read and s.first_unknown is None:
            s.first_unknown = [position.line_no, kind or "?"]
        out.append(Merged(position, "unknown-type", kind))

    def _drift(self, position: Position) -> LineError | None:
        """At a turn's end: the error a rollout of known metadata but unknown
        conversation lines gets, once, so that it does not look like an
        empty, successful ingest. A new metadata type is no drift: a healthy
        turn has messages besides its unknown lines, which is known only
        once the turn has ended (a turn starts with its metadata)."""
        s = self.s
        if s.conversation_read or s.first_unknown is None or s.drift_reported:
            return None
        s.drift_reported = True
        line_no, kind = s.first_unknown
        return LineError(
            position,
            f"a turn ended without any message the codex parser knows, after lines of unknown types "
            f"(the first: line {line_no}, {kind!r}): format drift?",
        )

    # -- identity and lineage ----------------------------------------------

    def _session_meta(self, meta: dict, timestamp, position: Position, out: list) -> None:
        thread = meta.get("id")
        if not self.s.identity_seen:
            self._identity(meta, timestamp, out)
            out.append(Merged(position, "metadata"))
        elif thread != self.s.thread and (self.s.replaying or not self.s.own_content):
            self._start_replay(thread, timestamp, out)
            out.append(Merged(position, "replay"))
        else:
            if thread == self.s.thread:  # the child's own meta again: no parent copy goes past it
                self._end_replay()
            out.append(Merged(position, "metadata"))

    def _identity(self, meta: dict, timestamp, out: list) -> None:
        s = self.s
        s.identity_seen = True
        if isinstance(meta.get("id"), str) and meta["id"]:
            s.thread = meta["id"]
        started = first_text(meta.get("timestamp"), timestamp)
        s.created_ms = uuid7_ms(s.thread) or iso_ms(started)
        s.cwd = first_text(meta.get("cwd"))
        git = meta.get("git") if isinstance(meta.get("git"), dict) else {}
        s.git_branch = first_text(git.get("branch"))
        s.model = first_text(meta.get("model"))
        lineage = lineage_of(meta, s.thread, reverted_file=bool(self.unit.hints.get("rollout_id")))
        s.parent, s.relationship, s.reverted = lineage.parent, lineage.relationship, lineage.reverted
        s.is_subagent, s.excluded = lineage.is_subagent, lineage.excluded
        s.agent_id = s.thread if lineage.is_subagent else None
        start = meta.get("subagent_history_start_ordinal")
        s.history_start = start if type(start) is int and start >= 0 else None
        parent = lineage.parent
        out.append(
            Session(
                id=self.session_id,
                source=SOURCE,
                cwd=s.cwd,
                project=project_slug(s.cwd),
                git_branch=s.git_branch,
                git_commit=first_text(git.get("commit_hash")),
                repository=normalize_repository(git.get("repository_url")),
                version=first_text(meta.get("cli_version")),
                originator=first_text(meta.get("originator")),
                model=s.model,
                started_at=started,
                parent_session_id=f"codex:{parent}" if parent else None,
                relationship=s.relationship,
                agent_id=s.agent_id,
                agent_type=lineage.agent_type,
                is_excluded=1 if s.excluded else None,
            )
        )
        s.session_emitted = True
        if s.relationship == "subagent":
            out.append(
                Subagent(
                    agent_id=s.thread,
                    session_id=f"codex:{parent}",
                    child_session_id=self.session_id,
                    parent_tool_use_id=f"codex:{parent}:{lineage.spawn_call}" if lineage.spawn_call else None,
                    agent_type=lineage.agent_type,
                    description=lineage.nickname,
                    described_by="agent" if lineage.agent_type or lineage.nickname else None,
                )
            )

    def _ensure_session(self, out: list) -> None:
        if not self.s.session_emitted:
            self.s.session_emitted = True
            out.append(Session(id=self.session_id, source=SOURCE))

    def _start_replay(self, foreign_thread, timestamp, out: list) -> None:
        s = self.s
        s.turns_cut = True  # (the parent's turns it copies are turns of its history, not stored here)
        if not s.replaying:
            s.replaying = True
            s.last_replay_ms = iso_ms(timestamp)
        if s.parent is None and isinstance(foreign_thread, str) and foreign_thread:
            s.parent, s.relationship = foreign_thread, "fork"
            parent_id = f"codex:{foreign_thread}"
            out.append(Session(self.session_id, SOURCE, parent_session_id=parent_id, relationship="fork"))

    def _is_replay(self, timestamp, payload: dict | None = None, ordinal=None, inherited: bool = False) -> bool:
        """Whether this line is parent history copied into a fork or child.

        A child that names the ordinal its own history starts at is told by
        it (``ordinal``, the line's): Codex re-stamps the copy at the spawn and
        leaves out turn ids and the parent's ``session_meta`` as it pleases. A
        message multi-agent v2 marks inherited is a copy (``inherited``).

        Without a copied foreign ``session_meta`` only lines older than the
        child, or of turns minted before it, are copies. After one, the copy
        goes on until the child's own content, told by structure wherever
        the rollout has it: a UUIDv7 turn id says whose turn a line is (one
        minted after the child's creation ends the copy), a line inside a
        copied turn (after a line of an old turn id, before that turn's end)
        is copied however late it was written, and old-timestamped copies
        end at the first line not older than the child. Timing is the last
        resort, for lines outside any copied turn that carry no turn id:
        context blocks between turns, and every line of rollouts written
        before Codex persisted UUIDv7 turn ids (early 2026). Nothing else in
        such a line tells the copy from the child's own, and comparing with
        the parent's rollout would need the parent ingested first; the copy
        is one flush, so a line written more than ``COPY_BURST_GAP_MS``
        after the copied line before it is the child's.
        """
        s = self.s
        if s.history_start is not None and type(ordinal) is int:
            if ordinal >= s.history_start:
                self._end_replay()
                return False
            s.turns_cut = True  # (the parent's turns it copies are turns of its history, not stored here)
            return True
        if inherited:
            s.turns_cut = True
            if s.replaying and iso_ms(timestamp) is not None:
                s.last_replay_ms = iso_ms(timestamp)
            return True
        created = s.created_ms
        if not s.replaying and (s.parent is None or created is None):
            return False
        line_ms = iso_ms(timestamp)
        turn_ms = uuid7_ms(_turn_id(payload)) if payload else None
        if not s.replaying:
            old_line = line_ms is not None and line_ms < created
            old_turn = turn_ms is not None and turn_ms < created
            return old_line or old_turn
        if turn_ms is not None and created is not None:
            copied = turn_ms < created
        elif s.replay_turn or line_ms is None:
            copied = True
        elif created is not None and line_ms < created:
            s.replay_old_timestamps = copied = True
        elif s.replay_old_timestamps:
            copied = False
        else:
            copied = s.last_replay_ms is None or line_ms - s.last_replay_ms <= COPY_BURST_GAP_MS
        if not copied:
            self._end_replay()
            return False
        if payload and first_text(payload.get("type")) in TURN_CLOSES:
            s.replay_turn = False
        elif turn_ms is not None:
            s.replay_turn = True
        if line_ms is not None:
            s.last_replay_ms = line_ms
        return True

    def _end_replay(self) -> None:
        self.s.replaying = self.s.replay_turn = False

    def _replayed(self, kind: str, payload: dict, position: Position, out: list) -> None:
        """Copied parent history: only the usage baseline moves on."""
        self._ensure_session(out)
        if kind == "event_msg" and payload.get("type") == "token_count":
            total = dig(payload, "info", "total_token_usage")
            if isinstance(total, dict):
                self.s.last_total = _usage_key(total)
        out.append(Merged(position, "replay"))

    # -- messages -----------------------------------------------------------

    def _message(
        self, position: Position, type: str, timestamp, *, uuid=None, structural=False, **fields
    ) -> Message:
        """A Message of this session; any Message but a structural (log-only)
        one ends the window in which an event/item twin can follow."""
        s = self.s
        if not structural:
            s.previous = None
            s.twins = []
            s.last_said = None
            s.context_block = False
            s.conversation_read = True
        uuid = uuid or f"{self.session_id}:{position.byte_offset}"
        message = Message(
            uuid=uuid,
            session_id=self.session_id,
            source=SOURCE,
            type=type,
            position=position,
            parent_uuid=s.last_uuid,
            timestamp=timestamp,
            cwd=s.cwd,
            git_branch=s.git_branch,
            agent_id=s.agent_id,
            **fields,
        )
        if message.role == "assistant" and message.model is None:
            message.model = s.model
        if message.role == "assistant" and s.effort:
            # the effort its turn asked of the model (the session's is only the last)
            message.meta = {**(message.meta or {}), "effort": s.effort}
        s.last_uuid = uuid
        s.own_content = True
        return message

    def _conversation(self, out, position, timestamp, twin, form, parts=1, said=(), typed=None, **fields) -> Message:
        """A user, assistant or thinking Message, remembered so that its twin
        in the other form (``form`` is "event" or "item") merges into it; an
        item of ``parts`` parts has one event per part. ``said`` are the texts
        a twin may repeat: the whole, then its parts (see ``_is_twin``); ``typed``
        what may title the session when it is not the whole text."""
        run = self.s.twins
        message = self._message(position, fields.pop("type"), timestamp, **fields)
        out.append(message)
        if twin and not message.is_meta:
            # a run of one form goes on (Codex 0.4x wrote a response's events, then its
            # items); a prompt ends the answer before it
            run = [] if twin == "user" else [entry for entry in run if entry[1] == form and entry[0] != "user"]
            keys = [said_key(twin, text) for text in said]
            self.s.twins = [*run[1 - KEPT_TWINS:], [twin, form, parts, message.uuid, keys]]
            self.s.last_said = message.uuid
        if message.role == "user" and not message.is_meta and message.content_type == "text":
            self._user_turn(out, message.timestamp)
            self._first_prompt(message, out, typed)
            self.s.prompts = [*self.s.prompts[1 - KEPT_REMEMBERED:], [message.uuid, len(message.text)]]
            self._turn(message.uuid)
        return message

    def _remember(self, role: str, text: str, uuids: list[str]) -> None:
        """Note that the Messages ``uuids`` said ``text`` (``_said_text`` of a response
        item; several when the other form said it in parts), for a compaction's
        history that repeats the item."""
        if role not in ("user", "assistant") or not uuids:
            return
        said = self.s.said
        sayings = said.pop(key := said_key(role, text), [])
        said[key] = sayings if uuids in sayings else [*sayings, uuids][-KEPT_REPEATS:]
        if len(said) > KEPT_REMEMBERED:
            del said[next(iter(said))]

    def _first_prompt(self, message: Message, out: list, typed: str | None = None) -> None:
        if self.s.first_prompt_seen:
            return
        typed = _spoken_task(message.text if typed is None else typed)
        typed = IMAGE_MARKUP.sub(" ", typed).strip()  # (an image alone titles nothing)
        if typed:
            self.s.first_prompt_seen, self.s.first_prompt = True, message.uuid
            out.append(first_prompt_title(message, typed))

    def _is_twin(self, twin: str, form: str, said: Iterable[str] = ()) -> list[str]:
        """The uuids of the Messages this line repeats in its other form (event vs
        response item), consuming the pairing; none when it is no twin. They are
        those of its run that said its texts ``said`` (the whole, then its parts),
        the first for each text (a text said in parts, each part); else the last
        conversation Message read. A Message said in parts (``_conversation``) is
        consumed part by part, unless the line repeats it whole."""
        run = self.s.twins
        keys = [said_key(twin, text) for text in said]
        pairs = [index for index, entry in enumerate(run) if entry[0] == twin and entry[1] != form]
        taken, used = [], set()
        for index in pairs:
            shared = set(keys).intersection(run[index][4])
            if shared and not shared <= used:
                used |= shared
                taken.append(index)
                if keys[0] in shared:  # its whole text: said at once
                    break
        if not taken and pairs and pairs[-1] == len(run) - 1 and run[-1][3] == self.s.last_said:
            taken, keys = [pairs[-1]], [None]  # a part of it, as far as can be told
        uuids = []
        for index in reversed(taken):
            entry = run[index]
            uuids.insert(0, entry[3])
            if entry[2] > 1 and entry[4][0] not in keys:
                entry[2] -= 1
            else:
                del run[index]
        return uuids

    def _log_only(self, out, position, type, subtype, timestamp, text="", role=None, **fields) -> Message:
        message = self._message(
            position, type, timestamp, structural=True, subtype=subtype, role=role, text=text, is_meta=1,
            surface="log-only", **fields
        )
        out.append(message)
        return message

    # -- response items -----------------------------------------------------

    def _item(self, item: dict, timestamp, position: Position, out: list, uuid: str | None = None) -> None:
        self._ensure_session(out)
        kind = first_text(item.get("type"))
        if kind in {"message", "agent_message"} and _COMPLETION_CONTEXT_ID.match(first_text(item.get("id")) or ""):
            contexts = [*self.s.completion_contexts, _completion_context_agent(item)]
            self.s.completion_contexts = contexts[-MAX_COMPLETION_CONTEXTS:]
        if kind == "message":
            self._item_message(item, timestamp, position, out, uuid)
        elif kind == "reasoning":
            parts = _reasoning_parts(item)
            text = "\n\n".join(parts)
            if not text:
                out.append(Merged(position, "metadata"))  # encrypted only
            elif self._is_twin("thinking", "item", [text, *parts]):
                out.append(Merged(position, "duplicate"))
            else:
                self._conversation(
                    out, position, timestamp, "thinking", "item", parts=len(parts), said=[text, *parts],
                    type="response_item",
                    subtype="reasoning", role="assistant", text=text, content_type="thinking", uuid=uuid,
                )
        elif kind in CALL_ITEMS or kind in IMMEDIATE_CALL_ITEMS:
            self._tool_call(item, kind, timestamp, position, out, uuid)
        elif kind in OUTPUT_ITEMS:
            self._tool_output(item, kind, timestamp, position, out, uuid)
        elif kind == "agent_message":  # (after an inter_agent_communication_metadata line)
            self._agent_message(item, _parts_text(item.get("content")), timestamp, position, out,
                                type="response_item", subtype=kind, uuid=uuid)
        elif kind in COMPACTION_ITEMS:
            self._compaction_message(
                position, timestamp, "[remote compaction: encrypted summary not stored]", out,
                type="response_item", subtype=kind, is_meta=1, uuid=uuid,
            )
        elif kind in METADATA_ITEMS:
            out.append(Merged(position, "metadata"))
        else:
            self._unknown(f"response_item/{kind}", position, out)

    def _item_message(self, item, timestamp, position, out, uuid) -> None:
        role = first_text(item.get("role"))
        role = role if role in MESSAGE_ROLES else "user"
        text = _parts_text(item.get("content"))
        injected = role in {"developer", "system"} or (role == "user" and _is_injected(text)) or _is_notice(item)
        twin = {"user": "user", "assistant": "assistant"}.get(role) if not injected else None
        texts = _said_parts(item.get("content"))
        said = "\n".join(texts)
        if twin and (twins := self._is_twin(twin, "item", [said, *texts])):
            self._remember(role, said, twins)  # a history repeats this form of the text
            out.append(Merged(position, "duplicate"))
            return
        in_block = self.s.context_block
        injected = injected or (role == "user" and self._is_context_block_item(timestamp))
        if injected and role == "user" and self.s.cwd is None:
            self._context_cwd(text, out)
        # an answer in parts has one event per part
        parts = len(texts) if role == "assistant" and texts else 1
        message = self._conversation(
            out, position, timestamp, twin if not injected else None, "item", parts=parts, said=[said, *texts],
            type="response_item",
            subtype="message", role=role, text=text, content_type="text", uuid=uuid, is_meta=int(injected),
        )
        self._remember(role, said, [message.uuid])
        # A block opens with the developer's or system's context (0.5x+); 0.4x-0.7x
        # wrote the environment alone, then the first prompt, item first.
        self.s.context_block = injected and (role in {"developer", "system"} or in_block)

    def _context_cwd(self, text: str, out: list) -> None:
        """The folder an environment context names, for rollouts whose first line
        names none (before mid-2025 Codex wrote no ``cwd`` there)."""
        found = ENVIRONMENT_CWD.match(text[:4096])
        if found and found.group(1).strip():
            self.s.cwd = found.group(1).strip()
            out.append(Session(id=self.session_id, source=SOURCE, cwd=self.s.cwd, project=project_slug(self.s.cwd)))

    def _is_context_block_item(self, timestamp) -> bool:
        """A user item with no event twin before it, written between turns
        right after injected context: the context block Codex writes when a
        thread starts or after a compaction (AGENTS.md, environment), whose
        text may not show it (redacted). Only envelope rollouts are judged:
        older generations write prompts as response items alone."""
        return timestamp is not None and not self.s.in_turn and self.s.context_block

    # -- tools --------------------------------------------------------------

    def _tool_call(self, item: dict, kind: str, timestamp, position, out, uuid) -> None:
        name, arguments = _tool_name_and_input(item, kind)
        call_id = first_text(item.get("call_id"), item.get("id")) or f"call@{position.byte_offset}"
        tool_use_id = f"{self.session_id}:{call_id}"
        message = self._message(
            position, "response_item", timestamp, uuid=uuid, subtype=kind, role="assistant",
            text=call_text(name, arguments), content_type="tool_use",
        )
        out.append(message)
        decoded = loads_or_none(arguments)
        out.append(
            ToolCall(
                id=tool_use_id,
                message_uuid=message.uuid,
                session_id=self.session_id,
                name=name,
                input_json=_input_json(arguments, decoded),
                timestamp=timestamp,
                file_paths=_file_paths(name, arguments, decoded, self.s.cwd),
            )
        )
        if kind in IMMEDIATE_CALL_ITEMS:
            outcome = _status_outcome(item.get("status"))
            if outcome:
                out.append(
                    ToolResult(
                        tool_use_id=tool_use_id,
                        message_uuid=message.uuid,
                        session_id=self.session_id,
                        content=_immediate_result_text(item),
                        is_error=int(outcome == "failed"),
                        outcome=outcome,
                        timestamp=timestamp,
                    )
                )
            return
        escalated = isinstance(decoded, dict) and (
            decoded.get("sandbox_permissions") == "require_escalated"
            or decoded.get("with_escalated_permissions") is True
        )
        call = [call_id, message.uuid, escalated, "__" in name, name == "spawn_agent"]
        self.s.open_calls = (self.s.open_calls + [call])[-MAX_OPEN_CALLS:]

    def _tool_output(self, item: dict, kind: str, timestamp, position, out, uuid) -> None:
        call_id = first_text(item.get("call_id"), item.get("id")) or f"call@{position.byte_offset}"
        content, exit_code = _output_text(item)
        closed = call_id in self.s.closed_calls
        mcp = any(call[0] == call_id and call[3] for call in self.s.open_calls)
        spawn = any(call[0] == call_id and call[4:] == [True] for call in self.s.open_calls)
        failed = call_id in self.s.failed_calls
        if failed:
            self.s.failed_calls.remove(call_id)
        message = self._message(
            position, "response_item", timestamp, uuid=uuid, subtype=kind, role="user",
            text=content, content_type="tool_result",
        )
        out.append(message)
        if not first_text(item.get("call_id")) and first_text(item.get("name")):
            # a named output without a call (0.16x+: an external tool event thread/inject_items
            # adds): the call it answers is the tool that produced it
            out.append(ToolCall(
                id=f"{self.session_id}:{call_id}", message_uuid=message.uuid, session_id=self.session_id,
                name=_qualified(item, "function"), input_json="null", timestamp=timestamp,
                file_paths=[],
            ))
            if first_text(item.get("name")) in DELEGATION_TOOLS and (task := _delegated_task(content)):
                self._first_prompt(message, out, task)  # the task a thread was created with (Codex's preview)
        self.s.open_calls = [call for call in self.s.open_calls if call[0] != call_id]
        self.s.aborted_calls = [call for call in self.s.aborted_calls if call[0] != call_id]
        if closed:  # a synthetic result was already given when the turn ended
            self.s.closed_calls.remove(call_id)
            return
        outcome = _output_outcome(content, exit_code, item)
        if outcome == "succeeded" and (failed or (mcp and content.startswith(MCP_ERROR_PREFIX))):
            outcome = "failed"  # (Codex writes an MCP call's error flag in its end event alone)
        spawned = self.s.last_spawn[1] if self.s.last_spawn and self.s.last_spawn[0] == call_id else None
        if spawned is None and spawn and outcome == "succeeded":
            spawned = self._spawned_by_output(content, call_id, out)
        out.append(
            ToolResult(
                tool_use_id=f"{self.session_id}:{call_id}",
                message_uuid=message.uuid,
                session_id=self.session_id,
                content=content,
                is_error=int(outcome in {"failed", "blocked"}),
                outcome=outcome,
                timestamp=timestamp,
                agent_id=spawned,
                exit_code=exit_code,
            )
        )

    def _close_open_calls(self, out: list, timestamp, *, new_turn: bool = False) -> None:
        """Results for calls a turn left without output: an escalation
        request that got no answer was refused (blocked). Other calls stay
        open while their turn may still go on (a user can steer a running
        turn); a new turn forgets them, without a result."""
        still_open = []
        for call in self.s.open_calls:
            if call[2]:
                self._placeholder_result(call, timestamp, out)
            elif not new_turn:
                still_open.append(call)
        self.s.open_calls = still_open

    def _abort_open_calls(self, out: list, timestamp) -> None:
        """An aborted turn: its open calls wait for the outputs Codex writes
        right after the abort, which win; see ``_settle_aborted_calls``."""
        self._settle_aborted_calls(out, timestamp)
        self.s.aborted_calls, self.s.aborted_at = self.s.open_calls, timestamp
        self.s.open_calls = []

    def _settle_aborted_calls(self, out: list, timestamp) -> None:
        """A line other than a tool output follows an abort: calls of the
        aborted turn that got no output were cancelled (or, asking for
        escalation, blocked)."""
        aborted, self.s.aborted_calls = self.s.aborted_calls, []
        for call in aborted:
            self._placeholder_result(call, self.s.aborted_at or timestamp, out)

    def _placeholder_result(self, call: list, timestamp, out: list) -> None:
        call_id, message_uuid, escalated = call[:3]
        outcome = "blocked" if escalated else "cancelled"
        note = "escalation not granted" if escalated else "turn aborted"
        out.append(
            ToolResult(
                tool_use_id=f"{self.session_id}:{call_id}",
                message_uuid=message_uuid,
                session_id=self.session_id,
                content=f"[no output: {note}]",
                is_error=int(outcome == "blocked"),
                outcome=outcome,
                timestamp=timestamp,
            )
        )
        self.s.closed_calls = (self.s.closed_calls + [call_id])[-MAX_OPEN_CALLS:]

    def _user_turn(self, out: list, timestamp) -> None:
        """A new user prompt: pending escalations were not granted."""
        if self.s.open_calls:
            self._close_open_calls(out, timestamp)

    # -- events -------------------------------------------------------------

    def _event(self, payload: dict, timestamp, position: Position, out: list) -> None:
        self._ensure_session(out)
        kind = first_text(payload.get("type"))
        if kind in EVENT_TWINS:
            self._event_twin(payload, kind, timestamp, position, out)
        elif kind == "token_count":
            self._token_count(payload, timestamp, position, out)
        elif kind == "context_compacted":
            if self.s.previous == ["compacted"]:
                self.s.previous = None
                out.append(Merged(position, "duplicate"))
            else:
                self._compaction_message(
                    position, timestamp, "[context compacted]", out, type="event_msg", subtype=kind, is_meta=1
                )
        elif kind == "thread_name_updated":
            name = first_text(payload.get("thread_name"), payload.get("name"))
            if name and name.strip():
                title = TitleCandidate(self.session_id, "custom", name.strip(), timestamp, position=position)
                out.append(title)
            out.append(Merged(position, "title"))
        elif kind in SPAWN_EVENTS and _spawned_thread(payload):
            self._spawn_event(payload, position, out)
        elif kind in LOG_ONLY_EVENTS:
            self._log_event(payload, kind, timestamp, position, out)
        elif kind == "item_completed":
            self._item_completed(payload, timestamp, position, out)
        elif kind == "item_started":
            item = payload.get("item") if isinstance(payload.get("item"), dict) else {}
            if first_text(item.get("type")) in TURN_ITEMS:
                out.append(Merged(position, "metadata"))
            else:
                self._unknown(f"event_msg/{kind}", position, out)
        elif kind in TURN_STARTS:
            self.s.in_turn = True
            self._close_open_calls(out, timestamp, new_turn=True)
            out.append(Merged(position, "metadata"))
        elif kind in TURN_ENDS:
            self.s.in_turn = False
            out.append(self._drift(position) or Merged(position, "metadata"))
        elif kind in TOOL_EVENT_DUPLICATES or (kind or "").startswith("collab_"):
            call_id = first_text(payload.get("call_id"))
            if kind == "mcp_tool_call_end" and _mcp_failed(payload.get("result")):
                self._failed(call_id)
            out.append(Merged(position, "duplicate"))
        elif kind in METADATA_EVENTS:
            out.append(Merged(position, "metadata"))
        else:
            self._unknown(f"event_msg/{kind}", position, out)

    def _event_twin(self, payload, kind, timestamp, position, out) -> None:
        twin = EVENT_TWINS[kind]
        said = first_text(payload.get("text" if twin == "thinking" else "message")) or ""
        if kind == "agent_message" and said == IMPORT_MARKER:  # (an event alone, never a response item)
            self._log_only(out, position, "event_msg", kind, timestamp, text=said, role="assistant")
            return
        if self._is_twin(twin, "event", [said]):
            out.append(Merged(position, "duplicate"))
            return
        if twin == "thinking":
            text, role, content_type = said, "assistant", "thinking"
        else:
            notes = "".join(_attachment_notes(payload.get(key), kind) for key, kind in EVENT_ATTACHMENTS)
            text = said + notes if said else notes.removeprefix("\n")  # (attachments alone: no blank first line)
            role, content_type = twin, "text"
        message = self._conversation(
            out, position, timestamp, twin, "event", said=[said], type="event_msg", subtype=kind, role=role, text=text,
            content_type=content_type, is_meta=int(role == "user" and _is_injected(text)),
        )
        if content_type == "text":
            self._remember(role, said, [message.uuid])

    def _token_count(self, payload, timestamp, position, out) -> None:
        info = payload.get("info") if isinstance(payload.get("info"), dict) else None
        total = info.get("total_token_usage") if info else None
        if not isinstance(total, dict):
            out.append(Merged(position, "usage"))
            return
        key, previous = _usage_key(total), self.s.last_total
        previous = previous if previous is None or len(previous) == len(key) else None  # (another parser's)
        self.s.last_total = key
        reported = info.get("last_token_usage")
        reported = reported if isinstance(reported, dict) else {}
        last = _usage_key(reported) if reported else None
        if previous is None and self.s.parent is None and not self.s.reverted and not self.s.sealed_before:
            previous = [0] * len(key)  # (a child's, reverted or sealed rollout's first total may hold earlier ones)
        if previous is not None:
            grown = [now - before for now, before in zip(key, previous)]
            if min(grown) >= 0 and (last is None or any(g > n for g, n in zip(grown, last))):
                last = grown  # responses without a token_count of their own (a cut or resumed log)
        last = key if last is None else last  # (else the whole total: a child's first, one that shrank)
        if key == previous or not any(last):
            out.append(Merged(position, "usage"))
            return
        usage = usage_fields(input_total=last[0], cached=last[1], output=last[2], cache_write=last[CACHE_WRITES])
        self._log_only(
            out, position, "event_msg", "token_count", timestamp, role="assistant", model=self.s.model,
            **usage,
        )

    def _failed(self, call_id: str | None) -> None:
        """Note that the call ``call_id``, whose output is still to come, failed."""
        if any(call[0] == call_id for call in self.s.open_calls):
            self.s.failed_calls = [*self.s.failed_calls, call_id][-MAX_OPEN_CALLS:]

    def _agent_message(self, payload, text, timestamp, position, out, **fields) -> None:
        """A message another agent of the thread tree sent this one (a task, a
        report): a turn of its own, as Codex counts it, its text headed by who sent
        it to whom (``[/root → /root/worker]``, in ``meta`` too); the message alone titles."""
        self._ensure_session(out)
        author, recipient = first_text(payload.get("author")), first_text(payload.get("recipient"))
        header = f"[{author or '?'} → {recipient or '?'}]\n" if author or recipient else ""
        envelope = _AGENT_ENVELOPE.match(text)  # (multi-agent v2: the payload may be encrypted, then absent)
        self._conversation(
            out, position, timestamp, None, "item", role="user", text=header + text, content_type="text",
            meta={"from": author, "to": recipient}, typed=text[envelope.end():] if envelope else text, **fields,
        )

    def _spawned_by_output(self, content: str, call_id: str, out: list) -> str | None:
        """The thread a ``spawn_agent`` call started, as its output names it
        (``{"agent_id": …}``), when no spawn event was written (the default
        rollouts of some versions keep none)."""
        result = loads_or_none(content)
        thread = first_text(result.get("agent_id")) if isinstance(result, dict) else None
        if thread:
            out.append(Subagent(
                agent_id=thread, session_id=self.session_id, child_session_id=f"codex:{thread}",
                parent_tool_use_id=f"{self.session_id}:{call_id}",
            ))
        return thread

    def _spawn_event(self, payload, position, out) -> None:
        thread = _spawned_thread(payload)
        call_id = first_text(payload.get("call_id"), payload.get("id")) or self._open_call(payload.get("event_id"))
        agent_type = first_text(payload.get("new_agent_role"), payload.get("agent_role"))
        nickname = first_text(payload.get("new_agent_nickname"), payload.get("agent_nickname"))
        self._spawned(thread, call_id, agent_type, nickname, position, out)

    def _spawn_item(self, item, thread, position, out) -> None:
        """A completed SubAgentActivity (kind started) or spawn_agent CollabAgentToolCall item:
        where Codex's main branch (and a paginated rollout) writes the thread a ``spawn_agent``
        call started, no spawn event beside it, the call's output naming the agent's path only.
        Its id is the call's."""
        agents = item.get("receiver_agents")
        agent = next((a for a in agents if isinstance(a, dict) and first_text(a.get("thread_id")) == thread), {}) \
            if isinstance(agents, list) else {}
        self._spawned(thread, self._open_call(item.get("id")), first_text(agent.get("agent_role")),
                      first_text(agent.get("agent_nickname")), position, out)

    def _open_call(self, call_id) -> str | None:
        """``call_id`` when it names a call still waiting for its output."""
        call_id = first_text(call_id)
        return call_id if call_id and any(call[0] == call_id for call in self.s.open_calls) else None

    def _spawned(self, thread, call_id, agent_type, nickname, position, out) -> None:
        out.append(
            Subagent(
                agent_id=thread,
                session_id=self.session_id,
                child_session_id=f"codex:{thread}",
                parent_tool_use_id=f"{self.session_id}:{call_id}" if call_id else None,
                agent_type=agent_type,
                description=nickname,
                described_by="result" if agent_type or nickname else None,  # the child's own log outranks it
            )
        )
        if call_id:
            self.s.last_spawn = [call_id, thread]
        out.append(Merged(position, "metadata"))

    def _log_event(self, payload, kind, timestamp, position, out) -> None:
        if kind == "turn_aborted":
            self.s.in_turn = False
            text = f"turn aborted: {payload.get('reason') or ''}".strip()
            message = self._log_only(out, position, "event_msg", kind, timestamp, text=text)
            self._abort_open_calls(out, message.timestamp)
            return
        target = self._rolled_back(payload.get("num_turns")) if kind == "thread_rolled_back" else None
        self._log_only(out, position, "event_msg", kind, timestamp, text=_event_text(payload, kind),
                       logical_parent_uuid=target)

    def _turn(self, uuid: str) -> None:
        self.s.turns_cut = self.s.turns_cut or len(self.s.turns) >= KEPT_REMEMBERED
        self.s.turns = [*self.s.turns[1 - KEPT_REMEMBERED:], uuid]

    def _rolled_back(self, turns) -> str | None:
        """The first of the last ``turns`` user turns (prompts, and a compaction's
        summary), which a rollback took back (Codex drops them from the history;
        more than it holds: all): the marker names it, as a rewind's names its
        target (``derive.rewound``). None when it is not remembered."""
        held = self.s.turns
        if type(turns) is not int or turns <= 0 or not held or (turns > len(held) and self.s.turns_cut):
            return None
        taken = held[-turns:]
        self.s.turns = held[: len(held) - len(taken)]
        self.s.prompts = [prompt for prompt in self.s.prompts if prompt[0] not in taken]
        if self.s.first_prompt in taken:  # the next prompt titles the session
            self.s.first_prompt_seen, self.s.first_prompt = False, None
        return taken[0]

    def _item_completed(self, payload, timestamp, position, out) -> None:
        """``item_completed`` (0.149+): messages are twins of response items,
        a Plan is kept, tool items repeat their response items."""
        item = payload.get("item") if isinstance(payload.get("item"), dict) else {}
        kind = first_text(item.get("type"))
        twin = COMPLETED_ITEM_TWINS.get(kind)
        completion = item.get("sub_agent_completion")
        if kind == "Plan":
            text = first_text(item.get("text")) or ""
            self._log_only(out, position, "event_msg", "item_completed", timestamp, text=text)
        elif kind in REVIEW_ITEMS:
            # a paginated rollout's review start and end (its findings), no event beside them
            subtype = REVIEW_ITEMS[kind]
            self._log_only(out, position, "event_msg", subtype, timestamp, text=_event_text(item, subtype))
        elif kind == "AgentMessage" and isinstance(completion, dict):
            # (after 0.171) a background agent's end, written in its parent's rollout: the
            # child's final answer ("Agent final answer from `<agent>`: …"), no answer of this thread's;
            # when the model was told of it, the completion context before it holds that end already
            agent = first_text(completion.get("agent_reference"))
            contexts = self.s.completion_contexts
            hidden = completion.get("model_visibility") == "not_visible"
            if agent and not hidden and agent in contexts:
                index = len(contexts) - 1 - contexts[::-1].index(agent)
                self.s.completion_contexts = contexts[:index] + contexts[index + 1:]
                out.append(Merged(position, "duplicate"))
            else:
                self._log_only(out, position, "event_msg", "item_completed", timestamp,
                               text=_parts_text(item.get("content")), meta={"from": agent} if agent else None)
        elif kind in SPAWN_ITEMS and (thread := _spawned_by_item(item)):
            self._spawn_item(item, thread, position, out)
        elif twin is None:
            if kind == "McpToolCall" and _mcp_item_failed(item):  # (paginated history writes no end event)
                self._failed(first_text(item.get("id")))
            out.append(Merged(position, "duplicate"))
        else:
            said = _completed_item_said(item, twin)
            text = said[0] if twin == "thinking" else _parts_text(item.get("content"))
            if not text:
                out.append(Merged(position, "metadata"))
            elif self._is_twin(twin, "event", said):
                out.append(Merged(position, "duplicate"))
            else:
                role = "user" if twin == "user" else "assistant"
                content_type = "thinking" if twin == "thinking" else "text"
                message = self._conversation(
                    out, position, timestamp, twin, "event", said=said, type="event_msg",
                    subtype="item_completed", role=role, text=text, content_type=content_type,
                )
                if content_type == "text":
                    self._remember(role, said[0], [message.uuid])

    # -- turn context and compaction ---------------------------------------

    def _turn_context(self, payload: dict, position: Position, out: list) -> None:
        self._ensure_session(out)
        s = self.s
        s.in_turn = True
        s.cwd = first_text(payload.get("cwd")) or s.cwd
        model = first_text(payload.get("model"), dig(payload, "collaboration_mode", "settings", "model"))
        effort = label(first_text(payload.get("effort"), dig(payload, "collaboration_mode", "settings", "reasoning_effort")))
        update = {}
        if model and model != s.model:
            s.model = update["model"] = model
        if effort and effort != s.effort:
            s.effort = update["reasoning_effort"] = effort
        if s.is_subagent and not s.excluded and model and model.startswith("codex-auto-review"):
            s.excluded = True
            update["is_excluded"] = 1
        if update:
            out.append(Session(id=self.session_id, source=SOURCE, **update))
        out.append(Merged(position, "metadata"))

    def _compacted(self, line: bytes, timestamp: str, ordinal: int | None, position: Position, out: list) -> None:
        """A ``compacted`` line, read without decoding ``replacement_history``
        (but checked to be one whole JSON object first)."""
        if not is_json_object(line):
            out.append(LineError(position, "truncated compacted record"))
            return
        if self._is_replay(timestamp, ordinal=ordinal) and not self._keeps_copy():
            self._ensure_session(out)
            out.append(Merged(position, "replay"))
            return
        cut = line.find(HISTORY_KEY)
        if cut < 0:
            data = decode_line(line, position)
            if isinstance(data, LineError):
                out.append(data)
                return
            payload = data.get("payload") if isinstance(data.get("payload"), dict) else {}
            meta, summary = self._kept(_history_json(payload), _compaction_summary(payload))
            text = _compaction_text(payload, summary=summary)
        else:
            try:
                head = orjson.loads(line[:cut] + b"}}")
            except orjson.JSONDecodeError:
                head = None
            payload = dig(head, "payload") if isinstance(dig(head, "payload"), dict) else {}
            end = _history_end(line, cut)
            items = sum(1 for _ in _HISTORY_ITEM.finditer(line, cut, end))
            size = end - cut - len(HISTORY_KEY)
            meta, summary = self._kept(line[cut:end], _compaction_summary(payload))
            text = _compaction_text(payload, items=items, size=size, summary=summary)
        self._compaction_message(position, timestamp, text, out, type="compacted", summary=summary, meta=meta)

    def _kept(self, history: bytes | None, summary: str) -> tuple[dict | None, str]:
        """The compaction's meta (``preserved_uuids``: the Messages the model kept) and
        its summary: ``summary``, the one it wrote, else the one its replacement history
        hands over (``history``: its JSON, or None when it wrote none)."""
        if history is None:
            kept = self._kept_prompts()
        else:
            repeated = []
            for role, text in _kept_texts(history):
                if role == "user" and text.startswith(HANDOVER_OPENING):
                    summary = summary or text.partition(HANDOVER_END)[2].strip() or text
                    continue
                repeated.append(said_key(role, text))
            kept = _sayers(self.s.said, repeated)
        return ({"preserved_uuids": kept} if kept else None), summary

    def _kept_prompts(self) -> list[str]:
        """The prompts Codex rebuilds a history with when the compaction did not write it:
        the most recent ones within ``KEPT_PROMPT_CHARS`` (the oldest of them cut short)."""
        kept, room = [], KEPT_PROMPT_CHARS
        for uuid, chars in reversed(self.s.prompts):
            if room <= 0:
                break
            kept.append(uuid)
            room -= chars
        return kept[::-1]

    def _compaction_message(
        self, position, timestamp, text, out, *, type, subtype=None, is_meta=0, uuid=None, summary="", meta=None
    ) -> None:
        """The message that stands for a compaction (``text`` says what it
        replaced), and the compaction's ``summary`` when it wrote one."""
        self._ensure_session(out)
        message = self._message(
            position, type, timestamp, uuid=uuid, subtype=subtype, role="user", text=text,
            content_type="text", is_compact_summary=1, is_meta=is_meta, meta=meta,
        )
        out.append(message)
        if type == "compacted":  # the history now holds what it kept, then the summary as a user turn
            kept = set((meta or {}).get("preserved_uuids") or ())
            self.s.turns = [uuid for uuid in self.s.turns if uuid in kept]
            self.s.turns_cut = False
            if summary.strip():  # (a remote compaction's summary is an encrypted item: no user turn)
                self._turn(message.uuid)
        if summary.strip():
            out.append(
                Summary(
                    id=message.uuid,
                    session_id=self.session_id,
                    kind="compaction",
                    content=summary,
                    timestamp=timestamp,
                    message_uuid=message.uuid,
                )
            )
        self.s.previous = ["compacted"]

    def _undecoded_metadata(
        self, kind: str, line: bytes, timestamp: str, ordinal: int | None, position: Position, out: list
    ) -> None:
        if not is_json_object(line):
            out.append(LineError(position, "truncated record"))
            return
        self._ensure_session(out)
        replay = self._is_replay(timestamp, ordinal=ordinal) and not self._keeps_copy()
        if kind == "rollout_reference" and not replay and not self.s.own_content:
            self._sealed_reference(line)
        out.append(Merged(position, "replay" if replay else "metadata"))

    def _sealed_reference(self, line: bytes) -> None:
        """A ``rollout_reference`` read before the rollout's own messages: when it names the
        rollout's own thread, the rollout goes on from a sealed segment of it (``SEGMENT_KEY``),
        read as a rollout of its own: what came before (the first prompt, the usage totals
        its first token count includes) is that segment's."""
        reference = loads_or_none(line)
        thread = first_text(dig(reference, "payload", "thread_id")) if isinstance(reference, dict) else None
        if thread and thread.lower() == self.s.thread.lower():
            self.s.sealed_before = self.s.first_prompt_seen = True


# -- pure helpers -----------------------------------------------------------


@dataclass
class Lineage:
    parent: str | None = None  # parent thread id
    relationship: str | None = None  # subagent | fork
    is_subagent: bool = False
    excluded: bool = False  # guardian / auto-review threads
    agent_type: str | None = None
    nickname: str | None = None
    spawn_call: str | None = None
    reverted: bool = False  # a reverted thread's new rollout, whose totals go on from the earlier one's


def lineage_of(meta: dict, thread: str | None = None, reverted_file: bool = False) -> Lineage:
    """Where a thread comes from, as its ``session_meta`` says.

    Spawned threads name their parent in ``source.subagent.thread_spawn``
    (or ``parent_thread_id``); forks in ``forked_from_id`` or, in paginated
    history mode, ``history_base.thread_id``. A thread/revert's new rollout
    (``reverted_file``: named ``…-<thread>_<rollout>.jsonl``) has a base too,
    its own earlier rollout (``thread``'s, or an earlier revert's): no fork.
    Guardian (auto-review) threads are ``source.subagent.other == "guardian"``,
    or (0.16x+) ``source.internal == "guardian"`` (``thread_source: guardian_review``)
    naming the thread they review in ``parent_thread_id``: an internal thread, like
    ``source.internal == "memory_consolidation"``, is an agent's as a subagent is.
    """
    subagent = dig(meta, "source", "subagent")
    internal = first_text(dig(meta, "source", "internal"))
    spawn = dig(subagent, "thread_spawn") if isinstance(subagent, dict) else None
    spawn = spawn if isinstance(spawn, dict) else {}
    other = first_text(dig(subagent, "other")) if isinstance(subagent, dict) else internal
    guardian_review = meta.get("thread_source") == "guardian_review"
    is_subagent = bool(subagent or internal) or meta.get("thread_source") == "subagent" or guardian_review
    parent = first_text(spawn.get("parent_thread_id"), meta.get("parent_thread_id"))
    reverted = False
    if parent and is_subagent:
        relationship = "subagent"
    else:
        parent = first_text(meta.get("forked_from_id"), dig(meta, "history_base", "thread_id"), parent)
        reverted = bool(parent) and not meta.get("forked_from_id") and (parent == thread or reverted_file)
        parent = None if reverted else parent
        relationship = "fork" if parent else None
    agent_type = first_text(meta.get("agent_role"), spawn.get("agent_role"), other, subagent)
    return Lineage(
        parent=parent,
        relationship=relationship,
        is_subagent=is_subagent,
        excluded=guardian_review or bool(other) and ("guardian" in other or ("auto" in other and "review" in other)),
        agent_type=agent_type if is_subagent else None,
        nickname=first_text(meta.get("agent_nickname"), spawn.get("agent_nickname")),
        spawn_call=first_text(spawn.get("spawn_call_id")),
        reverted=reverted,
    )


def _fallback_thread(path: Path) -> str:
    name = path.name.split(".", 1)[0]
    return name[len("rollout-") :] if name.startswith("rollout-") else name


def _harness(data: dict, key: str) -> bool:
    """Whether a line's harness metadata (``metadata``, beside a response item's payload,
    0.16x+) sets ``key``: a flag, or a delivery's marker."""
    metadata = data.get("metadata")
    return isinstance(metadata, dict) and data.get("type") == "response_item" and bool(metadata.get(key))


def _turn_id(payload: dict) -> Any:
    return (
        payload.get("turn_id")
        or dig(payload, "internal_chat_message_metadata_passthrough", "turn_id")
        or dig(payload, "metadata", "turn_id")
    )


USAGE_KEYS = (
    "input_tokens", "cached_input_tokens", "output_tokens", "reasoning_output_tokens", "total_tokens",
    "cache_write_input_tokens",
)
CACHE_WRITES = USAGE_KEYS.index("cache_write_input_tokens")


def _usage_key(usage: dict) -> list:
    return [as_int(usage.get(key)) for key in USAGE_KEYS]


def _is_injected(text: str) -> bool:
    head = text.lstrip()[:PREFIX_CHARS].lower()
    if head.startswith(REALTIME_DELEGATION):  # a flush of the talk's tail asks for nothing
        found = _DELEGATED.match(text)
        return bool(found and found.group(1))
    return head.startswith(INJECTED_PREFIXES_FOLDED)


def _completion_context_agent(item: dict) -> str | None:
    """The agent whose end a completion context tells of: the one a ``<subagent_notification>``
    names (``agent_path``), else the sender of the agent message."""
    found = _NOTIFICATION.match(_parts_text(item.get("content")) or "")
    if found:
        body = loads_or_none(found.group(1).strip())
        return first_text(body.get("agent_path")) if isinstance(body, dict) else None
    return first_text(item.get("author"))


def _is_notice(item: dict) -> bool:
    """Whether a message item is all of kinds Codex writes in another's name (``NOTICE_KINDS``)."""
    kinds = dig(item, "internal_chat_message_metadata_passthrough", "content_item_kinds")
    return isinstance(kinds, list) and bool(kinds) and all(isinstance(kind, str) and kind in NOTICE_KINDS for kind in kinds)


def _spoken_task(text: str) -> str:
    """What a realtime hand-off or a task another thread delegated asks for (its ``<input>``,
    unescaped), what a scheduled automation was told to do (its ``<instructions>``); else ``text``."""
    head = text.lstrip()[:24]
    if head.startswith(REALTIME_DELEGATION):
        found = _DELEGATED.match(text)
        return html.unescape(found.group(2)) if found else text
    if head.startswith("<codex_delegation>"):
        return _delegated_task(text) or text
    found = _HEARTBEAT.match(text) if head.startswith("<heartbeat>") else None
    return found.group(1).strip() if found else text


def _delegated_task(text: str) -> str | None:
    """The task a ``<codex_delegation>`` hands over, unescaped; None for any other text."""
    found = _THREAD_DELEGATED.match(text)
    return html.unescape(found.group(1)).strip() if found else None


PREFIX_CHARS = max(map(len, INJECTED_PREFIXES))


# A user_message event's attachments, by key, and what each is.
EVENT_ATTACHMENTS = (("images", "image"), ("local_images", "image"), ("audio", "audio"), ("local_audio", "audio"))


def _attachment_notes(urls: Any, kind: str) -> str:
    if not isinstance(urls, list) or not urls:
        return ""
    return "".join(f"\n{_attachment_note(url, kind)}" for url in urls)


def _attachment_note(url: Any, kind: str = "image") -> str:
    """A placeholder for an attached image or audio: inline data by size, links and paths by address."""
    if isinstance(url, str) and (url.startswith("data:") or (url.startswith("[") and url.endswith("]"))):
        return blob_note(url)
    return f"[{kind}: {url}]" if isinstance(url, str) and url else f"[{kind}]"


def _history_json(payload: dict) -> bytes | None:
    """A decoded compaction's replacement history as compact JSON (None when it wrote none)."""
    history = payload.get("replacement_history")
    return None if history is None else dump_json(history)


# What a compacted line writes after its replacement history (0.16x+), in this order:
# a Guardian transcript and retained context hold messages the history does not.
_AFTER_HISTORY = re.compile(
    rb'\],"(?:replacement_history_metadata|guardian_history|retained_context|mcp_resource_origins|'
    rb'window_number|first_window_id|previous_window_id|window_id|compaction_response_id|'
    rb'latest_token_usage_record|resume_metadata)":'
)


def _history_end(line: bytes, cut: int) -> int:
    """Where the replacement history that starts at ``cut`` ends (after its ``]``)."""
    found = _AFTER_HISTORY.search(line, cut)
    return found.start() + 1 if found else len(line.rstrip()) - len(b"}}")


def _kept_texts(history: bytes) -> Iterator[tuple[str, str]]:
    """``(role, _said_text)`` of each user or assistant message in the JSON of a
    replacement history, decoding only their text strings (never an image)."""
    starts = [item.start() for item in _HISTORY_ITEM.finditer(history)]
    for index, start in enumerate(starts):
        message = _HISTORY_MESSAGE.match(history, start)
        if message is None:
            continue
        end = starts[index + 1] if index + 1 < len(starts) else len(history)
        texts = [loads_or_none(b'"' + part.group(1) + b'"') for part in _TEXT_PART.finditer(history, message.end(), end)]
        yield message.group(1).decode(), "\n".join(text for text in texts if isinstance(text, str))


def _said_text(content: Any) -> str:
    """The text parts of an item's content: what a compaction's copy of the item
    repeats exactly (an image in it may be encoded again)."""
    return "\n".join(_said_parts(content))


def _said_parts(content: Any) -> list[str]:
    if isinstance(content, str):
        return [content]
    parts = content if isinstance(content, list) else ()
    return [part["text"] for part in parts if isinstance(part, dict) and isinstance(part.get("text"), str)]


def _sayers(said: dict, repeated: list[str]) -> list[str]:
    """The uuids of the Messages a history repeats (``repeated``: the digests of what
    it says, in order), from ``said``: a text it repeats n times keeps the latest n
    sayings of it (each the Messages that said it)."""
    times, seen, sayers = Counter(repeated), Counter(), {}
    for key in repeated:
        sayings = said.get(key, [])
        index = len(sayings) - times[key] + seen[key]
        seen[key] += 1
        if index >= 0:
            for uuid in sayings[index]:
                sayers.setdefault(uuid)
    return list(sayers)


def _parts_text(content: Any) -> str:
    """Text of a content list; images become placeholders."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif not isinstance(part, dict):
            continue
        elif isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif first_text(part.get("type")) in {"input_image", "image", "output_image"}:
            texts.append(_attachment_note(part.get("image_url") or part.get("data")))
        elif first_text(part.get("type")) == "input_audio":
            texts.append(_attachment_note(part.get("audio_url"), "audio"))
    return "\n".join(texts)


def _reasoning_parts(item: dict) -> list[str]:
    """Summary (and raw content) parts of a reasoning item, each written as
    an event of its own too; never the encrypted content."""
    texts = []
    for key in ("summary", "content"):
        parts = item.get(key)
        if isinstance(parts, list):
            texts.extend(p["text"] for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    return [t for t in texts if t]


def _completed_item_said(item: dict, twin: str) -> list[str]:
    """What a completed item says, as its twins repeat it: the whole text of its
    reasoning, then each part; or the text parts of a message."""
    if twin == "thinking":
        texts = [text for key in ("summary_text", "raw_content") for text in strings_in(item.get(key))]
        parts = [text for text in texts if text]
        return ["\n\n".join(parts), *parts]
    return [_said_text(item.get("content"))]


def _compaction_summary(payload: dict) -> str:
    return payload.get("message") if isinstance(payload.get("message"), str) else ""


def _compaction_text(payload: dict, items: int | None = None, size: int | None = None, *, summary: str) -> str:
    if items is None and isinstance(payload.get("replacement_history"), list):
        history = payload["replacement_history"]
        items, size = len(history), len(dump_json(history))
    if items is None:
        return summary
    note = f"[replacement_history: {items} items, {size} bytes, not stored]"
    return f"{summary}\n\n{note}" if summary else note


def _qualified(item: dict, default: str) -> str:
    """A tool's name under its namespace (``code_mode.exec``), when it has one; an MCP
    server's namespace (``mcp__linear__``, 0.12x+) prefixes it, as the name alone did before."""
    name, namespace = first_text(item.get("name")) or default, first_text(item.get("namespace"))
    if not namespace:
        return name
    return f"{namespace}{name}" if namespace.startswith("mcp__") and namespace.endswith("__") else f"{namespace}.{name}"


def _tool_name_and_input(item: dict, kind: str) -> tuple[str, Any]:
    if kind == "function_call":
        return _qualified(item, "function"), item.get("arguments")
    if kind == "custom_tool_call":
        return _qualified(item, "custom_tool"), item.get("input")
    if kind == "local_shell_call":
        return "local_shell", item.get("action")
    if kind == "tool_search_call":
        return "tool_search", item.get("arguments")
    if kind == "web_search_call":
        return "web_search", item.get("action")
    return kind.removesuffix("_call"), {"revised_prompt": item.get("revised_prompt")}


def _input_json(arguments: Any, decoded: Any) -> str:
    """Tool input as JSON text: JSON argument strings are kept verbatim."""
    if isinstance(arguments, str) and (decoded is not None or arguments.strip() == "null"):
        return arguments
    return as_json(arguments)


def _shell_command(decoded: Any) -> str | None:
    """The script a shell-like tool runs (``bash -lc <script>`` unwrapped)."""
    if not isinstance(decoded, dict):
        return None
    command = decoded.get("cmd") or decoded.get("command")
    if isinstance(command, list) and all(isinstance(c, str) for c in command):
        if len(command) >= 3 and command[-2] in {"-c", "-lc"}:
            return command[-1]
        return " ".join(command)
    return command if isinstance(command, str) else None


def _file_paths(name: str, arguments: Any, decoded: Any, cwd: str | None) -> list[str]:
    """apply_patch header paths, plus files a shell command obviously writes.

    Relative paths are resolved against the call's working folder (its
    ``workdir`` argument, itself relative to the turn's cwd, else that cwd), so file history can be
    asked for by absolute path.
    """
    if isinstance(arguments, str) and decoded is None:
        text = arguments
    else:
        text = "\n".join(strings_in(decoded or arguments))
    paths = patch_paths(text)
    if name in SHELL_TOOLS or name.rsplit(".", 1)[-1] in SHELL_TOOLS:
        script = _shell_command(decoded if isinstance(decoded, dict) else arguments)
        if script and "*** Begin Patch" not in script:
            paths += shell_written_paths(script)
    given = decoded if isinstance(decoded, dict) else arguments if isinstance(arguments, dict) else {}
    workdir = given.get("workdir") or given.get("working_directory")  # (a local_shell_call's action)
    base = absolute_path(workdir, cwd) if isinstance(workdir, str) and workdir else cwd
    return unique(absolute_path(path, base) for path in paths)


def _output_text(item: dict) -> tuple[str, int | None]:
    """The readable output of a tool and its exit code when it states one."""
    output = item.get("output")
    if item.get("type") == "tool_search_output" and output is None:
        # the tools it found, which hold no text parts: kept whole as JSON
        output = as_json(item["tools"]) if item.get("tools") else None
    exit_code = None
    if isinstance(output, str):
        wrapped = loads_or_none(output) if output.startswith('{"output"') else None
        if isinstance(wrapped, dict) and isinstance(wrapped.get("output"), str):
            code = dig(wrapped, "metadata", "exit_code")
            return wrapped["output"], code if isinstance(code, int) else None
        text = output
    elif isinstance(output, dict) and ("text" in output or output.get("type")):
        text = _parts_text([output])
    elif isinstance(output, list):
        text = _parts_text(output)
    elif isinstance(output, dict) and isinstance(output.get("content"), (str, list)):
        text = _parts_text(output["content"])
    elif output is None:
        text = ""
    else:
        text = as_json(output)
    match = _EXIT_CODE.search(_output_header(text))
    if match and len(match.group(1).lstrip("-")) <= 18:  # a code SQLite can store
        exit_code = int(match.group(1))
    return text, exit_code


def _output_header(text: str) -> str:
    """What Codex wrote before a command's own output: the lines before its
    ``Output:`` line, else all of a short report that starts as one does."""
    head = text[:EXIT_SCAN_CHARS]
    start = _OUTPUT_START.search(head)
    if start:
        return head[: start.start()]
    return head if head.startswith(HEADER_STARTS) else ""


def _output_outcome(text: str, exit_code: int | None, item: dict) -> str:
    head = text[:EXIT_SCAN_CHARS].lower()
    if text.strip() == "aborted" or head.startswith("aborted by user") or SHELL_ABORTED.fullmatch(head.strip()):
        return "cancelled"
    # Codex's refusal is the whole first line; a command's output that
    # mentions a refusal (a grep hit, a log) is not one.
    first_line = head.split("\n", 1)[0]
    if exit_code is None and any(marker in first_line for marker in REJECTION_MARKERS):
        return "blocked"
    if exit_code not in (None, 0) or item.get("success") is False or _is_tool_error(text):
        return "failed"
    return "succeeded"


def _is_tool_error(text: str) -> bool:
    """Whether an output is Codex's own report of a failed call: one of its
    error wordings at the very start, or an MCP result flagged ``isError``."""
    return text.startswith(TOOL_ERROR_PREFIXES) or (
        text.startswith('{"content"') and _mcp_is_error(text)
    )


def _mcp_failed(result: Any) -> bool:
    """Whether an ``mcp_tool_call_end`` result is an error (``Err``) or flagged one (``isError``)."""
    return isinstance(result, dict) and ("Err" in result or dig(result, "Ok", "isError") is True)


def _mcp_item_failed(item: dict) -> bool:
    """Whether a completed ``McpToolCall`` item failed (its status, an error, or a result flagged one)."""
    return (
        first_text(item.get("status")) == "failed" or bool(item.get("error"))
        or dig(item, "result", "isError") is True
    )


def _mcp_is_error(text: str) -> bool:
    result = loads_or_none(text)
    return isinstance(result, dict) and result.get("isError") is True


def _status_outcome(status: Any) -> str | None:
    status = first_text(status)
    if status in {"completed", "succeeded", "success"}:
        return "succeeded"
    if status in {"failed", "incomplete", "error"}:
        return "failed"
    if status in {"cancelled", "canceled", "aborted"}:
        return "cancelled"
    return None


def _immediate_result_text(item: dict) -> str:
    if item.get("type") == "web_search_call":
        action = item.get("action") if isinstance(item.get("action"), dict) else {}
        return first_text(action.get("query"), action.get("url"), action.get("pattern")) or ""
    return first_text(item.get("revised_prompt")) or ""


def _spawned_thread(payload: dict) -> str | None:
    if payload.get("type") == "sub_agent_activity" and payload.get("kind") != "started":
        return None
    return first_text(payload.get("new_thread_id"), payload.get("agent_thread_id"))


def _spawned_by_item(item: dict) -> str | None:
    """The thread a completed item says a spawn started: a SubAgentActivity of kind started,
    a spawn_agent CollabAgentToolCall with one receiver."""
    if item.get("type") == "SubAgentActivity":
        if item.get("kind") != "started":
            return None
        return first_text(item.get("agent_thread_id"), item.get("agentThreadId"))
    receivers = item.get("receiver_thread_ids")
    if item.get("tool") in {"spawn_agent", "spawnAgent"} and isinstance(receivers, list) and len(receivers) == 1:
        return first_text(receivers[0])
    return None


def _event_text(payload: dict, kind: str) -> str:
    if kind == "exited_review_mode":
        review = payload.get("review_output") if isinstance(payload.get("review_output"), dict) else {}
        findings = review.get("findings") if isinstance(review.get("findings"), list) else []
        lines = [
            "\n".join(t for t in (f.get("title"), f.get("body")) if isinstance(t, str))
            for f in findings
            if isinstance(f, dict)
        ]
        return "\n\n".join([*lines, first_text(review.get("overall_explanation")) or ""]).strip()
    if kind == "entered_review_mode":
        return first_text(payload.get("user_facing_hint"), payload.get("prompt")) or ""
    if kind == "thread_rolled_back":
        turns = payload.get("num_turns", "?")
        return f"rolled back {turns} turn{'' if turns == 1 else 's'}"
    return first_text(payload.get("message"), payload.get("text")) or ""
