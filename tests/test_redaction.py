"""The secret-redaction engine: labelled recall, benign false positives, markers,
the public API, home-path rewriting and the Python-`re` fallback."""

import hashlib
import hmac
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from datasette_obelisk.store.redaction import (
    RULESET_VERSION,
    Finding,
    Redactor,
    load_rules,
)
from datasette_obelisk.store.redaction import engine as redaction_engine
from secret_samples import CONTEXTS, KINDS, KINDS_BY_NAME, benign_documents, labelled_samples

KEY = b"test-database-key"
RULES_FILE = Path(redaction_engine.__file__).with_name("rules.toml")


@pytest.fixture(scope="module")
def redactor():
    return Redactor(key=KEY)


@pytest.fixture(scope="module")
def fallback():
    return Redactor(key=KEY, engine="re")


@pytest.fixture(scope="module")
def samples():
    return labelled_samples(seed=0)


@pytest.fixture(scope="module")
def benign():
    return benign_documents(seed=0, lines=20_000)


def removed(redactor, sample):
    out = redactor.redact(sample.text)
    return not any(secret in out for secret in sample.secrets)


# -- the labelled set ---------------------------------------------------------------


def test_labelled_set_shape(samples):
    kinds = Counter(sample.kind for sample in samples)
    contexts = Counter(sample.context for sample in samples)
    assert len(kinds) == 33
    assert set(kinds.values()) == {20}
    assert len(contexts) == 10
    assert set(contexts.values()) == {66}
    assert sum(KINDS_BY_NAME[k].provider for k in kinds) == 27


def test_recall_per_kind(redactor, samples):
    found, total = Counter(), Counter()
    for sample in samples:
        total[sample.kind] += 1
        found[sample.kind] += removed(redactor, sample)
    assert {kind: (found[kind], total[kind]) for kind in total} == {
        kind.name: (20, 20) for kind in KINDS
    }
    assert sum(found.values()) / sum(total.values()) == 1.0  # issue: >= 99% overall


def test_recall_per_context(redactor, samples):
    found = Counter(sample.context for sample in samples if removed(redactor, sample))
    assert found == {context: 66 for context in CONTEXTS}


def test_provider_secrets_are_named_by_their_rule(redactor, samples):
    misnamed = [
        (sample.kind, sample.context)
        for sample in samples
        if f"[REDACTED:{KINDS_BY_NAME[sample.kind].rule}:" not in redactor.redact(sample.text)
    ]
    assert misnamed == []


def test_no_false_positives_on_benign_corpus(redactor, benign):
    lines = sum(document.count("\n") + 1 for document in benign)
    flagged = Counter()
    for document in benign:
        starts = [0] + [i + 1 for i, c in enumerate(document) if c == "\n"]
        for finding in redactor.scan(document):
            line = document.count("\n", 0, finding.start)
            flagged[(id(document), line)] += 1
            print(finding.rule, repr(document[starts[line] : starts[line] + 200]))
    assert lines == 20_005
    assert len(flagged) == 0  # issue: <= 0.1% of lines


def test_no_findings_in_public_corpus(redactor, corpus):
    """Real, public (already scrubbed) Claude Code / Codex / Gemini logs: nothing to redact."""
    strings = []

    def walk(value):
        if isinstance(value, str):
            strings.append(value)
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    for path in sorted(corpus.rglob("*.json*")):
        for line in path.read_text("utf-8", errors="replace").splitlines():
            try:
                walk(json.loads(line))
            except ValueError:
                continue
    assert len(strings) > 30_000
    findings = [(f.rule, s[max(0, f.start - 40) : f.end + 10]) for s in strings for f in redactor.scan(s)]
    assert findings == []


# -- markers --------------------------------------------------------------------------


def test_marker_is_hmac_of_the_secret(redactor):
    token = "ghp_" + "a1B2c3D4e5" * 4
    expected = hmac.new(KEY, token.encode(), hashlib.sha256).hexdigest()[:8]
    assert redactor.redact(f"token {token} here") == f"token [REDACTED:github-pat:{expected}] here"
    assert Redactor.marker_re.fullmatch(f"[REDACTED:github-pat:{expected}]")


