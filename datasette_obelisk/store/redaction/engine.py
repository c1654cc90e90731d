"""Secret redaction: find secrets in text and replace them with stable markers.

    redactor = Redactor(key=b"per-database-secret")
    redactor.redact("export GITHUB_TOKEN=ghp_...")
    # 'export GITHUB_TOKEN=[REDACTED:github-pat:3f1c09ab]'

The rules are data (``rules.toml``). Each text goes through three steps, each
linear in its length:

1. a keyword prefilter (one RE2 set pass) picks the rules worth running;
2. the regex of each picked rule finds candidate secrets;
3. allowlists, placeholder checks and an entropy floor drop false candidates.

A secret becomes ``[REDACTED:<rule>:<hmac8>]``, where ``hmac8`` is the first 8
hex digits of HMAC-SHA256(key, secret): the same secret gets the same marker
within one database, and the marker tells nothing to anyone without the key.

Redaction is idempotent: nothing inside a marker is redacted again, and
``redact`` repeats its pass until the text stops changing (a replacement can
change a neighbour's context), at most ``MAX_PASSES`` times.

google-re2 is used when it can be imported. Otherwise the engine falls back to
Python ``re``, with every open-ended repeat bounded. That is slower, and only
linear per match attempt.
"""

from __future__ import annotations

import bisect
import hashlib
import hmac
import math
import re
import tomllib
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

try:
    import re2
except ImportError:  # pragma: no cover - covered by a test that hides re2
    re2 = None

try:
    import ahocorasick
except ImportError:  # pragma: no cover
    ahocorasick = None

MARKER_PATTERN = r"\[REDACTED:[a-z0-9][a-z0-9-]{0,63}:[0-9a-f]{8}\]"
FALLBACK_REPEAT_LIMIT = 8192  # the `re` fallback bounds *, + and {n,} to this
MAX_PASSES = 4  # a pass that changed something is followed by another
SHORTEST_SECRET = 7  # no rule matches fewer characters: '://:p@h' (url-credentials)
ENTROPY_SAMPLE = 1024  # characters of a secret used to estimate its entropy
BATCH_BELOW = 512  # redact_many: texts shorter than this share prefilter passes...
BATCH_SIZE = 64  # ...in groups of this many
MEMO_BELOW = 64  # results for texts shorter than this are remembered (keys, roles)...
MEMO_SIZE = 8192  # ...this many at a time

_RULE_FIELDS = {
    "id",
    "description",
    "keywords",
    "case_sensitive",
    "regex",
    "secret_group",
    "min_entropy",
    "placeholders",
    "allow",
    "stopwords",
    "source",
}
_RULE_ID = re.compile(r"[a-z0-9][a-z0-9-]{0,63}\Z")
_HOME = re.compile(
    r"(?<![\w.~-])(?:/home/|/Users/(?!Shared(?:/|\b)))[A-Za-z0-9._-]{1,64}"
    r"|(?<![\w.~-])[A-Za-z]:\\{1,2}Users\\{1,2}(?!Public\b)[A-Za-z0-9._ -]{1,64}(?=\\|$|[\"'\s])"
)
_HOME_HINTS = ("/home/", "/Users/", "Users\\")


@dataclass(frozen=True, slots=True)
class Finding:
    """A secret in a text: the rule that found it and its span (str indices).

    The secret itself is never kept.
    """

    rule: str
    start: int
    end: int


@dataclass(frozen=True)
class Rule:
    """One detector, as read from rules.toml (see the header of that file)."""

    id: str
    regex: str
    description: str = ""
    keywords: tuple[str, ...] = ()
    case_sensitive: bool = False
    secret_group: int | None = None
    min_entropy: float = 0.0
    allow: tuple[str, ...] = ()
    stopwords: tuple[str, ...] = ()
    source: str = ""


def _read_rules_file(path: str | Path | None) -> dict[str, Any]:
    if path is None:
        text = resources.files(__package__).joinpath("rules.toml").read_text("utf-8")
    else:
        text = Path(path).read_text("utf-8")
    return tomllib.loads(text)


