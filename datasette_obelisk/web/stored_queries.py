"""Stored queries for the helper vocabulary, registered for every obelisk database.

They are plain SQL over our schema (the SQL functions ``obelisk_fts``,
``obelisk_snippet`` and ``obelisk_trace`` included), so they run from the
Datasette UI and as ``/DB/obelisk_search.json?q=...``. Every parameter is
optional: an empty value means "no filter". They are trusted (they run
where arbitrary SQL is off) and read-only.

They read parameters as the helpers do and refuse what the helpers refuse:
``limit`` is a whole number from 1 to ``MAX_LIMIT``; booleans are 1/0,
true/false, yes/no, on/off in any case; ``after`` / ``before`` are ISO 8601
(``bound_sql``); ``mode`` is terms or phrase in any case. Plain SQL cannot
raise an error of its own, so a refusal is a JSON-path error whose path is
the message: SQLite shows ``JSON path error near '<message>'``. The checks
sit in the LIMIT clause, which SQLite evaluates once, before any row.
"""

from __future__ import annotations

from dataclasses import dataclass

from datasette.utils import named_parameters

from ..query.moments import bound_sql, moment_sql
from ..query.obelisk import MAX_LIMIT, THREAD_PLACEMENT, TOP_LEVEL
from .params import FALSE, TRUE
from .sql_functions import MAX_QUERY_CHARS


@dataclass(frozen=True)
class StoredQuery:
    name: str
    title: str
    description: str
    sql: str

    @property
    def parameters(self) -> list[str]:
        return list(dict.fromkeys(named_parameters(self.sql)))


# Shared filters. Values are strings from the form; '' disables a filter.
PROJECT = "(:project = '' OR s.project LIKE :project)"
SOURCE = "(:source = '' OR s.source = :source COLLATE NOCASE)"  # (Claude is claude, as the helpers read it)
SESSION = "(:session_id = '' OR {col} = :session_id)"


def sql_set(values) -> str:
    return "(" + ", ".join(f"'{value}'" for value in sorted(values)) + ")"


def given(param: str) -> str:
    return f"trim({param}) != ''"


def refusal(condition: str, message: str, param: str) -> tuple[str, str]:
    """A check: when ``condition`` holds, fail with ``message`` and the parameter's value."""
    return condition, f"'{message}, not \"' || {param} || '\"'"


def limit_check() -> tuple[str, str]:
    bad = f"trim(:limit) GLOB '*[^0-9]*' OR CAST(:limit AS INTEGER) NOT BETWEEN 1 AND {MAX_LIMIT}"
    return refusal(f"{given(':limit')} AND ({bad})", f"limit must be a whole number from 1 to {MAX_LIMIT}", ":limit")


def boolean_check(param: str) -> tuple[str, str]:
    return refusal(f"lower(trim({param})) NOT IN {sql_set(TRUE | FALSE)}",
                   f"{param[1:]} must be 1/0, true/false, yes/no or on/off", param)


def is_true(param: str) -> str:
    return f"lower(trim({param})) IN {sql_set(TRUE)}"


def bound_check(param: str, instant: str) -> tuple[str, str]:
    """Refuses ``param`` when it is given but its ``instant`` (``bound_sql``) is NULL."""
    return refusal(f"{given(param)} AND {instant} IS NULL",
                   f"{param[1:]} must be an ISO 8601 date or time, such as 2025-06-14 or 2025-06-14T11:01:31Z", param)


def mode_check() -> tuple[str, str]:
    return refusal("lower(trim(:mode)) NOT IN ('', 'terms', 'phrase')", "mode must be terms or phrase", ":mode")


def query_check() -> tuple[str, str]:
    """What ``obelisk_fts`` takes (past it, NULL: MATCH would fail without saying why)."""
    return f"length(:q) > {MAX_QUERY_CHARS}", f"'q takes at most {MAX_QUERY_CHARS:,} characters, not ' || length(:q)"


