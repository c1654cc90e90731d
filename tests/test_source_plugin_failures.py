"""A third-party source with a bug costs its own lines or files, never the run."""

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from click.testing import CliRunner

from datasette_obelisk.cli import cli
from datasette_obelisk.hookspecs import hookimpl
from datasette_obelisk.plugins import broken_plugins, get_sources, pm
from datasette_obelisk.records import Message, Position, Session, ToolCall
from datasette_obelisk.store.ingest import default_roots, ingest
from toy_source import ToyParser, ToySource


class BuggyParser(ToyParser):
    """A toy parser whose line with ``"bug": X`` yields a malformed record."""

    def feed(self, data, position):
        records = list(super().feed(data, position))
        for record in records:
            if hasattr(record, "source"):
                record.source = "buggy"
        bug = json.loads(data).get("bug") if data.startswith(b"{") else None
        if bug == "dict":
            records.append({"uuid": "x"})
        elif bug == "none":
            records.append(None)
        elif bug == "text":
            records[1].text = 5
        elif bug == "session":
            records[1].session_id = None
        elif bug == "position":
            records[1].position = None
        elif bug == "meta":
            records.append(Message("m", "s", "buggy", "user", position, meta=["not", "a", "dict"]))
        elif bug == "state":
            self.count = {1, 2}  # no JSON
        elif bug == "surrogate":
            records[1].text = "cut emoji \ud83d"  # what json.loads makes of half an emoji
        elif bug == "surrogate_path":
            records.append(ToolCall("c", records[1].uuid, "s", "Read", "{}", file_paths=["/x/\udc80"]))
        elif bug == "huge":
            records[1].input_tokens = 2**70
        elif bug == "bare_position":
            records.append(position)
        elif bug == "meta_set":
            records[1].meta = {"tags": {1, 2}}
        elif bug == "int_subclass":
            records[1].input_tokens = Count(5)  # valid: an IntEnum or the like
        elif bug == "list_subclass":
            records.append(ToolCall("c", records[1].uuid, "s", "Read", "{}", file_paths=Texts(["/x/\udc80"])))
        elif bug == "position_subclass":
            records[1].position = Place(position.line_no, 2**70, 1)
        elif bug == "dict_subclass":
            records[1].meta = Meta({1: {1, 2}})
        elif bug == "other_source":
            records.append(Session("g", "toy", title="taken over"))
        elif bug == "three_copies":
            records[1:2] = [Message("a1", "a", "buggy", "user", position, role="user", text=f"copy {k}") for k in range(3)]
        return records


class Count(int):
    pass


class Texts(list):
    pass


class Place(Position):
    pass


class Meta(dict):
    pass


class BuggySource(ToySource):
    name = "buggy"

    def __init__(self, fail=None):
        self.fail = fail

    def default_root(self, environ):
        if self.fail == "default_root":
            raise RuntimeError("no home for buggy")
        return None

    def discover(self, root):
        if self.fail == "discover":
            raise RuntimeError("cannot list")
        for unit in super().discover(root):
            unit.source = "buggy"
            yield unit

    def open_parser(self, unit, state):
        if self.fail == "open":
            raise RuntimeError("cannot open")
        return BuggyParser(unit, state)


def line(**fields):
    return (json.dumps(fields) + "\n").encode()


@pytest.fixture
def roots(tmp_path):
    good, buggy = tmp_path / "toy", tmp_path / "buggy"
    good.mkdir()
    buggy.mkdir()
    (good / "g.jsonl").write_bytes(line(id="g1", text="kept whatever the plugin does"))
    (buggy / "a.jsonl").write_bytes(line(id="a1", text="first") + line(id="a2", text="second"))
    return {"toy": good, "buggy": buggy}


def append(roots, *lines: bytes) -> None:
    with (roots["buggy"] / "a.jsonl").open("ab") as f:
        f.write(b"".join(lines))


def run(db, roots, fail=None):
    return ingest(db, roots, sources={"toy": ToySource(), "buggy": BuggySource(fail)})


