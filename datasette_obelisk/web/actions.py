"""The two write actions and the one check every write endpoint makes.

``obelisk-remember`` and ``obelisk-forget`` are denied by default: nothing
in this plugin grants them. Datasette's own rules then decide: root (with
``--root``) is allowed everything, ``datasette.yaml`` can grant them::

    permissions:
      obelisk-remember:
        id: alice

and an API token acts as its actor, narrowed by the actions it carries
(``datasette create-token alice --all obelisk-remember``). A token never
grants more than its actor has, so minting one cannot escalate.
"""

from __future__ import annotations

from datasette.permissions import Action
from datasette.resources import DatabaseResource

REMEMBER = "obelisk-remember"
FORGET = "obelisk-forget"


def write_actions() -> list[Action]:
    return [
        Action(
            name=REMEMBER,
            abbr="obr",
            description="Register a markdown memory file in an obelisk database",
            resource_class=DatabaseResource,
        ),
        Action(
            name=FORGET,
            abbr="obf",
            description="Archive a memory in an obelisk database",
            resource_class=DatabaseResource,
        ),
    ]


async def allowed(datasette, actor, action: str, database: str) -> bool:
    return await datasette.allowed(action=action, resource=DatabaseResource(database), actor=actor)
