"""``python -m datasette_obelisk``: the ``obelisk`` command."""

from .cli import cli

cli(prog_name="obelisk")
