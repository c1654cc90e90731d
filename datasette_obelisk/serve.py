"""``python -m datasette_obelisk.serve ARGS``: ``datasette serve ARGS``, stopped by Ctrl-C with status 0.

``obelisk up`` becomes this process once it has ingested, so the server
starts fresh (none of the ingest's memory). Datasette's own command ends
a Ctrl-C with "Aborted!" and status 1; serving until Ctrl-C is how this one
is meant to end.
"""

from __future__ import annotations

import sys

import click


def main(args: list[str]) -> int:
    from datasette.cli import cli as datasette_cli

    try:
        datasette_cli.main(["serve", *args], prog_name="datasette", standalone_mode=False)
    except click.Abort:  # Ctrl-C (click has ended the line)
        return 0
    except click.ClickException as error:
        error.show()
        return error.exit_code
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
