"""The canonical UTC form of a point in time, ``YYYY-MM-DDTHH:MM:SS.fffZ``.

Logs write one instant several ways (``…31Z``, ``…31.000Z``, ``…+02:00``);
in this form text order is time order. SQLite's ``strftime(CANONICAL, x)``
gives it for a stored value (see ``query/moments.py``) in the forms logs
write; at the edges the two differ: SQLite keeps a fraction past the
millisecond on its second where ``canonical`` rounds it, and reads no
``+0500`` offset without its colon, nor a year-month alone.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta, timezone

CANONICAL = "%Y-%m-%dT%H:%M:%fZ"
YEAR_OR_MONTH = re.compile(r"\d{4}(-\d{2})?")


def canonical(text: str, rounding: str = "nearest") -> str | None:
    """``text`` (an ISO 8601 date or time) in the canonical UTC form, else None.

    A fraction finer than a millisecond is rounded to the ``nearest`` one, or
    ``up`` / ``down`` (what a lower / upper bound needs: stored times are whole
    milliseconds, and a bound between two admits only the one inside it)."""
    text = text.strip()
    if text.endswith("z"):  # SQLite reads a lowercase z as UTC too
        text = text[:-1] + "Z"
    if YEAR_OR_MONTH.fullmatch(text):
        text += "-01" * (2 - text.count("-"))
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    millis = (moment.microsecond + {"nearest": 500, "up": 999, "down": 0}[rounding]) // 1000
    try:
        moment = moment.replace(microsecond=0).astimezone(timezone.utc) + timedelta(milliseconds=millis)
    except OverflowError:
        return None
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")
