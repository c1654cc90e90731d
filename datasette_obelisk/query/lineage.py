"""The lineage page's model: a session's whole forest, and one event's chains.

    session_forest(conn, session_id) -> dict
        ``trace``: the contract's ``traceSession`` of the session;
        ``tree``: the forest from the topmost known ancestor down, as nested
        ``{"session": record, "descendants": [...]}`` (the contract's node
        shape); ``rows``: the ``sessions`` row (title, counts) of every id in
        it, by id; ``steps``: the tree in page order (``tree_steps``).
    event_chains(conn, session_id, seq, event_id=None) -> dict
        ``trace``: the contract's ``traceEvent``; ``parent_chain``: the
        message's ancestors root first then the message (helper ``trace``),
        each with the session and seq it lives at and the start of its text.
        A long chain is cut: the root, then the ``CHAIN_SHOWN`` messages
        nearest the event; ``chain_length`` counts the whole chain and
        ``chain_omitted`` the messages left out after the root.
"""

from __future__ import annotations

import sqlite3

from . import obelisk
from .events import event_type_sql
from .session_query import TRACE_LINKS, SessionQuery

CHAIN_SHOWN = 50  # ancestors nearest the event a page lists (after the root)
CHAIN_TEXT = 200  # characters of each one's text
NESTED_SHOWN = 100  # levels of the session forest a page nests (browsers stop nesting elements about 512 deep)


def session_forest(conn: sqlite3.Connection, session_id: str) -> dict:
    service = SessionQuery(conn)
    trace = service.trace_session(session_id)
    top = service.trace_session(trace["ancestors"][-1]["header"]["id"]) if trace["ancestors"] else trace
    tree = {"session": top["target"], "descendants": top["descendants"]}
    steps = tree_steps(tree)
    ids = [step["node"]["session"]["header"]["id"] for step in steps if step["node"]]
    found: dict = {}
    for start in range(0, len(ids), obelisk.MAX_LIMIT):  # (a forest may hold more sessions than one call lists)
        some = ids[start:start + obelisk.MAX_LIMIT]
        found.update((row["id"], row) for row in obelisk.sessions(conn, {"sessions": some, "limit": len(some)}))
    return {"trace": trace, "tree": tree, "steps": steps, "rows": found}


def tree_steps(tree: dict, nested: int = NESTED_SHOWN) -> list[dict]:
    """The forest in page order, without recursion (a lineage may be a thousand generations
    deep): ``{"node", "depth", "opens", "deeper"}`` for each session, ``opens`` when its
    children follow one level in, and ``{"node": None}`` where such a level closes.
    Sessions deeper than ``nested`` levels are listed at that level (``deeper``)."""
    steps: list[dict] = []
    waiting: list = [(tree, 0)]  # (a node still to list, its depth) or None: a level to close
    while waiting:
        item = waiting.pop()
        if item is None:
            steps.append({"node": None})
            continue
        node, depth = item
        opens = bool(node["descendants"]) and depth < nested
        steps.append({"node": node, "depth": depth, "opens": opens, "deeper": depth > nested})
        if opens:
            waiting.append(None)
        waiting += [(child, depth + 1) for child in reversed(node["descendants"])]
    return steps


def event_chains(conn: sqlite3.Connection, session_id: str, seq: int, event_id: str | None = None) -> dict:
    """The event's trace and parent chain; ``event_id`` (its id, when known) names it wherever
    an ingest moved it since ``seq`` was taken. ``seq_ids``: the id of each event the trace
    names (as the trace gives it), so that links to them name the same events after a later ingest."""
    trace = SessionQuery(conn).trace_event({"sessionId": session_id, "seq": seq, **({"id": event_id} if event_id else {})})
    uuid = trace["target"]["id"]
    seq_ids = {trace["target"]["seq"]: uuid}
    for seqs, ids in TRACE_LINKS:
        seq_ids.update(zip(trace[seqs], trace[ids]))
    chain = obelisk.trace_uuids(conn, uuid)
    shown = chain if len(chain) <= CHAIN_SHOWN + 1 else [chain[0], *chain[-CHAIN_SHOWN:]]
    columns = f"uuid, session_id, seq, role, type, {event_type_sql('messages')} AS event_type, substr(text, 1, {CHAIN_TEXT}) AS text"
    return {
        "trace": trace,
        "seq_ids": seq_ids,
        "parent_chain": [dict(row) for row in obelisk.messages_by_uuid(conn, shown, columns)],
        "chain_length": len(chain),
        "chain_omitted": len(chain) - len(shown),
        "chain_cut": obelisk.goes_on_above(conn, chain),
    }
