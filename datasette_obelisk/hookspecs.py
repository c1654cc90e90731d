"""Hooks through which packages add agent log sources."""

import pluggy

hookspec = pluggy.HookspecMarker("obelisk")
hookimpl = pluggy.HookimplMarker("obelisk")


@hookspec
def obelisk_sources():
    """Return a list of Source objects (see ``sources/base.py``).

    A source may declare ``root_variable`` (the environment variable naming its
    folder) and ``home_folder`` (its folder under the home directory); the CLI
    then refuses a variable that names a file and warns about a default folder
    that is one, as for the built-in sources.
    """
