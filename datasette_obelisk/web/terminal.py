"""Terminal escape sequences left out of a page.

Command output a log keeps (``npm``, ``pytest``, ``git`` run by an agent)
often holds ANSI escape sequences: colours, cursor moves, window titles,
hyperlinks. A terminal acts on them; a browser draws their ESC as a box and
the rest (``[36m``, ``[?25l``) as text around the words. A page leaves them
out (the raw log line and the JSON keep them).

They are removed from the rendered page, where ESC can only come from log
text. Escaping turns the characters of markup (``< > & " '``) into
entities, so none of them belongs to a sequence: one met after an ESC is
the page's own (a tag, an attribute's end), and no sequence runs into it
(a text cut short right after ``ESC [`` loses only those two characters).
"""

from __future__ import annotations

import re

ESCAPES = re.compile(
    r"\x1b\][^\x07\x1b<\"]*(?:\x07|\x1b\\)"  # OSC, ended by BEL or ESC \: a title, a hyperlink
    r"|\x1b\[[0-9:;=?]*[ !#$%(-/]*[@-~]"  # CSI: colours, cursor moves, erasing
    r"|\x1b[ !#$%(-/]*[0-;=?-~]"  # any other escape (ESC ( B, ESC 7, ESC =)
    r"|\x1b"  # an ESC with nothing it could start
)


def without_escapes(html: str) -> str:
    """``html`` without the terminal escape sequences its text holds."""
    return ESCAPES.sub("", html) if "\x1b" in html else html
