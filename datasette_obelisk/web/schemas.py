"""JSON Schemas (OpenAPI 3.1) of what the endpoints return, after the seed contracts.

They name the keys each contract promises (``required``) and their types;
extra keys are allowed, as the helpers return whole rows.
"""

from __future__ import annotations

import functools
import sqlite3


def obj(required: dict, **extra) -> dict:
    """An object whose keys in ``required`` must be present, with those schemas."""
    return {"type": "object", "required": list(required), "properties": required, **extra}


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
ANY = {}

ERROR = obj(
    {"ok": {"const": False}, "error": obj({"code": STRING, "message": STRING})},
    description="Every error: a code from the closed taxonomy and a message",
)

# -- Obelisk helpers --------------------------------------------------------

COMPACT_MESSAGE = obj(
    {name: ANY for name in ("uuid", "text", "content_type", "is_meta", "role", "timestamp", "model", "cwd", "source")}
)
MESSAGE_ROW = {"$ref": "#/components/schemas/Message"}
SQL_TYPES = {"INTEGER": "integer", "TEXT": "string", "REAL": "number"}


@functools.cache
def message_schema() -> dict:
    """A ``messages`` row, every column typed, read from the schema the migrations create."""
    from ..store.db import migrate

    conn = sqlite3.connect(":memory:")
    try:
        migrate(conn)
        columns = conn.execute("SELECT name, type, \"notnull\" FROM pragma_table_info('messages')").fetchall()
    finally:
        conn.close()
    properties = {
        name: {"type": SQL_TYPES[kind] if notnull else [SQL_TYPES[kind], "null"]} for name, kind, notnull in columns
    }
    return {**obj(properties), "additionalProperties": False, "description": "A messages row"}
SESSION_ROW = obj(
    {"id": STRING, "source": STRING, "title": OPT_STRING, "project": OPT_STRING, "started_at": OPT_STRING,
     "ended_at": OPT_STRING, "message_count": INTEGER}
)
SEARCH_HIT = obj(
    {
        "message": COMPACT_MESSAGE,
        "session": obj({"id": STRING, "title": OPT_STRING, "project": OPT_STRING, "started_at": OPT_STRING, "source": OPT_STRING}),
        "rank": NUMBER,
        "context": array(COMPACT_MESSAGE),
    }
)
CONTEXT = obj(
    {
        "message": MESSAGE_ROW,
        "parentChain": array(MESSAGE_ROW),
        "session": nullable(SESSION_ROW),
        "subagent": nullable({"type": "object"}),
        "workflow": nullable({"type": "object"}),
    }
)
RAW = obj({"text": STRING, "totalLength": INTEGER, "offset": INTEGER, "limit": INTEGER, "hasMore": BOOLEAN})
MEMORY_ROW = obj(
    {"id": STRING, "path": STRING, "summary": STRING, "anchors": ANY, "project": OPT_STRING,
     "session_id": OPT_STRING, "created_at": STRING}
)
OVERVIEW = obj(
    {
        "current": obj({"cwd": OPT_STRING, "project": nullable({"type": "object"})}),
        "current_project": nullable(
            obj({"project": OPT_STRING, "project_path": OPT_STRING, "session_total": INTEGER,
                 "sessions": array({"type": "object"}), "memory_total": INTEGER, "memories": array({"type": "object"})})
        ),
        "projects": array(
            obj({"project": OPT_STRING, "project_path": OPT_STRING, "session_count": INTEGER, "memory_count": INTEGER,
                 "last_session_at": OPT_STRING, "last_memory_at": OPT_STRING, "recent_branches": array(STRING)})
        ),
        "totals": obj({"projects": INTEGER, "sessions": INTEGER, "memories": INTEGER,
                       "sources": array(obj({"source": STRING, "session_count": INTEGER, "last_session_at": OPT_STRING}))}),
    }
)
SUMMARY_ROW = obj({"id": STRING, "session_id": STRING, "timestamp": OPT_STRING, "source": STRING, "content": STRING,
                   "session_title": OPT_STRING, "project": OPT_STRING})
