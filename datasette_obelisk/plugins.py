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
    """Every installed source by name, in registration order.

    A plugin whose hook raises, or returns anything but a list of named
    sources, is left out (``broken_plugins`` says why): the other sources
    still work."""
    global _broken
    found, broken = {}, {}
    for impl in pm.hook.obelisk_sources.get_hookimpls():
        try:
            batch = list(impl.function() or ())
            names = [source.name for source in batch]
            if not all(isinstance(name, str) and name for name in names):
                raise TypeError(f"a source's name is not text: {names!r}")
        except Exception as exc:
            broken[impl.plugin_name] = repr(exc)
            continue
        for name, source in zip(names, batch):
            found.setdefault(name, source)
    _broken = broken
    return found


_broken: dict[str, str] = {}


def broken_plugins() -> list[str]:
    """A sentence for each source plugin that could not be loaded, or whose hook failed
    when last asked for its sources."""
    return [f"the source plugin {name} failed and is left out: {reason}"
            for name, reason in {**_unloadable, **_broken}.items()]


def unknown_sources(names, installed, stored=()) -> str | None:
    """Why some of ``names`` are neither installed sources nor among ``stored`` (a database's
    sources: one keeps a source's sessions after its plugin is uninstalled); None when all are."""
    unknown = [n for n in names if n not in installed and n not in stored]
    if not unknown:
        return None
    others = [n for n in stored if n not in installed]
    return (
        f"unknown source {', '.join(unknown)}; installed: {', '.join(installed)}"
        + (f"; also in the database: {', '.join(others)}" if others else "")
    )
