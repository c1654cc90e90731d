"""User text to safe FTS5 expressions.

    parse_query(text, mode="terms", prefix=False) -> FtsQuery
        ``terms`` (default): every whitespace-separated term must match; a
        term with punctuation inside (``foo-bar``, ``/src/x.py``, ``don't``)
        must match as written, i.e. as the phrase of its tokens, and so must
        text between double quotes (``"npm test"``), when they pair up.
        ``words``: every token must match, wherever (``foo-bar`` is ``foo``
        and ``bar``), as the history contract tokenizes a query.
        In every mode but ``raw`` a run of CJK characters is the phrase of
        its characters (each one a token, as the indexes read them), and an
        emoji is a word of its own (``✅``, ``deploy🚀done``; a ZWJ sequence or
        a skin tone: the phrase of its pictographs; U+FE0F is no part of it).
        ``phrase``: the whole text as one phrase.
        ``raw``: FTS5 syntax, passed through after a syntax check.
        ``prefix=True`` makes the last term a prefix (``term*``).
        Blank text raises ``QueryError("SESSION_QUERY_INVALID_QUERY")``; so
        does a raw expression FTS5 cannot parse. Ordinary text never raises in
        ``terms`` or ``phrase`` mode: text without any indexable character
        (only punctuation, such as ``->`` or ``…``) gives ``expression=None``,
        which matches nothing.
    validate_raw(expression, columns=("text",), shown=None) -> None
        Raise INVALID_QUERY unless FTS5 parses ``expression`` (checked against
        an empty in-memory table, so it costs nothing); the message quotes
        ``shown`` (what the user wrote) when given.
    tokens(text) -> list[str]
        Lower-cased tokens as the indexes read ``text``: as FTS5's unicode61
        tokenizer splits it, each CJK character and each emoji a token
        (``cjk.py``; an emoji as written, not as the index encodes it).
    words(text) -> list[str]
        The same, CJK runs left whole (each one is the phrase of its characters).
    phrase(text, prefix=False) -> str
        ``text`` as one FTS5 phrase; one holding CJK characters either as
        written or with them set apart (``messages_fts``, ``tool_errors_fts``,
        ``prompt_log_fts`` and the session bags read them apart, the digests
        and memories as written: a CJK word is found inside their text only
        as a whole run). One holding an emoji only set apart: as written,
        unicode61 would drop the emoji and match more.
    normalize_text(text) -> str
        Trimmed, whitespace collapsed, NUL and the snippet markers replaced.
    cursor_text(text, mode, prefix=False) -> str
        Normalized text as a cursor binds it: A-Z in lower case, but in ``raw``.
    quote(text) -> str
        ``text`` as one FTS5 string (``"..."`` with quotes doubled).
    match_documents(expression, documents, terms) -> list[(index, marked columns)]
        Which of ``documents`` (pairs of texts) ``expression`` matches, best
        first, tokenized as ``messages_fts`` is (``TOKENIZER``), with the
        matches of each column between ``MARK_START`` and ``MARK_END`` (a long
        column: a window around its first term).

``FtsQuery.expression`` is for ``messages_fts`` (exact); ``FtsQuery.candidates``
is an expression over the session bags of ``session_docs_fts`` (every token
of the query, ANDed) that matches every session the exact expression can
match (None when the query cannot be lifted that way, as in raw mode).
"""

from __future__ import annotations

import re
import sqlite3
import threading
import unicodedata
from dataclasses import dataclass

from .. import cjk, emoji
from .errors import LONE_SURROGATE, QueryError, holds_lone_surrogate

MODES = ("terms", "phrase", "raw")  # and "words", the history contract's
MAX_QUERY_CHARS = 1000
MARK_START = "\ufdd0"
MARK_END = "\ufdd1"
TOKENIZER = "porter unicode61 remove_diacritics 2"