def offset_check() -> tuple[str, str]:
    return refusal(f"{given(':offset')} AND trim(:offset) GLOB '*[^0-9]*'", "offset must be a whole number", ":offset")


def limit(default: int | None, *checks: tuple[str, str], paged: bool = False) -> str:
    """The LIMIT clause: refuses the first failing check, else ``:limit`` or ``default`` (None: no limit);
    ``paged``: from row ``:offset`` (Datasette returns at most ``max_returned_rows``)."""
    if default is not None:
        checks = (limit_check(), *checks)
    if paged:
        checks = (*checks, offset_check())
    refusals = "\n  ".join(f"WHEN {condition} THEN json_extract('{{}}', {message})" for condition, message in checks)
    value = f"COALESCE(NULLIF(trim(:limit), ''), {default})" if default is not None else "-1"
    clause = f"LIMIT CASE\n  {refusals}\n  ELSE {value} END" if refusals else f"LIMIT {value}"
    return clause + ("\nOFFSET CAST(COALESCE(NULLIF(trim(:offset), ''), 0) AS INTEGER)" if paged else "")


def rows_at_once(datasette) -> int:
    """The most rows a stored query lists at once: its ``limit``'s most, or Datasette's
    ``max_returned_rows`` when that is fewer."""
    return min(MAX_LIMIT, datasette.setting("max_returned_rows"))


PAGED = ("Datasette returns at most max_returned_rows (1,000 unless configured) rows at once: "
         "offset skips that many, so a longer one reads in pages.")


