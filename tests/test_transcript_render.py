"""The transcript's entries, rendered at once by a synchronous copy of the template
environment: the same HTML as Datasette's asynchronous environment gives, byte for byte,
and the quicker helpers they use give what the ones they stand for give."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path
from urllib.parse import urlencode

import pytest
from datasette.app import Datasette
from hypothesis import given, settings
from hypothesis import strategies as st
from jinja2 import Environment, Undefined

from datasette_obelisk.demo import generator
from datasette_obelisk.store.ingest import ingest
from datasette_obelisk.utc import canonical
from datasette_obelisk.web import template_helpers
from datasette_obelisk.web.template_helpers import TemplateHelpers, item_first
from datasette_obelisk.web.terminal import without_escapes
from datasette_obelisk.web.urls import obelisk_url, query_string, segment
from web_fixtures import XSS_SESSION, make_datasette, web_db  # noqa: F401 (fixture)

OPTIONS = ({}, {"shadowed": "1", "meta": "1", "log": "1"}, {"log": "1"})


def generated_session(folder: Path) -> Path:
    """A database of one long generated Claude Code session (tool calls and results, a
    compaction, a rewind, subagents, hooks): three transcript pages."""
    stats = generator.SourceStats()
    corpus = generator._Corpus(1, "claude", 3_500_000, stats, 0)
    writer = generator._ClaudeGenerator(corpus, folder / "claude" / "projects", None)
    writer.session(generator._ClaudePlan("2.1b", {"task", "compact", "rewind", "hooks", "reminder", "slash"},
                                         budget=3_500_000))
    ingest(folder / "long.db", {"claude": folder / "claude"})
    return folder / "long.db"


@pytest.fixture(scope="module")
def long_db(tmp_path_factory) -> Path:
    return generated_session(tmp_path_factory.mktemp("long"))


async def entries_both_ways(datasette, monkeypatch, url: str) -> tuple[str, str, str]:
    """The page at ``url`` (with no terminal escapes: ``without_escapes``), the entries it
    shows, and the same template rendered from the same context by Datasette's own
    (asynchronous) environment."""
    seen = []
    fragment = TemplateHelpers.fragment

    def recording(self, template, **context):
        html = fragment(self, template, **context)
        seen.append((self, template, context, html))
        return html

    monkeypatch.setattr(TemplateHelpers, "fragment", recording)
    response = await datasette.client.get(url)
    assert response.status_code == 200, response.text[:300]
    [(ob, template, context, html)] = seen
    ob.raws.clear()
    awaited = await datasette.get_jinja_environment().get_template(template).render_async(ob=ob, **context)
    return response.text, str(html), awaited


def pages_of(db: Path) -> list[str]:
    """A transcript URL for every session's first page, its last line and, in a long one,
    each later page, with and without the options that show every line."""
    conn = sqlite3.connect(db)
    urls = []
    for session_id, last in conn.execute("SELECT session_id, max(seq) FROM messages GROUP BY session_id ORDER BY 1"):
        starts = sorted({1, last, *range(501, last + 1, 500)})
        for start in starts:
            for options in OPTIONS:
                urls.append(f"/-/obelisk/session/{session_id}?" + urlencode({"start": start, **options}))
    conn.close()
    return urls


@pytest.mark.asyncio
async def test_every_corpus_transcript_renders_as_the_asynchronous_environment_does(web_db, monkeypatch):
    datasette = make_datasette(web_db)
    urls = pages_of(web_db)
    assert any(XSS_SESSION in url for url in urls) and len(urls) > 100
    for url in urls:
        page, html, awaited = await entries_both_ways(datasette, monkeypatch, url)
        monkeypatch.undo()
        assert html == awaited, url
        assert f'<ol class="ob-transcript" data-ob-pages>\n{without_escapes(html)}\n</ol>' in page


@pytest.mark.asyncio
async def test_a_generated_session_s_pages_render_as_the_asynchronous_environment_does(long_db, monkeypatch):
    datasette = make_datasette(long_db)
    urls = [url for url in pages_of(long_db) if ":agent-" not in url]
    assert len(urls) >= 3 * len(OPTIONS) + len(OPTIONS)  # (three pages and the last line, each way)
    shown = 0
    for url in urls:
        page, html, awaited = await entries_both_ways(datasette, monkeypatch, url)
        monkeypatch.undo()
        assert html == awaited, url
        assert f'<ol class="ob-transcript" data-ob-pages>\n{without_escapes(html)}\n</ol>' in page
        shown += html.count('class="ob-tool"')
    assert shown > 100  # (tool calls with their results)


@pytest.mark.asyncio
async def test_the_synchronous_copy_is_made_once_and_keeps_the_environment_s_filters(web_db):
    datasette = make_datasette(web_db)
    environment = datasette.get_jinja_environment()
    copy = template_helpers.synchronous(environment)
    assert template_helpers.synchronous(environment) is copy
    assert not copy.is_async and environment.is_async
    assert copy.filters is environment.filters and copy.globals is environment.globals
    assert copy.cache is not environment.cache


class Attributes:
    seq = 7


@pytest.mark.parametrize("obj,attribute", [
    ({"seq": 3}, "seq"),
    ({"items": 3}, "items"),  # (a dict's method comes first, as in Jinja)
    ({"seq": 3}, "kind"),
    ({}, "get"),
    (type("Row", (dict,), {"seq": 9})(seq=3), "seq"),  # (a subclass's attribute)
    (Attributes(), "seq"),
    (Attributes(), "kind"),
    ([1, 2], "count"),
    (None, "seq"),
])
def test_item_first_reads_an_attribute_as_jinja_does(obj, attribute):
    environment = Environment()
    expected = environment.getattr(obj, attribute)
    found = item_first(environment, obj, attribute)
    if isinstance(expected, Undefined):
        assert type(found) is type(expected)
        assert (found._undefined_obj, found._undefined_name) == (obj, attribute)
    else:
        assert found == expected


VALUES = st.one_of(
    st.text(), st.text(alphabet="azAZ09_.~- +/&=%é#?"), st.integers(), st.booleans(), st.floats(allow_nan=False),
    st.lists(st.one_of(st.text(), st.integers())), st.just(()), st.just(Undefined()),
)


@settings(max_examples=500, deadline=None)
@given(st.dictionaries(st.text(min_size=1), VALUES))
def test_query_string_is_urlencode(query):
    assert query_string(query) == urlencode(query, doseq=True)


def old_when(timestamp) -> str:
    text = canonical(str(timestamp)) or str(timestamp)
    return text[:16].replace("T", " ") if len(text) >= 16 and text[4] == "-" else text


DIGITS = st.text(alphabet="0123456789", min_size=1, max_size=1)


@settings(max_examples=500, deadline=None)
@given(st.one_of(
    st.datetimes().map(lambda moment: moment.isoformat(timespec="milliseconds") + "Z"),
    st.tuples(*[DIGITS] * 17).map(lambda d: "{}{}{}{}-{}{}-{}{}T{}{}:{}{}:{}{}.{}{}{}Z".format(*d)),
    st.text(max_size=30),
    st.datetimes().map(lambda moment: moment.isoformat() + "+02:00"),
))
def test_when_gives_what_it_gave_before_its_shortcut(timestamp):
    assert TemplateHelpers.when(timestamp) == old_when(timestamp)


# The ``text`` macro as it was written in Jinja before ``ob.text`` took its place.
TEXT_MACRO = (
    '{% macro text(value, raw, ob, tag="div", css="ob-text", length=none, limit=none) %}{% set shown, more = '
    'ob.cut(value, length, limit) %}<{{ tag }} class="{{ css }}">{{ shown }}{% if more %}<span class="ob-muted '
    'ob-more"> … {{ "{:,}".format(more) }} more characters{% if raw %} (see <a href="{{ raw }}">raw</a>){% endif %}'
    '</span>{% endif %}</{{ tag }}>{% endmacro %}'
    "{{ text(value, raw, ob, tag=tag, css=css, length=length, limit=limit) }}"
)
LOG_TEXT = st.text(alphabet=st.sampled_from('ab <>&"\'é\n\u202e'), max_size=40)


@settings(max_examples=300, deadline=None)
@given(LOG_TEXT | st.none(), st.none() | st.just("/-/obelisk/api/raw?uuid=a&limit=1"), st.sampled_from(["div", "pre"]),
       st.sampled_from(["ob-text", "ob-pre"]), st.none() | st.integers(0, 100), st.none() | st.integers(0, 30))
def test_text_gives_what_the_macro_gave(value, raw, tag, css, length, limit):
    ob = TemplateHelpers(datasette_at("/"), None)
    macro = Environment(autoescape=True).from_string(TEXT_MACRO)
    expected = macro.render(value=value, raw=raw, ob=ob, tag=tag, css=css, length=length, limit=limit)
    assert ob.text(value, raw, tag, css, length, limit) == expected


@functools.cache
def datasette_at(base_url: str) -> Datasette:
    return Datasette([], settings={"base_url": base_url})


@settings(max_examples=300, deadline=None)
@given(st.text(min_size=1), st.integers(1, 10**6), st.sampled_from([None, "", "obelisk", "my db&"]),
       st.dictionaries(st.sampled_from(["start", "id", "shadowed", "log", "a b"]), VALUES),
       st.sampled_from(["/", "/pre/"]))
def test_links_are_what_obelisk_url_builds(session_id, seq, db, query, base_url):
    datasette = datasette_at(base_url)
    ob = TemplateHelpers(datasette, db)
    quoted = segment(session_id)

    def expected(where):
        return obelisk_url(datasette, where, db=db, **query)

    assert ob.session(session_id, **query) == expected(f"/session/{quoted}")
    assert ob.lineage(session_id, **query) == expected(f"/session/{quoted}/lineage")
    assert ob.event(session_id, seq, **query) == expected(f"/event/{quoted}/{seq}")
    assert ob.page("/files", **query) == expected("/files")
    assert ob.api("session-query/session", session_id, **query) == expected(f"/api/session-query/session/{quoted}")
    assert ob.event(session_id, seq, **query).startswith(base_url + "-/obelisk/event/")
