"""Tool output is stored once.

A tool result's output is nearly always also the whole text of the message
that carries it, and it is the bulk of every log. ``tool_results.content``
then keeps only its first ``CLIP_CHARS`` characters (as the Obelisk seed
does) while ``content_length`` keeps the full length; the whole output is
that message's ``text``. The output of a failure (a result the failures list
shows: failed, or flagged an error, as a refused or interrupted call is) is
always kept whole: it is what ``tool_errors_fts`` indexes.

An output the log holds only the start of, whose whole is a file of its own
(Claude Code's ``<persisted-output>``), is the text of the message read from
that file (``output_uuid``): the result's ``content`` and ``content_length``
are its, once it is read, whichever comes first; until then, the log's note.
"""

from __future__ import annotations

CLIP_CHARS = 10_000
# A tool result the failures list shows (query.dashboard.failed), written as
# the partial index tool_results_failed is: what tool_errors_fts indexes.
FAILURE_SQL = "(outcome = 'failed' OR is_error = 1)"


def is_failure(outcome: str | None, is_error) -> bool:
    """Whether a result of ``outcome`` and ``is_error`` is a failure (``FAILURE_SQL``)."""
    return outcome == "failed" or is_error == 1


def stored_content(content: str, failure: bool, message_text: str | None) -> str:
    """What ``tool_results.content`` holds for ``content`` (``failure``: ``is_failure`` of its result)."""
    if len(content) <= CLIP_CHARS or failure or content != message_text:
        return content
    return content[:CLIP_CHARS]


def full_content_sql(alias: str = "r") -> str:
    """A SQL expression for the whole output of the tool result row ``alias``."""
    return (
        f"CASE WHEN {alias}.content_length > {CLIP_CHARS} AND length({alias}.content) < {alias}.content_length "
        f"THEN coalesce((SELECT text FROM messages WHERE uuid = coalesce({alias}.output_uuid, {alias}.message_uuid)), "
        f"{alias}.content) ELSE {alias}.content END"
    )


def raw_uuid_sql(alias: str = "r") -> str:
    """A SQL expression for the message whose raw text is the whole output of the tool result
    row ``alias``: the one read from the file its output was saved to, once stored, else its line's."""
    return f"coalesce((SELECT uuid FROM messages WHERE uuid = {alias}.output_uuid), {alias}.message_uuid)"


CLIP_STORED_SQL = f"""
UPDATE tool_results SET content = substr(content, 1, {CLIP_CHARS})
WHERE content_length > {CLIP_CHARS} AND NOT {FAILURE_SQL}
  AND content = (SELECT text FROM messages WHERE uuid = tool_results.message_uuid)
"""
