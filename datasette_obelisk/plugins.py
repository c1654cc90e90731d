"""The plugin manager for sources; built-in sources register like any other."""

from __future__ import annotations

import importlib

import pluggy

from . import hookspecs

BUILTIN_SOURCES = (
    "datasette_obelisk.sources.claude_code",
    "datasette_obelisk.sources.codex",
    "datasette_obelisk.sources.gemini",
)

pm = pluggy.PluginManager("obelisk")
pm.add_hookspecs(hookspecs)
pm.load_setuptools_entrypoints("obelisk")
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

    A plugin whose hook raises is left out (``broken_plugins`` says why):
    the other sources still work."""
    found = {}
    _broken.clear()
    for impl in pm.hook.obelisk_sources.get_hookimpls():
        try:
            batch = impl.function()
        except Exception as exc:
            _broken[impl.plugin_name] = repr(exc)
            continue
        for source in batch or ():
            found.setdefault(source.name, source)
    return found


_broken: dict[str, str] = {}


def broken_plugins() -> list[str]:
    """A sentence for each source plugin whose hook raised when asked for its sources."""
    return [f"the source plugin {name} failed and is left out: {reason}" for name, reason in _broken.items()]


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