def test_same_secret_same_marker_other_key_other_marker(redactor):
    token = "npm_" + "Zx9" * 12
    first = redactor.redact(f"a {token}")
    assert redactor.redact(f"NPM_TOKEN={token}\n") == f"NPM_TOKEN={first[2:]}\n"
    other = Redactor(key=b"another-database").redact(f"a {token}")
    assert other != first and other.startswith("a [REDACTED:npm-token:")


def test_marker_reveals_nothing(redactor):
    token = "sk-ant-oat01-" + "Qw3_" * 24 + "AA"
    out = redactor.redact(token)
    assert token[13:21] not in out and re.fullmatch(r"\[REDACTED:anthropic-oauth-token:[0-9a-f]{8}\]", out)


@pytest.mark.parametrize("rule", [rule.id for rule in load_rules()])
def test_no_rule_matches_a_marker(redactor, rule):
    marker = f"[REDACTED:{rule}:0a1b2c3d]"
    for text in [marker, f"{rule}={marker}", f"{rule}: {marker}", f'"{rule}": "{marker}"', f"x://u:{marker}@h"]:
        assert redactor.scan(text) == []
        assert redactor.redact(text) is text


@pytest.mark.parametrize("rule", [rule.id for rule in load_rules()])
@pytest.mark.parametrize("gap", ["", " ", "\n"])
def test_markers_do_not_disturb_what_follows(redactor, rule, gap):
    """A rule keyword inside a marker must not start a match that swallows the text after it."""
    tail = (
        "password=Sup3r-S3cret!x token=0a1b2c3d4e5f60718293a4b5c6d7e8f9 ghp_" + "k3Y" * 12
        + " https://u:pw-4711-xyz@db.test AIza" + "Xy_-9" * 7
    )
    marker = f"[REDACTED:{rule}:0a1b2c3d]"
    shift = len(marker) + len(gap)
    expected = [Finding(f.rule, f.start + shift, f.end + shift) for f in redactor.scan(tail)]
    assert len(expected) == 5
    assert redactor.scan(marker + gap + tail) == expected


def test_marker_pattern_recognises_markers():
    text = "a [REDACTED:aws-access-key-id:deadbeef] b [REDACTED:X:zz]"
    assert [m.group() for m in Redactor.marker_re.finditer(text)] == [
        "[REDACTED:aws-access-key-id:deadbeef]"
    ]


# -- API ------------------------------------------------------------------------------


def test_fast_path_returns_same_object(redactor):
    text = "nothing to see here: git status && pytest -q\n" * 50
    assert redactor.redact(text) is text
    short = "abc"
    assert redactor.redact(short) is short


def test_scan_reports_rule_and_span_only(redactor):
    text = "café ☕ AWS_ACCESS_KEY_ID=AKIA" + "QWERTY2345ZXCVBN" + " ok"
    start = text.index("AKIA")
    assert redactor.scan(text) == [Finding("aws-access-key-id", start, start + 20)]
    assert [f for f in Finding.__slots__] == ["rule", "start", "end"]


def test_scan_offsets_match_redact(redactor, samples):
    for sample in samples[::7]:
        findings = redactor.scan(sample.text)
        pieces, position = [], 0
        for finding in findings:
            secret = sample.text[finding.start : finding.end]
            pieces += [sample.text[position : finding.start], redactor.marker(finding.rule, secret)]
            position = finding.end
        rebuilt = "".join(pieces) + sample.text[position:]
        assert rebuilt == redactor.redact(sample.text)


def test_redact_value_walks_nested_containers(redactor):
    token = "xoxb-1234567890-0987654321-" + "AbCdEfGhIjKlMnOpQrStUvWx"
    value = {
        "command": f"curl -H 'Authorization: Bearer {token}'",
        "count": 3,
        "nested": [{"env": {"SLACK_BOT_TOKEN": token}}, (token, None, 1.5)],
        token: True,
    }
    out = redactor.redact_value(value)
    marker = redactor.redact(token)
    assert out == {
        "command": f"curl -H 'Authorization: Bearer {marker}'",
        "count": 3,
        "nested": [{"env": {"SLACK_BOT_TOKEN": marker}}, (marker, None, 1.5)],
        marker: True,
    }
    assert value["nested"][0]["env"]["SLACK_BOT_TOKEN"] == token  # input untouched
    assert redactor.redact_value(42) == 42 and redactor.redact_value(None) is None


