"""The ``obelisk`` command line (also ``datasette obelisk`` and ``sqlite-utils obelisk-ingest``)."""

from __future__ import annotations

import contextlib
import errno
import functools
import json
import os
import sqlite3
import sys
import time
from pathlib import Path

import click

from .query.errors import QueryError, holds_lone_surrogate
from .query.readonly import connect_readonly, error_for
from .store.db import NewerDatabase, default_db_path

USAGE_CODE = "OBELISK_INVALID_ARGUMENT"
# A command group run with no arguments shows its help as a usage error (click 8.2): no code in it.
NO_ARGS_IS_HELP = getattr(click.exceptions, "NoArgsIsHelpError", ())
DB_OPTION_HELP = "The obelisk database file"


class FilledPath(click.Path):
    """A ``click.Path`` refused when empty: "" would name the current folder (a script's
    unset variable read the logs, or wrote a demo corpus, there)."""

    def convert(self, value, param, ctx):
        if isinstance(value, str) and value == "":
            self.fail("it is empty: give a path, or leave the option out", param, ctx)
        return super().convert(value, param, ctx)


def db_option(fn):
    """``--db``, else ``$OBELISK_DB``, else ``./obelisk.db``: whichever gives it, click checks
    it the same way (a folder is a usage error naming the option or the variable)."""
    return click.option(
        "--db",
        "db_path",
        type=FilledPath(dir_okay=False, path_type=Path),
        envvar="OBELISK_DB",
        show_envvar=True,
        default=default_db_path({}),
        show_default=True,
        help=DB_OPTION_HELP,
    )(fn)


def resolve_db(db_path: Path | None) -> Path:
    return db_path or default_db_path()


SQLITE_HEADER = b"SQLite format 3\x00"


def writable_db(db_path: Path | None) -> Path:
    """The database to ingest into, refused with a usage error (exit 2) when it cannot be one:
    its folder is missing, it is not an SQLite file, it is another program's, or it cannot be written."""
    db = resolve_db(db_path)
    try:
        os.stat(db)
    except OSError as exc:  # a name too long, a loop of links, a folder this user cannot search
        if exc.errno not in (errno.ENOENT, errno.ENOTDIR):  # (no file yet, or no folder: said below)
            raise click.UsageError(f"--db {db}: {exc.strerror}") from None
    folder = db.absolute().parent
    if not folder.is_dir():
        raise click.UsageError(f"--db {db}: the folder {folder} does not exist")
    if db.is_dir():
        raise click.UsageError(f"--db {db} is a folder, not a database file")
    if db.exists() and not db.is_file():
        raise click.UsageError(f"--db {db} is not a regular file")
    if db.exists():
        with open(db, "rb") as fp:
            head = fp.read(len(SQLITE_HEADER))
        if head and head != SQLITE_HEADER:
            raise click.UsageError(f"--db {db} is not an SQLite database")
        if not os.access(db, os.W_OK):
            raise click.UsageError(f"--db {db} cannot be written")
    if not os.access(folder, os.W_OK):  # (SQLite writes its -wal and -shm files beside the database)
        raise click.UsageError(f"--db {db}: the folder {folder} cannot be written")
    if db.exists() and head and not migrated_or_empty(db):
        raise click.UsageError(f"--db {db} is another program's SQLite database, or a damaged one (no obelisk schema in it)")
    return db