@dataclass(frozen=True)
class FtsQuery:
    text: str
    mode: str
    prefix: bool
    expression: str | None
    candidates: str | None
    terms: tuple[str, ...]
    pieces: tuple[str, ...] = ()
    words: tuple[str, ...] = ()  # ``terms`` with a CJK run whole: what a snippet looks for

    @property
    def matches_nothing(self) -> bool:
        return self.expression is None

    @property
    def prefix_term(self) -> str | None:
        """The token that is a prefix (the last one) when ``prefix`` is on (a CJK
        character or an emoji is a whole word: no prefix of anything)."""
        if not self.prefix or not self.terms or self.mode == "raw" or cjk.is_apart(self.terms[-1][0]):
            return None
        return self.terms[-1]

    def expanded(self, words) -> str | None:
        """The exact expression with the prefix term replaced by each of ``words``.

        FTS5 answers ``term*`` by merging the doclists of every matching
        term over the whole table; a search that already knows which words
        a session holds asks for those words instead.
        """
        if self.prefix_term is None:
            return self.expression
        words = [w for w in words if w]
        if not words:
            return None
        head = [phrase(piece) for piece in self.pieces[:-1]]
        last = tokens(self.pieces[-1])[:-1]
        options = " OR ".join(phrase(" ".join([*last, word])) for word in words)
        return " AND ".join([*head, f"({options})"])

    def normalized(self) -> dict:
        """What identifies the query in a cursor fingerprint."""
        return {"text": cursor_text(self.text, self.mode, self.prefix), "mode": self.mode, "prefix": self.prefix}


def normalize_text(text: str) -> str:
    return " ".join(unmarked(text.replace("\x00", " ")).split())


_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")


def cursor_text(text: str, mode: str, prefix: bool = False) -> str:
    """The normalized query ``text`` as a cursor binds it: its ASCII letters in lower case
    where that cannot change what matches (``TEST``, ``test``), else as it is.

    In every mode but ``raw`` each word is quoted, and the tokenizer folds A-Z; no other
    letter is folded (``casefold`` reads ``ß`` as ``ss``, which the tokenizer does not). A raw
    query is left alone: FTS5 reads ``OR``, ``AND``, ``NOT`` and ``NEAR`` only in upper case.
    Nor is a prefix query folded: its last word is looked up as spelt."""
    return text if mode == "raw" or prefix else text.translate(_ASCII_LOWER)


def unmarked(text: str) -> str:
    """``text`` with the characters that mark matches (never in real text) replaced."""
    if MARK_START in text or MARK_END in text:
        return text.replace(MARK_START, "\ufffd").replace(MARK_END, "\ufffd")
    return text


def is_token_char(char: str) -> bool:
    """Whether the indexes' tokenizer (``TOKENIZER``) reads ``char`` as part of a word.

    Beyond ASCII, SQLite is asked (once a character): unicode61's tables are
    its own, not Python's ``unicodedata``. Emoji newer than its tables (🤖,
    🙂, 🏗) are word characters to it, older ones (🚀) separate words (so
    ``words`` sets every emoji apart before asking, as the indexes do), and a
    combining mark either joins its word (folded away) or not; a query split
    otherwise drops terms the index holds, or widens a search to the rest.
    """
    if char < "\x80":
        return char.isalnum()
    known = _word_characters.get(char)
    if known is None:
        # (not what learn_characters learned: another thread may have learned it meanwhile)
        known = _ask([char])[char]
        _word_characters[char] = known
    return known


_word_characters: dict[str, bool] = {}
MAX_KNOWN_CHARACTERS = 200_000


def learn_characters(text: str) -> dict[str, bool]:
    """Ask SQLite, in one statement, which characters of ``text`` not yet known are word
    characters to ``TOKENIZER`` (``q<char>q`` is then one word, not ``q`` twice); what it said."""
    new = [c for c in dict.fromkeys(text) if c >= "\x80" and c not in _word_characters]
    if not new:
        return {}
    if len(_word_characters) + len(new) > MAX_KNOWN_CHARACTERS:
        _word_characters.clear()
    learned = _ask(new)
    _word_characters.update(learned)
    return learned


