"""The example metadata.yml and datasette.yaml at the top of the repository load and serve."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

from web_fixtures import make_datasette, web_db  # noqa: F401 (fixture)

TOP = Path(__file__).parent.parent


@pytest.mark.asyncio
async def test_example_configuration_serves_every_page(web_db):
    metadata = yaml.safe_load((TOP / "metadata.yml").read_text())
    config = yaml.safe_load((TOP / "datasette.yaml").read_text())
    ds = make_datasette(web_db, config=config, metadata=metadata)
    await ds.invoke_startup()
    for path in ("/", "/-/obelisk", "/-/obelisk/overview", "/obelisk/browse_messages"):
        response = await ds.client.get(path)
        assert response.status_code == 200, (path, response.text[response.text.find("<h1"):][:300])
    assert "Obelisk" in (await ds.client.get("/")).text
    # No facet suggestions: each would repeat a page's ?_search= once per column.
    assert config["settings"] == {"suggest_facets": False}
    searched = await ds.client.get("/obelisk/messages.json", params={"_search": "the", "_extra": "suggested_facets"})
    assert searched.status_code == 200 and searched.json()["suggested_facets"] == []
    assert 'class="suggested-facets"' not in (await ds.client.get("/obelisk/messages", params={"_search": "the"})).text
    # Example memory_roots is empty: nothing is writable, even for root.
    ds.root_enabled = True
    response = await ds.client.post("/-/obelisk/api/remember", json={"path": "/x.md", "summary": "x"}, actor={"id": "root"})
    assert response.json()["error"]["code"] == "OBELISK_MEMORY_REFUSED"


@pytest.mark.asyncio
async def test_the_example_descriptions_links_follow_base_url(web_db):
    from urllib.parse import urljoin

    metadata = yaml.safe_load((TOP / "metadata.yml").read_text())
    ds = make_datasette(web_db, metadata=metadata, settings={"base_url": "/prefix/"})
    await ds.invoke_startup()
    shown = []
    for path in ("/", "/obelisk", "/obelisk/messages"):
        html = (await ds.client.get(path)).text
        if "Start at" not in html:
            continue
        shown.append(path)
        found = re.findall(r'Start at <a href="([^"]+)">search</a> or the\s+<a href="([^"]+)">', html)
        assert [tuple(urljoin("http://x/prefix" + path, link) for link in pair) for pair in found] == [
            ("http://x/prefix/-/obelisk", "http://x/prefix/-/obelisk/overview")], path
    assert shown == ["/"]  # the instance's description is on its home page only