def migrated_or_empty(db: Path) -> bool:
    """Whether ``db`` has no table, or obelisk's migrations made it (read without changing it).

    An empty ``_sqlite_migrations`` table alone is a database another process
    is creating: sqlite-utils commits that table before the first migration."""
    import sqlite3

    from .store.db import file_uri, refuse_newer
    from .store.migrations import migrations

    conn = sqlite3.connect(file_uri(db), uri=True)
    try:
        try:
            refuse_newer(conn)
        except NewerDatabase as exc:
            raise click.UsageError(f"--db {exc}") from None
        tables = {name for (name,) in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        return tables <= {"_sqlite_migrations"} or "_sqlite_migrations" in tables and conn.execute(
            "SELECT 1 FROM _sqlite_migrations WHERE migration_set = ? LIMIT 1", [migrations.name]
        ).fetchone() is not None
    except sqlite3.OperationalError as exc:
        return "locked" in str(exc) or "busy" in str(exc)  # the ingest waits for it
    except sqlite3.DatabaseError:
        return False  # damaged
    finally:
        conn.close()


def fail(exc: QueryError, as_json: bool):
    """Print a query error (as JSON on stdout, or as text on stderr) and exit with 1."""
    if as_json:
        click.echo(json.dumps(exc.as_dict()))
    else:
        click.echo(f"Error: {exc.code}: {exc.message}", err=True)
    sys.exit(1)


class CodedError(click.ClickException):
    """An error that is no usage error (exit 1) with its code (``QueryError``'s taxonomy),
    shown as ``fail`` shows one: ``Error: CODE: message``, and with --json the JSON object."""

    def __init__(self, code: str, message: str):
        super().__init__(message)
        self.obelisk_code = QueryError(code, message).code  # (a code outside the taxonomy is refused)


def is_unicode(text: str) -> bool:
    """False for text holding lone surrogates: bytes of an argument that were not UTF-8."""
    return not holds_lone_surrogate(text)


class FilledText(click.ParamType):
    """Text that is not empty nor only whitespace, for an option naming what to match: an
    empty one (a script's unset variable) would match nothing, or be read as no filter at all."""

    name = "text"

    def convert(self, value, param, ctx):
        if isinstance(value, str) and not value.strip():
            self.fail(f"{blank(value)}: give a value, or leave the option out", param, ctx)
        return value


def blank(value: str) -> str:
    """What is wrong with a value that holds no text: "it is empty", or "it is only
    whitespace" (which it holds, by name: a tab or a newline is easily missed)."""
    if not value:
        return "it is empty"
    names = {" ": "spaces", "\t": "tabs", "\n": "newlines", "\r": "carriage returns"}
    held = [name for char, name in names.items() if char in value]
    if set(value) - set(names):
        held.append("other whitespace")
    return f"it is only whitespace ({', '.join(held)})"


FILLED = FilledText()


class Seconds(click.FloatRange):
    """A number of seconds in a range; ``nan`` is in none."""

    name = "seconds"

    def convert(self, value, param, ctx):
        seconds = super().convert(value, param, ctx)
        if seconds != seconds:
            self.fail(f"{value!r} is not a number of seconds", param, ctx)
        return seconds


# Errors of a path that names no file; other errors of the system (a full disk, a read-only
# file system, a failing device) are the archive failing to be read or written.
NO_FILE_ERRNOS = frozenset((errno.ENOENT, errno.ENOTDIR, errno.ENAMETOOLONG, errno.ELOOP))


def os_error_code(exc: OSError) -> str:
    """The code of an error the system gave a command: none is a usage error (exit 1)."""
    if exc.errno in (errno.EACCES, errno.EPERM):  # the system refused this user
        return "OBELISK_PERMISSION_DENIED"
    if exc.errno in NO_FILE_ERRNOS:
        return "OBELISK_NOT_FOUND"
    return "SESSION_QUERY_PERSISTENCE_FAILED"


def report_errors(fn):
    """A command whose ``QueryError`` exits 1 with its code, except ``OBELISK_INVALID_ARGUMENT``:
    the arguments came from the command line, so that one is a usage error (exit 2)."""

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        for name, value in kwargs.items():
            for text in value if isinstance(value, (tuple, list)) else (value,):
                if isinstance(text, str) and not is_unicode(text):
                    ctx = click.get_current_context()
                    param = next((p for p in ctx.command.params if p.name == name), None)
                    raise click.BadParameter(f"not UTF-8 text: {text!r}", ctx, param)
        try:
            return fn(*args, **kwargs)
        except QueryError as exc:
            if exc.code == USAGE_CODE:
                raise usage_error(exc) from None
            fail(exc, kwargs.get("as_json", False))
        except NewerDatabase as exc:
            raise click.UsageError(str(exc)) from None
        except sqlite3.Error as exc:  # a damaged database the helpers did not read themselves
            fail(error_for(exc), kwargs.get("as_json", False))
        except KeyboardInterrupt:
            exit_interrupted("Interrupted.")
        except OSError as exc:
            if exc.errno == errno.EPIPE:  # a reader that stopped reading (| head): ended quietly by the command class
                raise
            raise CodedError(os_error_code(exc), os_error(exc)) from None

    return wrapper


def usage_error(exc: QueryError) -> click.UsageError:
    """``exc`` as a usage error (exit 2) that shows its own code."""
    error = click.UsageError(exc.message)
    error.obelisk_code = exc.code
    return error


def os_error(exc: OSError) -> str:
    """``/x/publish.yaml: Permission denied``: the file, and why it failed."""
    why = exc.strerror or str(exc)
    return f"{exc.filename}: {why}" if exc.filename else why


def exit_interrupted(message: str):
    """Ctrl-C: a word on stderr, and exit status 130 (as a shell gives), not click's "Aborted!" and 1."""
    click.echo(f"\n{message}", err=True)
    sys.exit(130)


@contextlib.contextmanager
def stopped_cleanly():
    """Ctrl-C during an ingest: what was committed stays, the next run carries on (exit 130)."""
    try:
        yield
    except KeyboardInterrupt:
        exit_interrupted("Interrupted: what was read is kept, and the next ingest carries on from there.")


def ingest_now(show_progress: bool, db: Path, roots, **options):
    """``store.ingest.ingest`` with a progress line while it runs when ``show_progress``
    (ended before anything else is printed); Ctrl-C is exit 130 (``stopped_cleanly``)."""
    from .store.ingest import ingest as run_ingest

    bar = Progress() if show_progress else None
    try:
        with stopped_cleanly():
            return run_ingest(db, roots, progress=bar, **options)
    except NewerDatabase as exc:  # a newer version's parsers read the logs (its migrations are seen before)
        raise click.UsageError(f"--db {exc}") from None
    except sqlite3.Error as exc:  # a damaged file its header did not tell, or one SQLite cannot open
        raise CodedError(error_for(exc).code, f"--db {db}: {exc}") from None
    finally:
        if bar:
            bar.close()


def has_logs(sources, roots) -> bool:
    """Whether any of ``roots`` holds a file its source would ingest."""
    return any(next(iter(sources[name].discover(root)), None) is not None for name, root in roots.items())


class JsonErrors:
    """A usage error (exit 2) carries its code, ``OBELISK_INVALID_ARGUMENT``, as the
    commands' own errors do: on stderr as ``Error: OBELISK_INVALID_ARGUMENT: ...``
    (``fail``'s shape), and with ``--json`` on the command's line also as a JSON
    object on stdout, ``{"ok": false, "error": {"code", "message"}}``: a script
    reading stdout never gets nothing. (In ``invoke``, so ``datasette obelisk ...``
    and ``sqlite-utils obelisk-ingest`` do it too; click then shows the error on
    stderr and exits as usual.)"""

    def parse_args(self, ctx, args):
        ctx.meta["obelisk_json"] = ctx.meta.get("obelisk_json") or "--json" in args
        with quiet_when_reader_gone():
            try:
                return super().parse_args(ctx, args)
            except click.ClickException as error:
                self.as_json(ctx, error)
                raise

    def invoke(self, ctx):
        with quiet_when_reader_gone():
            try:
                result = super().invoke(ctx)
                sys.stdout.flush()  # (here, not at exit: a reader gone is then told as below)
                return result
            except click.ClickException as error:
                self.as_json(ctx, error)
                raise

    @staticmethod
    def as_json(ctx, error: click.ClickException) -> None:
        if getattr(error, "obelisk_code_shown", False):
            return
        error.obelisk_code_shown = True
        message, code = error.format_message(), getattr(error, "obelisk_code", USAGE_CODE)
        if ctx.meta.get("obelisk_json"):
            click.echo(json.dumps({"ok": False, "error": {"code": code, "message": message}}))
        if isinstance(error, (click.UsageError, CodedError)) and not isinstance(error, NO_ARGS_IS_HELP):
            error.format_message = lambda: f"{code}: {message}"


BROKEN_PIPE_STATUS = 128 + 13  # 128 + SIGPIPE: what a shell reports for `cat` stopped by `| head`


@contextlib.contextmanager
def quiet_when_reader_gone():
    """The reader of the output stopped reading (``obelisk sessions | head``): exit quietly
    with ``BROKEN_PIPE_STATUS``, as a Unix tool does, for every command. What is still
    buffered goes to /dev/null, so Python's flush at exit does not print
    "Exception ignored ... BrokenPipeError" (stderr too: it may be the same pipe)."""
    try:
        yield
    except OSError as error:
        if error.errno != errno.EPIPE:
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):  # (a stream with no file: CliRunner's, or closed)
                pass
        os.close(devnull)
        sys.exit(BROKEN_PIPE_STATUS)