SUBAGENT_ROW = obj({"agent_id": STRING, "session_id": STRING, "child_session_id": OPT_STRING, "messageCount": INTEGER})
WORKFLOW_TREE = obj({"run_id": STRING, "session_id": STRING, "result": ANY, "agents": array({"type": "object"})})
TOOL_CALL = obj({"id": STRING, "message_uuid": STRING, "name": STRING, "input_json": OPT_STRING})
FILE_HISTORY_ITEM = obj(
    {"toolCall": TOOL_CALL, "session": obj({"id": STRING, "title": OPT_STRING, "project": OPT_STRING}),
     "timestamp": OPT_STRING}
)
FAILURE = obj(
    {"toolCall": nullable(TOOL_CALL), "result": obj({"tool_use_id": STRING, "outcome": STRING, "content": STRING}),
     "session": obj({"id": STRING, "title": OPT_STRING, "project": OPT_STRING}),
     "nextMessages": array(COMPACT_MESSAGE)}
)
REMEMBERED = obj({"id": STRING, "path": STRING, "project": OPT_STRING, "anchors": ANY, "created_at": STRING})
FORGOTTEN = obj({"id": STRING, "deleted_at": STRING, "deleted_reason": OPT_STRING})
FORGOTTEN["properties"]["already_deleted"] = {"const": True, "description": "present when it was archived before"}

# -- session-query contract -------------------------------------------------


def page(item: dict, **extra_required) -> dict:
    """``SessionSearchPage<T>``: items, and nextCursor unless it is the last page."""
    schema = obj({"items": array(item), **extra_required})
    schema["properties"]["nextCursor"] = STRING
    return schema


SURFACE = {"enum": ["current", "shadowed", "log-only"]}
HEADER = obj(
    {"version": INTEGER, "id": STRING, "createdAt": INTEGER, "source": STRING},
    description="SessionHeader (cwd, parentSession, relationship, agentPreset when known)",
)
SESSION_RECORD = obj({"header": HEADER, "live": BOOLEAN, "persisted": BOOLEAN})
EVENT_RECORD = obj({"sessionId": STRING, "seq": INTEGER, "type": STRING, "time": OPT_INTEGER, "surface": SURFACE})
EVENT = obj({**EVENT_RECORD["properties"], "id": STRING, "data": {"type": "object"}})
EVENT_SEARCH_HIT = obj({**EVENT_RECORD["properties"], "snippet": STRING})
SESSION_SEARCH_HIT = obj({**SESSION_RECORD["properties"], "bestMatch": EVENT_SEARCH_HIT})
EVENT_SEARCH_PAGE = page(EVENT_SEARCH_HIT, session=HEADER)
LOG_SNAPSHOT = obj({"session": HEADER, "events": array(EVENT)})
SURFACE_SNAPSHOT = obj({"session": HEADER, "capturedThroughSeq": OPT_INTEGER, "events": array(EVENT)})
LINEAGE_NODE = obj({"session": SESSION_RECORD, "descendants": array({"$ref": "#/components/schemas/LineageNode"})})
LINEAGE_TRACE = {
    **obj({"target": SESSION_RECORD, "ancestors": array(SESSION_RECORD),
           "descendants": array({"$ref": "#/components/schemas/LineageNode"})}),
    "oneOf": [
        obj({"complete": {"const": True}, "root": SESSION_RECORD}),
        obj({"complete": {"const": False}, "unresolvedParentId": STRING}),
    ],
}
EVENT_WINDOW = obj({"session": HEADER, "target": EVENT, "events": array(EVENT), "startSeq": INTEGER, "endSeq": INTEGER})
SEQS = array(INTEGER)
EVENT_TRACE = obj(
    {"session": HEADER, "target": EVENT_RECORD, "replacementChain": SEQS, "replacedEventSeqs": SEQS,
     "sourceEventSeqs": SEQS, "derivedEventSeqs": SEQS}
)
EVENT_TRACE["properties"]["replacedBy"] = INTEGER
COMPONENTS = {"Error": ERROR, "LineageNode": LINEAGE_NODE}

# -- history contract ------------------------------------------------------------

DESCRIPTOR = obj(
    {"sessionId": STRING, "attributes": {"type": "object", "additionalProperties": STRING},
     "createdAt": INTEGER, "updatedAt": INTEGER, "snippets": array(STRING)}
)
DESCRIPTOR["properties"]["digest"] = obj({"title": STRING, "summary": STRING, "updatedThroughEntryId": STRING})
TEXT_ENTRY = obj({"id": STRING, "sourceIds": array(STRING), "type": {"enum": ["user", "assistant"]},
                  "timestamp": INTEGER, "content": ANY})
TOOL_ENTRY = obj({"id": STRING, "sourceIds": array(STRING), "type": {"const": "tool"}, "timestamp": INTEGER,
                  "name": STRING, "arguments": ANY, "result": ANY,
                  "outcome": {"enum": ["succeeded", "failed", "blocked", "cancelled"]}})
HISTORY_SEARCH = obj({"sessions": array(DESCRIPTOR)})
HISTORY_SEARCH["properties"]["nextCursor"] = STRING
HISTORY_READ = obj({"session": DESCRIPTOR, "entries": array({"oneOf": [TEXT_ENTRY, TOOL_ENTRY]})})
HISTORY_READ["properties"]["nextCursor"] = STRING