def test_redact_many_matches_redact(samples, benign):
    texts = [sample.text for sample in samples] + benign[:50]
    texts += [line for document in benign[:50] for line in document.splitlines()]
    texts += ["user", "assistant", "ghp_" + "Ab1" * 12, "user", "password=Hunter2-2024!"] * 3
    many = Redactor(key=KEY).redact_many(texts)
    single = Redactor(key=KEY)
    assert many == [single.redact(text) for text in texts]
    assert sum(a is not b for a, b in zip(many, texts)) == 660 + 6
    assert all(out is text for out, text in zip(many, texts) if out == text)


def test_memo_keeps_object_identity():
    redactor = Redactor(key=KEY)
    first, second = "".join(["assis", "tant"]), "".join(["assist", "ant"])
    assert first == second and first is not second
    assert redactor.redact(first) is first
    assert redactor.redact(second) is second  # remembered, still the caller's object
    token = "".join(["npm_", "Zx9" * 12])
    assert redactor.redact(token) == redactor.redact(token) != token


def test_redact_value_handles_deep_nesting(redactor):
    token = "glpat-" + "aB3_dE5-fG7hJ9kL2mN4"
    deep = token
    for depth in range(5000):
        deep = [deep] if depth % 2 else {"k": deep}
    out = redactor.redact_value(deep)
    for depth in reversed(range(5000)):
        out = out[0] if depth % 2 else out["k"]
    assert out == redactor.redact(token) != token
    assert redactor.redact_value(((token,), [token])) == ((out,), [out])


def test_key_is_required():
    with pytest.raises(ValueError):
        Redactor(key=b"")
    assert Redactor(key="text key").redact("sk_live_" + "a1" * 12).startswith("[REDACTED:stripe-key:")


def test_lone_surrogates_round_trip(redactor):
    text = "\ud800 token ghp_" + "Ab1" * 12 + " \udfff"
    out = redactor.redact(text)
    assert out.startswith("\ud800 token [REDACTED:github-pat:") and out.endswith("] \udfff")
    assert redactor.redact("plain \ud83d text") == "plain \ud83d text"


# -- particular rules --------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        "AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "password: ${DB_PASSWORD}",
        'password = os.environ["DB_PASSWORD"]',
        "password=$DB_PASSWORD2",
        'api_key = os.environ.get("OPENAI_API_KEY")',
        "apiKey: process.env.OPENAI_API_KEY_2",
        "secret_key = settings.SECRET_KEY_V2",
        'token: "{{ .Values.token }}"',
        'api_key: "<YOUR_API_KEY>"',
        "API_KEY=your-api-key-here",
        'password = "********"',
        "client_secret: xxxxxxxxxxxxxxxxxxxx",
        "DATABASE_URL=postgres://user:password@localhost:5432/app",
        "redis://:${REDIS_PASSWORD}@cache:6379",
        "Authorization: Bearer <token>",
        "Authorization: Bearer $GITHUB_TOKEN",
        "Authorization: Bearer YOUR_ACCESS_TOKEN",
        '"input_tokens": 1234567890, "cache_read_input_tokens": 123456789012',
        "tokenizer: meta-llama/Llama-3.1-8B-Instruct",
        "token = Base.url_encode64(:crypto.strong_rand_bytes(32))",
        "password_hash = hash_password2024(password)",
        "PWD=/home/user/project",
        "curl -u \"$USER:$PASS\" https://example.test",
        "-----BEGIN PUBLIC KEY-----\nMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n-----END PUBLIC KEY-----",
        "-----BEGIN CERTIFICATE-----\nMIIDdzCCAl+gAwIBAgIEAgAAuTANBgkqhkiG9w0BAQUFADBaMQswCQYDVQQGEwJJ\n-----END CERTIFICATE-----",
        "export OPENAI_API_KEY=\"sk-...\"",
        "ask: task-runner-2024-build-pipeline-x",
    ],
)
def test_placeholders_and_lookups_are_kept(redactor, text):
    assert redactor.scan(text) == []


