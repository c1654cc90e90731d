"""``/-/obelisk/api/history/search`` and ``/read``: the history contract (query/history.py)."""

from __future__ import annotations

HISTORY_ENDPOINTS: list = []