def query(db, sql):
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("bug,reason", [
    ("dict", "parser error: a parser yielded dict, which is no record"),
    ("none", "parser error: a parser yielded NoneType, which is no record"),
    ("text", "parser error: Message.text is int, not text"),
    ("session", "parser error: Message.session_id is NoneType, not text"),
    ("position", "parser error: Message.position is NoneType, not a Position"),
    ("meta", "parser error: Message.meta is list, not an object or null"),
    ("surrogate", "parser error: Message.text holds a lone surrogate, which UTF-8 cannot encode"),
    ("surrogate_path", "parser error: ToolCall.file_paths holds something other than text"),
    ("huge", "parser error: Message.input_tokens is out of SQLite's 64-bit range"),
    ("bare_position", "parser error: a parser yielded Position, which is no record"),
    ("meta_set", "parser error: Message.meta is no JSON object"),
    ("list_subclass", "parser error: ToolCall.file_paths holds something other than text"),
    ("position_subclass", "parser error: Message.position: Place.byte_offset is out of SQLite's 64-bit range"),
    ("dict_subclass", "parser error: Message.meta is no JSON object"),
    ("other_source", "parser error: Session.source is 'toy', not this file's source 'buggy'"),
])
def test_a_malformed_record_is_an_error_at_its_line(tmp_path, roots, bug, reason):
    db = tmp_path / "o.db"
    append(roots, line(id="a3", text="malformed", bug=bug), line(id="a4", text="after it"))
    summary = run(db, roots)
    assert (summary.errors, summary.error_samples) == (1, [(str(roots["buggy"] / "a.jsonl"), 3, reason)])
    assert query(db, "SELECT uuid FROM messages ORDER BY uuid") == [("a1",), ("a2",), ("a4",), ("g1",)]
    assert query(db, "SELECT line_no, reason FROM ingest_errors") == [(3, reason)]
    # the run goes on as usual: a line appended later is read
    append(roots, line(id="a5", text="later"))
    assert run(db, roots).errors == 0
    assert query(db, "SELECT COUNT(*) FROM messages WHERE uuid IN ('a4', 'a5')") == [(2,)]


def test_subclasses_of_the_field_types_are_records_too(tmp_path, roots):
    db = tmp_path / "o.db"
    append(roots, line(id="a3", text="counted", bug="int_subclass"))
    assert run(db, roots).errors == 0
    assert query(db, "SELECT input_tokens FROM messages WHERE uuid = 'a3'") == [(5,)]


def test_a_line_holding_three_changed_copies_of_a_stored_message_keeps_them_all(tmp_path, roots):
    db = tmp_path / "o.db"
    append(roots, line(id="a3", text="x", bug="three_copies"))
    assert run(db, roots).errors == 0
    assert query(db, "SELECT uuid LIKE 'a1@%', text FROM messages WHERE uuid LIKE 'a1%' ORDER BY seq") == [
        (0, "first"), (1, "copy 0"), (1, "copy 1"), (1, "copy 2"),
    ]


@pytest.mark.parametrize("fail,bug,reason", [
    ("open", None, "parser error: RuntimeError('cannot open')"),
    (None, "state", "parser error: TypeError('Type is not JSON serializable: set')"),
])
def test_a_parser_that_cannot_open_or_save_fails_its_file_only(tmp_path, roots, fail, bug, reason):
    db = tmp_path / "o.db"
    if bug:
        (roots["buggy"] / "a.jsonl").write_bytes(line(id="a1", text="x", bug=bug))
    summary = run(db, roots, fail)
    assert summary.errors == 1
    assert summary.error_samples == [(str(roots["buggy"] / "a.jsonl"), None, reason)]
    assert query(db, "SELECT uuid FROM messages") == [("g1",)]
    assert query(db, "SELECT path LIKE '%a.jsonl', reason FROM ingest_errors") == [(1, reason)]


def test_a_source_that_cannot_list_its_files_keeps_what_it_stored(tmp_path, roots):
    db = tmp_path / "o.db"
    assert run(db, roots).errors == 0
    summary = run(db, roots, "discover")
    assert (summary.errors, summary.error_samples, summary.files_missing) == (
        1, [(str(roots["buggy"]), None, "the buggy source could not list its files: RuntimeError('cannot list')")], 0,
    )
    assert query(db, "SELECT source, missing FROM source_files ORDER BY source") == [("buggy", 0), ("toy", 0)]
    assert query(db, "SELECT COUNT(*) FROM messages") == [(3,)]


def test_a_source_that_cannot_name_its_default_folder_is_skipped(tmp_path, monkeypatch):
    sources = {"toy": ToySource(), "buggy": BuggySource("default_root")}
    assert default_roots(sources) == {}
    monkeypatch.setattr("datasette_obelisk.plugins.get_sources", lambda: sources)
    monkeypatch.setenv("HOME", str(tmp_path))
    listed = CliRunner().invoke(cli, ["sources", "--json"])
    assert listed.exit_code == 0
    assert [item["problem"] for item in json.loads(listed.stdout)] == [
        "no default folder found",
        "the buggy source could not name its default folder: RuntimeError('no home for buggy'); buggy not ingested",
    ]
    result = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "o.db"), "--json"])
    assert result.exit_code == 0
    assert [w["message"] for w in json.loads(result.stdout)["warnings"]] == [
        "the buggy source could not name its default folder: RuntimeError('no home for buggy'); buggy not ingested",
        "No agent log folders found (looked for the sources' default folders).",
    ]