class JsonErrorsCommand(JsonErrors, click.Command):
    pass


class JsonErrorsGroup(JsonErrors, click.Group):
    command_class = JsonErrorsCommand


@click.group(cls=JsonErrorsGroup)
@click.version_option(package_name="datasette-obelisk", prog_name="obelisk")
def cli():
    """Archive and search the session logs of AI coding agents.

    Example:

    \b
        obelisk up                      # ingest your logs and serve them
        obelisk search "flaky test" --json
    """


class Progress:
    """A one-line progress report with rate and ETA, on a terminal only."""

    def __init__(self, stream=None):
        self.stream = stream or sys.stderr
        self.started = time.perf_counter()
        self.last = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.perf_counter()
        if now - self.last < 0.2 and done < total:
            return
        self.last = now
        elapsed = max(now - self.started, 1e-6)
        rate = done / elapsed
        eta = (total - done) / rate if rate else 0
        share = done / total if total else 1
        self.stream.write(
            f"\r{share:6.1%}  {done / 1e6:9.1f} / {total / 1e6:.1f} MB  "
            f"{rate / 1e6:7.1f} MB/s  ETA {eta:5.0f}s "
        )
        self.stream.flush()

    def note(self, text: str) -> None:
        """Say what the ingester does once every byte is read (indexes, derivations)."""
        elapsed = time.perf_counter() - self.started
        self.stream.write(f"\r{text:<60} {elapsed:6.0f}s ")
        self.stream.flush()

    def close(self) -> None:
        self.stream.write("\n")


def check_sources(names, installed, stored=()) -> None:
    """Refuse (usage error) a source name that is neither installed nor among ``stored`` (a database's)."""
    from .plugins import unknown_sources

    message = unknown_sources(names, installed, stored)
    if message:
        raise click.UsageError(message)


def spelled(named: str, path) -> str:
    """``path`` as ``named`` gave it: ``--claude-dir /p``, ``$CODEX_HOME /p``, ``--dir toy=/p``."""
    return f"{named}{path}" if named.endswith("=") else f"{named} {path}"