def load_rules(path: str | Path | None = None) -> list[Rule]:
    """Read rules from a TOML file (default: the packaged ``rules.toml``).

    Rules with ``placeholders = true`` get the file's ``[placeholders]``
    regexes and stopwords added to their own allowlist.
    """
    data = _read_rules_file(path)
    placeholders = data.get("placeholders", {})
    rules = [_rule_from_entry(entry, placeholders) for entry in data.get("rules", [])]
    seen = set()
    for rule in rules:
        if rule.id in seen:
            raise ValueError(f"duplicate rule id: {rule.id}")
        seen.add(rule.id)
    return rules


def _rule_from_entry(entry: dict[str, Any], placeholders: dict[str, Any]) -> Rule:
    unknown = set(entry) - _RULE_FIELDS
    if unknown:
        raise ValueError(f"rule {entry.get('id')!r}: unknown fields {sorted(unknown)}")
    if not _RULE_ID.match(entry.get("id", "")):
        raise ValueError(f"bad rule id: {entry.get('id')!r}")
    allow = list(entry.get("allow", ()))
    stopwords = list(entry.get("stopwords", ()))
    if entry.get("placeholders", False):
        allow += placeholders.get("regexes", [])
        stopwords += placeholders.get("stopwords", [])
    return Rule(
        id=entry["id"],
        regex=entry["regex"],
        description=entry.get("description", ""),
        keywords=tuple(entry.get("keywords", ())),
        case_sensitive=entry.get("case_sensitive", False),
        secret_group=entry.get("secret_group"),
        min_entropy=float(entry.get("min_entropy", 0.0)),
        allow=tuple(allow),
        stopwords=tuple(word.lower() for word in stopwords),
        source=entry.get("source", ""),
    )


RULESET_VERSION: int = _read_rules_file(None)["version"]


def shannon_entropy(value: str | bytes) -> float:
    """Bits per character of ``value`` (estimated on its first 1,024 chars)."""
    sample = value[:ENTROPY_SAMPLE]
    if not sample:
        return 0.0
    n = len(sample)
    return -sum(c / n * math.log2(c / n) for c in Counter(sample).values())


def bounded_pattern(pattern: str, limit: int = FALLBACK_REPEAT_LIMIT) -> str:
    """Rewrite the open-ended repeats of ``pattern`` (``*``, ``+``, ``{n,}``)
    as ``{0,limit}``, ``{1,limit}``, ``{n,limit}``, for Python ``re``."""
    out = []
    i, n = 0, len(pattern)
    while i < n:
        char = pattern[i]
        if char == "\\":
            out.append(pattern[i : i + 2])
            i += 2
        elif char == "[":
            end = _class_end(pattern, i)
            out.append(pattern[i:end])
            i = end
        elif char in "*+":
            out.append("{%d,%d}" % (0 if char == "*" else 1, limit))
            i += 1
        elif char == "{" and (m := re.match(r"\{(\d+),\}", pattern[i:])):
            out.append("{%s,%d}" % (m.group(1), limit))
            i += m.end()
        else:
            out.append(char)
            i += 1
    return "".join(out)


def _class_end(pattern: str, start: int) -> int:
    """Index just past the character class that opens at ``start``."""
    i = start + 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    if i < len(pattern) and pattern[i] == "]":
        i += 1
    while i < len(pattern) and pattern[i] != "]":
        i += 2 if pattern[i] == "\\" else 1
    return i + 1


# -- engines: how patterns are compiled and what they run on ---------------------------