def test_a_source_whose_discover_finds_no_source_files_fails_alone(tmp_path, roots, monkeypatch):
    db = tmp_path / "o.db"
    monkeypatch.setattr(BuggySource, "discover", lambda self, root: iter([str(root / "a.jsonl")]))
    summary = run(db, roots)
    assert summary.errors == 1
    assert summary.error_samples[0][2].startswith("the buggy source could not list its files: TypeError(\"it found '")
    assert query(db, "SELECT uuid FROM messages") == [("g1",)]


class Plugin:
    def __init__(self, returns):
        self.returns = returns

    @hookimpl
    def obelisk_sources(self):
        return self.returns()


def raise_error():
    raise RuntimeError("plugin exploded")


def a_generator_that_fails():
    yield ToySource()
    raise RuntimeError("halfway")


@pytest.mark.parametrize("returns,reason", [
    (raise_error, "RuntimeError('plugin exploded')"),
    (ToySource, "TypeError(\"'ToySource' object is not iterable\")"),
    (lambda: [object()], "TypeError(\"a source's name is not text: None\")"),
    (a_generator_that_fails, "RuntimeError('halfway')"),
    (lambda: None, "TypeError('the hook returned None, not a list of sources')"),
    (lambda: [type("S", (ToySource,), {"parser_version": "2"})()],
     "TypeError(\"source toy: parser_version is not a whole number: '2'\")"),
    (lambda: [type("S", (ToySource,), {"parser_version": None})()],
     "TypeError('source toy: parser_version is not a whole number: None')"),
    (lambda: [type("S", (ToySource,), {"discover": None})()], "TypeError('source toy: discover is not a method')"),
    (lambda: [type("S", (ToySource,), {"name": "gemini"})()], "its source 'gemini' is installed already, by "
                                                            "datasette_obelisk.sources.gemini"),
    (lambda: [ToySource(), ToySource()], "it names a source twice: ['toy']"),
])
def test_a_plugin_whose_hook_fails_is_left_out_and_named(returns, reason):
    plugin = Plugin(returns)
    pm.register(plugin, "exploding")
    try:
        assert list(get_sources()) == ["claude", "codex", "gemini"]
        assert broken_plugins() == [f"the source plugin exploding failed and is left out: {reason}"]
        result = CliRunner().invoke(cli, ["sources"])
        assert result.exit_code == 0
        assert result.stderr == f"warning: the source plugin exploding failed and is left out: {reason}\n"
        assert "claude\tparser v" in result.stdout
    finally:
        pm.unregister(plugin)
    assert get_sources() and broken_plugins() == []


def test_a_plugin_that_cannot_be_imported_leaves_the_others_working(tmp_path):
    info = tmp_path / "broken_obelisk_plugin-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-obelisk-plugin\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text("[obelisk]\nbroken = broken_obelisk_plugin\n")
    (tmp_path / "broken_obelisk_plugin.py").write_text("import a_module_nobody_installed\n")
    script = ("import json; from datasette_obelisk.plugins import get_sources, broken_plugins; "
              "print(json.dumps([list(get_sources()), broken_plugins()]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": f"{tmp_path}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"})
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [["claude", "codex", "gemini"], [
        "the source plugin broken failed and is left out: "
        "ModuleNotFoundError(\"No module named 'a_module_nobody_installed'\")"
    ]]


def test_a_plugin_naming_a_source_taken_is_left_out_whole_and_named_when_asked_for(tmp_path):
    mine = type("Mine", (ToySource,), {"name": "mine"})
    plugin = Plugin(lambda: [type("Claude", (ToySource,), {"name": "claude"})(), mine()])
    pm.register(plugin, "clashing")
    try:
        assert list(get_sources()) == ["claude", "codex", "gemini"]
        (tmp_path / "logs").mkdir()
        result = CliRunner().invoke(cli, ["ingest", "--db", str(tmp_path / "o.db"), "--dir", f"mine={tmp_path / 'logs'}"])
        assert result.exit_code == 2
        assert ("unknown source mine; installed: claude, codex, gemini; the source plugin clashing failed and is left "
                "out: its source 'claude' is installed already, by datasette_obelisk.sources.claude_code") in result.output
    finally:
        pm.unregister(plugin)