def folders(paths, named: str, missing_ok: bool = False) -> list[Path]:
    """``paths`` (given by ``named``: an option, ``$VARIABLE`` or ``--dir NAME=``), each a folder, or a usage
    error saying which is not. With ``missing_ok`` a path that does not exist passes (a folder that may appear later)."""
    found = [Path(path).expanduser() for path in paths]
    for path in found:
        if not path.is_dir() and (path.exists() or not missing_ok):
            raise click.UsageError(f"{spelled(named, path)} {'is not a folder' if path.exists() else 'does not exist'}")
    return found


def check_variable_folder(source, environ=os.environ) -> None:
    """Refuse (usage error) what ``source``'s ``root_variable`` names when it exists and is not a folder."""
    from .sources.base import variable_root

    named = variable_root(source, environ)
    if named is not None:
        folders([named], f"${source.root_variable}", missing_ok=True)


BUILT_IN_FOLDERS = {
    "claude": "Claude Code folder, as --dir claude=PATH (default: $CLAUDE_CONFIG_DIR, else ~/.claude)",
    "codex": "Codex folder, as --dir codex=PATH (default: $CODEX_HOME, else ~/.codex)",
    "gemini": "Gemini CLI folder, as --dir gemini=PATH (default: ~/.gemini, ~ being $GEMINI_CLI_HOME when set)",
}


def folder_options(fn):
    """``--dir NAME=PATH`` (repeatable, any installed source) and ``--claude-dir``, ``--codex-dir``,
    ``--gemini-dir``, handed to ``fn`` as one ``dirs`` argument (see ``given_folders``)."""

    @functools.wraps(fn)
    def wrapper(*args, dir_pairs, **kwargs):
        named = {name: kwargs.pop(f"{name}_dir") for name in BUILT_IN_FOLDERS}
        return fn(*args, dirs=given_folders(named, dir_pairs), **kwargs)

    wrapper = click.option(
        "--dir", "dir_pairs", multiple=True, metavar="NAME=PATH",
        help="The folder of source NAME, any installed one (repeatable); see `obelisk sources`",
    )(wrapper)
    for name, help in reversed(BUILT_IN_FOLDERS.items()):
        wrapper = click.option(f"--{name}-dir", type=FilledPath(path_type=Path), help=help)(wrapper)
    return wrapper


def given_folders(named: dict, pairs) -> dict[str, tuple[Path, str]]:
    """The folder given for each source by option, and the option that gave it (``--claude-dir``,
    ``--dir toy=``): ``named`` maps each built-in to its ``--NAME-dir`` value (None when not given),
    ``pairs`` are the ``--dir`` values (NAME in any case). A usage error for a pair that is not
    NAME=PATH, a source that is not installed, or a source given two different folders."""
    from .plugins import get_sources, source_spelled

    given = [(name, Path(path), f"--{name}-dir") for name, path in named.items() if path is not None]
    for pair in pairs:
        name, _, path = pair.partition("=")
        if not name or not path:
            raise click.UsageError(f"--dir {pair} is not NAME=PATH")
        name = source_spelled(name, get_sources())
        check_sources([name], get_sources())
        given.append((name, Path(path), f"--dir {name}="))
    dirs = {}
    for name, path, option in given:
        if name in dirs and dirs[name][0].expanduser().resolve() != path.expanduser().resolve():  # a link and its target are one
            first = spelled(dirs[name][1], dirs[name][0])
            raise click.UsageError(f"{first} and {spelled(option, path)} give the {name} source two folders")
        dirs.setdefault(name, (path, option))
    return dirs


def selected_sources(sources: dict, names, dirs: dict) -> tuple[list, dict]:
    """The names of the sources to ingest and the folders given for some of them by option
    (``dirs``, from ``given_folders``)."""
    from .plugins import source_spelled

    selected = [source_spelled(name, sources) for name in names] or list(sources)
    check_sources(selected, sources)
    if dirs and not names:
        selected = list(dirs)
    for name, (path, option) in dirs.items():
        if name not in selected:
            raise click.UsageError(f"{spelled(option, path)} gives a folder to {name}, which --source leaves out")
    return selected, dirs


def source_roots(sources: dict, names, dirs: dict, vanished_ok: bool = False) -> dict:
    """The folder to scan for each selected source.

    With ``vanished_ok`` (a ``--watch`` pass after the first) a folder given by
    option that is gone is still returned: the pass finds no file in it and
    marks its files gone from disk, keeping their sessions."""
    from .store.ingest import default_roots

    selected, explicit = selected_sources(sources, names, dirs)
    given = {}
    for name in selected:
        if name in explicit:
            path, option = explicit[name]
            given[name] = path.expanduser() if vanished_ok else folders([path], option)[0]
        else:
            check_variable_folder(sources[name])
    return {**default_roots({n: sources[n] for n in selected if n not in given}), **given}


def root_warnings(sources: dict, names, dirs: dict) -> list[dict]:
    """The selected sources without a folder option that are skipped because their default
    folder exists and is not a folder, each as ``{"source", "path", "message"}``."""
    from .sources.base import default_folder_warnings

    selected, explicit = selected_sources(sources, names, dirs)
    return default_folder_warnings({name: sources[name] for name in selected if name not in explicit})


