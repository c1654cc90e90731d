"""Chinese, Japanese and Korean text as words FTS5 can find.

FTS5's unicode61 tokenizer ends a word only at a space or punctuation, so a
whole CJK sentence (no spaces) is one token and no word inside it can be
found. The indexes therefore read each CJK character as a word of its own:
``split(text)`` puts ``SEPARATOR`` (U+FFFE, a noncharacter no log holds,
which unicode61 reads as a separator) around every one, and a query is split
the same way, so a CJK word is the phrase of its characters and matches
wherever it stands (``数据`` in ``数据库迁移``).

    split(text) -> str            ``text`` with each CJK character set apart
    search_text(text) -> str|None ``split(text)`` when that differs, else None
                                  (what ``messages.search_text`` holds)
    holds(text) -> bool           whether ``text`` holds a CJK character
    unsplit(text) -> str          ``text`` without the separators
    is_cjk(char) -> bool
"""

from __future__ import annotations

import re

SEPARATOR = "\ufffe"
RANGES = (
    "\u1100-\u11ff"  # Hangul Jamo
    "\u3005-\u3007\u3021-\u3029\u3031-\u3035\u3038-\u303c"  # 々〆〇, numerals, repeat marks
    "\u3040-\u30ff"  # Hiragana, Katakana
    "\u3100-\u312f\u3130-\u318f\u31a0-\u31bf\u31f0-\u31ff"  # Bopomofo, Hangul compatibility Jamo
    "\u3400-\u4dbf\u4e00-\u9fff"  # CJK ideographs
    "\ua960-\ua97f\uac00-\ud7ff"  # Hangul syllables and Jamo
    "\uf900-\ufaff"  # compatibility ideographs
    "\uff66-\uff9f\uffa0-\uffdc"  # halfwidth Katakana and Hangul
    "\U00020000-\U0003134f"  # ideographs beyond the BMP
)
CJK = re.compile(f"[{RANGES}]")
_RUN = re.compile(f"[{RANGES}]+")


def is_cjk(char: str) -> bool:
    return not char.isascii() and CJK.match(char) is not None


def _set_apart(run: re.Match) -> str:
    return SEPARATOR + SEPARATOR.join(run.group()) + SEPARATOR


def holds(text: str) -> bool:
    """Whether ``text`` holds a CJK character."""
    return not text.isascii() and CJK.search(text) is not None


def search_text(text: str | None) -> str | None:
    return _RUN.sub(_set_apart, text) if text and holds(text) else None


def split(text: str) -> str:
    return search_text(text) or text


def unsplit(text: str) -> str:
    return text.replace(SEPARATOR, "") if SEPARATOR in text else text