@pytest.mark.parametrize(
    "text, rule",
    [
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0", "private-key"),
        ('{"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n"}', "private-key"),
        ("Authorization: Basic dXNlcjpjb3JyZWN0LWhvcnNlLTIwMjQ=", "authorization-header"),
        ("https://x-access-token:p4ssW0rd-Xy7z@github.com/org/repo.git", "url-credentials"),
        ("mysql --user=root --password Sup3r-S3cret! db", "cli-secret-flag"),
        ("curl -u admin:Tr0ub4dor-and-3 https://api.example.test", "curl-basic-auth"),
        ("//registry.npmjs.org/:_authToken=8a1d3f2e-55c1-4b7e-9a0f-1c2d3e4f5a6b", "npm-auth-token-config"),
        ("OPENROUTER_API_KEY=sk-or-v1-" + "0a1b2c3d4e5f6789" * 4, "sk-api-key"),
        ("bot token: https://api.telegram.org/bot1234567890:AA" + "bCdEfGhIjK_lMnOpQrStUvWxYz0123456" + "/getMe", "telegram-bot-token"),
    ],
)
def test_structural_rules(redactor, text, rule):
    findings = redactor.scan(text)
    assert [f.rule for f in findings] == [rule]
    assert redactor.marker_re.search(redactor.redact(text))


def test_private_key_block_is_replaced_whole(redactor):
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\nAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----"
    out = redactor.redact(f"$ cat ~/.ssh/id_ed25519\n{key}\n$ ls")
    assert out.startswith("$ cat ~/.ssh/id_ed25519\n[REDACTED:private-key:") and out.endswith("]\n$ ls")


@pytest.mark.parametrize(
    "first, second",
    [
        ("ghp_" + "x1" * 18, "ghp_" + "y2" * 18),
        ("hf_" + "aB3dE5fG7hJ9kL2mN4pQ6rS8tU1vW0xYz", "hf_" + "Zy0xW9vU8tS7rQ6pN5mL4kJ3hG2fE1dC0b"),
        ("dapi" + "0" * 32, "dapi" + "1" * 32),
        ("AKIA" + "ABCDEFGHIJKLMNOP", "sk-proj-" + "Q" * 20 + "T3BlbkFJ" + "R" * 20),
        ("SK" + "0123456789abcdef" * 2, "AIza" + "Xy_-9" * 7),
    ],
)
def test_glued_tokens_leave_nothing_behind(redactor, first, second):
    text = first + second + first
    out = redactor.redact(text)
    assert Redactor.marker_re.sub("", out) == ""
    assert len(redactor.scan(text)) == 1  # one span, found in one pass


# -- home paths ------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text, expected",
    [
        ("cd /home/alice/src/app && ls", "cd ~/src/app && ls"),
        ('{"cwd": "/Users/Bob.Smith/work"}', '{"cwd": "~/work"}'),
        ("cwd=/home/alice", "cwd=~"),
        ("C:\\Users\\carol\\repo\\main.py", "~\\repo\\main.py"),
        ("/Users/Shared/data and /mnt/home/x/y stay", "/Users/Shared/data and /mnt/home/x/y stay"),
        ("/home/alice/home/bob/x", "~/home/bob/x"),
    ],
)
def test_rewrite_home(text, expected):
    redactor = Redactor(key=KEY, rewrite_home=True)
    assert redactor.redact(text) == expected
    assert redactor.redact(expected) == expected


def test_home_kept_by_default(redactor):
    text = "cd /home/alice/src"
    assert redactor.redact(text) is text


# -- rules file -------------------------------------------------------------------------


def test_rules_file_is_documented():
    rules = load_rules()
    assert len(rules) == 42
    assert RULESET_VERSION == 3
    for rule in rules:
        assert rule.description and rule.source and rule.keywords, rule.id
        assert not re.search(r"\\[swdb]", rule.regex), rule.id  # differ between RE2 and re


