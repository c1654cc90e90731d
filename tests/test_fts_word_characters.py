"""fts.is_token_char answers for a character whatever another thread does to the
module-level cache (``_word_characters``) meanwhile."""

from datasette_obelisk.query import fts


class LearnedMeanwhile(dict):
    """A cache where another thread learns a character just after this one found it missing."""

    def get(self, key, default=None):
        found = super().get(key, default)
        if found is None and key not in self:
            self[key] = key.isalpha()  # (what learn_characters in another thread stores for these)
        return found


def test_a_character_learned_by_another_thread_meanwhile_is_still_a_word_character(monkeypatch):
    monkeypatch.setattr(fts, "_word_characters", LearnedMeanwhile())
    assert fts.is_token_char("é")
    assert fts.is_token_char("ж")
    assert not fts.is_token_char("\u3000")  # (an ideographic space still separates words)
    assert fts.words("café naïve") == ["café", "naïve"]

