"""A minimal source plugin used by the store tests: one JSON object a line."""

from pathlib import Path

from datasette_obelisk.hookspecs import hookimpl
from datasette_obelisk.records import Merged, Message, Session, ToolCall, ToolResult
from datasette_obelisk.sources.base import SourceFile, walk_files
from datasette_obelisk.sources.lines import Line, decode_object


class ToyParser:
    def __init__(self, unit, state):
        self.session_id = unit.path.stem
        self.count = (state or {}).get("count", 0)

    def feed(self, data, position):
        value = decode_object(Line(data, position))
        if not isinstance(value, dict):
            return [value]
        self.count += 1
        if value.get("kind") == "meta":
            return [Merged(position, "metadata")]
        uuid = value.get("id") or f"{self.session_id}:{position.byte_offset}"
        records = [
            Session(self.session_id, "toy", cwd=value.get("cwd"), started_at=value.get("start")),
            Message(
                uuid, self.session_id, "toy", value.get("type", "user"), position,
                role=value.get("role", "user"), subtype=value.get("subtype"), parent_uuid=value.get("parent"),
                timestamp=value.get("ts"), text=value.get("text", ""),
                content_type="text",
            ),
        ]
        if "tool" in value:
            records.append(ToolCall(uuid + ":call", uuid, self.session_id, value["tool"], "{}", file_paths=value.get("paths", [])))
            records.append(ToolResult(uuid + ":call", uuid, self.session_id, value.get("output", ""), outcome=value.get("outcome", "succeeded")))
        return records

    def document(self, data):
        raise NotImplementedError

    def state(self):
        return {"count": self.count}


class ToySource:
    name = "toy"
    parser_version = 1

    def default_root(self, environ):
        return None

    def discover(self, root: Path):
        for path in walk_files(root):
            if path.name.endswith(".jsonl"):
                yield SourceFile(path, "toy", "session")

    def open_parser(self, unit, state):
        return ToyParser(unit, state)


@hookimpl
def obelisk_sources():
    return [ToySource()]
