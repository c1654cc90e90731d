"""Run ``obelisk query`` and ``obelisk attune`` scripts.

A script is the body of a Python function: ``return`` emits its JSON
result. ``query`` scripts see the read helpers (``sql``, ``search``, ...,
``failures``), ``history`` (``.search``, ``.read``) and ``session_query``
(``.search_sessions``, ``.read_session``, ...) bound to a read-only connection; ``attune`` scripts see only
``remember`` and ``forget``, which the parent carries out on its write connection.

The script runs in a child process (forked when the process has one thread,
so nothing is imported twice; spawned otherwise) and the parent is the watchdog: when the time
limit passes it kills the child. That stops everything, a slow SQL
statement, a ``while True: pass``, a long C call or a script that catches
its own exceptions, which a signal-based alarm in the same process cannot
promise. Inside the child a SQLite progress handler also interrupts SQL at
the deadline, so a slow query usually ends with a clean error first.

The globals are a guard-rail, not a security boundary: no ``open``,
``exec``/``eval`` or imports beyond a list of pure modules, ``print`` goes
to stderr. Database safety does not rest on them but on the read-only
connection (``readonly.py``) and, since a script could reach that
connection and undo its locks, on the kernel: a script's process may not
write any file (``no_writes.py``, Linux), and an attune script's holds no
connection that may write: its ``remember`` / ``forget`` calls go to the
parent, which makes them (one record each, checked as ever).
"""

from __future__ import annotations

import ast
import base64
import builtins
import datetime
import decimal
import fractions
import json
import multiprocessing
import os
import sqlite3
import sys
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any, Iterable

from .. import deep_json
from . import memories as memory_writes
from .errors import CODES, LONE_SURROGATE, QueryError
from .history import History
from .obelisk import helpers
from .no_writes import forbid_file_writes
from .readonly import connect_readonly, one_snapshot, set_deadline, unguarded
from .session_query import SessionQuery

DEFAULT_TIMEOUT = 30.0
MAX_TIMEOUT = 86_400.0  # a day: longer (or inf, or nan) is no time limit a watchdog can keep
KILL_GRACE = 0.25  # the child's own SQL interrupt gets this head start
MAX_OUTPUT = 32 << 20
SCRIPT_NAME = "<script>"
MODES = ("query", "attune")

QUERY_GLOBALS = (
    "sql", "search", "context", "trace", "thread", "raw", "overview", "sessions", "recent",
    "summaries", "memories", "subagents", "workflows", "workflowTree", "fileHistory", "failures",
)
# The other two contracts, as objects: ``history.search({...})``, ``session_query.search_sessions({...})``.
CONTRACT_GLOBALS = ("history", "session_query")
ATTUNE_GLOBALS = ("remember", "forget")
IMPORTABLE = frozenset(
    "json re math cmath statistics datetime time calendar zoneinfo collections itertools functools "
    "operator textwrap difflib string heapq bisect decimal fractions random typing dataclasses enum "
    "unicodedata pprint copy _strptime".split()
)
REMOVED_BUILTINS = ("open", "exec", "eval", "compile", "input", "breakpoint", "help", "exit", "quit", "__import__")


# -- compiling and running, inside the child -----------------------------------


def compile_script(code: str):
    """Compile a function body (where ``return`` is allowed) to a code object."""
    if not isinstance(code, str):
        raise QueryError("OBELISK_INVALID_ARGUMENT", "the script must be text")
    try:
        body = ast.parse(code, SCRIPT_NAME).body
        fields = {"type_params": []} if sys.version_info >= (3, 12) else {}
        function = ast.FunctionDef(
            name="script",
            args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
            body=body or [ast.Pass()],
            decorator_list=[],
            returns=None,
            **fields,
        )
        module = ast.fix_missing_locations(ast.Module(body=[function], type_ignores=[]))
        return compile(module, SCRIPT_NAME, "exec")
    except SyntaxError as exc:
        raise QueryError("OBELISK_SCRIPT_ERROR", f"SyntaxError: {exc.msg} (line {exc.lineno})") from None


def guarded_import(name, globals=None, locals=None, fromlist=(), level=0):
    if level or name.partition(".")[0] not in IMPORTABLE:
        raise ImportError(f"import of {name!r} is not available in obelisk scripts")
    return builtins.__import__(name, globals, locals, fromlist, level)


def stderr_print(*args, **kwargs):
    kwargs.setdefault("file", sys.stderr)
    builtins.print(*args, **kwargs)


def script_builtins() -> dict:
    allowed = {k: v for k, v in vars(builtins).items() if k not in REMOVED_BUILTINS}
    return {**allowed, "__import__": guarded_import, "print": stderr_print}


def execute_script(code: str, names: dict[str, Any]) -> Any:
    """Run ``code`` as a function body with ``names`` as its globals."""
    compiled = compile_script(code)
    namespace = {"__builtins__": script_builtins(), "__name__": "obelisk_script", "QueryError": QueryError, **names}
    exec(compiled, namespace)
    try:
        return namespace["script"]()
    except QueryError:
        raise
    except Exception as exc:
        raise QueryError("OBELISK_SCRIPT_ERROR", describe(exc)) from None


