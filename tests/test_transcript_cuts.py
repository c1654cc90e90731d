"""The quick ways the transcript finds a line's page and the options a session has
agree with the rules as ``page_start`` and single lookups state them."""

from __future__ import annotations

import random

import pytest

from datasette_obelisk.query import transcript
from datasette_obelisk.store.db import open_db

LISTED = "COALESCE(subtype, '') != 'compact_boundary' AND NOT is_compact_summary AND type != 'compacted'"


def add_line(conn, session: str, seq: int, content_type: str = "text", **fields) -> str:
    uuid = f"{session}-{seq}"
    row = {"uuid": uuid, "session_id": session, "seq": seq, "source": "claude", "type": "user",
           "content_type": content_type, "file_id": 1, "line_no": seq, "byte_offset": seq, "byte_length": 1, **fields}
    conn.execute(f"INSERT INTO messages ({', '.join(row)}) VALUES ({', '.join('?' * len(row))})", list(row.values()))
    return uuid


def add_call(conn, session: str, call: str, line: str) -> None:
    conn.execute("INSERT INTO tool_calls (id, message_uuid, session_id, name, file_id) VALUES (?, ?, ?, 'Bash', 1)",
                 [call, line, session])


def add_result(conn, session: str, call: str, line: str) -> None:
    conn.execute("INSERT INTO tool_results (tool_use_id, message_uuid, session_id, file_id) VALUES (?, ?, ?, 1)",
                 [call, line, session])


def made_up_session(conn, rng: random.Random, session: str, lines: int) -> None:
    """Calls and their outputs anywhere: right after the call or lines later, several on
    one line, a call whose output comes first, one answered in another session, one unanswered."""
    pending, answered_first, n = [], [], 0
    other = f"{session}-other"
    add_line(conn, other, 1, "tool_use")
    for seq in range(1, lines + 1):
        kind = rng.choice(["text", "call", "call", "result", "result", "result", "early", "elsewhere"])
        if kind == "call" or (kind == "result" and not pending):
            line = add_line(conn, session, seq, "tool_use")
            for _ in range(rng.choice([1, 1, 2])):
                n += 1
                add_call(conn, session, f"{session}-c{n}", line)
                pending.append(f"{session}-c{n}")
            for call in [c for c in answered_first if rng.random() < 0.5]:  # (its output came first)
                add_call(conn, session, call, line)
                answered_first.remove(call)
        elif kind == "result":
            line = add_line(conn, session, seq, "tool_result")
            for _ in range(rng.choice([1, 1, 2])):
                if pending:
                    add_result(conn, session, pending.pop(rng.randrange(len(pending))), line)
        elif kind == "early":  # an output before its call (or with no call stored)
            n += 1
            line = add_line(conn, session, seq, "tool_result")
            add_result(conn, session, f"{session}-c{n}", line)
            answered_first.append(f"{session}-c{n}")
        elif kind == "elsewhere":  # the output of a call another session's line made
            n += 1
            add_call(conn, other, f"{session}-c{n}", f"{other}-1")
            add_result(conn, session, f"{session}-c{n}", add_line(conn, session, seq, "tool_result"))
        else:
            add_line(conn, session, seq)


def page_by_page(conn, session: str, seq: int, limit: int) -> int | None:
    """The first line of the page showing ``seq``, reading the pages from the first."""
    start = 1
    while (following := transcript.page_start(conn, session, start, limit)) is not None and following <= seq:
        start = following
    return None if start == 1 else start


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_line_s_page_is_the_one_reading_page_by_page_reaches(tmp_path, seed):
    rng = random.Random(seed)
    conn = open_db(tmp_path / "cuts.db")
    made_up_session(conn, rng, "s", 160)
    conn.commit()
    seqs = list(range(1, 161))
    for limit in (1, 2, 3, 5, 7, 50):
        expected = {seq: page_by_page(conn, "s", seq, limit) for seq in seqs}
        assert len(set(expected.values())) > (1 if limit < 50 else 0)
        # asked about in order, backwards, at random (each PageCuts counts on from what it counted)
        for order in (seqs, seqs[::-1], rng.sample(seqs, len(seqs))):
            cuts = transcript.PageCuts(conn, limit)
            assert {seq: cuts.start_of("s", seq) for seq in order} == expected, (limit, order[:3])
        for seq in rng.sample(seqs, 20):  # and each alone
            assert transcript.PageCuts(conn, limit).start_of("s", seq) == expected[seq], (limit, seq)


@pytest.mark.parametrize("lines", [
    [{}],
    [{"visibility": "inactive"}],
    [{"is_meta": 1}],
    [{"surface": "log-only"}],
    [{"surface": "log-only", "is_meta": 1}, {"visibility": "inactive", "is_meta": 1}],
    [{"is_meta": 1, "subtype": "compact_boundary"}, {"visibility": "inactive", "is_compact_summary": 1},
     {"surface": "log-only", "type": "compacted"}],
    [{"is_meta": 1, "subtype": "compact_boundary"}, {"surface": "log-only"}, {"visibility": "inactive"}],
])
def test_the_options_a_session_holds_are_those_a_line_of_it_needs(tmp_path, lines):
    conn = open_db(tmp_path / "holds.db")
    for seq, fields in enumerate([{}] * 5 + lines + [{}] * 5, 1):
        add_line(conn, "s", seq, **fields)
    add_line(conn, "t", 1, visibility="inactive", is_meta=1, surface="log-only")  # (another session's)
    one_by_one = {
        key: conn.execute(f"SELECT EXISTS (SELECT 1 FROM messages WHERE session_id = 's' AND {where} AND {LISTED})")
        .fetchone()[0] == 1
        for key, where in (("rewound", "visibility = 'inactive'"), ("meta", "is_meta AND surface != 'log-only'"),
                           ("log", "surface = 'log-only'"))
    }
    assert transcript.holds(conn, "s") == one_by_one
    conn.execute("DROP INDEX messages_session_rows")  # (while a cold load has dropped it)
    assert transcript.holds(conn, "s") == one_by_one


def test_the_lines_of_one_page_look_its_first_line_up_once(tmp_path):
    """The files page asks where each of up to 1,000 calls is shown: lines on one page share
    the lookup of its first line (a long session's calls took over a second)."""
    rng = random.Random(4)
    conn = open_db(tmp_path / "cuts.db")
    made_up_session(conn, rng, "s", 160)
    conn.commit()
    statements = []
    conn.set_trace_callback(statements.append)
    cuts = transcript.PageCuts(conn, 7)
    starts = {seq: cuts.start_of("s", seq) for seq in rng.sample(range(1, 161), 160)}
    conn.set_trace_callback(None)
    assert starts == {seq: page_by_page(conn, "s", seq, 7) for seq in range(1, 161)}
    lookups = [statement for statement in statements if "OFFSET" in statement]
    assert len(lookups) == len(set(starts.values()) - {None}) > 5