def test_every_match_contains_a_keyword(samples, benign):
    """The prefilter is safe: a rule's regex never matches where none of its keywords is."""
    re2 = pytest.importorskip("re2")
    texts = [sample.text for sample in samples] + benign
    for rule in load_rules():
        regex = re2.compile(rule.regex)
        keywords = rule.keywords if rule.case_sensitive else [k.lower() for k in rule.keywords]
        for text in texts:
            for match in regex.finditer(text):
                found = match.group() if rule.case_sensitive else match.group().lower()
                assert any(k in found for k in keywords), (rule.id, found[:80])


def test_load_rules_checks_fields(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text("version = 2\n[[rules]]\nid = 'x'\nregex = 'a'\ncolour = 'red'\n")
    with pytest.raises(ValueError, match="unknown fields"):
        load_rules(path)
    path.write_text("version = 2\n[[rules]]\nid = 'Bad Id'\nregex = 'a'\n")
    with pytest.raises(ValueError, match="bad rule id"):
        load_rules(path)
    path.write_text(
        "version = 2\n[placeholders]\nregexes = ['^x+$']\n"
        "[[rules]]\nid = 'demo'\nregex = 'demo=([a-z]+)'\nkeywords = ['demo=']\nplaceholders = true\n"
    )
    (rule,) = load_rules(path)
    assert rule.allow == ("^x+$",)
    redactor = Redactor(key=KEY, rules=[rule])
    assert redactor.redact("demo=abc demo=xxx") == f"demo={redactor.marker('demo', 'abc')} demo=xxx"


# -- the Python `re` fallback ------------------------------------------------------------


def test_fallback_finds_the_same_spans(redactor, fallback, samples, benign):
    texts = [sample.text for sample in samples] + benign[:100] + ["café ☕ ghp_" + "Ab1" * 12 + " é password: `Pä55wörd-42`"]
    assert fallback.engine == "re" and redactor.engine == "re2"
    for text in texts:
        assert fallback.scan(text) == redactor.scan(text)
        assert fallback.redact(text) == redactor.redact(text)


def test_fallback_patterns_are_bounded_and_unnested():
    """Every repeat in the `re` fallback has an upper bound, and no repeat of
    more than one occurrence sits inside another (no catastrophic backtracking)."""
    parser = re._parser
    unbounded = parser.MAXREPEAT

    def check(items, inside_repeat, pattern):
        for op, arg in items:
            if op in (parser.MAX_REPEAT, parser.MIN_REPEAT):
                low, high, sub = arg
                assert high != unbounded, pattern
                if high > 1:
                    assert not inside_repeat, pattern
                check(sub, inside_repeat or high > 1, pattern)
            elif op == parser.SUBPATTERN:
                check(arg[-1], inside_repeat, pattern)
            elif op == parser.BRANCH:
                for branch in arg[1]:
                    check(branch, inside_repeat, pattern)

    for rule in load_rules():
        for pattern in (rule.regex, *rule.allow):
            bounded = redaction_engine.bounded_pattern(pattern)
            check(parser.parse(bounded, re.ASCII), False, rule.id)


def test_bounded_pattern_rewrites_only_open_repeats():
    bounded = redaction_engine.bounded_pattern
    assert bounded(r"a*b+c{2,}d{1,3}[*+]\+x*?", 50) == r"a{0,50}b{1,50}c{2,50}d{1,3}[*+]\+x{0,50}?"
    assert bounded(r"[]*]+[^]+]*", 9) == r"[]*]{1,9}[^]+]{0,9}"


def test_default_engine_without_re2():
    code = (
        "import sys; sys.modules['re2'] = None\n"
        "from datasette_obelisk.store.redaction import Redactor\n"
        "r = Redactor(key=b'k')\n"
        "print(r.engine, r.redact('token ghp_' + 'a1B2' * 9)[:25])\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=Path(__file__).parent.parent
    )
    assert result.stdout.strip() == "re token [REDACTED:github-pa"
