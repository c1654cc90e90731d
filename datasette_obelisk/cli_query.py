"""``obelisk search / read / trace / sessions / failures / files / query / attune``.

Each command prints readable text, or with ``--json`` the helper's exact
return value. Exit codes: 0 ok, 1 a query error (its code is printed; a
missing database is ``OBELISK_NOT_FOUND``), 2 a usage error (its code,
``OBELISK_INVALID_ARGUMENT``, is printed too; with ``--json`` also as a JSON
error object): an empty search text, raw search text FTS5 rejects (its code
``SESSION_QUERY_INVALID_QUERY``, as in Python and over HTTP), an unknown ``--source``, a ``--memory-root`` that is not a folder; 141 when the
reader of the output stopped reading (``| head``).
While an ingest has not indexed everything yet, ``search`` says so on stderr.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import sqlite3
from pathlib import Path

import click

from . import deep_json
from .cli import (
    FILLED, FilledPath, Seconds, blank, cli, counted, db_option, exit_interrupted, fail, folders, report_errors, resolve_db,
    usage_error,
)
from .query import dashboard, fts, live, obelisk, prompts as prompt_log, transcript
from .query.errors import QueryError
from .query.readonly import connect_readonly, one_snapshot
from .query.runner import DEFAULT_TIMEOUT, MAX_TIMEOUT, run_script
from .store.db import NewerDatabase, open_db

SNIPPET = 160


def json_option(fn):
    return click.option("--json", "as_json", is_flag=True, help="Print the helper's return value as JSON")(fn)


def dumps(value) -> str:
    """JSON for a terminal: what ``UNSAFE`` names is escaped too (JSON escapes only U+0000-U+001F)."""
    return deep_json.dumps(value, indent=2, ensure_ascii=False, default=str).translate(UNSAFE_IN_JSON)


def fresh_connection(db_path):
    """A read-only connection, after tail-ingesting the logs that grew since the last ingest.

    Answers are never older than the logs (live-preferred); a database that
    cannot be written to is read as it is.
    """
    db = resolve_db(db_path)
    reader = connect_readonly(db)  # first: a file that is not an obelisk database is refused, not migrated
    try:
        writer = open_db(db)
    except (sqlite3.Error, NewerDatabase):  # cannot be written, or must not be
        writer = None
    if writer is not None:
        try:
            live.refresh(writer)
        except sqlite3.Error:
            pass  # read-only file or a busy writer: answer from what is stored
        finally:
            writer.close()
    return reader


def call(db_path, helper, *args, session_id: str | None = None, project: str | None = None):
    """Run one read helper on a fresh read-only connection to the database, its
    statements reading one state of it (``one_snapshot``), as over HTTP.

    A ``source`` among its options must be installed or in the database
    (``known_source``); a ``session_id`` the command was given that is not
    stored is said so on stderr (``stored_session``), and so is a ``project``
    pattern no stored project matches (``unmatched_project``).
    """
    conn = fresh_connection(db_path)
    try:
        with one_snapshot(conn):
            if session_id is not None:
                stored_session(conn, session_id)
            found = helper(conn, *args)
            if project is not None:
                unmatched_project(conn, project)
            return found
    finally:
        conn.close()


def unmatched_project(conn, project: str, table: str = "sessions") -> None:
    """A note on stderr when no project of ``table`` matches the ``--project`` pattern, naming
    those ``%project%`` matches (a name without its ``%`` is a whole project's name)."""
    near = obelisk.projects_near(conn, project, table)
    if near is None:
        return
    hint = f": {f'%{project}%'!r} matches {' and '.join(repr(name) for name in near)}" if near else ""
    echo(f"Note: no project matches {project!r} (--project is a SQL LIKE pattern{hint})", err=True)


def stored_session(conn, session_id: str) -> dict | None:
    """The session ``session_id``; None, once a note on stderr says it is not stored
    (naming the ids it may have meant), for an id the archive does not hold: the
    helpers answer nothing for it, as in Python and over HTTP, and so does the
    command (exit 0; ``--json`` prints the helper's value). An empty id is a usage error."""
    if not session_id.strip():
        raise QueryError("OBELISK_INVALID_ARGUMENT", f"a session id is needed: {blank(session_id)}")
    found = obelisk.sessions(conn, {"sessionId": session_id, "limit": 1})
    if not found:
        echo(f"Note: {obelisk.unknown_session(conn, session_id).message}", err=True)
        return None
    return found[0]


# Control characters a log may hold (escape sequences that recolour, retitle or
# write to a clipboard; bidirectional overrides), shown as escapes on a terminal.
UNSAFE = {c: f"\\x{c:02x}" for c in (*range(0x20), 0x7F, *range(0x80, 0xA0)) if chr(c) not in "\t\n"} | {
    c: f"\\u{c:04x}" for c in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))}


