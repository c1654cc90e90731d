"""Secret redaction for stored transcript text (rules in ``rules.toml``).

    from datasette_obelisk.store.redaction import Redactor
    redactor = Redactor(key=database_key)
    redactor.redact(text)          # str -> str, idempotent
    redactor.redact_many(texts)    # list of str, faster for many short ones
    redactor.redact_value(obj)     # nested dicts / lists of str
    redactor.scan(text)            # [Finding(rule, start, end)]
"""

from .engine import (
    MARKER_PATTERN,
    RULESET_VERSION,
    Finding,
    Redactor,
    Rule,
    load_rules,
    shannon_entropy,
)

__all__ = [
    "MARKER_PATTERN",
    "RULESET_VERSION",
    "Finding",
    "Redactor",
    "Rule",
    "load_rules",
    "shannon_entropy",
]