def plugin_warnings() -> list[dict]:
    """A warning for each source plugin left out because it failed, as ``root_warnings`` gives them."""
    from .plugins import broken_plugins

    return [{"source": None, "path": None, "message": message} for message in broken_plugins()]


def echo_warnings(warnings) -> None:
    for warning in warnings:
        click.echo(f"warning: {warning['message']}", err=True)


@cli.command()
@db_option
@folder_options
@click.option("--source", "source_names", multiple=True, type=FILLED, help="Only this source (repeatable); see `obelisk sources`")
@click.option("--json", "as_json", is_flag=True, help="Print the summary as JSON")
@click.option("--progress/--no-progress", default=None, help="Progress bar (default: on a terminal)")
@click.option("--no-redact", is_flag=True, help="Store secrets as they are (local databases only; publish refuses them)")
@click.option("--watch", is_flag=True, help="Keep ingesting what changes until interrupted (or until the calling process exits)")
@click.option("--interval", type=Seconds(min=0.05, max=86_400), default=2.0, show_default=True, help="Seconds between --watch passes (at least)")
@click.option("--parent", type=int, hidden=True, help="With --watch: stop once process PARENT is no longer this one's parent")
def ingest(db_path, dirs, source_names, as_json, progress, no_redact, watch, interval, parent):
    """Ingest agent session logs into the database, reading only what changed.

    With --watch, ingest again every few seconds and print a line for each
    pass that read something or found files gone (one JSON object per line
    with --json).

    A source's folder is given by --dir NAME=PATH (--claude-dir PATH is
    --dir claude=PATH); with folders given and no --source, only those
    sources are read.

    Examples:

    \b
        obelisk ingest --db obelisk.db --claude-dir ~/.claude
        obelisk ingest --dir claude=/backup/.claude --dir gemini=/backup/.gemini
    """
    from .plugins import get_sources

    sources = get_sources()
    roots = source_roots(sources, source_names, dirs)
    warnings = plugin_warnings() + root_warnings(sources, source_names, dirs)
    db = writable_db(db_path)
    echo_warnings(warnings)
    show = sys.stderr.isatty() if progress is None else progress
    summary = ingest_now(show and not as_json, db, roots, sources=sources, redact=not no_redact, expect_logs=list(dirs))
    if as_json:
        missing = [] if roots else [NO_FOLDERS]
        echo_warnings([*summary.warnings, *missing])
        click.echo(json.dumps(pass_record(summary, db, roots, [*warnings, *missing]), indent=None if watch else 2))
    else:
        echo_summary(summary, roots)
    if watch:
        # Each pass looks for the folders again: a default one may appear later.
        keep_watching(db, lambda: source_roots(sources, source_names, dirs, vanished_ok=True), interval, as_json,
                      parent or os.getppid(), lambda: root_warnings(sources, source_names, dirs),
                      sources=sources, redact=not no_redact)
        sys.exit(0)
    sys.exit(1 if summary.errors else 0)


