"""JSON Schemas (OpenAPI 3.1) of what the endpoints return, after the seed contracts.

Every object is closed (``additionalProperties: false``) and lists every key
its endpoint returns; a key that is only sometimes there is a property that
is not ``required``. Table rows are typed from the schema the migrations
create, row subsets by the field lists the helpers select; shapes built in
code are written here once. Free-form payloads (parsed JSON) say so.

What depends on the migrated tables is ``Deferred``: the migrations run
into an in-memory database only when the OpenAPI document is first built
(``resolve``), never when Datasette imports the plugin.
"""

from __future__ import annotations

import functools
import sqlite3

from ..query import obelisk
from ..query.filters import ATTRIBUTES, SURFACES


class Deferred:
    """A schema built on first use (it reads the migrated tables), then kept."""

    def __init__(self, build):
        self._build = build

    @functools.cached_property
    def value(self):
        return resolve(self._build())


def resolve(schema):
    """``schema`` with every ``Deferred`` in it built."""
    if isinstance(schema, Deferred):
        return schema.value
    if isinstance(schema, dict):
        return {key: resolve(value) for key, value in schema.items()}
    if isinstance(schema, list):
        return [resolve(value) for value in schema]
    return schema


def obj(required: dict, optional: dict | None = None, **extra) -> dict:
    """A closed object: the keys of ``required`` always present, those of ``optional`` sometimes."""
    return {
        "type": "object",
        "required": list(required),
        "properties": {**required, **(optional or {})},
        "additionalProperties": False,
        **extra,
    }


def array(items: dict) -> dict:
    return {"type": "array", "items": items}


def nullable(schema: dict) -> dict:
    return {"anyOf": [schema, {"type": "null"}]}


STRING = {"type": "string"}
OPT_STRING = {"type": ["string", "null"]}
INTEGER = {"type": "integer"}
OPT_INTEGER = {"type": ["integer", "null"]}
NUMBER = {"type": "number"}
BOOLEAN = {"type": "boolean"}
PARSED_JSON = {"description": "a stored JSON text, parsed (the text itself when it is not JSON)"}

ERROR = obj(
    {"ok": {"const": False}, "error": obj({"code": STRING, "message": STRING})},
    description="Every error: a code from the closed taxonomy and a message",
)

# -- table rows ---------------------------------------------------------------

SQL_TYPES = {"INTEGER": "integer", "TEXT": "string", "REAL": "number"}


