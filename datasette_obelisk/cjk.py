"""Chinese, Japanese and Korean text, and emoji, as words FTS5 can find.

FTS5's unicode61 tokenizer ends a word only at a space or punctuation, so a
whole CJK sentence (no spaces) is one token and no word inside it can be
found. The indexes therefore read each CJK character as a word of its own:
``split(text)`` puts ``SEPARATOR`` (U+FFFE, a noncharacter no log holds,
which unicode61 reads as a separator) around every one, and a query is split
the same way, so a CJK word is the phrase of its characters and matches
wherever it stands (``数据`` in ``数据库迁移``). Each emoji is set apart
the same way, written as a character unicode61 keeps (``emoji.py``), in the
same pass over the text.

    split(text) -> str            ``text`` with each CJK character and emoji set apart
    search_text(text) -> str|None ``split(text)`` when that differs, else None
                                  (what ``messages.search_text`` holds)
    holds(text) -> bool           whether ``text`` holds a CJK character
    sets_apart(text) -> bool      whether ``split`` changes ``text`` (CJK or emoji)
    unsplit(text) -> str          ``text`` without the separators, emoji as written
    before_emoji(text) -> str     ``split`` text in the form it had before emoji
                                  were set apart (m058: what to delete from an index)
    is_cjk(char) -> bool
    is_apart(char) -> bool        a CJK character or a pictograph: a word of its own
    APART: str                    a regex class body of both
    NEAR_APART: str               a superset of it quick to scan long texts with
                                  (every character beyond the BMP: letters there are rare)
"""

from __future__ import annotations

import re

from . import emoji

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
_BMP_RANGES = RANGES[: RANGES.index("\U00020000")]
CJK = re.compile(f"[{RANGES}]")
APART = RANGES + emoji.CHARACTERS
_APART = re.compile(f"[{APART}]")
_UNIT = re.compile(f"([{RANGES}]+)|{emoji.UNIT}")  # (a CJK run, or one emoji: what is set apart)
# A superset of both, quick to scan a text with (``re`` tests a class of BMP characters and one
# range beyond it at once, but a long list of ranges beyond it one by one: 20 times slower),
# and the runs of them (a repeat costs at every character: found only past the first one).
NEAR_APART = f"{_BMP_RANGES}{emoji.BMP_CHARACTERS}\U00010000-\U0010ffff"
_CANDIDATE = f"[{NEAR_APART}]"
_FIRST, _CANDIDATES = re.compile(_CANDIDATE), re.compile(_CANDIDATE + "+")
_BMP_CJK_RUN = re.compile(f"[{_BMP_RANGES}]+")
_EMOJI = re.compile(f"[{emoji.CHARACTERS}]")


def is_cjk(char: str) -> bool:
    return not char.isascii() and CJK.match(char) is not None


def is_apart(char: str) -> bool:
    return not char.isascii() and _APART.match(char) is not None


def _set_apart(unit: re.Match) -> str:
    if unit.group(1) is None:
        return SEPARATOR + emoji.encode(unit.group()) + SEPARATOR
    return SEPARATOR + SEPARATOR.join(unit.group()) + SEPARATOR


def holds(text: str) -> bool:
    """Whether ``text`` holds a CJK character."""
    return not text.isascii() and CJK.search(text) is not None


def sets_apart(text: str) -> bool:
    return search_text(text) is not None


def _set_apart_run(run: re.Match) -> str:
    found = run.group()
    if _BMP_CJK_RUN.fullmatch(found):  # (the common cases, done as quickly as they can be)
        return SEPARATOR + SEPARATOR.join(found) + SEPARATOR
    if len(found) == 1:
        return SEPARATOR + emoji.encode(found) + SEPARATOR if _EMOJI.match(found) else found
    return _UNIT.sub(_set_apart, found)


def search_text(text: str | None) -> str | None:
    """``split(text)``, or None when that is ``text``: one pass over a text that has neither."""
    if not text or text.isascii():
        return None
    first = _FIRST.search(text)
    if first is None:
        return None
    at = first.start()
    apart = _CANDIDATES.sub(_set_apart_run, text[at:])
    return text[:at] + apart if apart != text[at:] else None


def split(text: str) -> str:
    return search_text(text) or text


_SET_APART_EMOJI = re.compile(f"{SEPARATOR}([{emoji.ENCODED}]+){SEPARATOR}")


def before_emoji(text: str) -> str:
    return _SET_APART_EMOJI.sub(lambda unit: emoji.decode(unit.group(1)), text)


def unsplit(text: str) -> str:
    return emoji.decode(text.replace(SEPARATOR, "")) if SEPARATOR in text else text