def describe(exc: BaseException) -> str:
    """``Type: message (line N)``, N being the script's own line."""
    line = None
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == SCRIPT_NAME:
            line = tb.tb_lineno
        tb = tb.tb_next
    where = f" (line {line})" if line else ""
    return f"{type(exc).__name__}: {exc}{where}"


def jsonable(value):
    """JSON for what ``json`` does not know: sets, dates, bytes, rows, numbers."""
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=repr)
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return {"$base64": True, "encoded": base64.b64encode(bytes(value)).decode()}
    if isinstance(value, sqlite3.Row):
        return dict(value)
    if isinstance(value, (decimal.Decimal, fractions.Fraction)):
        return float(value)
    raise TypeError(f"{type(value).__name__} is not JSON serializable")


def encode_result(result) -> bytes:
    try:
        return deep_json.dumps(
            {"ok": True, "result": result}, default=jsonable, ensure_ascii=False, allow_nan=False
        ).encode("utf-8")
    except UnicodeEncodeError:
        raise QueryError("OBELISK_SCRIPT_ERROR", f"the returned value {LONE_SURROGATE}") from None
    except (TypeError, ValueError) as exc:
        raise QueryError("OBELISK_SCRIPT_ERROR", f"the returned value is not JSON: {exc}") from None


def script_names(job: dict, *, channel=None) -> tuple[dict[str, Any], sqlite3.Connection | None]:
    """The globals of a job's mode and the connection behind them.

    With ``channel`` (in the script's own process) the kernel refuses the
    process every file write from here on (see ``no_writes``), and an attune
    script's ``remember`` / ``forget`` are carried out by the parent over the
    channel: the script's process holds no connection that may write."""
    if job["mode"] == "query":
        conn = connect_readonly(job["db_path"])
        set_deadline(conn, job["timeout"])
        if channel is not None:
            keep_temporary_tables_in_memory(conn)
            forbid_file_writes()
        bound = helpers(conn)
        contracts = {"history": History(conn), "session_query": SessionQuery(conn)}
        return {**{name: bound[name] for name in QUERY_GLOBALS}, **contracts}, conn
    if channel is not None:
        forbid_file_writes()
        return {name: parent_call(channel, name) for name in ATTUNE_GLOBALS}, None
    conn = connect_for_memories(job["db_path"])
    set_deadline(conn, job["timeout"])
    return {name: partial(memory_call, conn, job, name) for name in ATTUNE_GLOBALS}, conn


def memory_call(conn: sqlite3.Connection, job: dict, name: str, record):
    """``remember`` or ``forget`` on a connection that may write memories."""
    if name == "remember":
        return memory_writes.remember(conn, record, memory_roots=job["memory_roots"], cwd=job["cwd"])
    return memory_writes.forget(conn, record)


def parent_call(channel, name: str):
    """``remember`` / ``forget`` for a script's process: the record goes to the parent, which writes it."""
    def call(record):
        try:
            request = json.dumps({"call": name, "record": record}, ensure_ascii=False, allow_nan=False).encode()
        except UnicodeEncodeError:
            raise QueryError("OBELISK_INVALID_ARGUMENT", f"{name}(): the record {LONE_SURROGATE}") from None
        except (TypeError, ValueError) as exc:
            raise QueryError("OBELISK_INVALID_ARGUMENT", f"{name}(): the record is not JSON: {exc}") from None
        channel.send_bytes(request)
        reply = json.loads(channel.recv_bytes())
        if not reply["ok"]:
            raise QueryError(reply["error"]["code"], reply["error"]["message"])
        return reply["result"]

    call.__name__ = name
    return call


def keep_temporary_tables_in_memory(conn: sqlite3.Connection) -> None:
    """Sorts and temporary indexes in memory: no temporary file is needed, or allowed."""
    unguarded(conn, "PRAGMA temp_store = MEMORY")


def connect_for_memories(db_path: str) -> sqlite3.Connection:
    """A connection that may write memories; ``OBELISK_NOT_FOUND``, saying why, before
    anything touches a file that is no obelisk database (a write connection turns on WAL)."""
    from ..store.db import connect

    connect_readonly(db_path).close()
    return connect(db_path)


def run_job(job: dict, *, channel=None) -> bytes:
    """The JSON envelope for one job: ``{"ok": true, "result": ...}`` or the error."""
    conn = None
    try:
        names, conn = script_names(job, channel=channel)
        if job["mode"] != "query":
            return encode_result(execute_script(job["code"], names))
        with one_snapshot(conn):  # a script's calls read one state of the archive, as an HTTP answer does
            return encode_result(execute_script(job["code"], names))
    except QueryError as exc:
        return json.dumps(exc.as_dict()).encode()
    except BaseException as exc:  # a script raising SystemExit, a MemoryError, ...
        return json.dumps(QueryError("OBELISK_SCRIPT_ERROR", describe(exc)).as_dict()).encode()
    finally:
        if conn is not None:
            conn.close()


def child_main(job: dict, channel) -> None:
    channel.send_bytes(run_job(job, channel=channel))
    channel.close()