def _ask(chars: list[str]) -> dict[str, bool]:
    """Whether each of ``chars`` is a word character to ``TOKENIZER``, asked of SQLite
    (this thread's scratch database), whatever the cache holds."""
    asked = [c for c in chars if not "\ud800" <= c <= "\udfff"]  # (a lone surrogate, refused later: no word)
    conn = _scratch()
    try:
        conn.executemany("INSERT INTO characters (rowid, x) VALUES (?, ?)", [(n, f"q{c}q") for n, c in enumerate(asked)])
        apart = {rowid for (rowid,) in conn.execute("SELECT rowid FROM characters WHERE characters MATCH 'q'")}
    finally:
        conn.execute("DELETE FROM characters")
    found = {c: n not in apart for n, c in enumerate(asked)}
    return {c: found.get(c, False) for c in chars}


def tokens(text: str) -> list[str]:
    found = words(text)
    if text.isascii():
        return found
    return [
        token for word in found
        for token in ([word] if _EMOJI.fullmatch(word) else cjk.split(word).split(cjk.SEPARATOR)) if token
    ]


_EMOJI = re.compile(emoji.UNIT)


def words(text: str) -> list[str]:
    if text.isascii():
        return _words(text)
    found: list[str] = []
    start = 0
    for unit in _EMOJI.finditer(text):  # (each a word, whatever unicode61 makes of it)
        found += _words(text[start : unit.start()])
        found.append(unit.group())
        start = unit.end()
    return found + _words(text[start:])


def _words(text: str) -> list[str]:
    found: list[str] = []
    current: list[str] = []
    if not text.isascii():
        learn_characters(text)
    for char in [*text, " "]:
        if is_token_char(char):
            current.append(char)
        elif current:
            if not all(unicodedata.category(c) == "Mn" for c in current):  # (marks alone index nothing)
                found.append("".join(current).lower())
            current = []
    return found


def quote(text: str) -> str:
    return '"' + text.replace('"', '""') + '"'


def phrase(text: str, prefix: bool = False) -> str:
    star = "*" if prefix else ""
    apart = cjk.split(text)
    if apart == text:
        return quote(text) + star
    if _EMOJI.search(text):
        return quote(apart) + star
    return f"({quote(text)}{star} OR {quote(apart)}{star})"


def search_mode(value: str) -> str | None:
    """The ``mode`` option of ``search()``: a mode of ``MODES`` in any case, or
    None (also for ``fts``) for FTS5 syntax quoted word by word when FTS5 rejects it."""
    mode = value.strip().lower()
    if mode in ("", "fts"):
        return None
    if mode not in MODES:
        raise QueryError(
            "SESSION_QUERY_INVALID_QUERY", f"unknown query mode {value!r}; use fts or one of {', '.join(MODES)}"
        )
    return mode


def check_encodable(text: str) -> None:
    """SESSION_QUERY_INVALID_QUERY for a query UTF-8 cannot hold (a lone surrogate)."""
    if holds_lone_surrogate(text):
        raise QueryError("SESSION_QUERY_INVALID_QUERY", f"the query {LONE_SURROGATE}")


