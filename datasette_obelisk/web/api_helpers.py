"""``/-/obelisk/api/<helper>``: the Obelisk helper vocabulary over HTTP.

Each endpoint calls the helper of ``query/obelisk.py`` of its name, spelt for a
URL (``workflowTree`` is ``/workflow-tree``, ``fileHistory`` ``/file-history``
with ``path``, ``search`` takes its text as ``q``).
Options are query-string parameters under the helper reference's names
(``sessionId``, ``includeMeta``, ``limit``...), typed by the helper's own
option table; a list (``sessions``) is JSON. Unknown options are refused by
the helper itself. A helper that answers ``null`` (an unknown uuid or run)
answers ``null`` here too, as the contract says. ``thread`` answers the whole session, or with ``limit`` a
page; its ``X-Total-Count`` and ``Link: <...>; rel="next"`` headers say
what remains.
"""

from __future__ import annotations

from ..query import obelisk, prompts
from . import schemas as s
from .endpoints import Endpoint, Param

RESERVED = {"db"}
SCOPE = (
    Param("project", description="SQL LIKE pattern over the session's project"),
    Param("source", description="claude, codex, gemini ..."),
)
TIME = (Param("after", description="ISO lower bound"), Param("before", description="ISO upper bound"))


def limit(default: int, maximum: int = obelisk.MAX_LIMIT, description: str = "maximum rows") -> Param:
    return Param("limit", "integer", description, default=default, minimum=1, maximum=maximum)


def offset(description: str) -> Param:
    return Param("offset", "integer", description, default=0, minimum=0, maximum=obelisk.MAX_OFFSET - 1)
SESSION_ID = Param("sessionId", description="restrict to one session")
SESSIONS = Param("sessions", "json", 'restrict to these session ids (JSON array)')


def helper_options(params, skip: set[str]) -> dict:
    """Every non-empty query-string parameter, typed by the helper option table."""
    found = {}
    for key in params.args.keys():
        if key in skip or key in RESERVED or params.args.get(key) == "":
            continue
        kind = obelisk.OPTION_TYPES.get(obelisk.CAMEL.get(key, key), str)
        if kind is int:
            found[key] = params.integer(key)
        elif kind is bool:
            found[key] = params.boolean(key)
        elif kind is list:
            found[key] = params.json(key)
        else:
            found[key] = params.text(key)
    return found


def calling(helper, positional: str | None = None, takes_options: bool = True):
    """A handler that calls ``helper`` with the request's options; its ``None`` is JSON ``null``."""

    def handler(conn, params):
        args = [params.text(positional, required=True)] if positional else []
        if takes_options:
            args.append(helper_options(params, {positional} if positional else set()))
        return helper(conn, *args)

    return handler


def overview_over_http(conn, options):
    """``overview``, never guessing the project from the server process's working directory."""
    return obelisk.overview(conn, options, use_process_cwd=False)


def recent_sessions(conn, params):
    return obelisk.recent(conn, params.integer("n", default=10))


def prompt_scope(conn, params, helper: str) -> dict:
    """``project`` and ``source`` of a prompts request, a misspelt source refused
    (as ``helper`` refuses its other options)."""
    source = params.text("source")
    if source is not None:
        source = obelisk.known_source(conn, {"source": source}, helper)["source"]
    return {"project": params.text("project"), "source": source}


def prompts_over_http(conn, params):
    """``query/prompts.prompts``, its mode read in any case (as /search reads its mode)."""
    given = params.text("mode", default="terms")
    options = dict(
        session_id=params.text("sessionId"), missing=params.boolean("missing"), mode=given.strip().lower(),
        limit=params.integer("limit", default=50, minimum=1, maximum=prompts.MAX_LIMIT),
        offset=params.integer("offset", default=0, minimum=0, maximum=prompts.MAX_OFFSET - 1),
        **prompt_scope(conn, params, "prompts"),
    )
    return prompts.prompts(conn, params.text("query"), **options)


def prompt_orphans_over_http(conn, params):
    limit = params.integer("limit", default=50, minimum=1, maximum=prompts.MAX_LIMIT)
    return prompts.orphans(conn, limit=limit, **prompt_scope(conn, params, "orphans"))


def endpoint(path, helper, summary, params=(), response=None, paged=False, **calling_options) -> Endpoint:
    return Endpoint(
        path=path,
        handler=calling(helper, **calling_options),
        summary=summary,
        tag="helpers",
        params=tuple(params),
        response=response or {"type": "object"},
        paged=paged,
    )