UNSAFE_IN_JSON = {c: f"\\u{c:04x}" for c in UNSAFE if c >= 0x20}  # (only inside strings: still the same JSON)


def echo(text: str = "", err: bool = False) -> None:
    """``click.echo`` of text a log may hold, made inert (``dumps`` does the same for JSON)."""
    click.echo(text.replace("\r\n", "\n").translate(UNSAFE), err=err)


def given(**options) -> dict:
    return {k: v for k, v in options.items() if v is not None}


def one_more(limit: int) -> int:
    """The limit to ask a helper for: one past ``limit``, to tell whether it left rows out."""
    return min(limit + 1, obelisk.MAX_LIMIT)


def cut(rows: list, limit: int, what: str) -> tuple[list, str | None]:
    """``rows`` cut to ``limit``, and the line that says so when that left some out
    (or may have: at the most a helper returns, ``one_more`` asked for no row past it)."""
    if len(rows) > limit:
        return rows[:limit], f"({limit} shown; there are more {what}: raise --limit or narrow the search)"
    if len(rows) == limit == obelisk.MAX_LIMIT:
        return rows, f"({limit} shown, the most one call returns; there may be more {what}: narrow the search)"
    return rows, None


def listing(rows: list, limit: int, what: str, as_json: bool, show, none: str | None = None) -> None:
    """``rows`` cut to ``limit`` (``cut``): as JSON, or each shown by ``show(row)``, then the
    line saying some were left out (on stderr with JSON); ``none`` (else "No <what>.") when there are none."""
    rows, more = cut(rows, limit, what)
    if as_json:
        return json_listing(rows, more)
    if not rows:
        return echo(none or f"No {what}.")
    for row in rows:
        show(row)
    if more:
        echo(more)


def json_listing(rows: list, more: str | None) -> None:
    """``rows`` as JSON on stdout, and ``more`` (that the limit left some out) on stderr:
    a script reading the JSON is told there are more, as by ``read`` and ``files``."""
    click.echo(dumps(rows))
    if more:
        echo(more, err=True)