def parse_query(text: str, mode: str = "terms", prefix: bool = False, max_chars: int | None = MAX_QUERY_CHARS) -> FtsQuery:
    """``text`` as an FTS5 expression in ``mode``; ``max_chars=None`` takes text of any length."""
    if mode not in (*MODES, "words"):
        raise QueryError(
            "SESSION_QUERY_INVALID_QUERY", f"unknown query mode {mode!r}; use one of {', '.join(MODES)}"
        )
    if not isinstance(text, str):
        raise QueryError("SESSION_QUERY_INVALID_QUERY", "the query must be a string")
    check_encodable(text)
    if max_chars is not None and len(text) > max_chars:
        raise QueryError(
            "SESSION_QUERY_INVALID_QUERY", f"the query is longer than {max_chars} characters"
        )
    normalized = normalize_text(text)
    if not normalized:
        raise QueryError("SESSION_QUERY_INVALID_QUERY", "a search needs a query: the text is blank")
    if mode == "raw":
        expression = cjk.split(normalized)  # (inside a bareword or a string alike)
        validate_raw(expression, shown=normalized)
        return FtsQuery(normalized, mode, False, expression, None, tuple(tokens(normalized)), (normalized,),
                        tuple(words(normalized)))
    pieces = {"terms": lambda: terms_of(normalized), "words": lambda: words(normalized)}.get(mode, lambda: [normalized])()
    kept = [(piece, tokens(piece)) for piece in pieces]
    kept = [(piece, found) for piece, found in kept if found]
    if not kept:
        return FtsQuery(normalized, mode, prefix, None, None, ())
    terms = tuple(token for _, found in kept for token in found)
    starred = prefix and not cjk.is_apart(terms[-1][0])
    phrases = [phrase(piece, starred and n == len(kept) - 1) for n, (piece, _) in enumerate(kept)]
    said = tuple(word for piece, _ in kept for word in words(piece))
    bag_terms = [phrase(word, starred and n == len(said) - 1) for n, word in enumerate(said)]
    return FtsQuery(
        normalized, mode, prefix, " AND ".join(phrases), " AND ".join(bag_terms), terms,
        tuple(piece for piece, _ in kept), said,
    )


def terms_of(text: str) -> list[str]:
    """Whitespace-separated terms, a double-quoted span being one (when every quote pairs up)."""
    if text.count('"') % 2:
        return text.split()
    found = (m.group(1) if m.group(1) is not None else m.group(2) for m in _TERM.finditer(text))
    return [term for term in found if term.strip()]


_TERM = re.compile(r'"([^"]*)"|([^\s"]+)')
_checker = threading.local()


def _scratch() -> sqlite3.Connection:
    """This thread's private in-memory database."""
    conn = getattr(_checker, "conn", None)
    if conn is None:
        conn = _checker.conn = sqlite3.connect(":memory:", isolation_level=None)
        _checker.tables = {}
        conn.execute(f"CREATE VIRTUAL TABLE documents USING fts5(a, b, tokenize='{TOKENIZER}')")
        conn.execute(f"CREATE VIRTUAL TABLE characters USING fts5(x, tokenize='{TOKENIZER}')")
    return conn


def validate_raw(expression: str, columns: tuple[str, ...] = ("text",), shown: str | None = None) -> None:
    conn = _scratch()
    table = _checker.tables.get(columns)
    if table is None:
        table = f"check_{len(_checker.tables)}"
        conn.execute(f"CREATE VIRTUAL TABLE {table} USING fts5({', '.join(columns)})")
        _checker.tables[columns] = table
    try:
        conn.execute(f"SELECT 1 FROM {table} WHERE {table} MATCH ?", [expression]).fetchall()
    except sqlite3.Error as exc:
        message = cjk.unsplit(str(exc))
        raise QueryError("SESSION_QUERY_INVALID_QUERY", f"invalid FTS5 query {shown or expression!r}: {message}") from None


HIGHLIGHT_CHARS = 32_768  # highlight() slows down sharply with the matches in a column
WINDOW_BEFORE = 4_096  # of a long column's marked window, before the first term found


