"""Generated documentation is up to date (regenerate with `cog -r docs/*.md`)."""

from pathlib import Path

import pytest
from cogapp import Cog

DOCS = Path(__file__).parent.parent / "docs"


@pytest.mark.parametrize("name", ["cli.md", "schema.md"])
def test_generated_docs_are_current(name):
    result = Cog().main(["cog", "--check", str(DOCS / name)])
    assert result == 0, f"docs/{name} is out of date: run `cog -r docs/{name}`"


def test_web_md_lists_every_error_status():
    """docs/web.md's list of the statuses an error answers with names every status a code maps to."""
    import re

    from datasette_obelisk.query.errors import STATUS

    text = " ".join((DOCS / "web.md").read_text().split())
    listed = re.search(r"with the code's status \(([^)]*)\)", text)
    assert listed, "docs/web.md no longer lists the error statuses"
    named = {int(n) for n in re.findall(r"\b[45]\d\d\b", listed.group(1))}
    assert set(STATUS.values()) <= named, f"missing from docs/web.md: {sorted(set(STATUS.values()) - named)}"


def test_session_query_docstring_matches_event_times(tmp_path):
    """The module docstring of session_query says what ``time`` and ``createdAt`` are:
    an event without a timestamp has the time before it (never None), and
    ``createdAt`` is the session's start."""
    import json

    from datasette_obelisk.query import session_query
    from datasette_obelisk.query.readonly import connect_readonly
    from datasette_obelisk.store.ingest import ingest

    session = "55555555-5555-4555-8555-555555555555"
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    lines = [
        {"type": "user", "uuid": "t1", "sessionId": session, "timestamp": "2026-01-01T00:00:00Z",
         "message": {"role": "user", "content": "first"}},
        {"type": "user", "uuid": "t2", "parentUuid": "t1", "sessionId": session,
         "message": {"role": "user", "content": "no time"}},
    ]
    (project / f"{session}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    sq = session_query.SessionQuery(connect_readonly(str(tmp_path / "o.db")))
    assert [e["time"] for e in sq.list_events(session)] == [1767225600000, 1767225600000]

    doc = " ".join(session_query.__doc__.split())
    time_note = doc[doc.index("``time`` is epoch ms"):].split(";")[0]
    assert "None" not in time_note, time_note
    assert "createdAt`` is the first message time" not in doc


def _tiny_archive(tmp_path):
    import json

    from datasette_obelisk.store.ingest import ingest

    session = "66666666-6666-4666-8666-666666666666"
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    line = {"type": "user", "uuid": "t1", "sessionId": session, "timestamp": "2026-01-01T00:00:00Z",
            "message": {"role": "user", "content": "flaky test"}}
    (project / f"{session}.jsonl").write_text(json.dumps(line) + "\n")
    ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"})
    return tmp_path / "o.db"


def test_readme_names_the_codes_query_commands_exit_with(tmp_path):
    """README: the query commands exit 1 with the error's code, which is not always OBELISK_*
    (SESSION_QUERY_* from query scripts), and 2 on a usage error: a raw FTS5 query FTS5
    rejects is one, the text being the command's argument, with the code search() gives it."""
    import json

    from click.testing import CliRunner

    from datasette_obelisk.cli import cli

    db = _tiny_archive(tmp_path)
    result = CliRunner().invoke(cli, ["search", "foo AND (", "--mode", "raw", "--json", "--db", str(db)])
    assert result.exit_code == 2
    assert json.loads(result.stdout.splitlines()[0])["error"]["code"] == "SESSION_QUERY_INVALID_QUERY"
    readme = " ".join((DOCS.parent / "README.md").read_text().split())
    paragraph = readme[readme.index("Every command that reads a database"):]
    paragraph = paragraph[:paragraph.index("With `--json` the error")]
    assert "SESSION_QUERY_*" in paragraph, paragraph
    usage = paragraph[paragraph.index("and 2 on a usage error"):]
    assert "`search --mode raw` text FTS5 rejects (`SESSION_QUERY_INVALID_QUERY`" in usage, usage


def test_readme_says_up_serves_the_demo_for_an_empty_folder_given(tmp_path, monkeypatch):
    """README: `./run.sh --claude-dir EMPTY` generates and serves the demo, as with no logs at all."""
    from click.testing import CliRunner

    from datasette_obelisk.cli import cli

    monkeypatch.chdir(tmp_path)
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(cli, ["up", "--db", "mine.db", "--claude-dir", "empty", "--no-serve"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "mine-demo.db").exists() and not (tmp_path / "mine.db").exists()
    readme = " ".join((DOCS.parent / "README.md").read_text().split())
    assert "an empty folder given gets the demo too" in readme


def test_web_md_says_a_thread_over_max_thread_is_413(tmp_path, monkeypatch):
    """docs/web.md: /api/thread answers the whole session, except one over MAX_THREAD messages (413)."""
    import asyncio

    from datasette.app import Datasette

    from datasette_obelisk.query import obelisk

    assert obelisk.MAX_THREAD == 10_000
    db = _tiny_archive(tmp_path)
    monkeypatch.setattr(obelisk, "MAX_THREAD", 0)  # the one-message session is then over it

    async def answer():
        ds = Datasette([str(db)])
        return await ds.client.get("/-/obelisk/api/thread?sessionId=66666666-6666-4666-8666-666666666666")

    response = asyncio.run(answer())
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "OBELISK_PAYLOAD_TOO_LARGE"
    web = " ".join((DOCS / "web.md").read_text().split())
    assert "more than 10,000 messages is 413 `OBELISK_PAYLOAD_TOO_LARGE`" in web


def test_readme_says_which_unterminated_line_waits(tmp_path):
    """README (Live): a last line without its newline waits only while it is not yet a whole
    JSON object; one that is whole is read now (architecture.md says so too)."""
    import json

    from datasette_obelisk.store.ingest import ingest

    session = "12121212-1212-4212-8212-121212121212"
    project = tmp_path / "claude" / "projects" / "p"
    project.mkdir(parents=True)
    first = {"type": "user", "uuid": "n1", "sessionId": session, "timestamp": "2026-01-01T00:00:00Z",
             "message": {"role": "user", "content": "one"}}
    last = dict(first, uuid="n2", parentUuid="n1", message={"role": "user", "content": "two"})
    (project / f"{session}.jsonl").write_text(json.dumps(first) + "\n" + json.dumps(last))  # no newline at the end
    assert ingest(tmp_path / "o.db", {"claude": tmp_path / "claude"}).messages == 2
    readme = " ".join((DOCS.parent / "README.md").read_text().split())
    assert "A line still being written (no newline yet) waits" not in readme
    assert "not yet a whole JSON object" in readme