def pass_record(summary, db: Path, roots, warnings=()) -> dict:
    """An ingest pass as ``--json`` prints it: the same keys on every ``--watch`` line.

    ``warnings`` lists the sources skipped because their default folder is not a folder
    (and that no folder was found at all), then the summary's own (a folder gone while watching)."""
    from .sources.base import printable_path

    return dict(
        summary.as_dict(), db=printable_path(db), roots={k: printable_path(v) for k, v in roots.items()},
        warnings=[*warnings, *summary.warnings], at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def keep_watching(db: Path, roots, interval: float, as_json: bool, parent: int, warnings=list, **options) -> None:
    """Ingest every ``interval`` seconds until Ctrl-C or until process ``parent`` is no longer our parent.

    (A process whose parent exits gets another parent at once, even before
    the old one is reaped.)"""
    from .store.watch import watch

    def report(summary) -> None:
        if not (summary.files_read or summary.errors or summary.files_missing):
            return
        if as_json:
            click.echo(json.dumps(pass_record(summary, db, roots(), warnings())))
            return
        gone = f", {summary.files_missing} gone from disk (kept)" if summary.files_missing else ""
        click.echo(
            f"{time.strftime('%H:%M:%S')} {summary.files_read} files read: {summary.lines} lines, "
            f"{summary.messages} messages{_prompts(summary)}, {summary.errors} errors{_repaired(summary)}{_unknown(summary)}{gone}"
        )
        echo_errors(summary.error_samples)
        echo_errors(summary.repaired_samples, "warning")
        echo_errors(summary.unknown_samples, "warning")

    try:
        watch(db, roots, interval=interval, report=report, should_stop=lambda: os.getppid() != parent, **options)
    except KeyboardInterrupt:
        pass


NO_FOLDERS = {"source": None, "path": None, "message": "No agent log folders found (looked for the sources' default folders)."}


def echo_summary(summary, roots) -> None:
    if not roots:
        click.echo(NO_FOLDERS["message"], err=True)
    click.echo(
        f"{summary.files} files ({summary.files_read} read{_replayed(summary)}, {summary.files_skipped} unchanged, "
        f"{summary.files_missing} gone from disk{_links(summary)}), {summary.lines} lines, "
        f"{summary.sessions} sessions, {summary.messages} messages{_prompts(summary)}, "
        f"{summary.errors} errors{_repaired(summary)}{_unknown(summary)} in {summary.seconds:.2f}s"
    )
    echo_errors(summary.error_samples)
    echo_errors(summary.repaired_samples, "warning")
    echo_errors(summary.unknown_samples, "warning")
    echo_warnings(summary.warnings)
    for path in summary.empty_files:
        click.echo(f"  warning: {path}: lines read but no message recognised (format drift?)", err=True)
    for path in summary.files_unseen[:10]:
        click.echo(f"  warning: {path}: not found, but its folder cannot be read: kept as it was", err=True)


def counted(n: int, word: str) -> str:
    """``n`` and ``word``, plural unless ``n`` is 1: "1 line", "3 lines"."""
    return f"{n} {word}{'' if n == 1 else 's'}"


def _prompts(summary) -> str:
    """What the summary says of the prompt logs' lines read (none: nothing)."""
    return f", {counted(summary.prompts, 'prompt')} from prompt logs" if summary.prompts else ""


def _replayed(summary) -> str:
    n = summary.files_replayed
    return f" ({n} of them again from the start: rewritten, or a new parser, redaction rules or discovery hints)" if n else ""


def _links(summary) -> str:
    n = summary.files_linked
    return f", {counted(n, 'link')} to a file read under another name" if n else ""


def echo_errors(samples, kind: str = "error") -> None:
    for path, line, reason in samples[:10]:
        where = f"{path}:{line}" if line else path
        click.echo(f"  {kind}: {where}: {reason}", err=True)


def _repaired(summary) -> str:
    """How many lines were kept with repairs (stored, not errors: the exit status stays 0)."""
    n = summary.repaired
    return f" ({counted(n, 'line')} kept with bytes that are not UTF-8 read as U+FFFD)" if n else ""


def _unknown(summary) -> str:
    """How many lines were of types their parser does not know (merged: stored nowhere)."""
    n = summary.unknown
    return f" ({counted(n, 'line')} of a type not known, not stored)" if n else ""


@cli.command()
@click.option("--json", "as_json", is_flag=True,
              help="A JSON list: name, parser_version, folder, and problem (why there is no folder, else null)")
def sources(as_json):
    """List the installed log sources and where each looks by default.

    Example:

        obelisk sources
    """
    from .plugins import get_sources
    from .sources.base import default_root_of, non_folder_default

    listed = []
    installed = get_sources()
    echo_warnings(plugin_warnings())
    for name, source in installed.items():
        folder, problem = None, None
        try:
            check_variable_folder(source)
            not_folder = non_folder_default(source, os.environ)
            if not_folder:
                problem = f"{not_folder} is not a folder"
            else:
                folder, failure = default_root_of(source, os.environ)
                problem = failure or (None if folder else "no default folder found")
        except click.UsageError as error:
            problem = error.message
        listed.append({"name": name, "parser_version": source.parser_version,
                       "folder": str(folder) if folder else None, "problem": problem})
    if as_json:
        return click.echo(json.dumps(listed, indent=2))
    for item in listed:
        click.echo(f"{item['name']}\tparser v{item['parser_version']}\t{item['folder'] or '(' + item['problem'] + ')'}")


@cli.command()
@db_option
@folder_options
@click.option("--demo-dir", type=FilledPath(file_okay=False, path_type=Path), default=Path("demo-logs"), show_default=True, help="Where the demo corpus goes when there are no logs")
@click.option("-p", "--port", type=click.IntRange(1, 65535), default=8001, show_default=True, help="Port to serve on (127.0.0.1 only)")
@click.option("--serve/--no-serve", default=True, help="Start Datasette after ingesting")
@click.option("--watch/--no-watch", default=True, help="While serving, keep ingesting new and grown logs")
@report_errors
def up(db_path, dirs, demo_dir, port, serve, watch):
    """Ingest your agent logs (or a generated demo corpus) and serve them.

    While Datasette serves, a second process ingests what changes every few
    seconds (obelisk ingest --watch) over the same folders, so new sessions
    show up by themselves. Folders are given as to `obelisk ingest`. The demo
    corpus holds Claude Code, Codex and Gemini CLI sessions and the prompt logs of
    the first two, with the prompts of a few sessions whose transcripts were
    cleaned up.

    Example:

        obelisk up --db obelisk.db --port 8001
    """
    from .plugins import get_sources

    sources = get_sources()
    roots = source_roots(sources, (), dirs)
    watched = {name: path for name, (path, _) in dirs.items()}  # the rest: each source's default, every pass
    db = resolve_db(db_path)
    newer = newer_version_made(db, sources)
    if not newer:
        db = writable_db(db_path)
    if serve:
        check_port_free(port)
    echo_warnings(plugin_warnings() + root_warnings(sources, (), dirs))
    if newer:  # read as it is, never written: no ingest, no watcher
        doing = "Serving it as it is, read-only" if serve else "Left as it is"
        click.echo(f"--db {newer}. {doing}: nothing is ingested into it.", err=True)
        watch = False
    elif has_logs(sources, roots):
        pass
    elif holds_sessions(db):  # its logs deleted (an agent's cleanup) or on another machine: still served
        click.echo(f"No agent logs found: serving the sessions {db} already holds "
                   "(new logs are read as an agent writes them)" if serve else
                   f"No agent logs found: {db} keeps the sessions it already holds", err=True)
    else:  # no folder, or folders with no log in them yet, and nothing archived
        selected, _ = selected_sources(sources, (), dirs)
        looked = "looked in " + ", ".join(f"{path} ({name})" for name, path in roots.items()) if roots else "read no folder"
        missing = [name for name in selected if name not in roots]
        looked += f"; no folder for {', '.join(missing)}" if missing else ""
        roots = watched = demo_roots(demo_dir)
        db = writable_db(demo_db(db))  # never mixed into the database your own logs will go to
        click.echo(f"No agent logs found: using a generated demo corpus in {demo_dir}/, in {db} "
                   "(your own logs go to their own database once an agent has written some)", err=True)
        click.echo(f"  ({looked}: `obelisk sources` says where each source looks, "
                   "--claude-dir, --codex-dir, --gemini-dir or --dir give a folder)", err=True)
    if not newer:
        summary = ingest_now(sys.stderr.isatty(), db, roots, sources=sources, expect_logs=list(watched))
        echo_summary(summary, roots)
    click.echo(f"{db.resolve()} holds {holdings(db)}.", err=True)  # the summary counts this run's work only
    if serve:
        if watch:
            start_watcher(db, watched)
            click.echo("New and grown logs are ingested every few seconds while it serves (--no-watch: not).", err=True)
        click.echo(f"Serving {db} on http://127.0.0.1:{port}/-/obelisk", err=True)
        os.execvp(sys.executable, [sys.executable, "-m", "datasette_obelisk.serve", str(db), "-h", "127.0.0.1", "-p", str(port)])


def holdings(db: Path) -> str:
    """``12 sessions (30 with agents' transcripts), 2,735 log messages``: what a database holds."""
    from .query.dashboard import holdings as counted

    conn = connect_readonly(db)
    try:
        held = counted(conn)
    finally:
        conn.close()
    top, every, messages = held["sessions"], held["transcripts"], held["messages"]
    agents = f" ({every:,} with agents' transcripts)" if every != top else ""
    return f"{top:,} session{'' if top == 1 else 's'}{agents}, {messages:,} log message{'' if messages == 1 else 's'}"


def start_watcher(db: Path, dirs: dict) -> None:
    """``obelisk ingest --watch`` over the folders ``dirs`` gives (every source's
    default folders when it gives none: one created later is watched too), in
    a process that stops when this one does.

    This process then becomes Datasette (``exec``), so the watcher's parent is
    the server: it exits when the server does."""
    import subprocess

    command = [sys.executable, "-m", "datasette_obelisk", "ingest", "--watch", "--no-progress", "--db", str(db),
               "--parent", str(os.getpid())]
    for name, root in dirs.items():
        command += ["--dir", f"{name}={root}"]
    subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)