def match_documents(expression: str, documents: list[tuple[str, str]], terms=()) -> list[tuple[int, tuple[str, str]]]:
    """``(index, (marked a, marked b))`` of each document ``expression`` matches: best
    first, ranked on what is marked; those only their whole text could settle come last.

    A column longer than ``HIGHLIGHT_CHARS`` comes back as a window of that
    many characters from a little before the first word starting like one of
    ``terms`` (its start when none does), marked as far as the window allows:
    by ``expression`` when the window still matches it, else by any term.
    (A 25 MB tool output repeating a term 260,000 times took minutes to
    highlight whole; a snippet shows a few hundred characters of it.)

    The windows are matched first, and the whole documents only where a
    window cannot settle it: ``expression`` holds no ``NOT`` (as
    ``parse_query`` writes it outside raw mode), so a window cut between
    words that matches proves its document does; tokenizing 25 MB to learn
    that took half a second.
    """
    windows = [tuple(_window(column, terms) for column in document) for document in documents]
    shown = [tuple(text for text, _ in columns) for columns in windows]
    found = _matching(expression, shown)
    marked = dict(found)
    proven = [n for n, _ in found if all(cut is not False for _, cut in windows[n])]
    unsure = [
        n for n, columns in enumerate(windows)
        if n not in proven and (n in marked or any(cut is not None for _, cut in columns))
    ]
    also = [unsure[k] for k, _ in _matching(expression, [documents[n] for n in unsure], marked=False)]
    rest = [n for n in also if n not in marked]
    if rest and terms:
        any_term = " OR ".join(phrase(term) for term in terms)
        marked.update((rest[k], columns) for k, columns in _matching(any_term, [shown[n] for n in rest]))
    return [(n, marked.get(n, shown[n])) for n in proven + also]


def _matching(expression: str, documents: list[tuple[str, str]], marked: bool = True) -> list[tuple[int, tuple]]:
    """``(index, columns)`` of the ``documents`` ``expression`` matches, best first; marked or not."""
    if not documents:
        return []
    conn = _scratch()
    conn.executemany(
        "INSERT INTO documents (rowid, a, b) VALUES (?, ?, ?)",
        [(n, *(_indexed(c, marked) for c in d)) for n, d in enumerate(documents)],
    )
    columns = "highlight(documents, 0, ?, ?), highlight(documents, 1, ?, ?)" if marked else "NULL, NULL"
    try:
        return [
            (rowid, (a, b) if not marked else (cjk.unsplit(a), cjk.unsplit(b)))
            for rowid, a, b in conn.execute(
                f"SELECT rowid, {columns} FROM documents WHERE documents MATCH ? ORDER BY rank, rowid",
                [MARK_START, MARK_END, MARK_START, MARK_END, expression] if marked else [expression],
            )
        ]
    finally:
        conn.execute("DELETE FROM documents")


def _indexed(text: str | None, marked: bool) -> str | None:
    """A document's column as the indexes read it (and with no marks of its own when ``marked``)."""
    if text is None:
        return None
    return cjk.split(unmarked(text) if marked else text)


def _window(text: str, terms) -> tuple[str, bool | None]:
    """``text`` and None, or the ``HIGHLIGHT_CHARS`` of it from a little before the
    first word a term starts, and whether both its ends fall between words."""
    if len(text) <= HIGHLIGHT_CHARS:
        return text, None
    found = first_word_start(text, terms)
    start = max(0, min(found - WINDOW_BEFORE if found is not None else 0, len(text) - HIGHLIGHT_CHARS))
    end = start + HIGHLIGHT_CHARS
    if not _between_words(text, start):
        space = _SPACE.search(text, start, min(start + WORD_SLACK, end))
        start = space.start() if space else start
    if not _between_words(text, end):
        space = _LAST_SPACE.search(text, max(end - WORD_SLACK, start), end)
        end = space.end() if space else end
    return text[start:end], _between_words(text, start) and _between_words(text, end)


WORD_SLACK = 64  # characters a window's end may move to fall between words
_SPACE = re.compile(r"\s")
_LAST_SPACE = re.compile(r"\s(?=\S*\Z)")