class _Re2Engine:
    """google-re2 over UTF-8 bytes: linear time; offsets are byte offsets."""

    name = "re2"
    empty = b""

    def __init__(self):
        self.options = re2.Options()
        self.options.log_errors = False

    def encode(self, text: str) -> bytes:
        return text.encode("utf-8", "surrogatepass")

    def decode(self, data: bytes) -> str:
        return data.decode("utf-8", "surrogatepass")

    def compile(self, pattern: str):
        return re2.compile(pattern, self.options)

    def escape(self, literal: str) -> str:
        return re2.escape(literal)

    def prefilter(self, slots: list[tuple[tuple[str, ...], bool]]):
        return _SetPrefilter(slots, self.options)

    def sample(self, secret: bytes) -> str:
        """The first ENTROPY_SAMPLE characters of ``secret``, as str."""
        return secret[: 4 * ENTROPY_SAMPLE].decode("utf-8", "replace")[:ENTROPY_SAMPLE]

    def char_offsets(self, data: bytes, text: str, positions: list[int]) -> dict[int, int]:
        if len(data) == len(text):  # all ASCII: byte offsets are str offsets
            return {p: p for p in positions}
        offsets, chars, last = {}, 0, 0
        for p in sorted(set(positions)):
            chars += len(self.decode(data[last:p]))
            offsets[p] = chars
            last = p
        return offsets


class _ReEngine:
    """Python ``re`` over str, every open repeat bounded: the fallback."""

    name = "re"
    empty = ""

    def encode(self, text: str) -> str:
        return text

    def decode(self, data: str) -> str:
        return data

    def compile(self, pattern: str):
        return re.compile(bounded_pattern(pattern), re.ASCII)

    def escape(self, literal: str) -> str:
        return re.escape(literal)

    def prefilter(self, slots: list[tuple[tuple[str, ...], bool]]):
        return _KeywordPrefilter(slots)

    def sample(self, secret: str) -> str:
        return secret[:ENTROPY_SAMPLE]

    def char_offsets(self, data: str, text: str, positions: list[int]) -> dict[int, int]:
        return {p: p for p in positions}


class _SetPrefilter:
    """Which slots have a keyword in the text, in one RE2::Set pass."""

    def __init__(self, slots, options):
        self.set = re2.Set.SearchSet(options)
        self.slot_of = []
        for slot, (keywords, case_sensitive) in enumerate(slots):
            if not keywords:
                continue
            alternatives = "|".join(re2.escape(k) for k in keywords)
            self.set.Add(alternatives if case_sensitive else f"(?i:{alternatives})")
            self.slot_of.append(slot)
        self.set.Compile()

    def hits(self, data: bytes) -> list[int]:
        found = self.set.Match(data)
        return [self.slot_of[i] for i in found] if found else []


class _KeywordPrefilter:
    """Which slots have a keyword in the lowercased text (Aho-Corasick or ``in``)."""

    def __init__(self, slots):
        by_keyword: dict[str, set[int]] = {}
        for slot, (keywords, _) in enumerate(slots):
            for keyword in keywords:
                by_keyword.setdefault(keyword.lower(), set()).add(slot)
        self.by_keyword = by_keyword
        self.automaton = None
        if ahocorasick is not None and by_keyword:
            automaton = ahocorasick.Automaton()
            for keyword, found in by_keyword.items():
                automaton.add_word(keyword, frozenset(found))
            automaton.make_automaton()
            self.automaton = automaton

    def hits(self, text: str) -> list[int]:
        lowered = text.lower()
        found: set[int] = set()
        if self.automaton is not None:
            for _, slots in self.automaton.iter(lowered):
                found |= slots
        else:
            for keyword, slots in self.by_keyword.items():
                if keyword in lowered:
                    found |= slots
        return sorted(found)


def _make_engine(name: str | None):
    if name is None:
        name = "re2" if re2 is not None else "re"
    if name == "re2":
        if re2 is None:
            raise RuntimeError("google-re2 is not installed")
        return _Re2Engine()
    if name == "re":
        return _ReEngine()
    raise ValueError(f"unknown regex engine: {name!r}")


# -- compiled rules --------------------------------------------------------------------


