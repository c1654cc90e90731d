"""Codex rollout lines written by hand for the fork tests: an envelope line, and one re-stamped
as a fork's copy of it is."""

import json


def line(kind: str, payload: dict, at: str) -> bytes:
    return (json.dumps({"timestamp": at, "type": kind, "payload": payload}, separators=(",", ":")) + "\n").encode()


def restamp(envelope: bytes, at: str) -> bytes:
    data = json.loads(envelope)
    data["timestamp"] = at
    return (json.dumps(data, separators=(",", ":")) + "\n").encode()