def _between_words(text: str, at: int) -> bool:
    """Whether no word runs across position ``at`` of ``text`` (each CJK character and
    each emoji is a word: cutting a ZWJ sequence or a flag shows half of it, still a word)."""
    return at in (0, len(text)) or text[at - 1].isspace() or text[at].isspace() or (
        cjk.is_apart(text[at - 1]) or cjk.is_apart(text[at]))


def first_word_start(text: str, terms) -> int | None:
    """Where the first word starting like one of ``terms`` (give or take a stemmed
    ending: porter stems ``compiled`` as ``compil``) begins, in any case; None if none does.

    ``str.find`` on the lower-cased text: a case-insensitive regex with a
    look-behind takes half a second on 25 MB, this a few hundredths. Many
    terms, or a term found often inside words, read the words one by one
    instead, the first ``MAX_WORD_STARTS`` of them: what one call costs stays
    bounded, whatever a query asks."""
    stems = _stems(terms)
    if not stems:
        return None
    if len(stems) > MAX_FIND_STEMS:
        return _first_by_word_starts(text, stems)
    lowered = text.lower()
    if len(lowered) != len(text):  # a few characters lower-case to two: offsets would shift
        found = word_start_pattern(terms).search(text)
        return found.start() if found else None
    first, budget = None, MAX_FIND_SKIPS
    for stem in stems:
        at = lowered.find(stem, 0, len(text) if first is None else first)
        while at != -1 and _inside_word(lowered, at, stem):
            budget -= 1
            if budget < 0:
                return _first_by_word_starts(text, stems)
            at = lowered.find(stem, at + 1, len(text) if first is None else first)
        if at != -1:
            first = at
    return first


def _inside_word(text: str, at: int, stem: str) -> bool:
    """Whether ``stem`` found at ``at`` starts inside a word ("_" starts one; a CJK
    character or an emoji is a word, and so is what follows one)."""
    return at > 0 and text[at - 1].isalnum() and not cjk.is_apart(stem[0]) and not cjk.is_apart(text[at - 1])


MAX_FIND_STEMS = 16
MAX_FIND_SKIPS = 1000
MAX_WORD_STARTS = 200_000  # about a fifth of a second: a bound on what one call may cost
_WORD_START = re.compile(rf"(?<![^\W_])[^\W_]|(?<=[{cjk.NEAR_APART}])[^\W_]|[{cjk.NEAR_APART}]")


def _first_by_word_starts(text: str, stems: set[str]) -> int | None:
    """``first_word_start`` by reading each word's start against the stems, by length."""
    lengths: dict[int, set[str]] = {}
    for stem in stems:
        lengths.setdefault(len(stem), set()).add(stem)
    by_length = sorted(lengths.items())
    for count, word in enumerate(_WORD_START.finditer(text)):
        if count == MAX_WORD_STARTS:
            return None  # (a snippet then shows the text's start)
        at = word.start()
        if any(text[at : at + length].lower() in found for length, found in by_length):
            return at
    return None


def word_start_pattern(terms) -> re.Pattern:
    """The words starting like one of ``terms`` (as ``first_word_start``), in any case."""
    alternatives = "|".join(map(re.escape, sorted(_stems(terms), key=len, reverse=True)))
    apart = cjk.NEAR_APART  # (these run over long texts: a class quick to test)
    start = rf"(?:(?<![^\W_])|(?<=[{apart}])|(?=[{apart}]))"
    return re.compile(rf"{start}(?:{alternatives})(?:(?<=[{apart}])|[^\W{apart}]*)", re.IGNORECASE)


def word_stems(terms) -> set[str]:
    """What a word a snippet shows for ``terms`` starts with (see ``first_word_start``)."""
    return _stems(terms)


def _stems(terms) -> set[str]:
    """What a word starting like each term starts with: its first letters (porter
    cuts an ending: ``compiled`` is ``compil``), a word holding CJK or an emoji whole."""
    return {term.lower() if cjk.sets_apart(term) else term.lower()[: max(3, len(term) - 2)] for term in terms}