def one_line(text: str | None, width: int = SNIPPET, around: int = 0) -> str:
    """``text`` flattened to one line of at most ``width`` characters near ``around``."""
    text = text or ""
    start = max(0, around - width // 3) if len(text) > width else 0
    flat = " ".join(text[start : start + 4 * width].split())
    return ("…" if start else "") + (flat if len(flat) <= width else flat[: width - 1] + "…")


def scope_options(fn):
    for option in reversed((
        click.option("--project", type=FILLED, help="SQL LIKE pattern over the session's project ('%myapp%')"),
        click.option("--source", type=FILLED, help="Only this source (claude, codex, gemini or a plugin's; see `obelisk sources`), or all"),
        click.option("--after", type=FILLED, help="Only from this ISO 8601 date or time on (2026-06-01, 2026-06-01T12:00:00Z)"),
        click.option("--before", type=FILLED, help="Only before this ISO 8601 date or time"),
    )):
        fn = option(fn)
    return fn


@cli.command()
@click.argument("text")
@click.option("--limit", type=click.IntRange(1, obelisk.MAX_LIMIT), default=20, show_default=True, help="Most results")
@click.option("--session", "session_id", type=FILLED, help="Only this session")
@scope_options
@click.option("--cwd", type=FILLED, help="SQL LIKE pattern over the working folder of the message")
@click.option("--include-meta", is_flag=True, help="Also injected and structural lines")
@click.option("--mode", type=click.Choice(["fts", "terms", "phrase", "raw"], case_sensitive=False), default="fts", show_default=True,
              help="fts: FTS5 syntax, quoted word by word when FTS5 rejects it (as the search() helper); "
                   "terms: every term; phrase: the exact phrase; raw: FTS5 syntax, errors reported")
@db_option
@json_option
@report_errors
def search(text, limit, session_id, project, source, after, before, cwd, include_meta, mode, db_path, as_json):
    """Full-text search of every message, best match first.

    When there are more than --limit, a line says so (on stderr with
    --json). A last line says how many prompts of sessions whose transcripts are gone
    (kept only by the agents' prompt logs) match too, and the `obelisk
    prompts` command that lists them (not with --session, --project, --cwd,
    --after, --before, a phrase or raw query, or --json).

    Example:

    \b
        obelisk search "database is locked" --project '%myapp%' --limit 5
    """
    def hits_and_states(conn, text, opts):
        with text_is_an_argument():
            hits = obelisk.search(conn, text, opts)
        return hits, obelisk.message_states(conn, [hit["message"]["uuid"] for hit in hits]), checked_source(conn, source)

    hits, states, source = call(db_path, hits_and_states, text, given(
        limit=one_more(limit), sessionId=session_id, project=project, source=source, after=after, before=before,
        cwd=cwd, includeMeta=include_meta or None, mode=mode,
    ), session_id=session_id, project=project)
    note = call(db_path, dashboard.indexing_note)
    if note:
        echo(f"Note: {note}", err=True)
    hits, more = cut(hits, limit, "matches")
    if as_json:
        return json_listing(hits, more)
    # what the prompt logs kept of sessions whose transcripts are gone (over the whole store: not
    # narrowed to a session, project, folder or time, and told in the form `obelisk prompts` reads)
    gone = None
    if mode in ("fts", "terms") and not (session_id or project or after or before or cwd):
        gone = call(db_path, lambda conn: prompt_log.missing_matches(conn, text, "terms", source=source))
    if not hits:
        echo("No matches.")
        return gone_prompts_note(gone, text, source)
    terms = fts.words(text)
    for number, hit in enumerate(hits, 1):
        message, session = hit["message"], hit["session"]
        title = one_line(session["title"], 80)
        echo(f"{number}. {title + '  ' if title else ''}{session['id']}  [{session['source']}] {session['project'] or ''}".rstrip())
        echo(f"   {message['timestamp'] or '-'}  {message['role'] or '-'}  {message['uuid']}"
                   f"{away(*states.get(message['uuid'], (None, None)))}")
        echo(f"   {one_line(message['text'], around=obelisk.first_hit(message['text'], terms))}")
    if more:
        echo(more)
    gone_prompts_note(gone, text, source)


@contextlib.contextmanager
def text_is_an_argument():
    """SESSION_QUERY_INVALID_QUERY of the text a command was given (raw text FTS5 rejects):
    a usage error (exit 2), as it is a 400 over HTTP, with that code, as the helper's."""
    try:
        yield
    except QueryError as error:
        if error.code == "SESSION_QUERY_INVALID_QUERY":
            raise usage_error(error) from None
        raise


def gone_prompts_note(gone: dict | None, text: str, source: str | None) -> None:
    """The trailing note of a search: how many prompts of sessions whose transcripts are gone match."""
    if not gone or not gone["count"]:
        return
    count = gone["count"]
    options = ["--missing", *(["--source", source] if source else [])]
    # (text that starts with "-" would be read as an option: it goes after "--")
    command = shlex.join(["obelisk", "prompts", *([*options, "--", text] if text.startswith("-") else [text, *options])])
    echo(f"Also {count:,} prompt{'' if count == 1 else 's'} from sessions whose transcripts are gone "
         f"{'matches' if count == 1 else 'match'}: {command}")


@cli.command()
@click.argument("session_id", metavar="SESSION")
@click.option("--include-meta", is_flag=True, help="Also injected and structural lines")
@click.option("--limit", type=click.IntRange(1, obelisk.MAX_THREAD), help="Most messages  [default: the whole session]")
@click.option("--offset", type=click.IntRange(0), default=0, help="Skip this many messages")
@click.option("--after-uuid", type=FILLED, metavar="UUID",
              help="Go on after this message (the last of the page before), wherever it now is")
@db_option
@json_option
@report_errors
def read(session_id, include_meta, limit, offset, after_uuid, db_path, as_json):
    """Read a session as a transcript, ordered by time.

    With --limit, a page: what remains is named at the end (on stderr with
    --json), as the message to go on after (--after-uuid), which stays right
    when an ingest renumbers the session between two pages.

    Example:

    \b
        obelisk read 0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f --limit 50
    """
    conn = fresh_connection(db_path)
    try:
        with one_snapshot(conn):  # (every page of one state: the footer counts what was listed)
            session = stored_session(conn, session_id)
            if session is None:  # (thread() of a session not stored: no message)
                return click.echo(dumps([])) if as_json else echo("No messages.")
            # Without --limit, the whole session: a page of the most one call returns at a time.
            step = limit or obelisk.MAX_THREAD
            first = True
            pages = (  # (the session put in time order once, not once a page)
                iter([obelisk.thread_page(conn, session_id, given(includeMeta=include_meta, limit=step, offset=offset,
                                                                 afterUuid=after_uuid))])
                if limit is not None else
                obelisk.thread_pages(conn, session_id, given(includeMeta=include_meta, offset=offset, afterUuid=after_uuid),
                                     step=step)
            )
            for page in pages:
                uuids = [message["uuid"] for message in page.items]
                if as_json:
                    items = dumps(page.items)
                    if limit is None:  # one array, written page by page
                        items = ("[" if first else ",") + items[1:-1].rstrip() + ("\n]" if not page.remaining else "")
                    click.echo(items, nl=bool(limit is not None or not page.remaining))
                else:
                    notes, thinking = obelisk.message_notes(conn, uuids), obelisk.thinking_lengths(conn, uuids)
                    print_transcript(session if first else None, page.items, notes, thinking)
                first = False
                if limit is not None or not page.remaining or not page.items:
                    break
    finally:
        conn.close()
    if limit is not None and page.remaining:
        echo(more_messages(page), err=as_json)
    elif not as_json and not page.items and page.total:  # (an --offset past its last message)
        echo(f"\nNo messages past the {page.total:,} of this session.")


def print_transcript(session: dict | None, messages: list[dict], notes: dict, thinking: dict | None = None) -> None:
    """The session's header, then each message: time, speaker, kind, what became of it
    (``notes``: a result's outcome, an agent started) and its text; a reply holding its
    thinking (``thinking``: uuid -> its characters) shows it apart. Reasoning that left
    no text (signed or redacted thinking) is left out."""
    if session is not None:  # (None: a later page of the same session)
        echo(f"# {one_line(session['title'], 120) or session['id']}")
        echo(f"{session['id']} · {session['source']} · {session['project'] or '-'} · "
             f"{session['started_at'] or '?'} → {session['ended_at'] or '?'}")
    for message in messages:
        if message["content_type"] in transcript.THINKING and not message["text"].strip():
            continue
        kind = f" ({message['content_type']})" if message["content_type"] not in (None, "text") else ""
        noted = "".join(f" [{note}]" for note in notes.get(message["uuid"], ()))
        speaker = f"[{message['timestamp'] or '-'}] {message['role'] or message['type']}"
        chars = (thinking or {}).get(message["uuid"])
        text = message["text"]
        if chars and len(text) > chars:  # (cut short within its thinking: shown as it is)
            echo(f"\n{speaker} (thinking){status(message)}:")
            echo(text[:chars].rstrip())
            text = text[chars:].lstrip("\n")
        echo(f"\n{speaker}{kind}{status(message)}{noted}:")
        echo(text.rstrip() or "(no text)")


def status(message: dict) -> str:
    """What a message is besides its role: a compaction, or history the model no longer sees."""
    if transcript.is_compaction(message):
        return " [context compacted here]"
    return away(message["surface"], message["visibility"])


def away(surface: str | None, visibility: str | None) -> str:
    """`` [rewound away]`` or `` [compacted away]`` for history the model no longer sees."""
    if surface == "shadowed":
        return " [rewound away]" if visibility == "inactive" else " [compacted away]"
    return ""


def more_messages(page) -> str:
    end = page.offset + len(page.items)
    return f"\n[messages {page.offset + 1}-{end} of {page.total}; {page.remaining} more: --after-uuid {shlex.quote(page.after)}]"


@cli.command()
@click.argument("uuid")
@db_option
@json_option
@report_errors
def trace(uuid, db_path, as_json):
    """The parent chain of a message, from the conversation root down to it.

    Example:

    \b
        obelisk trace 3606d2b7-b8a0-4990-92cc-bfba4c19f8a0
    """
    chain = call(db_path, obelisk.trace, uuid)
    if not chain:  # (as in Python and over HTTP: nothing, exit 0)
        echo(f"Note: no message {uuid!r}", err=True)
        return click.echo(dumps(chain)) if as_json else echo("No messages.")
    if chain[0].get("chain_cut"):  # the walk stopped early
        echo(f"Note: the chain has more than {obelisk.MAX_CHAIN:,} ancestors: it starts here, "
             "below the conversation's root", err=True)
    if as_json:
        return click.echo(dumps(chain))
    for depth, message in enumerate(chain):
        echo(f"{depth:>3}. [{message['timestamp'] or '-'}] {message['role'] or message['type']}  {message['uuid']}"
             f"{status(message)}")
        echo(f"     {one_line(message['text'])}")


@cli.command()
@click.option("--limit", type=click.IntRange(1, obelisk.MAX_LIMIT), default=50, show_default=True, help="Most sessions")
@click.option("--branch", type=FILLED, help="Exact git branch")
@scope_options
@db_option
@json_option
@report_errors
def sessions(limit, branch, project, source, after, before, db_path, as_json):
    """Sessions, most recently ended first (--after/--before bound the start).

    When there are more than --limit, a last line says so (on stderr with
    --json).

    Example:

    \b
        obelisk sessions --project '%myapp%' --limit 10
    """
    rows = call(db_path, obelisk.sessions, given(
        limit=one_more(limit), branch=branch, project=project, source=source, after=after, before=before,
    ), project=project)
    listing(rows, limit, "sessions", as_json, lambda row: echo(
        f"{row['ended_at'] or '-':<24}  {row['source']:<6}  {row['message_count']:>5} msgs  "
        f"{row['id']}  {one_line(row['title'], 80)}".rstrip()))


def checked_source(conn, source: str | None) -> str | None:
    """``source`` when it is installed or stored (``obelisk.known_source``); None for all."""
    return obelisk.known_source(conn, given(source=source)).get("source")


@cli.command()
@click.argument("query", required=False)
@click.option("--session", "session_id", type=FILLED, help="Only this session (as stored: codex:<id>, gemini:<id>)")
@click.option("--project", type=FILLED, help="SQL LIKE pattern over the folder the prompt was typed in")
@click.option("--source", type=FILLED, help="Only this source (claude, codex, gemini), or all")
@click.option("--missing", is_flag=True, help="Only prompts no stored transcript holds")
@click.option("--orphans", is_flag=True, help="List the sessions known only from the prompt logs instead (with --project, --source, --limit)")
@click.option("--limit", type=click.IntRange(1, prompt_log.MAX_LIMIT), default=50, show_default=True, help="Most rows")
@db_option
@json_option
@report_errors
def prompts(query, session_id, project, source, missing, orphans, limit, db_path, as_json):
    """Prompts the agents' prompt logs kept (Claude Code's and Codex's history.jsonl,
    Gemini CLI's logs.json), newest first, or best match first for QUERY.

    They outlive transcripts an agent cleaned up: with --missing, only the
    prompts no stored transcript holds; with --orphans, the sessions known
    only from the prompt logs. A prompt a stored transcript holds (its
    session's stored messages reach its time, give or take a minute) is marked
    "*" (held by it). When there are more than --limit, a last line says so
    (on stderr with --json).

    Example:

    \b
        obelisk prompts "auth module" --source claude --limit 5
        obelisk prompts --orphans
    """
    if orphans:
        given_too = [name for name, value in (("QUERY", query is not None), ("--session", session_id is not None),
                                              ("--missing", missing)) if value]
        if given_too:
            raise click.UsageError(f"--orphans lists sessions, not prompts: {' and '.join(given_too)} "
                                   "cannot narrow it (--project, --source and --limit can)")
        def orphaned(conn):
            found = prompt_log.orphans(conn, source=checked_source(conn, source), project=project, limit=one_more(limit))
            if project is not None:
                unmatched_project(conn, project, "prompt_log")
            return found

        rows = call(db_path, orphaned)
        def orphan(row):
            prompts = counted(row["prompts"], "prompt")
            echo(f"{row['last_at'] or '-':<24}  {row['source']:<6}  {prompts:>11}  "
                 f"{row['session_id']}  {one_line(row['first_prompt'], 80)}".rstrip())

        return listing(rows, limit, "sessions", as_json, orphan, none="No sessions known only from the prompt logs.")
    def matching(conn):
        with text_is_an_argument():
            found = prompt_log.prompts(conn, query, session_id=session_id, project=project,
                                       source=checked_source(conn, source), missing=missing, limit=one_more(limit))
        unknown = prompt_log.unknown_session(conn, session_id) if session_id is not None else None
        if unknown is not None:  # (as `read` and `search --session` say of an id not stored)
            echo(f"Note: {unknown.message}", err=True)
        if project is not None:
            unmatched_project(conn, project, "prompt_log")
        return found

    rows = call(db_path, matching)
    listing(rows, limit, "prompts", as_json, lambda row: echo(
        f"{row['timestamp'] or '-':<24} {'*' if row['in_transcript'] else ' '} {row['source']:<6}  "
        f"{row['session_id'] or '-'}  {one_line(row['text'], 100)}".rstrip()))


@cli.command()
@click.option("--limit", type=click.IntRange(1, obelisk.MAX_LIMIT), default=50, show_default=True, help="Most failures")
@click.option("--session", "session_id", type=FILLED, help="Only this session")
@scope_options
@db_option
@json_option
@report_errors
def failures(limit, session_id, project, source, after, before, db_path, as_json):
    """Failed tool calls, newest first, with what happened next.

    When there are more than --limit, a last line says so (on stderr with
    --json).

    Example:

    \b
        obelisk failures --project '%myapp%' --limit 10
    """
    def failures_and_states(conn, opts):
        rows = obelisk.failures(conn, opts)
        return rows, obelisk.message_states(conn, [row["result"]["message_uuid"] for row in rows])

    rows, states = call(db_path, failures_and_states, given(
        limit=one_more(limit), sessionId=session_id, project=project, source=source, after=after, before=before,
    ), session_id=session_id, project=project)

    def failure(row):
        result, call_row, session = row["result"], row["toolCall"], row["session"]
        echo(f"{result['timestamp'] or '-'}  {call_row['name'] if call_row else '?'}  "
             f"{one_line(session['title'], 80)} ({session['id']})"
             f"{away(*states.get(result['message_uuid'], (None, None)))}")
        if call_row:
            echo(f"   call:   {one_line(call_row['input_json'])}")
        echo(f"   output: {one_line(result['content'])}")
        for message in row["nextMessages"][:1]:
            echo(f"   next:   {message['role'] or '-'}: {one_line(message['text'])}")

    listing(rows, limit, "failures", as_json, failure)


@cli.command()
@click.argument("path")
@click.option("--limit", type=click.IntRange(1, obelisk.MAX_LIMIT), default=200, show_default=True, help="Most tool calls")
@click.option("--offset", type=click.IntRange(0, obelisk.MAX_OFFSET - 1), default=0, help="Skip this many of the oldest")
@click.option("--session", "session_id", type=FILLED, help="Only this session")
@scope_options
@db_option
@json_option
@report_errors
def files(path, limit, offset, session_id, project, source, after, before, db_path, as_json):
    """Every tool call that read or changed a file, oldest first, with its outcome.

    When there are more than --limit, the end says which calls were shown
    and how to see the next ones (on stderr with --json).

    Example:

    \b
        obelisk files /home/me/myapp/src/app.py --after 2026-06-01
    """
    def history_and_outcomes(conn, path, opts):
        rows = obelisk.file_history(conn, path, opts)
        total = obelisk.file_history_count(conn, path, opts) if len(rows) == limit or offset else len(rows)
        return rows, total, obelisk.call_outcomes(conn, [row["toolCall"]["id"] for row in rows])

    rows, total, outcomes = call(db_path, history_and_outcomes, path, given(
        limit=limit, offset=offset or None, sessionId=session_id, project=project, source=source, after=after,
        before=before,
    ), session_id=session_id, project=project)
    if as_json:
        click.echo(dumps(rows))
    elif not rows and total:
        echo(f"No calls past the {total:,} that touched {path}.")
    elif not rows:
        absolute = os.path.abspath(os.path.expanduser(path))
        hint = "" if absolute == path else f" (tool calls name files by absolute path, such as {absolute})"
        echo(f"No tool call touched {path}{hint}.")
    for row in [] if as_json else rows:
        session, tool = row["session"], row["toolCall"]
        echo(f"{row['timestamp'] or '-':<24}  {tool['name']:<12}  {outcomes.get(tool['id'], 'no result'):<9}  "
                   f"{session['id']}  {one_line(session['title'], 80)}".rstrip())
    if rows and total > len(rows):
        shown = f"calls {offset + 1:,}–{offset + len(rows):,} of {total:,}"
        rest = f"; the next: --offset {offset + len(rows)}" if offset + len(rows) < total else ""
        echo(f"\n[{shown}{rest}]", err=as_json)


def script_source(file, code) -> str:
    if (file is None) == (code is None):
        raise click.UsageError("give a script FILE or -c CODE (one of the two)")
    if code is not None:
        return code
    try:
        return file.read()
    except UnicodeDecodeError as exc:
        raise click.UsageError(f"{file.name} is not UTF-8 text: {exc}") from None


def script_command(fn):
    for option in reversed((
        click.argument("file", type=click.File("r"), required=False),
        click.option("-c", "--code", help="The script text instead of a FILE"),
        click.option("--timeout", type=Seconds(min=0, max=MAX_TIMEOUT, min_open=True), default=DEFAULT_TIMEOUT,
                     show_default=True, help="Seconds before the script is stopped"),
        db_option,
        click.option("--json", "as_json", is_flag=True, help="Accepted for symmetry: output is always JSON"),
    )):
        fn = option(fn)
    return fn


def emit_script(code, db_path, **options) -> None:
    try:
        if options.get("mode", "query") == "query":
            fresh_connection(db_path).close()
        result = run_script(code, resolve_db(db_path), **options)
    except QueryError as exc:
        fail(exc, as_json=True)
    except KeyboardInterrupt:
        exit_interrupted("Interrupted.")
    click.echo(dumps(result))


@cli.command()
@script_command
@report_errors
def query(file, code, timeout, db_path, as_json):
    """Run a Python script against the archive, read-only, and print its JSON.

    The script is a function body: `return` emits the result. Its globals
    are the helpers sql, search, context, trace, thread, raw, overview,
    sessions, recent, summaries, memories, subagents, workflows,
    workflowTree, fileHistory and failures, and the contracts history
    (history.search, history.read) and session_query (see SKILL.md).

    Example:

    \b
        obelisk query -c 'return [h["message"]["text"][:200] for h in search("flaky test", {"limit": 5})]'
    """
    emit_script(script_source(file, code), db_path, mode="query", timeout=timeout)


@cli.command()
@script_command
@click.option("--memory-root", "memory_roots", multiple=True, type=FilledPath(path_type=Path),
              help="A folder memory files may come from (repeatable; default $OBELISK_MEMORY_ROOTS)")
@report_errors
def attune(file, code, timeout, db_path, as_json, memory_roots):
    """Run a script that registers or archives memories (remember/forget only).

    Only files inside a memory root can be registered: --memory-root (an
    existing folder), or $OBELISK_MEMORY_ROOTS (separated by the OS path
    separator; an entry that exists must be a folder).

    Example:

    \b
        obelisk attune --memory-root ~/notes -c 'return remember({"path": "/home/me/notes/db.md", "summary": "Why the ingester uses WAL"})'
    """
    if memory_roots:
        roots = folders(memory_roots, "--memory-root")
    else:  # a listed folder that does not exist (yet) is allowed, as an agent's $CLAUDE_CONFIG_DIR is
        listed = [r for r in os.environ.get("OBELISK_MEMORY_ROOTS", "").split(os.pathsep) if r]
        roots = folders(listed, "$OBELISK_MEMORY_ROOTS", missing_ok=True)
    emit_script(script_source(file, code), db_path, mode="attune", timeout=timeout, memory_roots=roots)
