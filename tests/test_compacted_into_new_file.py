"""A Claude Code 2.1 conversation that went on in a new session after a compaction:
the new file opens with the compacted session's titles and a ``compact_boundary``
line (``parentUuid`` null) whose ``logicalParentUuid`` names the last line of the
compacted session's file. The new session is that one's continuation."""

import json
import re
import sqlite3

import pytest

from datasette_obelisk.query import lineage, obelisk
from datasette_obelisk.query.session_query import SessionQuery
from dbsnapshot import diff, rows, snapshot
from test_families import each_arrival, said
from web_fixtures import make_datasette

COMPACTED, CONTINUED = "bbbbbbbb-0000-4000-8000-000000000001", "aaaaaaaa-0000-4000-8000-000000000002"
SUMMARY = ("This session is being continued from a previous conversation that ran out of context. "
           "The conversation is summarized below:\nThe parser was fixed.")


def reply(uuid, parent, second, session, text):
    return json.dumps({"type": "assistant", "uuid": uuid, "parentUuid": parent, "sessionId": session,
                       "timestamp": f"2026-01-01T00:00:{second:02d}Z",
                       "message": {"role": "assistant", "id": f"msg-{uuid}",
                                   "content": [{"type": "text", "text": text}]}})


def boundary(uuid, before, second, session):
    return json.dumps({"type": "system", "subtype": "compact_boundary", "uuid": uuid, "parentUuid": None,
                       "logicalParentUuid": before, "sessionId": session, "content": "Conversation compacted",
                       "level": "info", "isMeta": False, "timestamp": f"2026-01-01T00:00:{second:02d}Z",
                       "compactMetadata": {"trigger": "auto", "preTokens": 180000}})


def logs() -> dict:
    return {
        COMPACTED: "\n".join([
            json.dumps({"type": "custom-title", "customTitle": "Fix the parser", "sessionId": COMPACTED}),
            said("u1", None, 1, COMPACTED, "fix the parser"),
            reply("u2", "u1", 2, COMPACTED, "fixed"),
        ]) + "\n",
        CONTINUED: "\n".join([
            json.dumps({"type": "custom-title", "customTitle": "Fix the parser", "sessionId": CONTINUED}),
            boundary("c0", "u2", 10, CONTINUED),
            said("c1", "c0", 11, CONTINUED, SUMMARY, isCompactSummary=True, isVisibleInTranscriptOnly=True),
            said("c2", "c1", 12, CONTINUED, "now the tests"),
            reply("c3", "c2", 13, CONTINUED, "written"),
        ]) + "\n",
    }


def test_a_session_a_compaction_went_on_in_is_the_continuation_of_the_compacted_one(tmp_path):
    """Read together, the compacted file first or the new one first: the same
    link, each file keeping its own lines, the same rows."""
    got = {}
    orders = [None, (COMPACTED, CONTINUED), (CONTINUED, COMPACTED)]
    for order, db, _ in each_arrival(tmp_path, logs(), orders, older={COMPACTED}):
        assert rows(db, "SELECT id, parent_session_id, relationship, title FROM sessions ORDER BY id") == [
            (CONTINUED, COMPACTED, "continuation", "Fix the parser"),
            (COMPACTED, None, None, "Fix the parser")], order
        assert rows(db, "SELECT session_id, group_concat(uuid) FROM messages GROUP BY 1 ORDER BY 1") == [
            (CONTINUED, "c0,c1,c2,c3"), (COMPACTED, "u1,u2")], order
        got[order] = snapshot(db)
    for order, snap in got.items():
        assert snap == got[None], (order, diff(snap, got[None]))


def test_a_compaction_in_the_session_s_own_file_links_no_session(tmp_path):
    """The boundary of a compaction the file itself holds names its own line: no parent."""
    own = "\n".join([said("u1", None, 1, COMPACTED, "fix the parser"), reply("u2", "u1", 2, COMPACTED, "fixed"),
                     boundary("c0", "u2", 10, COMPACTED),
                     said("c1", "c0", 11, COMPACTED, SUMMARY, isCompactSummary=True),
                     said("c2", "c1", 12, COMPACTED, "now the tests")]) + "\n"
    fresh = "\n".join([json.dumps({"type": "summary", "summary": "Parser fixed", "leafUuid": "u2"}),
                       said("f1", None, 20, CONTINUED, "an unrelated task")]) + "\n"
    for _, db, _ in each_arrival(tmp_path, {COMPACTED: own, CONTINUED: fresh}, [None], older={COMPACTED}):
        # (a summary line naming another session's leaf titles it; a first prompt naming
        # no line goes on from none: Claude Code 1.0 wrote those into unrelated sessions)
        assert rows(db, "SELECT id, parent_session_id, relationship FROM sessions ORDER BY id") == [
            (CONTINUED, None, None), (COMPACTED, None, None)]


