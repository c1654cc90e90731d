"""Generated documentation is up to date (regenerate with `cog -r docs/*.md`)."""

from pathlib import Path

import pytest
from cogapp import Cog

DOCS = Path(__file__).parent.parent / "docs"


@pytest.mark.parametrize("name", ["cli.md", "schema.md"])
def test_generated_docs_are_current(name):
    result = Cog().main(["cog", "--check", str(DOCS / name)])
    assert result == 0, f"docs/{name} is out of date: run `cog -r docs/{name}`"