@functools.cache
def migrated_columns() -> dict:
    """``{table: [(column, type, notnull, pk)]}`` of the schema the migrations create, read once."""
    from ..store.db import INDEXED_FORMS, migrate

    conn = sqlite3.connect(":memory:")
    try:
        migrate(conn)
        tables = [name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        query = 'SELECT name, type, "notnull", pk FROM pragma_table_info(?)'
        return {table: [column for column in conn.execute(query, [table]).fetchall() if column[0] != INDEXED_FORMS.get(table)]
                for table in tables}
    finally:
        conn.close()


def table_columns(table: str) -> dict:
    """``{column: schema}`` of a table, typed as the migrations declare it (a key is never null)."""
    return {
        name: {"type": SQL_TYPES[kind] if notnull or pk else [SQL_TYPES[kind], "null"]}
        for name, kind, notnull, pk in migrated_columns()[table]
    }


def row(table: str, fields=None, extra: dict | None = None, optional: dict | None = None, **options) -> Deferred:
    """A closed row of ``table`` (or of its ``fields``), with ``extra`` keys added or retyped, ``optional`` ones added."""

    def build() -> dict:
        columns = table_columns(table)
        properties = {name: columns[name] for name in fields or columns}
        return obj({**properties, **(extra or {})}, optional, **options)

    return Deferred(build)


def message_schema() -> Deferred:
    """A ``messages`` row, every column typed."""
    return row("messages", description="A messages row")


def session_schema() -> Deferred:
    """A ``sessions`` row, every column typed."""
    return row("sessions", description="A sessions row")


def components() -> dict:
    return {"Error": ERROR, "LineageNode": LINEAGE_NODE, "Message": message_schema(), "Session": session_schema()}


# -- Obelisk helpers --------------------------------------------------------

MESSAGE_ROW = {"$ref": "#/components/schemas/Message"}
SESSION_ROW = {"$ref": "#/components/schemas/Session"}
COMPACT_MESSAGE = row("messages", obelisk.MESSAGE_FIELDS)
TRACE_MESSAGE = row("messages", optional={"chain_cut": {
    **BOOLEAN, "description": f"on the first message only: true when the chain was cut at {obelisk.MAX_CHAIN:,} "
                              "ancestors, below the conversation's root"}})
SESSION_BRIEF = obj({"id": STRING, "title": OPT_STRING, "project": OPT_STRING})
SEARCH_HIT = obj(
    {
        "message": COMPACT_MESSAGE,
        "session": obj({**SESSION_BRIEF["properties"], "started_at": OPT_STRING, "source": OPT_STRING}),
        "rank": NUMBER,
        "context": array(COMPACT_MESSAGE),
    }
)
WORKFLOW_AGENT = row(
    "workflow_agents", extra={"run": nullable(row("workflows", obelisk.WORKFLOW_RUN_FIELDS))}
)
CONTEXT = obj(
    {
        "message": MESSAGE_ROW,
        "parentChain": array(TRACE_MESSAGE),
        "session": nullable(SESSION_ROW),
        "subagent": nullable(row("subagents")),
        "workflow": nullable(WORKFLOW_AGENT),
    }
)
RAW = obj({"text": STRING, "totalLength": INTEGER, "offset": INTEGER, "limit": INTEGER, "hasMore": BOOLEAN})
MEMORY_ROW = row(
    "memories", obelisk.MEMORY_FIELDS, {"anchors": PARSED_JSON},
    optional={"rank": {**NUMBER, "description": "with query: the FTS rank, best (lowest) first"}},
)
SCOPE = obj({"project": OPT_STRING, "project_path": OPT_STRING, "source": STRING, "confidence": STRING})
OVERVIEW = obj(
    {
        "current": obj({"cwd": OPT_STRING, "project": nullable(SCOPE)}),
        "current_project": nullable(
            obj({"project": OPT_STRING, "project_path": OPT_STRING, "session_total": INTEGER,
                 "sessions": array(row("sessions", obelisk.OVERVIEW_SESSION_FIELDS)), "memory_total": INTEGER,
                 "memories": array(row("memories", obelisk.OVERVIEW_MEMORY_FIELDS, {"anchors": PARSED_JSON}))})
        ),
        "projects": array(
            obj({"project": OPT_STRING, "project_path": OPT_STRING, "session_count": INTEGER, "memory_count": INTEGER,
                 "last_session_at": OPT_STRING, "last_memory_at": OPT_STRING, "recent_branches": array(STRING)})
        ),
        "totals": obj({"projects": INTEGER, "sessions": INTEGER, "memories": INTEGER,
                       "sources": array(obj({"source": STRING, "session_count": INTEGER, "last_session_at": OPT_STRING}))}),
    }
)
SUMMARY_ROW = row("summaries", extra={"session_title": OPT_STRING, "project": OPT_STRING})
SUBAGENT_ROW = row("subagents", extra={"messageCount": INTEGER})
WORKFLOW_ROW = row("workflows")
WORKFLOW_TREE = row(
    "workflows",
    extra={
        "result": {"type": ["object", "array", "null"], "additionalProperties": True,
                   "description": "result_json parsed, when it is an object or array"},
        "agents": array(row("workflow_agents", extra={"messageCount": INTEGER})),
    },
)
TOOL_CALL = row("tool_calls", obelisk.TOOL_CALL_FIELDS)
FILE_HISTORY_ITEM = obj({"toolCall": TOOL_CALL, "session": SESSION_BRIEF, "timestamp": OPT_STRING})
FAILURE = obj(
    {"toolCall": nullable(TOOL_CALL), "result": row("tool_results"), "session": SESSION_BRIEF,
     "nextMessages": array(COMPACT_MESSAGE)}
)
PROMPT_ROW = row(
    "prompt_log", ("id", "source", "session_id", "project", "timestamp", "text", "pasted_json"),
    {"in_transcript": {"enum": [0, 1], "description": "1 when a stored transcript holds the prompt's session"},
     "file_path": OPT_STRING, "line_no": OPT_INTEGER},
    description="A prompt the agents' prompt logs kept (a browse_prompts row)",
)
PROMPT_ORPHAN = obj(
    {"session_id": STRING, "source": STRING, "project": OPT_STRING, "prompts": INTEGER, "first_at": OPT_STRING,
     "last_at": OPT_STRING, "first_prompt": OPT_STRING},
    description="A session known only from the prompt logs: no stored transcript holds it",
)
ANCHORED = {"anchors": PARSED_JSON}
REMEMBERED = row(
    "memories", ("id", "path", "project", "anchors", "created_at"), ANCHORED,
    {"already_registered": {"const": True, "description": "present when an active memory held exactly these values"}},
)
FORGOTTEN = obj(
    {"id": STRING, "deleted_at": STRING, "deleted_reason": OPT_STRING},
    {"already_deleted": {"const": True, "description": "present when it was archived before"}},
)

# -- session-query contract -------------------------------------------------


def page(item: dict, **extra_required) -> dict:
    """``SessionSearchPage<T>``: items, and nextCursor unless it is the last page."""
    return obj({"items": array(item), **extra_required}, {"nextCursor": STRING})


def column(table: str, name: str) -> Deferred:
    return Deferred(lambda: table_columns(table)[name])


SURFACE = {"enum": list(SURFACES)}
HEADER = obj(
    {"version": INTEGER, "id": STRING, "createdAt": INTEGER, "source": STRING},
    {"cwd": STRING, "parentSession": STRING, "relationship": STRING, "agentPreset": STRING},
    description="SessionHeader: cwd, parentSession, relationship and agentPreset when known",
)
SESSION_RECORD = obj({"header": HEADER, "live": BOOLEAN, "persisted": BOOLEAN})
# An event's id (an extension on records, the contract's own on SessionEvent): the message's uuid,
# which names the same event after an ingest appends to, renumbers or reads again its session.
EVENT_ID = Deferred(lambda: {
    **table_columns("messages")["uuid"],
    "description": "the event's id: stays when its log grows or is read again, and names the same event after an "
    "ingest renumbered its session (readEvent and traceEvent take it as id)",
})
EVENT_IDS = array(EVENT_ID)
RECORD_FIELDS = {"sessionId": STRING, "seq": INTEGER, "id": EVENT_ID, "type": STRING, "time": OPT_INTEGER,
                 "surface": SURFACE}
EVENT_RECORD = obj(RECORD_FIELDS)
FILTERED_EVENT = obj(RECORD_FIELDS, {"text": {**STRING, "description": "the semantic text: only with filters"}})
# SessionEvent.data: its key and the messages column it is read from.
EVENT_DATA_COLUMNS = {
    "role": "role", "rawType": "type", "subtype": "subtype", "contentType": "content_type",
    "parentId": "parent_uuid", "replacedBy": "replaced_by", "text": "text",
}
EVENT_DATA = obj(
    {**{key: column("messages", name) for key, name in EVENT_DATA_COLUMNS.items()}, "isMeta": BOOLEAN},
    {
        "toolCalls": array(obj({"id": column("tool_calls", "id"), "name": column("tool_calls", "name"),
                                "input": PARSED_JSON})),
        "toolResults": array(obj({"toolUseId": column("tool_results", "tool_use_id"),
                                  "outcome": column("tool_results", "outcome"), "isError": BOOLEAN,
                                  "exitCode": column("tool_results", "exit_code")})),
    },
)
EVENT = obj(
    {**RECORD_FIELDS, "visibility": column("messages", "visibility"),
     "data": EVENT_DATA}
)
SNIPPET_MATCHES = array(
    {**array(INTEGER), "minItems": 2, "maxItems": 2, "description": "[start, end) code-point offsets into the snippet"}
)
EVENT_SEARCH_HIT = obj({**RECORD_FIELDS, "snippet": STRING,
                        "snippetMatches": SNIPPET_MATCHES})
SESSION_SEARCH_HIT = obj({**SESSION_RECORD["properties"], "bestMatch": EVENT_SEARCH_HIT})
EVENT_SEARCH_PAGE = page(EVENT_SEARCH_HIT, session=HEADER)
LOG_SNAPSHOT = obj({"session": HEADER, "events": array(EVENT)}, {"nextCursor": STRING})
SURFACE_SNAPSHOT = obj({"session": HEADER, "capturedThroughSeq": OPT_INTEGER, "capturedThroughId": nullable(EVENT_ID),
                        "events": array(EVENT)})
LINEAGE_NODE = obj({"session": SESSION_RECORD, "descendants": array({"$ref": "#/components/schemas/LineageNode"})})
LINEAGE = {"target": SESSION_RECORD, "ancestors": array(SESSION_RECORD),
           "descendants": array({"$ref": "#/components/schemas/LineageNode"})}
LINEAGE_TRACE = {
    "oneOf": [
        obj({**LINEAGE, "complete": {"const": True}, "root": SESSION_RECORD}),
        obj({**LINEAGE, "complete": {"const": False}, "unresolvedParentId": STRING}),
    ],
}
TITLE_SNAPSHOT = obj(
    {"title": STRING, "messageSeqs": array(INTEGER), "messageIds": EVENT_IDS, "source": STRING, "kind": STRING,
     "eventSeq": OPT_INTEGER, "eventId": nullable(EVENT_ID), "updatedAt": OPT_INTEGER},
)
TITLE_OBSERVATION = obj({"session": HEADER}, {"title": TITLE_SNAPSHOT})
TITLE_RESULT = {"oneOf": [
    obj({"sessionId": STRING, "status": {"const": "fulfilled"}, "value": TITLE_OBSERVATION}),
    obj({"sessionId": STRING, "status": {"const": "rejected"}, "reason": obj({"code": STRING, "message": STRING})}),
]}
EVENT_WINDOW = obj({"session": HEADER, "target": EVENT, "events": array(EVENT), "startSeq": INTEGER, "endSeq": INTEGER})
SEQS = array(INTEGER)
EVENT_TRACE = obj(
    {"session": HEADER, "target": EVENT_RECORD, "replacementChain": SEQS, "replacementChainIds": EVENT_IDS,
     "replacedEventSeqs": SEQS, "replacedEventIds": EVENT_IDS, "sourceEventSeqs": SEQS, "sourceEventIds": EVENT_IDS,
     "derivedEventSeqs": SEQS, "derivedEventIds": EVENT_IDS},
    {"replacedBy": INTEGER, "replacedById": EVENT_ID},
    description="Each list of seqs comes with the ids of the same events, in the same order (replacedBy with "
    "replacedById): the seqs are places in the log as it is now, the ids name the events after an ingest",
)

# -- history contract ------------------------------------------------------------

DESCRIPTOR = obj(
    {"sessionId": STRING, "attributes": obj({}, {name: STRING for name in ATTRIBUTES}),
     "createdAt": INTEGER, "updatedAt": INTEGER, "snippets": array(STRING), "snippetMatches": array(SNIPPET_MATCHES)},
    {"digest": obj({"title": STRING, "summary": STRING, "updatedThroughEntryId": STRING})},
)
TEXT_ENTRY = obj({"id": STRING, "sourceIds": array(STRING), "type": {"enum": ["user", "assistant"]},
                  "timestamp": INTEGER, "content": STRING})
TOOL_ENTRY = obj({"id": STRING, "sourceIds": array(STRING), "type": {"const": "tool"}, "timestamp": INTEGER,
                  "name": STRING, "arguments": PARSED_JSON, "result": OPT_STRING,
                  "outcome": {"enum": ["succeeded", "failed", "blocked", "cancelled"]}})
HISTORY_SEARCH = obj({"sessions": array(DESCRIPTOR)}, {"nextCursor": STRING})
HISTORY_READ = obj({"session": DESCRIPTOR, "entries": array({"oneOf": [TEXT_ENTRY, TOOL_ENTRY]})},
                   {"nextCursor": STRING})