def newer_version_made(db: Path, sources) -> str | None:
    """Why ``db`` must not be written, when a newer datasette-obelisk made it (its migrations,
    or its parsers read some of the logs); else None (``writable_db`` says what else is wrong)."""
    from .store.db import file_uri, refuse_newer, refuse_newer_parsers

    try:
        if not db.is_file():
            return None
    except OSError:  # a name too long for the system: writable_db's to say
        return None
    try:
        conn = sqlite3.connect(file_uri(db), uri=True)
    except sqlite3.Error:
        return None
    try:
        refuse_newer(conn)
        refuse_newer_parsers(conn, {name: source.parser_version for name, source in sources.items()})
    except NewerDatabase as exc:
        return str(exc)
    except sqlite3.Error:  # not an SQLite file, no obelisk schema yet, locked...: writable_db's to say
        return None
    finally:
        conn.close()
    return None


def holds_sessions(db: Path) -> bool:
    """Whether ``db`` (a database ``writable_db`` accepted, or none yet) already holds sessions."""
    from .store.db import file_uri

    if not db.exists():
        return False
    conn = sqlite3.connect(file_uri(db), uri=True)
    try:
        return conn.execute("SELECT EXISTS (SELECT 1 FROM sessions)").fetchone()[0] == 1
    except sqlite3.Error:  # no sessions table yet, or locked by an ingest that is making it
        return False
    finally:
        conn.close()


def demo_db(db: Path) -> Path:
    """Where the demo goes instead of ``db``: ``obelisk.db`` -> ``obelisk-demo.db``."""
    return db.with_name(f"{db.stem}-demo{db.suffix}")


