"""The plugin manager for sources; built-in sources register like any other."""

from __future__ import annotations

import importlib
from importlib.metadata import entry_points

import pluggy

from . import hookspecs

BUILTIN_SOURCES = (
    "datasette_obelisk.sources.claude_code",
    "datasette_obelisk.sources.codex",
    "datasette_obelisk.sources.gemini",
)

pm = pluggy.PluginManager("obelisk")
pm.add_hookspecs(hookspecs)
_unloadable: dict[str, str] = {}  # installed plugins that failed to import or register
for _entry in entry_points(group="obelisk"):
    if pm.get_plugin(_entry.name) is None and not pm.is_blocked(_entry.name):
        try:
            pm.register(_entry.load(), _entry.name)
        except Exception as exc:  # one broken plugin must not stop every command
            _unloadable[_entry.name] = repr(exc)
for _name in BUILTIN_SOURCES:
    try:
        _module = importlib.import_module(_name)
    except ModuleNotFoundError as exc:  # a built-in not written yet
        if exc.name != _name:
            raise
        continue
    pm.register(_module, _name)


def get_sources() -> dict:
    """Every installed source by name: the built-in ones first, then the
    plugins' in registration order.

    A plugin whose hook raises, or returns anything but a list of sources
    (each with a name, a whole-number ``parser_version`` and the methods of
    ``sources.base.Source``), is left out (``broken_plugins`` says why): the
    other sources still work. So is a source whose name another took first
    (a plugin cannot replace a built-in source)."""
    global _broken
    found, owners, broken = {}, {}, {}
    impls = sorted(pm.hook.obelisk_sources.get_hookimpls(), key=lambda impl: impl.plugin_name not in BUILTIN_SOURCES)
    for impl in impls:
        try:
            batch = impl.function()
            if batch is None:
                raise TypeError("the hook returned None, not a list of sources")
            batch = list(batch)
            for source in batch:
                check_source(source)
        except Exception as exc:
            broken[impl.plugin_name] = repr(exc)
            continue
        names = [source.name for source in batch]
        taken = next((name for name in names if name in found), None)
        if taken is not None:  # (the plugin is left out whole, as any broken one)
            broken[impl.plugin_name] = f"its source {taken!r} is installed already, by {owners[taken]}"
            continue
        if len(set(names)) < len(names):
            broken[impl.plugin_name] = f"it names a source twice: {sorted(n for n in set(names) if names.count(n) > 1)!r}"
            continue
        for source in batch:
            found[source.name], owners[source.name] = source, impl.plugin_name
    _broken = broken
    return found


def check_source(source) -> None:
    """TypeError unless ``source`` has what every source needs."""
    name = getattr(source, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"a source's name is not text: {name!r}")
    version = getattr(source, "parser_version", None)
    if not isinstance(version, int) or isinstance(version, bool) or version < 0:
        raise TypeError(f"source {name}: parser_version is not a whole number: {version!r}")
    for method in ("default_root", "discover", "open_parser"):
        if not callable(getattr(source, method, None)):
            raise TypeError(f"source {name}: {method} is not a method")


_broken: dict[str, str] = {}


def broken_plugins() -> list[str]:
    """A sentence for each source plugin that could not be loaded, or whose hook failed
    when last asked for its sources."""
    return [f"the source plugin {name} failed and is left out: {reason}"
            for name, reason in {**_unloadable, **_broken}.items()]


def source_spelled(name: str, installed, stored=()) -> str:
    """``name`` as the installed or ``stored`` source it names spells it, in any case
    (``Claude``, ``CODEX``: ``claude``, ``codex``); unchanged when it names none, or
    several that differ in case alone (then only the exact spelling names one)."""
    known = [*installed, *(n for n in stored if n not in installed)]
    if name in known:
        return name
    same = [n for n in known if n.casefold() == name.casefold()]
    return same[0] if len(same) == 1 else name


def unknown_sources(names, installed, stored=()) -> str | None:
    """Why some of ``names`` are neither installed sources nor among ``stored`` (a database's
    sources: one keeps a source's sessions after its plugin is uninstalled); None when all are."""
    if any(not n.strip() for n in names):  # (else "unknown source  ;": a blank name reads as none)
        return "source must not be blank"
    unknown = [n for n in names if n not in installed and n not in stored]
    if not unknown:
        return None
    others = [n for n in stored if n not in installed]
    return (
        f"unknown source {', '.join(unknown)}; installed: {', '.join(installed)}"
        + (f"; also in the database: {', '.join(others)}" if others else "")
        + "".join(f"; {broken}" for broken in broken_plugins())
    )