class _CompiledRule:
    __slots__ = ("rule", "engine", "regex", "allow", "stopwords", "group_count")

    def __init__(self, rule: Rule, engine):
        self.rule = rule
        self.engine = engine
        try:
            self.regex = engine.compile(rule.regex)
            self.allow = self.stopwords = None
            if rule.allow:
                self.allow = engine.compile("|".join(f"(?:{p})" for p in rule.allow))
            if rule.stopwords:
                words = "|".join(engine.escape(word) for word in rule.stopwords)
                self.stopwords = engine.compile(f"(?i:{words})")
        except Exception as error:
            raise ValueError(f"rule {rule.id}: {error}") from error
        self.group_count = self.regex.groups

    def secret_span(self, match) -> tuple[int, int]:
        """The span to replace: ``secret_group``, else the first group that
        took part in the match, else the whole match."""
        if self.rule.secret_group is not None:
            return match.span(self.rule.secret_group)
        for group in range(1, self.group_count + 1):
            start, end = match.span(group)
            if start >= 0:
                return start, end
        return match.span(0)

    def rejects(self, secret) -> bool:
        """True if ``secret`` is a known non-secret: low entropy, stopword, allowlisted."""
        min_entropy = self.rule.min_entropy
        if min_entropy and shannon_entropy(self.engine.sample(secret)) < min_entropy:
            return True
        if self.stopwords is not None and self.stopwords.search(secret) is not None:
            return True
        return self.allow is not None and self.allow.search(secret) is not None