def check_port_free(port: int) -> None:
    """A usage error (exit 2) now, rather than after the ingest, when 127.0.0.1:``port`` is taken."""
    import socket

    with socket.socket() as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as the server will: a closing port is free
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            raise click.UsageError(f"--port {port}: 127.0.0.1:{port} cannot be served ({exc.strerror})") from None


def demo_roots(demo_dir: Path) -> dict:
    """Generate (once) a small demo corpus and return its source folders."""
    from .demo.generator import generate

    marker = demo_dir / ".complete"
    if not marker.exists():
        generate(demo_dir, seed=0, target_bytes=6_000_000, gemini=True, prompt_logs=True)
        marker.write_text("generated by obelisk up\n")
    return {"claude": demo_dir / ".claude", "codex": demo_dir / ".codex",
            **({"gemini": demo_dir / ".gemini"} if (demo_dir / ".gemini").is_dir() else {})}


@cli.command()
@db_option
@click.option("--check", is_flag=True, required=True, help="Report what the current rules would still find")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON")
@report_errors
def redact(db_path, check, as_json):
    """Report secrets the current redaction rules would still find, never printing them.

    Exit status 1 when anything is found, or when the database is missing or
    not an obelisk database (OBELISK_NOT_FOUND, as the read commands).

    Example:

        obelisk redact --check --db obelisk.db
    """
    from .store import redacting

    conn = connect_readonly(resolve_db(db_path))  # (read as it is: never migrated, nor a key written)
    report = redacting.check(conn)
    if as_json:
        click.echo(json.dumps(report, indent=2))
    elif not report:
        click.echo("No secrets found by the current rules.")
    else:
        for column, found in report.items():
            rules = ", ".join(f"{rule}: {n}" for rule, n in sorted(found["findings"].items()))
            click.echo(f"{column}: {found['rows']} rows ({rules})")
    sys.exit(1 if report else 0)


PUBLISH_SETTINGS = {
    "allow_download": False,
    "default_allow_sql": False,
    "allow_signed_tokens": False,
    "allow_csv_stream": False,
    # One query per column of a table page, each repeating its ?_search= (docs/web.md).
    "suggest_facets": False,
}


# Bookkeeping a published archive does not show: who wrote (audit_log holds
# actors), host paths and parser state (source_files, ingest_errors), and
# internal state (obelisk_state, derive_queue, derive_tallies). See docs/web.md.
PUBLISH_HIDDEN_TABLES = ("audit_log", "source_files", "ingest_errors", "obelisk_state", "derive_queue", "derive_tallies")


def publish_settings(database: str = "obelisk") -> dict:
    """The Datasette configuration of a read-only published instance of ``database``."""
    return {
        "settings": dict(PUBLISH_SETTINGS),
        "databases": {database: {"tables": {table: {"allow": False} for table in PUBLISH_HIDDEN_TABLES}}},
        "plugins": {"datasette-obelisk": {"read_only": True}},
    }


@cli.command(name="publish-config")
@db_option
@click.option("-o", "--output", type=FilledPath(dir_okay=False, path_type=Path), help="Write the configuration to this file")
@report_errors
def publish_config(db_path, output):
    """Datasette configuration for a read-only published instance.

    Downloads, arbitrary SQL, signed tokens, CSV streaming and facet
    suggestions are off, the plugin registers no write route, and the
    bookkeeping tables (audit_log, source_files, ingest_errors,
    obelisk_state, derive_queue, derive_tallies) are hidden.
    Refuses a database that is missing or not an obelisk database
    (OBELISK_NOT_FOUND, exit 1, as the read commands), or that was ingested
    with --no-redact (OBELISK_PERMISSION_DENIED, exit 1).

    Example:

        obelisk publish-config --db obelisk.db -o publish.yaml
    """
    import yaml

    from .store.db import get_state

    if output is not None and (not output.name or output.is_dir()):
        raise click.UsageError(f"--output {str(output)!r} names no file")
    if output is not None and not output.absolute().parent.is_dir():
        raise click.UsageError(f"--output {output}: the folder {output.absolute().parent} does not exist")
    db = resolve_db(db_path)
    conn = connect_readonly(db)
    unredacted = get_state(conn, "unredacted_ingest")
    conn.close()
    if unredacted:
        raise CodedError(
            "OBELISK_PERMISSION_DENIED",
            f"{db} was ingested with --no-redact and may hold secrets: ingest the logs with "
            "redaction into a new database before publishing it",
        )
    text = yaml.safe_dump(publish_settings(db.stem), sort_keys=False)
    command = f"datasette serve --immutable {db} -c {output or 'publish.yaml'}"
    if output:
        try:
            output.write_text(text)
        except OSError as exc:
            exc.filename = exc.filename or str(output)
            raise
        click.echo(f"Wrote {output}. Serve it with:\n  {command}", err=True)
    else:
        click.echo(text, nl=False)
        click.echo(f"# save this as publish.yaml (or write it with -o FILE), then serve with: {command}", err=True)


from . import cli_query  # noqa: E402,F401

if __name__ == "__main__":  # python -m datasette_obelisk.cli: the module proper, its commands registered
    from datasette_obelisk.cli import cli as main

    main(prog_name="obelisk")
