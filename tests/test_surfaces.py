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