HELPER_ENDPOINTS = [
    endpoint(
        "/search", obelisk.search, "Full-text search over message text, best rank first",
        [Param("q", required=True, description="the search text (FTS5 syntax honoured; falls back to safe quoting)"),
         Param("mode", description="fts (the default) | terms | phrase | raw (force one query form)"), limit(20), SESSION_ID, *SCOPE, *TIME,
         Param("cwd", description="SQL LIKE pattern over messages.cwd"),
         Param("includeMeta", "boolean", "include is_meta rows")],
        s.array(s.SEARCH_HIT), positional="q",
    ),
    endpoint(
        "/context", obelisk.context, "One message with its parent chain, session, subagent and workflow",
        [Param("uuid", required=True)], s.nullable(s.CONTEXT), positional="uuid", takes_options=False,
    ),
    endpoint(
        "/trace", obelisk.trace, "The parent chain of a message, root first",
        [Param("uuid", required=True)], s.array(s.TRACE_MESSAGE), positional="uuid", takes_options=False,
    ),
    endpoint(
        "/thread", obelisk.thread_page, "A session's messages ordered by time: the whole session, or a page",
        [Param("sessionId", required=True), Param("includeMeta", "boolean"),
         Param("limit", "integer", "a page of at most this many (default: the whole session)",
               minimum=1, maximum=lambda: obelisk.MAX_THREAD),  # (thread() reads it when called)
         offset("skip this many"),
         Param("afterUuid", description="go on after this message (the last of the page before) wherever it "
               "now is, instead of offset; OBELISK_NOT_FOUND once the session no longer holds it")],
        s.array(s.MESSAGE_ROW), positional="sessionId", paged=True,
    ),
    endpoint(
        "/raw", obelisk.raw, "A character window of a message's original log line",
        [Param("uuid", required=True), offset("character offset into the log line"),
         limit(obelisk.RAW_LIMIT, obelisk.MAX_RAW_LIMIT, "maximum characters")], s.nullable(s.RAW), positional="uuid",
    ),
    endpoint(
        "/overview", overview_over_http,
        "Projects, totals and the current project's sessions and memories (the current project only from project or cwd)",
        [Param("project", description="project slug or LIKE pattern"), Param("cwd"),
         limit(8, description="maximum sessions of the current project"),
         Param("projectLimit", "integer", "maximum projects", default=20, minimum=1, maximum=obelisk.MAX_LIMIT),
         Param("memoryLimit", "integer", "maximum memories of the current project", default=100, minimum=1,
               maximum=obelisk.MAX_LIMIT)],
        s.OVERVIEW,
    ),
    endpoint(
        "/sessions", obelisk.sessions, "Sessions, most recently ended first",
        [*SCOPE, *TIME, Param("branch"), SESSION_ID, SESSIONS, limit(50)], s.array(s.SESSION_ROW),
    ),
    Endpoint(
        "/recent", recent_sessions, "The n most recently ended sessions: sessions with limit n", "helpers",
        (Param("n", "integer", "how many sessions", default=10, minimum=1, maximum=obelisk.MAX_LIMIT),), s.array(s.SESSION_ROW),
    ),
    endpoint(
        "/summaries", obelisk.summaries, "Away and compaction summaries, newest first",
        [SESSION_ID, SESSIONS, *SCOPE, *TIME, Param("branch"), limit(100)], s.array(s.SUMMARY_ROW),
    ),
    endpoint(
        "/memories", obelisk.memories, "Active memories; with query, FTS-ranked",
        [Param("query", description="English recall query"), SESSION_ID, SESSIONS, *SCOPE, *TIME, Param("branch"), limit(50)],
        s.array(s.MEMORY_ROW),
    ),
    endpoint(
        "/subagents", obelisk.subagents, "Subagents with their transcript's message count",
        [SESSION_ID, *SCOPE, limit(100)], s.array(s.SUBAGENT_ROW),
    ),
    endpoint(
        "/workflows", obelisk.workflows, "Workflow runs, newest first",
        [SESSION_ID, *SCOPE, *TIME, limit(100)], s.array(s.WORKFLOW_ROW),
    ),
    endpoint(
        "/workflow-tree", obelisk.workflow_tree, "One workflow run with its parsed result and agents",
        [Param("runId", required=True)], s.nullable(s.WORKFLOW_TREE), positional="runId", takes_options=False,
    ),
    endpoint(
        "/file-history", obelisk.file_history, "Tool calls that touched a file, oldest first",
        [Param("path", required=True, description="absolute file path"), SESSION_ID, *SCOPE, *TIME, limit(200),
         offset("skip this many of the oldest")],
        s.array(s.FILE_HISTORY_ITEM), positional="path",
    ),
    endpoint(
        "/failures", obelisk.failures, "Failed tool results with the next three messages",
        [SESSION_ID, *SCOPE, *TIME, limit(50)], s.array(s.FAILURE),
    ),
    Endpoint(
        "/prompts", prompts_over_http,
        "Prompts the agents' prompt logs kept (history.jsonl, Gemini's logs.json), newest first or best match "
        "first; also of sessions whose transcripts are gone", "helpers",
        (Param("query", description="search text (FTS5 terms as obelisk search takes them)"),
         Param("mode", description="terms (the default) | phrase | raw: the query's form"),
         SESSION_ID,
         Param("project", description="SQL LIKE pattern over the folder the prompt was typed in"),
         SCOPE[1],
         Param("missing", "boolean", "only prompts no stored transcript holds (in_transcript 0)"),
         limit(50, prompts.MAX_LIMIT), offset("skip this many")),
        s.array(s.PROMPT_ROW),
    ),
    Endpoint(
        "/prompts/orphans", prompt_orphans_over_http,
        "Sessions known only from the prompt logs (no stored transcript holds them), latest prompt first", "helpers",
        (Param("project", description="SQL LIKE pattern over the folder the prompts were typed in"), SCOPE[1],
         limit(50, prompts.MAX_LIMIT)),
        s.array(s.PROMPT_ORPHAN),
    ),
]