@pytest.fixture
def continued_db(tmp_path):
    (_, db, _), = each_arrival(tmp_path, logs(), [None], older={COMPACTED})
    return db


def test_the_lineage_of_a_compaction_s_new_session_shows_the_compacted_one(continued_db):
    conn = sqlite3.connect(continued_db)
    conn.row_factory = sqlite3.Row
    trace = SessionQuery(conn).trace_session(CONTINUED)
    assert trace["target"]["header"]["parentSession"] == COMPACTED
    assert trace["target"]["header"]["relationship"] == "continuation"
    assert [a["header"]["id"] for a in trace["ancestors"]] == [COMPACTED]
    assert trace["complete"] is True and trace["root"]["header"]["id"] == COMPACTED
    below = SessionQuery(conn).trace_session(COMPACTED)["descendants"]
    assert [(d["session"]["header"]["id"], d["session"]["header"]["relationship"]) for d in below] == [
        (CONTINUED, "continuation")]
    listed = obelisk.sessions(conn, {"sessions": [COMPACTED, CONTINUED]})
    assert sorted((r["id"], r["parent_session_id"], r["relationship"]) for r in listed) == [
        (CONTINUED, COMPACTED, "continuation"), (COMPACTED, None, None)]
    forest = lineage.session_forest(conn, COMPACTED)
    assert [(s["node"]["session"]["header"]["id"], s["depth"]) for s in forest["steps"] if s["node"]] == [
        (COMPACTED, 0), (CONTINUED, 1)]


@pytest.mark.asyncio
async def test_the_lineage_page_and_trace_json_link_a_compaction_s_new_session(continued_db):
    ds = make_datasette(continued_db)
    response = await ds.client.get(f"/-/obelisk/api/session-query/session/{CONTINUED}/trace")
    assert response.status_code == 200
    trace = response.json()
    assert [a["header"]["id"] for a in trace["ancestors"]] == [COMPACTED]
    assert trace["target"]["header"]["relationship"] == "continuation"
    response = await ds.client.get(f"/-/obelisk/session/{COMPACTED}/lineage")
    assert response.status_code == 200
    html = response.text
    assert "1 direct child" in html
    tree = html[html.index('<ul class="ob-tree"'):]
    assert re.findall(r'href="/-/obelisk/session/([0-9a-f-]+)"', tree)[:2] == [COMPACTED, CONTINUED]
    html = (await ds.client.get(f"/-/obelisk/session/{CONTINUED}/lineage")).text
    assert "1 ancestor" in html and "complete to the root" in html


def test_the_generator_writes_a_compaction_going_on_in_a_new_file_and_ingest_links_it(tmp_path):
    """Each continued file the generator writes opens with a boundary naming the last
    line of another session's file; ingested, it is that session's continuation."""
    from datasette_obelisk.demo.generator import generate
    from datasette_obelisk.store.ingest import ingest

    stats = generate(tmp_path / "gen", seed=5, target_bytes=1_000_000, codex=False)
    assert stats.claude.continued_files == 1
    expected = []
    files = {p.stem: [json.loads(line) for line in p.read_text().splitlines()]
             for p in (tmp_path / "gen" / ".claude" / "projects").glob("*/*.jsonl")}
    last_uuid = {session: [d["uuid"] for d in lines if "uuid" in d][-1] for session, lines in files.items()}
    for session, lines in files.items():
        first = next(d for d in lines if "uuid" in d)
        if first.get("subtype") == "compact_boundary":
            parent = [s for s, uuid in last_uuid.items() if uuid == first["logicalParentUuid"]]
            assert first["parentUuid"] is None and len(parent) == 1 and parent[0] != session
            assert [d["type"] for d in lines[:lines.index(first)]] == ["ai-title", "custom-title"]
            expected.append((session, parent[0], "continuation"))
    assert len(expected) == 1
    db = tmp_path / "o.db"
    ingest(db, {"claude": tmp_path / "gen" / ".claude"})
    assert rows(db, "SELECT id, parent_session_id, relationship FROM sessions WHERE source = 'claude' "
                    "AND relationship = 'continuation' ORDER BY id") == expected
