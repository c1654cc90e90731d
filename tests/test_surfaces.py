"""What a session's compactions and rewinds leave current, row by row (``derive.surfaces_of``)."""

import json

from datasette_obelisk.store.derive import SessionRow, surfaces_of


def row(n, uuid, parent=None, **fields):
    values = dict.fromkeys(SessionRow._fields)
    values.update(id=n, uuid=uuid, parent_uuid=parent, type="user", role="user", surface="current",
                  visibility="visible", timestamp=f"2026-01-01T00:00:{n:02d}Z", is_meta=0, is_compact_summary=0)
    values.update(fields)
    return SessionRow(**values)


def boundary(n, uuid, kept):
    return row(n, uuid, type="system", subtype="compact_boundary", surface="log-only",
               meta_json=json.dumps({"preserved_uuids": kept}))


def test_each_compaction_replaces_what_was_current_but_what_it_kept():
    rows = [
        row(1, "a"), row(2, "b"),
        boundary(3, "k1", ["b"]), row(4, "s1", is_compact_summary=1),
        row(5, "c"),
        boundary(6, "k2", ["c"]), row(7, "s2", is_compact_summary=1),
        row(8, "d"),
    ]
    assert surfaces_of(rows) == {
        1: ("shadowed", "visible", "s1"),
        2: ("shadowed", "visible", "s2"),  # kept by the first compaction, not by the second
        3: ("log-only", "visible", None),
        4: ("shadowed", "visible", "s2"),
        5: ("current", "visible", None),  # kept by the second
        6: ("log-only", "visible", None),
        7: ("current", "visible", None),
        8: ("current", "visible", None),
    }


def test_the_branch_holding_the_newest_line_goes_on():
    # u2 and u3 both answer a1 (a rewind to u3); then the user went back to
    # u2's branch and carried on there (u4 under a2): that branch is current.
    rows = [
        row(1, "u1"), row(2, "a1", "u1", role="assistant", type="assistant"),
        row(3, "u2", "a1"), row(4, "a2", "u2", role="assistant", type="assistant"),
        row(5, "u3", "a1"), row(6, "a3", "u3", role="assistant", type="assistant"),
        row(7, "u4", "a2"),
    ]
    surfaces = surfaces_of(rows)
    assert {n for n, (surface, _, _) in surfaces.items() if surface == "shadowed"} == {5, 6}
    assert surfaces[5] == surfaces[6] == ("shadowed", "inactive", "u2")
    assert surfaces_of(rows[:6])[3] == ("shadowed", "inactive", "u3")  # before u4: the newest prompt's branch


def test_times_are_compared_as_times_and_a_note_of_an_interruption_is_no_prompt():
    rows = [
        row(1, "a0", type="assistant", role="assistant"),
        row(2, "u1", "a0", timestamp="2026-01-01T02:00:05+02:00"),  # 00:00:05 UTC
        row(3, "u2", "a0", timestamp="2026-01-01T00:00:04.500Z"),
    ]
    assert surfaces_of(rows)[3] == ("shadowed", "inactive", "u1")
    noted = [rows[0], row(2, "n", "a0", content_type="interruption"), row(3, "u", "a0")]
    assert [surface for surface, _, _ in surfaces_of(noted).values()] == ["current"] * 3


def test_the_first_prompt_sent_again_is_a_rewind_of_it():
    # Without a hook line before it the first prompt has no parent: editing
    # it gives a second root. Roots after a compaction are no rewind.
    rows = [
        row(1, "u1"), row(2, "a1", "u1", role="assistant", type="assistant"),
        row(3, "u2"), row(4, "a2", "u2", role="assistant", type="assistant"),
        boundary(5, "k", []), row(6, "s", is_compact_summary=1), row(7, "u3"),
    ]
    surfaces = surfaces_of(rows)
    assert surfaces[1] == surfaces[2] == ("shadowed", "inactive", "u2")
    assert surfaces[3] == surfaces[4] == ("shadowed", "visible", "s")
    assert surfaces[7] == ("current", "visible", None)
    assert surfaces_of(rows[:4])[3] == ("current", "visible", None)
    going_on = [*rows[:4], row(5, "u3", logical_parent_uuid="a2"), row(6, "a3", "u3", role="assistant", type="assistant")]
    assert [surfaces_of(going_on)[n][0] for n in (3, 4, 5, 6)] == ["current"] * 4  # u3 names what it goes on from
    unlinked = [row(1, "p1"), row(2, "p2"), row(3, "p3", "x")]  # lines not linked to each other
    assert [surface for surface, _, _ in surfaces_of(unlinked).values()] == ["current"] * 3


def test_a_codex_rollback_takes_back_the_turns_from_the_prompt_it_names():
    def said(n, uuid, role):
        return row(n, uuid, "x", type="response_item", role=role)

    rows = [
        said(1, "p1", "user"), said(2, "r1", "assistant"),
        said(3, "p2", "user"), said(4, "r2", "assistant"),
        row(5, "back", "r2", type="event_msg", subtype="thread_rolled_back", role=None, surface="log-only",
            is_meta=1, logical_parent_uuid="p2"),
        said(6, "p3", "user"), said(7, "r3", "assistant"),
    ]
    assert surfaces_of(rows) == {
        1: ("current", "visible", None), 2: ("current", "visible", None),
        3: ("shadowed", "inactive", "back"), 4: ("shadowed", "inactive", "back"),
        5: ("log-only", "visible", None),
        6: ("current", "visible", None), 7: ("current", "visible", None),
    }
