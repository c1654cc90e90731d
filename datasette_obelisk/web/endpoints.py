"""The description of a JSON endpoint: one record feeds its route and its OpenAPI entry."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

API_ROOT = "/-/obelisk/api"


@dataclass(frozen=True)
class Param:
    name: str
    type: str = "string"  # string | integer | boolean | json
    description: str = ""
    required: bool = False
    default: int | None = None  # an integer's value when none is given
    minimum: int | None = None  # an integer's bounds, as the endpoint enforces them
    maximum: int | Callable[[], int] | None = None  # (a function: the bound a helper reads when it is called)

    def bound(self, key: str) -> int | None:
        """``default``, ``minimum`` or ``maximum`` as it is now."""
        value = getattr(self, key)
        return value() if callable(value) else value


@dataclass(frozen=True)
class Endpoint:
    path: str  # below API_ROOT, OpenAPI style: "/session-query/session/{sessionId}"
    handler: Callable  # (conn, Params) -> JSON-able result
    summary: str
    tag: str
    params: tuple[Param, ...] = ()
    response: dict = field(default_factory=lambda: {"type": "object"})
    method: str = "get"
    paged: bool = False  # answers a Page: its place in the whole list goes in headers
    too_large: bool = False  # OBELISK_PAYLOAD_TOO_LARGE (413) for an answer too large to build whole

    @property
    def path_params(self) -> list[str]:
        return re.findall(r"{(\w+)}", self.path)

    @property
    def regex(self) -> str:
        pattern = re.sub(r"{(\w+)}", r"(?P<\1>[^/]+)", self.path)
        return "^" + API_ROOT + pattern + "$"