def _merge(spans: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Sort (start, end, rule) spans and merge overlaps; the earlier rule names the merged span."""
    spans.sort()
    merged: list[tuple[int, int, int]] = []
    for start, end, index in spans:
        if merged and start < merged[-1][1]:
            first_start, first_end, first_index = merged[-1]
            merged[-1] = (first_start, max(first_end, end), min(first_index, index))
        else:
            merged.append((start, end, index))
    return merged


class _Markers:
    """Spans of markers already in a text, so that nothing inside one is redacted again."""

    def __init__(self, regex, data):
        self.starts, self.ends = [], []
        for match in regex.finditer(data):
            self.starts.append(match.start())
            self.ends.append(match.end())

    def overlap(self, start: int, end: int) -> bool:
        i = bisect.bisect_left(self.starts, end) - 1
        return i >= 0 and self.ends[i] > start


# -- the redactor ----------------------------------------------------------------------


class Redactor:
    """Finds secrets in text and replaces them with ``[REDACTED:<rule>:<hmac8>]``.

    ``key`` is the per-database HMAC key. ``rewrite_home`` also turns
    ``/home/<user>`` and ``/Users/<user>`` (and ``C:\\Users\\<user>``) into ``~``.
    ``rules`` defaults to the packaged rule set; ``engine`` is ``"re2"`` or
    ``"re"`` (default: re2 when installed).
    """

    marker_re = re.compile(MARKER_PATTERN)

    def __init__(
        self,
        key: bytes | str,
        rewrite_home: bool = False,
        rules: list[Rule] | None = None,
        engine: str | None = None,
    ):
        if isinstance(key, str):
            key = key.encode("utf-8")
        if not key:
            raise ValueError("an HMAC key is required")
        self._key = key
        self.rewrite_home = rewrite_home
        self.rules = list(load_rules() if rules is None else rules)
        self._engine = _make_engine(engine)
        self.engine = self._engine.name
        self._compiled = [_CompiledRule(rule, self._engine) for rule in self.rules]
        self._marker_regex = self._engine.compile(MARKER_PATTERN)
        self._marker_slot = len(self.rules)
        slots = [(rule.keywords, rule.case_sensitive) for rule in self.rules]
        slots.append((("[REDACTED:",), True))
        self._prefilter = self._engine.prefilter(slots)
        self._always = [i for i, rule in enumerate(self.rules) if not rule.keywords]
        # No keyword holds a character JSON must escape, so one in a decoded string stands in the document too.
        self._keywords_unescaped = not any(
            char in '"\\' or char < " " for rule in self.rules for keyword in rule.keywords for char in keyword
        )
        self._memo: dict[str, str | None] = {}  # short text -> redacted, None if unchanged

    def __repr__(self) -> str:
        return f"<Redactor {len(self.rules)} rules, engine={self.engine}>"

    def redact(self, text: str) -> str:
        """Return ``text`` with every secret replaced by a marker.

        Idempotent. Returns ``text`` itself when there is nothing to change.
        """
        if len(text) >= MEMO_BELOW:
            return self._redact_all_passes(text)
        remembered = self._memo.get(text, False)
        if remembered is False:
            redacted = self._redact_all_passes(text)
            remembered = None if redacted is text else redacted
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self._memo[text] = remembered
        return text if remembered is None else remembered

    def scan(self, text: str) -> list[Finding]:
        """The secrets ``redact`` replaces in its first pass, as (rule, start, end)
        str offsets into ``text``. Home paths are not reported."""
        data = self._engine.encode(text)
        spans = self._find(data)
        if not spans:
            return []
        positions = [p for start, end, _ in spans for p in (start, end)]
        offsets = self._engine.char_offsets(data, text, positions)
        return [Finding(self.rules[i].id, offsets[s], offsets[e]) for s, e, i in spans]

    def redact_many(self, texts: list[str]) -> list[str]:
        """``[redact(text) for text in texts]``, faster for many short texts.

        Each distinct text is redacted once. Short ones are checked in groups:
        one prefilter pass over a group joined with NUL (which is in no
        keyword); a group with a keyword is halved until the texts that need
        redacting are alone.
        """
        changed: dict[str, str | None] = {}  # distinct text -> redacted, None if unchanged
        short = []
        for text in dict.fromkeys(texts):
            if BATCH_BELOW <= len(text) or self._always or text in self._memo:
                redacted = self.redact(text)
                changed[text] = None if redacted is text else redacted
            else:
                short.append(text)
        groups = [short[start : start + BATCH_SIZE] for start in range(0, len(short), BATCH_SIZE)]
        while groups:
            group = groups.pop()
            if len(group) == 1:
                redacted = self.redact(group[0])
                changed[group[0]] = None if redacted is group[0] else redacted
            elif self._may_change("\x00".join(group)):
                middle = len(group) // 2
                groups += [group[:middle], group[middle:]]
            else:
                changed.update(dict.fromkeys(group))
                self._remember_unchanged(group)
        return [text if changed[text] is None else changed[text] for text in texts]

    def redact_value(self, value: Any) -> Any:
        """Redact every str inside nested dicts, lists and tuples (dict keys too).

        Returns new containers and leaves ``value`` untouched; other values are
        kept as they are. Works without recursion, so any depth of JSON is fine.
        """
        holder = [value]
        stack = [(holder, 0)]  # (container, key) of an item still to copy
        strings = []  # (container, key) of each str value
        dicts = []  # dict copies, whose str keys are redacted last
        frozen = []  # tuple copies, built as lists, in the order they were made
        while stack:
            container, key = stack.pop()
            item = container[key]
            if isinstance(item, str):
                strings.append((container, key))
            elif isinstance(item, dict):
                copy = container[key] = dict(item)
                dicts.append(copy)
                stack.extend((copy, k) for k in copy)
            elif isinstance(item, (list, tuple)):
                copy = container[key] = list(item)
                stack.extend((copy, i) for i in range(len(copy)))
                if isinstance(item, tuple):
                    frozen.append((container, key))
        redacted = self.redact_many([container[key] for container, key in strings])
        for (container, key), text in zip(strings, redacted):
            container[key] = text
        self._redact_keys(dicts)
        for container, key in reversed(frozen):  # innermost first
            container[key] = tuple(container[key])
        return holder[0]

    def marker(self, rule_id: str, secret: str | bytes) -> str:
        """The marker that replaces ``secret`` found by rule ``rule_id``."""
        if isinstance(secret, str):
            secret = secret.encode("utf-8", "surrogatepass")
        digest = hmac.new(self._key, secret, hashlib.sha256).hexdigest()
        return f"[REDACTED:{rule_id}:{digest[:8]}]"

    @staticmethod
    def rewrite_home_paths(text: str) -> str:
        """Replace home directories (``/home/<user>``, ``/Users/<user>``,
        ``C:\\Users\\<user>``) with ``~``; returns ``text`` itself if there are none."""
        if not any(hint in text for hint in _HOME_HINTS):
            return text
        rewritten, count = _HOME.subn("~", text)
        return rewritten if count else text

    def _remember_unchanged(self, texts) -> None:
        for text in texts:
            if len(text) < MEMO_BELOW:
                if len(self._memo) >= MEMO_SIZE:
                    self._memo.clear()
                self._memo[text] = None

    def _redact_keys(self, dicts: list[dict]) -> None:
        keys = [key for d in dicts for key in d if isinstance(key, str)]
        redacted = iter(self.redact_many(keys))
        for d in dicts:
            renamed = {key: next(redacted) for key in d if isinstance(key, str)}
            if any(new is not old for old, new in renamed.items()):
                items = [(renamed.get(key, key), item) for key, item in d.items()]
                d.clear()
                d.update(items)

    def _redact_all_passes(self, text: str) -> str:
        # Replacing a secret changes its neighbours' context (a token glued to
        # it, a home path after it): repeat until nothing changes.
        for _ in range(MAX_PASSES):
            redacted = self._redact_once(text)
            if redacted is text:
                break
            text = redacted
        return text

    def may_change_json(self, text: str) -> bool:
        """False when ``redact_value`` is certain to leave every string of the JSON
        document ``text`` unchanged: it writes no character as ``\\u`` or ``\\/``, so a
        keyword in a decoded string (or key) is in ``text`` as it is, and none is.
        One prefilter pass over the text, without decoding it."""
        if "\\u" in text or "\\/" in text or not self._keywords_unescaped:
            return True
        return self._may_change(text)

    def _may_change(self, text: str) -> bool:
        """False when ``redact(text)`` is certain to return ``text`` unchanged."""
        if self.rewrite_home and any(hint in text for hint in _HOME_HINTS):
            return True
        return bool(self._always or self._prefilter.hits(self._engine.encode(text)))

    def _redact_once(self, text: str) -> str:
        """One pass: secrets, then home paths; ``text`` itself if nothing changed."""
        redacted = text
        if len(text) >= SHORTEST_SECRET:
            data = self._engine.encode(text)
            hits = self._prefilter.hits(data)
            if hits or self._always:
                replaced = self._replace(data, self._find(data, hits))
                if replaced is not None:
                    redacted = replaced
        if self.rewrite_home:
            redacted = self.rewrite_home_paths(redacted)
        return redacted

    def _replace(self, data, spans: list[tuple[int, int, int]]) -> str | None:
        """``data`` with each span replaced by its marker, as str; None if no spans."""
        if not spans:
            return None
        pieces, position = [], 0
        for start, end, index in spans:
            pieces.append(data[position:start])
            marker = self.marker(self.rules[index].id, data[start:end])
            pieces.append(self._engine.encode(marker))
            position = end
        pieces.append(data[position:])
        return self._engine.decode(self._engine.empty.join(pieces))

    def _find(self, data, hits: list[int] | None = None) -> list[tuple[int, int, int]]:
        """Merged (start, end, rule index) spans of secrets in ``data``."""
        if hits is None:
            hits = self._prefilter.hits(data)
        has_markers = self._marker_slot in hits
        spans = []
        for index in sorted(set(hits).union(self._always) - {self._marker_slot}):
            compiled = self._compiled[index]
            for match in compiled.regex.finditer(data):
                start, end = compiled.secret_span(match)
                if end > start and not compiled.rejects(data[start:end]):
                    spans.append((start, end, index))
        if spans and has_markers:
            markers = _Markers(self._marker_regex, data)
            spans = [span for span in spans if not markers.overlap(span[0], span[1])]
        return _merge(spans)
