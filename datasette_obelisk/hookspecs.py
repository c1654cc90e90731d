"""Hooks through which packages add agent log sources."""

import pluggy

hookspec = pluggy.HookspecMarker("obelisk")
hookimpl = pluggy.HookimplMarker("obelisk")


@hookspec
def obelisk_sources():
    """Return a list of Source objects (see ``sources/base.py``)."""