# -- the watchdog, in the parent ---------------------------------------------------


def run_script(
    code: str,
    db_path: str | Path,
    *,
    mode: str = "query",
    timeout: float = DEFAULT_TIMEOUT,
    memory_roots: Iterable = (),
    cwd: str | None = None,
) -> Any:
    """Run a script in a child process and return its result (or raise ``QueryError``)."""
    if mode not in MODES:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"mode must be one of {', '.join(MODES)}")
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout <= MAX_TIMEOUT:
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"timeout must be a number of seconds above 0, at most {MAX_TIMEOUT:g}")
    job = {
        "code": code,
        "db_path": str(db_path),
        "mode": mode,
        "timeout": float(timeout),
        "memory_roots": [str(root) for root in memory_roots],
        "cwd": cwd or os.getcwd(),
    }
    if mode == "attune":  # NOT_FOUND before the script runs, for a file that is no obelisk database
        connect_readonly(job["db_path"]).close()
    context = multiprocessing.get_context(start_method())
    channel, child_channel = context.Pipe()
    started = time.monotonic()
    process = context.Process(target=child_main, args=(job, child_channel), daemon=True)
    process.start()
    child_channel.close()
    writer = None
    deadline = started + timeout
    try:
        # opened once the script's process is on its own: it never holds this connection
        writer = open_writer(job["db_path"]) if mode == "attune" else None
        while True:  # the script's remember / forget calls, then its result
            message = parse_message(receive(channel, deadline + KILL_GRACE, timeout, process))
            if writer is None or "call" not in message:
                break
            channel.send_bytes(answer_call(writer, job, message, deadline).encode())
    finally:
        if process.is_alive():
            process.kill()
        process.join()
        channel.close()
        if writer is not None:
            writer.close()
    if message.get("ok") is True and "result" in message:
        return message["result"]
    error = message.get("error") if message.get("ok") is False else None
    if isinstance(error, dict) and error.get("code") in CODES and isinstance(error.get("message"), str):
        raise QueryError(error["code"], error["message"])
    raise QueryError("OBELISK_SCRIPT_ERROR", "the script process sent something that is no result")


def parse_message(payload: bytes) -> dict:
    """What the script's process sent: an object (a call, or its result), else ``OBELISK_SCRIPT_ERROR``."""
    try:
        message = deep_json.loads(payload)
    except ValueError:
        message = None
    if not isinstance(message, dict):
        raise QueryError("OBELISK_SCRIPT_ERROR", "the script process sent something that is no result")
    return message


def open_writer(db_path: str) -> sqlite3.Connection:
    try:
        return connect_for_memories(db_path)
    except sqlite3.Error as exc:
        raise QueryError("OBELISK_READ_ONLY", f"{db_path} cannot be written: {exc}") from None


def answer_call(writer: sqlite3.Connection, job: dict, message: dict, deadline: float) -> str:
    """The envelope answering an attune script's ``remember`` / ``forget`` call, made
    within the script's time limit (waiting for a lock included)."""
    name = message.get("call")
    left = deadline - time.monotonic()
    try:
        if name not in ATTUNE_GLOBALS:
            raise QueryError("OBELISK_SCRIPT_ERROR", f"no helper {name!r} to call")
        if left <= 0:
            raise QueryError("OBELISK_TIMEOUT", "the script ran past its time limit")
        writer.execute(f"PRAGMA busy_timeout = {max(1, int(left * 1000))}")
        set_deadline(writer, left)
        return json.dumps({"ok": True, "result": memory_call(writer, job, name, message.get("record"))})
    except QueryError as exc:
        return json.dumps(exc.as_dict())
    except sqlite3.Error as exc:
        if time.monotonic() >= deadline or "interrupted" in str(exc) or "locked" in str(exc):
            error = QueryError("OBELISK_TIMEOUT", f"{name}() ran past the script's time limit ({exc})")
        elif getattr(exc, "sqlite_errorcode", 0) & 0xFF == sqlite3.SQLITE_READONLY:
            error = QueryError("OBELISK_READ_ONLY", f"{name}(): the database cannot be written ({exc})")
        else:
            error = QueryError("OBELISK_SCRIPT_ERROR", f"{name}(): {type(exc).__name__}: {exc}")
        return json.dumps(error.as_dict())


def start_method() -> str:
    """Fork when it is safe (one thread, POSIX): nothing is imported again."""
    if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1:
        return "fork"
    return "spawn"


def receive(receiver, deadline: float, timeout: float, process) -> bytes:
    if not receiver.poll(max(0.0, deadline - time.monotonic())):
        raise QueryError("OBELISK_TIMEOUT", f"the script ran past its {timeout:g} s time limit and was stopped")
    try:
        return receiver.recv_bytes(MAX_OUTPUT)
    except EOFError:
        process.join(1)
        raise QueryError(
            "OBELISK_SCRIPT_ERROR", f"the script process ended without a result (exit code {process.exitcode})"
        ) from None
    except OSError:
        raise QueryError(
            "OBELISK_PAYLOAD_TOO_LARGE", f"the result is larger than {MAX_OUTPUT >> 20} MB: return less"
        ) from None