QUERIES = [
    StoredQuery(
        "obelisk_search",
        "Search messages",
        "Full-text search over message text. Every term must match (mode 'phrase' for an exact phrase); "
        "ordinary text never causes an FTS syntax error. Filters: project (LIKE), source, session_id.",
        f"""
select m.uuid, m.session_id, s.title as session_title, s.project, m.source, m.role,
  m.timestamp, obelisk_snippet(m.text, :q) as snippet, bm25(messages_fts) as rank
from messages_fts
join messages m on m.id = messages_fts.rowid
join sessions s on s.id = m.session_id
where messages_fts match obelisk_fts(:q, coalesce(nullif(trim(:mode), ''), 'terms'))
  and m.is_meta = 0 and coalesce(s.is_excluded, 0) = 0 and {PROJECT} and {SOURCE}
  and {SESSION.format(col="m.session_id")}
order by rank, m.timestamp desc
{limit(20, mode_check(), query_check())}
""",
    ),
    StoredQuery(
        "obelisk_context",
        "Message context",
        "One message with its session, its depth in the parent chain, and the subagent or workflow it belongs to.",
        """
select m.uuid, m.session_id, m.seq, m.role, m.type, m.timestamp, m.model, m.surface,
  s.title as session_title, s.project, s.source,
  json_array_length(obelisk_trace(m.uuid)) - 1 as depth,
  sa.agent_type as subagent_type, sa.description as subagent_description,
  wa.run_id as workflow_run_id, m.text
from messages m
join sessions s on s.id = m.session_id
left join subagents sa on sa.child_session_id = m.session_id
left join workflow_agents wa on wa.agent_id = m.agent_id
where m.uuid = :uuid
""",
    ),
    StoredQuery(
        "obelisk_trace",
        "Parent chain",
        "The parent_uuid chain of one message, root first (built by the obelisk_trace() SQL function). " + PAGED,
        f"""
select chain.key as depth, m.uuid, m.role, m.type, m.timestamp, m.surface,
  substr(m.text, 1, 500) as text
from json_each(obelisk_trace(:uuid)) as chain
join messages m on m.uuid = chain.value
order by chain.key
{limit(None, paged=True)}
""",
    ),
    StoredQuery(
        "obelisk_thread",
        "Session thread",
        "The messages of one session ordered by time, as thread() orders them. "
        "include_meta (1/0, true/false, yes/no, on/off) adds injected and structural lines. " + PAGED,
        f"""
{THREAD_PLACEMENT}
select m.seq, m.uuid, m.role, m.type, m.content_type, m.timestamp, m.surface,
  substr(m.text, 1, 1000) as text
from placed join messages m on m.id = placed.id
where (m.is_meta = 0 or {is_true(':include_meta')})
order by placed.at, placed.seq
{limit(None, boolean_check(':include_meta'), paged=True)}
""",
    ),
    StoredQuery(
        "obelisk_overview",
        "Overview by source and project",
        "Sessions, messages, tokens and last activity per source and project, over the sessions "
        "that sessions() lists (an agent's transcript only when its parent is not stored).",
        f"""
select s.source, s.project, count(*) as sessions, sum(s.message_count) as messages,
  sum(s.input_tokens + s.output_tokens) as tokens, max(s.ended_at) as last_session_at,
  (select count(*) from memories mem where mem.project = s.project and mem.deleted_at is null) as memories
from sessions s
where {TOP_LEVEL} and {PROJECT} and {SOURCE}
group by s.source, s.project
order by last_session_at desc
""",
    ),
    StoredQuery(
        "obelisk_sessions",
        "Sessions",
        "Sessions, newest first, as sessions() lists them (an agent's transcript only when its parent "
        "is not stored). Filters: project (LIKE), source, branch, started after/before "
        "(ISO 8601, compared as instants; a year or a month means its first instant; "
        "a bound that is no time is refused with an error).",
        f"""
with bounds as (select {bound_sql(':after')} as after, {bound_sql(':before')} as before)
select s.id, s.title, s.source, s.project, s.git_branch, s.model, s.started_at, s.ended_at,
  s.message_count, s.relationship, s.parent_session_id, s.availability
from sessions s, bounds b
where {TOP_LEVEL} and {PROJECT} and {SOURCE}
  and (:branch = '' or s.git_branch = :branch)
  and (trim(:after) = '' or {moment_sql('s.started_at')} >= b.after)
  and (trim(:before) = '' or {moment_sql('s.started_at')} <= b.before)
order by {moment_sql('s.ended_at')} desc, s.id
{limit(50, bound_check(':after', '(select after from bounds)'), bound_check(':before', '(select before from bounds)'))}
""",
    ),
    StoredQuery(
        "obelisk_summaries",
        "Summaries",
        "Away and compaction summaries, newest first, with their session, as summaries() lists them.",
        f"""
select su.id, su.session_id, su.timestamp, su.source as kind, s.title as session_title,
  s.project, su.content
from summaries su
left join sessions s on s.id = su.session_id
where {SESSION.format(col="su.session_id")} and {PROJECT} and {SOURCE}
order by {moment_sql('su.timestamp')} desc, su.id
{limit(100)}
""",
    ),
    StoredQuery(
        "obelisk_memories",
        "Memories",
        "Active memories, newest first; with q, those whose path or summary match every term, best first.",
        f"""
select mem.id, mem.path, mem.summary, mem.anchors, mem.project, mem.session_id, mem.created_at
from memories mem
left join (select rowid, rank from memories_fts where memories_fts match obelisk_fts(:q)) found
  on found.rowid = mem.pk
where mem.deleted_at is null
  and (:project = '' or mem.project like :project)
  and (:q = '' or found.rowid is not null)
order by found.rank, {moment_sql('mem.created_at')} desc, mem.pk desc
{limit(50, query_check())}
""",
    ),
    StoredQuery(
        "obelisk_subagents",
        "Subagents",
        "Subagents with the session that started them and their message counts, newest first "
        "(as subagents() lists them, those whose parent session is missing included).",
        f"""
select sa.agent_id, sa.session_id, sa.child_session_id, sa.agent_type, sa.description,
  sa.duration_ms, sa.total_tokens,
  (select count(*) from messages m where m.session_id = sa.child_session_id) as message_count
from subagents sa
left join sessions s on s.id = sa.session_id
left join sessions c on c.id = sa.child_session_id
where {SESSION.format(col="sa.session_id")} and {PROJECT} and {SOURCE}
order by c.started_at desc, sa.id desc
{limit(100)}
""",
    ),
    StoredQuery(
        "obelisk_workflows",
        "Workflow runs",
        "Workflow runs, newest first, with their agent counts, as workflows() lists them "
        "(those whose session's log was never read included).",
        f"""
select w.run_id, w.session_id, w.workflow_name, w.status, w.timestamp, w.agent_count,
  w.duration_ms, w.total_tokens
from workflows w
left join sessions s on s.id = w.session_id
where {SESSION.format(col="w.session_id")} and {PROJECT} and {SOURCE}
order by {moment_sql('w.timestamp')} desc, w.run_id
{limit(100)}
""",
    ),
    StoredQuery(
        "obelisk_file_history",
        "File history",
        "Every tool call that touched a path, across sessions and agents, oldest first, as fileHistory() "
        "lists them. The path is exact (as fileHistory() takes it: //, ./ and a trailing slash aside) "
        "unless it contains %, which makes it a LIKE pattern "
        "(case-insensitive for ASCII, _ matching any one character).",
        f"""
select coalesce(c.timestamp, m.timestamp) as timestamp, c.name as tool, r.outcome, c.session_id,
  s.title as session_title, s.source, s.project, f.path, c.id as tool_call_id, c.message_uuid
from tool_call_files f
join tool_calls c on c.id = f.tool_call_id
left join messages m on m.uuid = c.message_uuid
left join sessions s on s.id = c.session_id
left join tool_results r on r.tool_use_id = c.id
where (case when instr(:path, '%') then f.path like :path else f.path = obelisk_normal_path(:path) end) and {SOURCE}
order by {moment_sql('coalesce(c.timestamp, m.timestamp)')}, c.id
{limit(200)}
""",
    ),
    StoredQuery(
        "obelisk_failures",
        "Failures",
        "Failed tool results (outcome failed, or flagged as an error: blocked calls included), as failures() "
        "lists them, newest first, with their error output and the next message after the failure.",
        f"""
select coalesce(r.timestamp, rm.timestamp) as timestamp, c.name as tool, r.outcome, r.exit_code, r.session_id,
  s.title as session_title,
  s.project, s.source, substr(r.content, 1, 500) as error,
  (select substr(n.text, 1, 300) from messages n
   where n.session_id = rm.session_id and n.seq > rm.seq and n.is_meta = 0 and n.text != ''
   order by n.seq limit 1) as next_message,
  r.tool_use_id
from tool_results r
left join messages rm on rm.uuid = r.message_uuid
left join sessions s on s.id = r.session_id
left join tool_calls c on c.id = r.tool_use_id
where (r.outcome = 'failed' or r.is_error = 1) and {SESSION.format(col="r.session_id")} and {PROJECT} and {SOURCE}
order by {moment_sql('coalesce(r.timestamp, rm.timestamp)')} desc, r.id desc
{limit(50)}
""",
    ),
]


def configured_names(datasette, database: str) -> set[str]:
    """The stored queries the instance's own configuration names for ``database``."""
    databases = (datasette.config or {}).get("databases") or {}
    return set((databases.get(database) or {}).get("queries") or {})


async def register_stored_queries(datasette, database: str) -> None:
    """Ours, but for a query of the same name in the configuration: that one wins."""
    mine = configured_names(datasette, database)
    for query in QUERIES:
        if query.name in mine:
            continue
        await datasette.add_query(
            database,
            query.name,
            query.sql.strip(),
            title=query.title,
            description=query.description,
            parameters=query.parameters,
            is_trusted=True,
            replace=True,
        )
