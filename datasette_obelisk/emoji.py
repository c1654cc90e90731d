"""Emoji as words FTS5 can find.

FTS5's unicode61 tokenizer reads most emoji as separators (its tables know
🚀 and ✅ as symbols) and the newest ones as letters (🤖 joins the word it
touches), so neither ``🚀`` nor ``x🤖y`` could be searched for. The indexes
therefore read each emoji as a word of its own, written as a character of
the private use area (which unicode61 keeps in a word, whatever its version):
``encode`` maps a pictograph to one in U+10AF80..U+10FFFD, a range no font or
log uses, and ``decode`` maps it back.

What a unit is (``UNIT`` matches one): a pictograph (Unicode's
``Extended_Pictographic``, the dingbats such as ✓ and ✗, and the skin tone
modifiers), a flag (two regional indicators), or a subdivision flag (🏴 and
its tag characters). The characters that join or dress a unit (U+FE0F and
U+FE0E, the zero-width joiner, the keycap mark) stay as they are: unicode61
reads them as separators, so ``✅`` and ``✅️`` are the same word, a ZWJ
sequence (👨‍👩‍👧) is the phrase of its pictographs, and a skin tone is a
word after its hand (``👍`` finds ``👍🏽``; ``👍🏽`` finds only that tone).
A keycap (1️⃣) stays its digit.

    UNIT: re pattern                  one unit (no capture groups)
    CHARACTERS: str                   a regex class body of every pictograph
    BMP_CHARACTERS: str               the same, of those in the BMP
    encode(unit) -> str               the unit as index text (joiners kept)
    decode(text) -> str               the encoded characters of ``text`` as written
    ENCODED: str                      a regex class body of the encoded range
    may_hold(text) -> bool            whether ``text`` may hold an emoji (a quick
                                      test: True for every text that does)
"""

from __future__ import annotations

import re

# Extended_Pictographic (Unicode 15), the dingbats, regional indicators, skin tones: those of
# the BMP apart (a class of them alone is a bitmap to ``re``, fast to scan text with).
BMP_CHARACTERS = (
    "\u00a9\u00ae\u203c\u2049\u2122\u2139\u2194-\u2199\u21a9-\u21aa\u231a-\u231b\u2328\u2388\u23cf"
    "\u23e9-\u23f3\u23f8-\u23fa\u24c2\u25aa-\u25ab\u25b6\u25c0\u25fb-\u25fe\u2600-\u2605\u2607-\u2612"
    "\u2614-\u2685\u2690-\u2767\u2794-\u27bf\u2934-\u2935\u2b05-\u2b07\u2b1b-\u2b1c\u2b50\u2b55\u3030\u303d"
    "\u3297\u3299"
)
ASTRAL_CHARACTERS = (
    "\U0001f000-\U0001f0ff\U0001f10d-\U0001f10f\U0001f12f\U0001f16c-\U0001f171"
    "\U0001f17e-\U0001f17f\U0001f18e\U0001f191-\U0001f19a\U0001f1ad-\U0001f1ff\U0001f201-\U0001f20f\U0001f21a"
    "\U0001f22f\U0001f232-\U0001f23a\U0001f23c-\U0001f23f\U0001f249-\U0001f53d\U0001f546-\U0001f64f"
    "\U0001f680-\U0001f6ff\U0001f774-\U0001f77f\U0001f7d5-\U0001f7ff\U0001f80c-\U0001f80f\U0001f848-\U0001f84f"
    "\U0001f85a-\U0001f85f\U0001f888-\U0001f88f\U0001f8ae-\U0001f8ff\U0001f90c-\U0001f93a\U0001f93c-\U0001f945"
    "\U0001f947-\U0001faff\U0001fc00-\U0001fffd"
)
CHARACTERS = BMP_CHARACTERS + ASTRAL_CHARACTERS
FLAG = "[\U0001f1e6-\U0001f1ff]{2}"
SUBDIVISION = "\U0001f3f4[\U000e0020-\U000e007f]+"
UNIT = f"{FLAG}|{SUBDIVISION}|[{CHARACTERS}]"
ENCODED = "\U0010af80-\U0010fffd"

# Where each kind of code point lands: the pictographs beyond the BMP (U+1F000..),
# those in it (all below U+4000) and the tag characters, one after the other.
_HIGH, _LOW, _TAGS = 0x10F000, 0x10B000, 0x10AF80
_ENCODED_RUN = re.compile(f"[{ENCODED}]+")
_NEAR = re.compile(f"[{BMP_CHARACTERS}\U0001f000-\U0001ffff]")  # (one range beyond the BMP: quick)


def may_hold(text: str) -> bool:
    return not text.isascii() and _NEAR.search(text) is not None


def _encoded(char: str) -> str:
    code = ord(char)
    if code >= 0x1F000:
        return chr(_HIGH + code - 0x1F000) if code < 0xE0000 else chr(_TAGS + code - 0xE0000)
    return chr(_LOW + code)


def _decoded(char: str) -> str:
    code = ord(char)
    if code >= _HIGH:
        return chr(code - _HIGH + 0x1F000)
    return chr(code - _LOW) if code >= _LOW else chr(code - _TAGS + 0xE0000)


def encode(unit: str) -> str:
    return "".join(map(_encoded, unit))


def decode(text: str) -> str:
    return _ENCODED_RUN.sub(lambda run: "".join(map(_decoded, run.group())), text)
