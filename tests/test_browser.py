"""Real-browser tests: Debian's chromium driven by Playwright against a served Datasette.

Screenshots of the search, transcript, lineage and overview pages are saved
in a folder printed at the start of the run (``$OBELISK_SCREENSHOTS`` to
choose it).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import quote, unquote, urlsplit

import pytest

from processes import free_port
from web_fixtures import XSS_SESSION, copy_db, web_db  # noqa: F401 (fixture)

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]
WORD = "TypeScript"  # in the shared corpus (d-kimuson's session)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"{CHROMIUM} is not installed"),
]


@contextlib.contextmanager
def serving(db: Path):
    """``datasette serve db`` on a free port: its base URL."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "datasette", "serve", str(db), "-h", "127.0.0.1", "-p", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 30
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if process.poll() is not None or time.monotonic() > deadline:
                process.kill()
                raise RuntimeError(f"datasette did not start: {process.stderr.read().decode()[-2000:]}")
            time.sleep(0.1)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


@pytest.fixture(scope="module")
def server(web_db):
    with serving(web_db) as url:
        yield url


@pytest.fixture(scope="module")
def screenshots(tmp_path_factory, request):
    folder = Path(os.environ.get("OBELISK_SCREENSHOTS") or tmp_path_factory.mktemp("screenshots"))
    folder.mkdir(parents=True, exist_ok=True)
    with request.config.pluginmanager.getplugin("capturemanager").global_and_fixture_disabled():
        print(f"\nscreenshots: {folder}", flush=True)
    return folder


def close(closable) -> None:
    """Close a browser or a browser context, unless it is closed already: Ctrl-C reaches
    Playwright's driver too, which exits before the fixtures' teardown asks it to close
    anything. (Its error would print a long traceback over pytest's KeyboardInterrupt.)"""
    from playwright._impl._errors import TargetClosedError  # (playwright.sync_api names only its base, Error)

    try:
        closable.close()
    except TargetClosedError:
        pass


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        yield chromium
        close(chromium)


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.js_errors = errors
    yield page
    close(context)


def child_processes() -> set[int]:
    children = set()
    for name in os.listdir("/proc"):
        try:
            ppid = int(Path(f"/proc/{name}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if ppid == os.getpid():
            children.add(int(name))
    return children


def running(pid: int) -> bool:
    """Whether ``pid`` runs (neither reaped nor a zombie)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_the_fixtures_close_what_a_ctrl_c_has_closed_already():
    """Ctrl-C: the driver gets SIGINT and exits; closing the page's context and the browser
    afterwards is no error (as the fixtures' teardown does it)."""
    from playwright.sync_api import sync_playwright

    before = child_processes()
    with sync_playwright() as playwright:
        driver = child_processes() - before
        assert driver
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=ARGS)
        context = chromium.new_context()
        context.new_page()
        for pid in driver:
            os.kill(pid, signal.SIGINT)
        deadline = time.monotonic() + 10
        while any(running(pid) for pid in driver) and time.monotonic() < deadline:
            time.sleep(0.05)
        close(context)
        close(chromium)


def test_search_facet_transcript_tool_call_lineage(server, page, screenshots):
    page.goto(server + "/-/obelisk")
    page.fill("input[name=q]", WORD)
    page.click("button[type=submit]")
    page.wait_for_selector(".ob-result")
    assert page.locator("mark").first.inner_text().lower().startswith(WORD.lower())
    # the facets are beside the results, on their right, and come after them for the keyboard too
    result, facets = page.locator(".ob-result").first.bounding_box(), page.locator(".ob-facets").bounding_box()
    assert facets["x"] > result["x"] + result["width"] - 1 and facets["y"] < result["y"] + result["height"]
    assert page.evaluate("""() => !!(document.querySelector('.ob-result a').compareDocumentPosition(
        document.querySelector('.ob-facets a')) & Node.DOCUMENT_POSITION_FOLLOWING)""")
    assert page.locator(".ob-to-facets").bounding_box()["width"] <= 1  # shown only to the keyboard
    page.focus(".ob-to-facets a")
    assert page.locator(".ob-to-facets").bounding_box()["width"] > 100
    page.screenshot(path=str(screenshots / "search.png"))

    page.click("a[data-facet=source] >> text=claude")
    page.wait_for_selector(".ob-chip")
    assert "source=claude" in page.url
    assert "Source: claude" in page.locator(".ob-chips").inner_text()

    page.click(".ob-result h3 a >> nth=0")
    page.wait_for_selector(".ob-transcript")
    assert "/-/obelisk/session/" in page.url
    tool = page.locator("details.ob-tool").first
    assert tool.get_attribute("open") is None
    tool.locator("summary").click()
    assert tool.get_attribute("open") is not None
    assert tool.locator("pre.ob-pre").first.is_visible()
    page.screenshot(path=str(screenshots / "transcript.png"), full_page=False)

    page.click(".ob-toolbar >> text=Lineage")
    page.wait_for_selector(".ob-tree")
    assert page.url.endswith("/lineage")
    assert page.locator(".ob-tree li.current").count() == 1
    page.screenshot(path=str(screenshots / "lineage.png"), full_page=True)
    assert page.js_errors == []


def test_an_emoji_is_searched_and_marked_as_written(server, page):
    page.goto(server + "/-/obelisk")
    page.fill("input[name=q]", "✅")
    page.click("button[type=submit]")
    page.wait_for_selector(".ob-result")
    marks = page.locator(".ob-result mark").all_inner_texts()
    assert marks and set(marks) == {"✅"}
    assert "\ufffe" not in page.locator("main").inner_text()
    assert page.js_errors == []


def test_payloads_in_a_transcript_stay_text(server, page):
    page.goto(f"{server}/-/obelisk/session/{XSS_SESSION}")
    page.wait_for_selector(".ob-transcript")
    page.locator("details.ob-tool summary").first.click()
    assert page.evaluate("window.__pwned") is None
    text = page.locator(".ob-transcript").inner_text()
    assert "<script>window.__pwned = 1</script>" in text
    assert '<img src=x onerror="window.__pwned = 2">' in text
    assert page.locator(".ob-transcript script, .ob-transcript img").count() == 0
    page.goto(f"{server}/-/obelisk?q=pwned")
    page.wait_for_selector(".ob-result")
    assert page.evaluate("window.__pwned") is None
    assert page.locator(".ob-results script, .ob-results img").count() == 0


def test_overview_draws_charts(server, page, screenshots):
    page.goto(server + "/-/obelisk/overview")
    assert page.locator("svg.chart").count() == 3
    assert page.locator("svg.chart rect").count() > 5
    page.screenshot(path=str(screenshots / "overview.png"), full_page=True)
    assert page.js_errors == []


def test_pages_work_without_javascript(server, browser):
    context = browser.new_context(java_script_enabled=False)
    page = context.new_page()
    page.goto(f"{server}/-/obelisk?q={WORD}")
    page.click("a[data-facet=source] >> nth=0")
    assert "source=" in page.url and page.locator(".ob-result").count() > 0
    page.goto(f"{server}/-/obelisk/session/{XSS_SESSION}")
    page.locator("details.ob-tool summary").first.click()  # <details> needs no script
    assert page.locator("details.ob-tool").first.get_attribute("open") is not None
    context.close()


def test_a_refused_query_is_corrected_in_place(server, page):
    response = page.goto(server + "/-/obelisk?q=AND+(&mode=raw")
    assert response.status == 400 and "SESSION_QUERY_INVALID_QUERY" in page.locator(".ob-error").inner_text()
    assert page.input_value("input[name=q]") == "AND ("
    page.fill("input[name=q]", WORD)
    page.check("input[name=mode][value=terms]")
    page.click("button[type=submit]")
    page.wait_for_selector(".ob-result")
    assert page.locator("mark").first.inner_text().lower().startswith(WORD.lower())
    assert page.js_errors == []


PHONE_PAGES = [
    f"/-/obelisk?q={WORD}",
    "/-/obelisk/session/ef958aa1-0e93-49f0-bb71-150f63befcd1",
    "/-/obelisk/overview",
    "/-/obelisk/files",
    "/-/obelisk/failures",
    # an agent's chain of long paths
    "/-/obelisk/event/fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-f4ab2bf6d642/20",
    # a session's children and its lineage, titled by their prompts
    "/-/obelisk/session/fe5e1c67-53e7-4862-81ae-d0e013e3270b",
    "/-/obelisk/session/fe5e1c67-53e7-4862-81ae-d0e013e3270b/lineage",
    # stored queries the pages link, whose SQL has lines thousands of characters long
    "/obelisk/obelisk_sessions",
    "/obelisk/obelisk_failures",
    "/obelisk/obelisk_memories",
]


def test_back_from_a_result_returns_to_where_the_reader_was(server, page):
    page.goto(f"{server}/-/obelisk?q=the")
    page.wait_for_selector(".ob-result")
    page.evaluate("window.scrollTo(0, 700)")
    scrolled = page.evaluate("window.scrollY")
    assert scrolled > 0
    link = next(a for a in page.locator(".ob-result h3 a").all() if a.bounding_box()["y"] > 0)
    link.click()
    page.wait_for_selector(".ob-transcript")
    page.go_back()
    page.wait_for_selector(".ob-result")
    page.wait_for_timeout(200)
    assert page.evaluate("window.scrollY") == scrolled
    assert page.evaluate("document.activeElement.name") != "q"
    page.goto(f"{server}/-/obelisk")  # no query yet: the box takes the focus
    assert page.evaluate("document.activeElement.name") == "q"


def test_pages_fit_a_phone_screen(server, browser, web_db, screenshots):
    """At 390 px nothing makes the page scroll sideways (wide tables and
    charts scroll in their own box), and search results come before facets."""
    import sqlite3

    conn = sqlite3.connect(web_db)
    longest = conn.execute(  # the session with the longest unbroken tool input, whatever the corpus holds
        "SELECT session_id FROM tool_calls ORDER BY length(input_json) DESC LIMIT 1").fetchone()[0]
    conn.close()
    context = browser.new_context(viewport={"width": 390, "height": 844})
    page = context.new_page()
    for path in [*PHONE_PAGES, f"/-/obelisk/session/{longest}"]:
        response = page.goto(server + path)
        assert response.status == 200, path
        width = page.evaluate("document.documentElement.scrollWidth")
        assert width <= 390, (path, width)
    # A file's history on a phone: each tool's name stays on one line, as does the page.
    response = page.goto(f"{server}/-/obelisk/files?path=/path/to/Demo/todo-app/src/app/page.tsx")
    assert response.status == 200 and page.evaluate("document.documentElement.scrollWidth") <= 390
    lines = page.evaluate("""[...document.querySelectorAll('table.ob-table tbody td:nth-child(2)')].map(td => {
        const range = document.createRange(); range.selectNodeContents(td); return [td.textContent, range.getClientRects().length];
    })""")
    assert sorted(set(map(tuple, lines))) == [("Edit", 1), ("Read", 1)], lines
    page.goto(f"{server}/-/obelisk?q={WORD}")
    first_result = page.locator(".ob-result").first.bounding_box()["y"]
    facets = page.locator(".ob-facets").bounding_box()["y"]
    assert first_result < facets
    page.click(".ob-to-facets a")  # a link above the results reaches them
    assert page.evaluate("window.scrollY") > 0 and page.url.endswith("#facets")
    page.screenshot(path=str(screenshots / "search-phone.png"))
    context.close()


LONG_BRANCH = "feature/PLAT-4821-migrate-billing-ledger-to-postgres-and-back-again"
OVERRIDE_BRANCH = "feat\u202e"  # a right-to-left override, never closed
LONG_PATH = "src/app/migrations/0007_add_schedule_index_to_the_billing_ledger_and_backfill_it.py"
RTL_SESSION = "33333333-cccc-4000-8000-000000000003"
RTL_TEXT = "مرحبا بالعالم!\nשלום (גרסה 2)."
RTL_FAILURE = "44444444-dddd-4000-8000-000000000004"


@pytest.fixture(scope="module")
def hostile_server(tmp_path_factory):
    """Two sessions whose branch names try to widen the page and to reverse the text after them."""
    from datasette_obelisk.store.ingest import ingest

    root = tmp_path_factory.mktemp("hostile")
    project = root / "claude" / "projects" / ("-home-alice-work-acme-platform-services-billing-api-v2-" * 2)
    project.mkdir(parents=True)
    for session, branch in (("11111111-aaaa-4000-8000-000000000001", LONG_BRANCH),
                            ("22222222-bbbb-4000-8000-000000000002", OVERRIDE_BRANCH)):
        line = {"type": "user", "uuid": f"{session[:8]}-u1", "parentUuid": None, "sessionId": session,
                "timestamp": "2026-03-02T01:00:00.000Z", "cwd": "/w", "gitBranch": branch,
                "message": {"role": "user", "content": "quokka census"}}
        (project / f"{session}.jsonl").write_text(json.dumps(line) + "\n")
    # a prompt in right-to-left scripts, punctuation and brackets last
    line = {"type": "user", "uuid": "rtl-u1", "parentUuid": None, "sessionId": RTL_SESSION,
            "timestamp": "2026-03-02T02:00:00.000Z", "cwd": "/w", "message": {"role": "user", "content": RTL_TEXT}}
    (project / f"{RTL_SESSION}.jsonl").write_text(json.dumps(line) + "\n")
    # a failed call, answered in Arabic
    said = [("assistant", [{"type": "tool_use", "id": "toolu_rtl", "name": "Bash", "input": {"command": "false"}}]),
            ("user", [{"type": "tool_result", "tool_use_id": "toolu_rtl", "content": "exit 1", "is_error": True}]),
            ("assistant", [{"type": "text", "text": RTL_TEXT.split("\n")[0]}])]
    lines = [{"type": kind, "uuid": f"rtl-f{n}", "parentUuid": f"rtl-f{n - 1}" if n else None, "sessionId": RTL_FAILURE,
              "timestamp": f"2026-03-02T03:00:0{n}.000Z", "cwd": "/w", "message": {"role": kind, "content": content}}
             for n, (kind, content) in enumerate(said)]
    (project / f"{RTL_FAILURE}.jsonl").write_text("".join(json.dumps(line) + "\n" for line in lines))
    # an agent of the first session, titled by a path that has nowhere to break
    agents = project / "11111111-aaaa-4000-8000-000000000001" / "subagents"
    agents.mkdir(parents=True)
    line = {"type": "user", "uuid": "a1", "parentUuid": None, "isSidechain": True, "agentId": "a1b2c3",
            "sessionId": "11111111-aaaa-4000-8000-000000000001", "timestamp": "2026-03-02T01:00:01.000Z",
            "cwd": "/w", "message": {"role": "user", "content": LONG_PATH}}
    (agents / "agent-a1b2c3.jsonl").write_text(json.dumps(line) + "\n")
    db = root / "obelisk.db"
    ingest(db, {"claude": root / "claude"})
    with serving(db) as url:
        yield url


def test_log_text_neither_widens_nor_reorders_the_page(hostile_server, browser):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.goto(f"{hostile_server}/-/obelisk?q=quokka")
    branch = page.locator(f"a[data-facet=branch][title='{LONG_BRANCH}']")
    branch.click()
    page.wait_for_selector(".ob-chip")
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    assert page.locator("a[data-facet=branch]").count() == 2  # the other branch is still there to add
    # Cut short with an ellipsis, a facet value is shown whole when the keyboard reaches it.
    page.goto(f"{hostile_server}/-/obelisk?q=quokka")
    facet = page.locator(f"a[data-facet=branch][title='{LONG_BRANCH}']")
    height = facet.bounding_box()["height"]
    for _ in range(200):
        if facet.evaluate("e => e === document.activeElement"):
            break
        page.keyboard.press("Tab")
    assert facet.evaluate("e => e.matches(':focus-visible')")
    assert facet.bounding_box()["height"] > 1.5 * height
    assert page.evaluate("document.documentElement.scrollWidth") <= 375
    # Nor does an agent's title in its parent's list of children and in the lineage tree.
    for path in ("", "/lineage"):
        page.goto(f"{hostile_server}/-/obelisk/session/11111111-aaaa-4000-8000-000000000001{path}")
        assert LONG_PATH in page.locator(".ob-child, .ob-tree").first.inner_text()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
    # Nor does a long filter chip, or an error quoting a long value (no call has that tool).
    for path in (f"/-/obelisk?q=quokka&branch={LONG_BRANCH}",
                 "/-/obelisk?q=quokka&tool=mcp__plugin_github_github__create_pull_request_review_comment",
                 f"/-/obelisk?q=quokka&source={'X' * 300}", f"/-/obelisk/session/{'X' * 300}"):
        page.goto(f"{hostile_server}{path}")
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
    # The override stays inside its own span: the date after it is still drawn after it.
    page.goto(f"{hostile_server}/-/obelisk?q=quokka&branch={OVERRIDE_BRANCH}")
    meta = page.locator(".ob-result .ob-meta").first
    boxes = [meta.locator("span").nth(n).bounding_box()["x"] for n in range(meta.locator("span").count())]
    assert boxes == sorted(boxes)
    assert page.locator(".ob-result .ob-meta span >> nth=2").evaluate("e => getComputedStyle(e).unicodeBidi") == "isolate"
    # A fragment that is no percent-encoding breaks nothing; a new #tool- fragment opens its call.
    page.goto(f"{hostile_server}/-/obelisk/session/11111111-aaaa-4000-8000-000000000001#%")
    assert errors == []
    context.close()


def test_a_narrow_overview_keeps_project_names_readable_and_only_folds_get_a_toggle(server, browser):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    page.goto(f"{server}/-/obelisk/overview")
    widths = page.locator("table.ob-table td:first-child").evaluate_all("cells => cells.map(c => c.offsetWidth)")
    assert widths and min(widths) >= 9 * 16  # (it used to shrink to a few characters, broken anywhere)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375  # the tables scroll in their boxes
    page.goto(f"{server}/-/obelisk/session/dag_compact_after_rewind_preserved")  # no tool calls
    assert page.locator(".ob-tool").count() == 0 and page.locator("[data-ob-toggle-all]:visible").count() == 0
    page.goto(f"{server}/-/obelisk/session/{XSS_SESSION}")
    assert page.locator(".ob-tool").count() > 0 and page.locator("[data-ob-toggle-all]:visible").count() == 2
    context.close()


def test_overview_charts_keep_readable_labels_on_a_phone(server, browser):
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    page.goto(f"{server}/-/obelisk/overview")
    charts = page.locator("svg.chart")
    assert charts.count() == 3
    heights = charts.evaluate_all("charts => charts.map(c => c.getBoundingClientRect().height)")
    assert heights[:2] == [220, 220] and heights[2] > 300  # (drawn at their own size: two of days, one of tools)
    labels = page.locator("svg.chart text.tick").evaluate_all("labels => labels.map(t => t.getBoundingClientRect().height)")
    assert labels and min(labels) >= 11  # (they were 9 px: an 11-unit font drawn at 544 of 760 units)
    assert page.evaluate("document.documentElement.scrollWidth") <= 375  # each chart scrolls in its box
    assert page.locator(".ob-scroll:has(svg.chart)").evaluate_all("boxes => boxes.every(b => b.scrollWidth > b.clientWidth)")
    context.close()


def test_a_message_in_a_right_to_left_script_reads_right_to_left(hostile_server, page):
    """Each line of a message takes the direction of its own script: the "!" that ends an Arabic
    line and the "." that ends a Hebrew one are drawn at its left end, left of its first letter."""
    page.goto(f"{hostile_server}/-/obelisk/session/{RTL_SESSION}")
    lines = page.locator("#m1 .ob-text").evaluate("""text => {
        const node = text.firstChild, range = document.createRange();
        const x = (i) => { range.setStart(node, i); range.setEnd(node, i + 1); return range.getBoundingClientRect().left; };
        return node.textContent.split("\\n").map((line, n, all) => {
            const start = all.slice(0, n).reduce((sum, l) => sum + l.length + 1, 0);
            return {first: x(start), last: x(start + line.length - 1)};
        });
    }""")
    assert len(lines) == 2
    for line in lines:
        assert line["last"] < line["first"], lines
    # (the page around it keeps its own direction)
    assert page.locator("#m1 .ob-entry-head").evaluate("e => getComputedStyle(e).direction") == "ltr"


def test_a_match_in_a_right_to_left_snippet_keeps_its_place_in_the_phrase(hostile_server, page):
    """Searched for, the first word of the Arabic line is marked where an Arabic reader starts:
    right of the word after it (it was drawn on the left, the phrase read backwards), and the
    snippet ends at its left end, with the "!" that closes the line. So does a reply to a failed call."""
    page.goto(f"{hostile_server}/-/obelisk?q=مرحبا")
    hit = page.locator(".ob-snippets li").first
    assert hit.locator("mark").inner_text() == "مرحبا"
    places = hit.evaluate("""li => {
        const mark = li.querySelector("mark"), after = mark.nextSibling, range = document.createRange();
        const box = (i) => { range.setStart(after, i); range.setEnd(after, i + 1); return range.getBoundingClientRect(); };
        const bang = after.textContent.indexOf("!");
        return {mark: mark.getBoundingClientRect().left, next_word: box(1).left, bang: box(bang).left};
    }""")
    assert places["next_word"] < places["mark"], places
    assert places["bang"] < places["next_word"], places
    # What the failures page shows after a failed call reads in its own direction too.
    page.goto(f"{hostile_server}/-/obelisk/failures")
    reply = page.locator(".ob-snippets li").filter(has_text="مرحبا")
    ends = reply.evaluate("""li => {
        const text = [...li.querySelectorAll("*")].flatMap(e => [...e.childNodes]).concat([...li.childNodes])
            .find(node => node.nodeType === Node.TEXT_NODE && node.textContent.includes("!"));
        const range = document.createRange();
        const x = (i) => { range.setStart(text, i); range.setEnd(text, i + 1); return range.getBoundingClientRect().left; };
        return {first: x(0), bang: x(text.textContent.indexOf("!"))};
    }""")
    assert ends["bang"] < ends["first"], ends


def test_titles_fragments_and_chosen_facets(hostile_server, page):
    # A direction override in log text (here in the query) does not turn the page's <title> around.
    page.goto(f"{hostile_server}/-/obelisk?q=quokka\u202ecensus")
    assert page.title() == "quokkacensus · Search · Obelisk"
    # A chosen facet value says so to assistive technology.
    page.goto(f"{hostile_server}/-/obelisk?q=quokka&branch={OVERRIDE_BRANCH}#facets")
    chosen = page.locator("a[data-facet=branch][aria-current=true]")
    assert chosen.count() == 1 and chosen.get_attribute("title") == OVERRIDE_BRANCH
    # A fragment naming a part of the page (the facets) is no message to outline.
    assert page.locator("#facets").get_attribute("class") == "ob-facets"
    # #m0 names no message: no page starting at it is asked for.
    page.goto(f"{hostile_server}/-/obelisk/session/22222222-bbbb-4000-8000-000000000002#m0")
    page.wait_for_timeout(300)
    assert "start=" not in page.url and page.locator("h1").count() == 1
    assert page.js_errors == []


def test_the_failures_source_menu_submits_when_it_changes(server, page):
    page.goto(f"{server}/-/obelisk/failures")
    with page.expect_navigation():
        page.select_option("select[name=source]", "claude")
    assert "source=claude" in page.url and page.locator(".ob-result").count() > 0
    # From the keyboard, the arrow keys go through the values; the Filter button applies one.
    page.goto(f"{server}/-/obelisk/failures")
    page.focus("select[name=source]")
    page.keyboard.press("ArrowDown")
    page.keyboard.press("ArrowDown")
    page.wait_for_timeout(300)
    assert page.url == f"{server}/-/obelisk/failures" and page.evaluate("document.activeElement.name") == "source"
    chosen = page.input_value("select[name=source]")
    assert chosen not in ("", "claude")
    with page.expect_navigation():
        page.click("button[type=submit]")
    assert f"source={chosen}" in page.url
    assert page.js_errors == []


CONTRAST = """element => {
    const rgba = color => color.match(/[\\d.]+/g).map(Number);
    const luminance = ([r, g, b]) => [r, g, b].map(v => v / 255)
        .map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4)
        .reduce((sum, v, i) => sum + v * [0.2126, 0.7152, 0.0722][i], 0);
    let back = element;
    while (back && (rgba(getComputedStyle(back).backgroundColor)[3] ?? 1) === 0) back = back.parentElement;
    const [a, b] = [getComputedStyle(element).color, back ? getComputedStyle(back).backgroundColor : "rgb(255,255,255)"]
        .map(color => luminance(rgba(color)));
    return (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05);
}"""


def test_compacted_entries_and_focused_links_stay_readable(server, page):
    page.goto(f"{server}/-/obelisk/session/codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9")
    compacted = page.locator(".ob-entry.surface-shadowed")
    assert compacted.count() > 10
    for n in range(5):
        entry = compacted.nth(n)
        assert entry.evaluate("e => getComputedStyle(e).opacity") == "1"
        for part in (entry.locator(".ob-entry-head span").first, entry.locator(".ob-entry-head a").first):
            assert part.evaluate(CONTRAST) >= 4.5
    page.goto(f"{server}/-/obelisk?q={WORD}")
    link = page.locator(".ob-result h3 a").first
    link.focus()
    assert link.evaluate(CONTRAST) >= 4.5  # Datasette's own focus colour gives about 2:1


def test_warning_outcomes_stay_readable_on_every_entry(server, page):
    checked = 0
    for path in ("/-/obelisk/event/2b4ed4c0-b905-41de-9238-273db3ec737a/11",
                 "/-/obelisk/session/small:agent-sidechain-sys1?shadowed=1"):
        page.goto(f"{server}{path}")
        badges = page.locator(".ob-outcome.blocked, .ob-outcome.cancelled, .ob-outcome.pending")
        for n in range(badges.count()):
            assert badges.nth(n).evaluate(CONTRAST) >= 4.5, path
            checked += 1
    assert checked >= 2


def test_back_to_a_search_shows_the_form_of_its_results(server, page):
    page.goto(f"{server}/-/obelisk?q={WORD}")
    page.fill("input[name=q]", "typed but never searched")
    page.check("input[name=mode][value=phrase]")
    page.click(".ob-result h3 a >> nth=0")
    page.wait_for_selector(".ob-transcript")
    page.go_back()
    page.wait_for_selector(".ob-result")
    assert page.input_value("input[name=q]") == WORD
    assert page.is_checked("input[name=mode][value=terms]")
    assert page.js_errors == []


def test_what_is_typed_before_the_page_has_loaded_stays_in_the_box(server, page):
    """The box has the focus at once; a query typed while the page still loads (a slow network
    holds its script) is still there once it has loaded; a reload (as a way back) shows the form
    of the results again."""
    held = []
    page.route("**/obelisk.js*", lambda route: held.append(route))  # (its pageshow comes once it has run)
    page.goto(f"{server}/-/obelisk", wait_until="commit")
    page.wait_for_selector("input[name=q]", state="attached")
    page.focus("input[name=q]")
    page.keyboard.type("flaky test")
    assert page.evaluate("document.readyState") != "complete" and held
    for route in held:
        route.continue_()
    page.unroute("**/obelisk.js*")
    page.wait_for_load_state("load")
    page.wait_for_timeout(200)
    assert page.input_value("input[name=q]") == "flaky test"
    page.goto(f"{server}/-/obelisk?q={WORD}")
    page.fill("input[name=q]", "typed but never searched")
    page.reload()
    page.wait_for_selector(".ob-result")
    assert page.input_value("input[name=q]") == WORD
    assert page.js_errors == []


def test_a_link_to_a_tool_call_on_the_same_page_opens_it(server, page):
    page.goto(f"{server}/-/obelisk/session/{XSS_SESSION}")
    tool = page.locator("details.ob-tool").first
    assert tool.get_attribute("open") is None
    page.evaluate("id => { location.hash = id }", tool.get_attribute("id"))
    page.wait_for_function("() => document.querySelector('details.ob-tool').open")
    assert page.js_errors == []


def test_a_link_to_a_message_on_a_later_page_lands_on_it(server, page):
    session = "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9"  # more lines than a page holds
    page.goto(f"{server}/-/obelisk/session/{session}#m700")
    page.wait_for_url("**start=700#m700")
    assert page.locator("#m700").count() == 1
    assert page.js_errors == []


def test_a_transcript_s_page_links_are_a_pages_landmark_above_and_below(server, page):
    session = "codex:019c8a59-e9dd-71f0-9ae3-4079fe9726a9"  # 1,569 lines: a page in the middle
    page.goto(f"{server}/-/obelisk/session/{session}?start=700")
    pagers = page.get_by_role("navigation", name="Pages")
    assert pagers.count() == 2
    back = pagers.nth(0).get_by_role("link").all_inner_texts()
    assert back[0] == "« From the start" and re.fullmatch(r"‹ Previous \(from #\d+\)", back[1]) and len(back) == 2
    [onward] = pagers.nth(1).get_by_role("link").all_inner_texts()
    assert onward.startswith("Continue from #")
    pagers.nth(1).get_by_role("link").click()
    page.wait_for_url(f"**start={onward.split('#')[1].split()[0]}")
    assert page.get_by_role("navigation", name="Pages").count() >= 1
    assert page.js_errors == []


def folded_output(web_db, later_page: bool) -> tuple[str, int, str, int]:
    """A tool output shown inside its call's entry (no entry of its own): session, output seq,
    call id and call seq; with ``later_page``, one whose call is past the first page."""
    import sqlite3

    from datasette_obelisk.web.pages import TRANSCRIPT_PAGE

    conn = sqlite3.connect(web_db)
    try:
        return conn.execute(
            "SELECT r.session_id, rm.seq, c.id, cm.seq FROM tool_results r "
            "JOIN tool_calls c ON c.id = r.tool_use_id "
            "JOIN messages rm ON rm.uuid = r.message_uuid AND rm.session_id = r.session_id "
            "JOIN messages cm ON cm.uuid = c.message_uuid AND cm.session_id = c.session_id "
            "WHERE rm.seq > cm.seq AND rm.visibility = 'visible' AND cm.visibility = 'visible' "
            "AND cm.is_meta = 0 AND cm.surface != 'log-only' "
            "AND (SELECT COUNT(*) FROM tool_results o WHERE o.message_uuid = r.message_uuid) = 1 "
            "AND (SELECT COUNT(*) FROM messages b WHERE b.session_id = cm.session_id AND b.seq < cm.seq) "
            + (">= ?" if later_page else "< ?") + " ORDER BY r.session_id, rm.seq LIMIT 1",
            [TRANSCRIPT_PAGE],
        ).fetchone()
    finally:
        conn.close()


def test_a_link_to_a_tool_output_shown_with_its_call_opens_the_call(server, page, web_db):
    session, seq, call, _ = folded_output(web_db, later_page=False)
    page.goto(f"{server}/-/obelisk/session/{quote(session, safe=':')}#m{seq}")
    details = page.locator(f"details.ob-tool[id='tool-{call}']")
    details.wait_for()
    page.wait_for_function("id => document.getElementById(id).open", arg=f"tool-{call}")
    assert "start=" not in page.url  # the page that shows it: not one that starts past its call
    assert page.js_errors == []


def test_a_link_to_a_tool_output_whose_call_is_on_an_earlier_page_offers_the_call(server, page, web_db):
    session, seq, call, call_seq = folded_output(web_db, later_page=True)
    page.goto(f"{server}/-/obelisk/session/{quote(session, safe=':')}?start={seq}")
    notice = page.locator(".ob-notice", has_text=f"#{seq} is the output of")
    notice.locator("a").click()
    page.wait_for_function("id => { const d = document.getElementById(id); return d && d.open }", arg=f"tool-{call}")
    assert page.locator(f"#m{call_seq}").count() == 1
    assert page.js_errors == []


def test_a_link_to_a_line_hidden_in_this_view_offers_to_show_it(server, page, web_db):
    import sqlite3

    conn = sqlite3.connect(web_db)
    session, seq = conn.execute(
        "SELECT session_id, seq FROM messages WHERE is_meta = 1 AND surface != 'log-only' AND seq > 1 "
        "AND is_compact_summary = 0 AND COALESCE(subtype, '') != 'compact_boundary' AND type != 'compacted' "
        "ORDER BY session_id, seq LIMIT 1").fetchone()
    conn.close()
    page.goto(f"{server}/-/obelisk/session/{session}#m{seq}")
    page.wait_for_url(f"**start={seq}#m{seq}")
    assert page.locator(f"#m{seq}").count() == 0
    notice = page.locator(".ob-notice", has_text=f"#{seq} is an injected line")
    notice.locator("a").click()
    page.wait_for_url(f"**meta=1#m{seq}")
    assert page.locator(f"#m{seq}").count() == 1 and "injected" in page.locator(f"#m{seq} .ob-entry-head").inner_text()
    assert page.js_errors == []


def test_a_link_to_a_line_on_a_rewound_branch_offers_to_show_it(server, page, web_db):
    # A hand-made link to a message a rewind abandoned, without the shadowed=1 the app's own
    # links carry: the page that starts with it says the view folds it, and shows it on request.
    import sqlite3

    conn = sqlite3.connect(web_db)
    session, seq = conn.execute(
        "SELECT session_id, seq FROM messages WHERE visibility = 'inactive' AND is_meta = 0 AND surface != 'log-only' "
        "ORDER BY session_id, seq DESC LIMIT 1").fetchone()
    conn.close()
    page.goto(f"{server}/-/obelisk/session/{session}#m{seq}")
    page.wait_for_url(f"**start={seq}#m{seq}")
    assert page.locator(f"#m{seq}").count() == 0
    notice = page.locator(".ob-notice", has_text=f"#{seq} is on a rewound branch")
    assert notice.is_visible()
    notice.locator("a").click()
    page.wait_for_url(f"**shadowed=1#m{seq}")
    message = page.locator(f"#m{seq}")
    assert message.is_visible() and "rewound" in message.locator(".ob-entry-head").inner_text()
    assert page.locator(".ob-target").get_attribute("id") == f"m{seq}"
    page.goto(f"{server}/-/obelisk/session/{session}?start={seq}&shadowed=1")  # shown: no notice
    assert page.locator(".ob-notice").count() == 0
    assert page.js_errors == []


def test_a_link_to_a_first_line_the_view_hides_offers_to_show_it(server, page, web_db):
    import sqlite3

    conn = sqlite3.connect(web_db)
    session = conn.execute("SELECT session_id FROM messages WHERE seq = 1 AND is_meta = 1 AND surface != 'log-only' "
                           "AND is_compact_summary = 0 ORDER BY session_id LIMIT 1").fetchone()[0]
    conn.close()
    page.goto(f"{server}/-/obelisk/session/{session}#m1")
    page.wait_for_url("**start=1#m1")
    assert page.locator(".ob-notice", has_text="#1 is an injected line").count() == 1
    page.goto(f"{server}/-/obelisk/session/{session}")  # no line asked for: no notice
    assert page.locator(".ob-notice").count() == 0


def test_a_page_starting_at_a_hidden_last_line_offers_to_show_it_or_go_back(server, page):
    session = "ef958aa1-0e93-49f0-bb71-150f63befcd1"  # 162 lines, the last one injected
    page.goto(f"{server}/-/obelisk/session/{session}?start=162")
    empty = page.locator(".ob-transcript > li.ob-empty")
    assert empty.inner_text().startswith("No line from #162 is shown in this view: #162 is an injected line")
    empty.get_by_role("link", name="Show injected lines").click()
    page.wait_for_url("**start=162&meta=1")
    assert page.locator("#m162").is_visible() and page.locator(".ob-transcript > li.ob-empty").count() == 0
    page.go_back()
    page.locator(".ob-transcript > li.ob-empty").get_by_role("link", name="go back to the lines before it").click()
    page.wait_for_url(f"**/session/{session}")
    assert page.locator("#m161").is_visible() and page.locator(".ob-transcript > li.ob-empty").count() == 0
    assert page.js_errors == []


def test_a_long_tool_name_stays_inside_its_chart(page):
    from datasette_obelisk.web.charts import horizontal_bars

    css = (Path(__file__).parent.parent / "datasette_obelisk" / "static" / "obelisk.css").read_text()
    names = ["W" * 60, "mcp__plugin_github_github__create_pull_request_review_comment", "Read"]
    chart = horizontal_bars("Tool calls by tool", [(name, 10 - i) for i, name in enumerate(names)])
    page.set_content(f"<style>{css}</style><div style='width: 760px'>{chart}</div>")
    lefts = page.evaluate("[...document.querySelectorAll('svg.chart text.tick[text-anchor=end]')].map(t => t.getBBox().x)")
    assert len(lefts) == 3 and min(lefts) >= 0, lefts
    assert page.evaluate("[...document.querySelectorAll('svg.chart g > title')].map(t => t.textContent)") == [
        f"{names[0]}: 10", f"{names[1]}: 9", "Read: 8"]


def test_a_facet_chosen_in_a_search_still_filters_once_the_box_is_cleared(server, page, web_db):
    """Clearing the box keeps the chosen facets (as chips): the recent sessions listed are
    those a branch, tool, model or role chosen admits, as the search counted them."""
    import sqlite3

    page.goto(f"{server}/-/obelisk?q=the")
    facet = page.locator("a[data-facet=branch]").first
    branch = facet.get_attribute("title")
    facet.click()
    page.wait_for_selector(".ob-chip")
    page.fill("input[name=q]", "")
    page.press("input[name=q]", "Enter")
    page.wait_for_selector("h2:has-text('Recent sessions')")
    assert page.locator(".ob-chips").inner_text() == f"Branch: {branch} ✕"
    listed = {unquote(a.split("/")[-1]) for a in page.eval_on_selector_all(
        ".ob-result h3 a", "links => links.map(a => a.getAttribute('href'))")}
    conn = sqlite3.connect(web_db)
    on_branch = {row[0] for row in conn.execute(
        "SELECT s.id FROM sessions s WHERE COALESCE(s.relationship, '') NOT IN ('subagent', 'workflow') AND EXISTS ("
        " SELECT 1 FROM messages m WHERE m.session_id = s.id AND m.is_meta = 0 AND m.visibility != 'hidden'"
        " AND COALESCE(NULLIF(m.git_branch, ''), s.git_branch) = ?)", [branch])}
    top_level = conn.execute("SELECT COUNT(*) FROM sessions WHERE COALESCE(relationship, '') "
                             "NOT IN ('subagent', 'workflow')").fetchone()[0]
    conn.close()
    assert listed and listed <= on_branch and len(listed) == min(len(on_branch), 15) < top_level
    assert page.js_errors == []


def test_a_link_to_a_tool_call_on_a_later_page_lands_on_it(server, page, web_db):
    import sqlite3

    from datasette_obelisk.web.pages import TRANSCRIPT_PAGE

    conn = sqlite3.connect(web_db)
    session, call = conn.execute(
        "SELECT c.session_id, c.id FROM tool_calls c "
        "JOIN messages cm ON cm.uuid = c.message_uuid AND cm.session_id = c.session_id "
        "WHERE cm.visibility = 'visible' AND cm.is_meta = 0 AND cm.surface != 'log-only' "
        "AND (SELECT COUNT(*) FROM messages b WHERE b.session_id = cm.session_id AND b.seq < cm.seq) >= ? "
        "ORDER BY c.session_id, cm.seq LIMIT 1", [TRANSCRIPT_PAGE]).fetchone()
    conn.close()
    anchor = f"tool-{call}"
    page.goto(f"{server}/-/obelisk/session/{quote(session, safe=':')}#{quote(anchor, safe='')}")
    page.wait_for_function("id => { const d = document.getElementById(id); return d && d.open }", arg=anchor)
    assert page.locator(".ob-target").get_attribute("id") == anchor
    # named by ?call= alone (no fragment): the same call, opened, in view, and the address says so
    page.goto(f"{server}/-/obelisk/session/{quote(session, safe=':')}?call={quote(call, safe='')}")
    page.wait_for_function("id => { const d = document.getElementById(id); return d && d.open }", arg=anchor)
    assert page.locator(".ob-target").get_attribute("id") == anchor
    assert unquote(urlsplit(page.url).fragment) == anchor
    assert page.evaluate("id => { const r = document.getElementById(id).getBoundingClientRect();"
                         " return r.top < innerHeight && r.bottom > 0 }", anchor)
    assert page.js_errors == []


def test_recent_sessions_page_through_every_session_the_filters_choose(server, page, web_db):
    # The sessions listed before a query, page after page, are those the filters choose: every
    # model, role and tool as well as two sources, and a day taking a session active on it
    # that started the day before (no link may list others under these filters' name).
    import sqlite3

    from datasette_obelisk.query.obelisk import TOP_LEVEL

    conn = sqlite3.connect(web_db)
    model = conn.execute("SELECT model FROM messages WHERE model IS NOT NULL AND is_meta = 0 GROUP BY model "
                         "ORDER BY COUNT(DISTINCT session_id) DESC LIMIT 1").fetchone()[0]
    spanning, day = conn.execute(
        f"SELECT s.id, substr(s.ended_at, 1, 10) FROM sessions s WHERE {TOP_LEVEL} AND s.source IN ('claude', 'codex') "
        "AND substr(s.started_at, 1, 10) < substr(s.ended_at, 1, 10) ORDER BY s.id LIMIT 1").fetchone()
    cases = {
        f"model={quote(model)}": (
            f"SELECT s.id FROM sessions s WHERE {TOP_LEVEL} AND EXISTS (SELECT 1 FROM messages m WHERE "
            "m.session_id = s.id AND m.model = ? AND m.is_meta = 0 AND m.visibility != 'hidden')", [model]),
        "source=claude&source=codex": (f"SELECT s.id FROM sessions s WHERE {TOP_LEVEL} AND s.source IN ('claude', 'codex')", []),
        f"source=claude&source=codex&from={day}&to={day}": (
            f"SELECT s.id FROM sessions s WHERE {TOP_LEVEL} AND s.source IN ('claude', 'codex') "
            "AND (s.ended_at IS NULL OR s.ended_at >= ?) AND (s.started_at IS NULL OR s.started_at <= ?)",
            [f"{day}T00:00:00", f"{day}T23:59:59.999Z"]),
    }
    expected = {qs: {row[0] for row in conn.execute(sql, params)} for qs, (sql, params) in cases.items()}
    conn.close()
    assert len(expected["source=claude&source=codex"]) > 15 and spanning in expected[f"source=claude&source=codex&from={day}&to={day}"]
    for qs, wanted in expected.items():
        page.goto(f"{server}/-/obelisk?{qs}")
        chips = page.locator(".ob-chips").inner_text()
        listed: list[str] = []
        while True:
            assert page.locator(".ob-chips").inner_text() == chips  # the filters stay chosen
            listed += [unquote(href.rsplit("/", 1)[1]) for href in
                       page.locator(".ob-results h3 a").evaluate_all("els => els.map(e => e.getAttribute('href'))")]
            following = page.locator("a[rel=next]")
            if not following.count():
                break
            following.focus()
            page.keyboard.press("Enter")
            page.wait_for_load_state()
        assert len(listed) == len(set(listed)) and set(listed) == wanted, qs
        assert not page.locator("a[href*=obelisk_sessions]").count(), qs  # it lists what it lists whatever they are
    assert page.js_errors == []


def test_an_empty_table_quoting_a_long_path_or_query_fits_a_phone_screen(server, browser):
    # The row saying nothing matched quotes what was asked for: on a phone it wraps
    # instead of widening its table past the screen (to be read by scrolling sideways).
    asked = "/home/dev/projects/nimbus-deploy/services/api/internal/store/no_such_repository_test.go.bak"
    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    for path in (f"/-/obelisk/files?contains={quote(asked)}", f"/-/obelisk/memories?q={quote(asked)}"):
        assert page.goto(server + path).status == 200
        empty = page.locator("table.ob-table td.ob-empty")
        assert asked in empty.inner_text(), path
        box, table = page.locator(".ob-scroll").first.bounding_box(), page.locator("table.ob-table").bounding_box()
        assert table["width"] <= box["width"] + 1, (path, table["width"], box["width"])
    context.close()


def test_an_agents_transcript_links_the_call_that_started_it(server, page, web_db):
    import sqlite3

    conn = sqlite3.connect(web_db)
    child, parent, call = conn.execute(
        "SELECT sa.child_session_id, sa.session_id, sa.parent_tool_use_id FROM subagents sa "
        "JOIN sessions c ON c.id = sa.child_session_id AND c.parent_session_id = sa.session_id "
        "JOIN tool_calls tc ON tc.id = sa.parent_tool_use_id ORDER BY sa.child_session_id LIMIT 1").fetchone()
    conn.close()
    page.goto(f"{server}/-/obelisk/session/{quote(child, safe='')}")
    page.click("text=the call that started it")
    anchor = f"tool-{call}"
    page.wait_for_function("id => { const d = document.getElementById(id); return d && d.open }", arg=anchor)
    assert unquote(page.url.split("#")[0].split("?")[0].rsplit("/", 1)[1]) == parent
    assert page.locator(".ob-target").get_attribute("id") == anchor
    assert page.js_errors == []


def test_the_reader_chooses_how_many_sessions_a_page_lists_before_a_query(server, page, web_db):
    # The pager under the sessions listed before a query offers page sizes; the one chosen
    # (offered, or any ``limit`` from 1 to 1,000) is kept page after page, and every session
    # is listed once.
    import sqlite3

    from datasette_obelisk.query.obelisk import TOP_LEVEL

    conn = sqlite3.connect(web_db)
    every = {row[0] for row in conn.execute(f"SELECT s.id FROM sessions s WHERE {TOP_LEVEL}")}
    conn.close()
    assert 15 < len(every) <= 50

    def shown() -> list[str]:
        hrefs = page.locator(".ob-results h3 a").evaluate_all("els => els.map(e => e.getAttribute('href'))")
        return [unquote(href.rsplit("/", 1)[1]) for href in hrefs]

    page.goto(f"{server}/-/obelisk")
    assert len(shown()) == 15
    size = page.locator(".ob-page-size")
    assert size.is_visible() and size.locator("[aria-current]").inner_text() == "15"
    with page.expect_navigation():
        size.get_by_role("link", name="50", exact=True).click()
    assert "limit=50" in page.url and size.locator("[aria-current]").inner_text() == "50"
    assert set(shown()) == every and not page.locator("a[rel=next]").count()  # all on one page

    page.goto(f"{server}/-/obelisk?limit=6")
    listed: list[str] = []
    while True:
        found = shown()
        listed += found
        following = page.locator("a[rel=next]")
        if not following.count():
            assert 1 <= len(found) <= 6
            break
        assert len(found) == 6
        following.focus()
        with page.expect_navigation():
            page.keyboard.press("Enter")
        assert "limit=6" in page.url  # the size chosen stays chosen
    assert len(listed) == len(set(listed)) and set(listed) == every
    assert page.js_errors == []


def test_terminal_colours_in_a_command_s_output_are_left_out_of_the_page(server, page):
    # npx create-next-app in the shared corpus drew its prompt with colours, a hidden cursor and
    # erased lines: the page shows the words, not ESC boxes and "[36m" around them.
    call = "toolu_01FNh88T7ThJ4yVfQ9rPVT23"
    page.goto(f"{server}/-/obelisk/session/fe5e1c67-53e7-4862-81ae-d0e013e3270b:agent-sidechain-60dade7020bb#tool-{call}")
    page.wait_for_function("id => document.getElementById(id).open", arg=f"tool-{call}")
    output = page.locator(f"details.ob-tool[id='tool-{call}'] pre.ob-pre").nth(1).inner_text()
    assert "? Would you like your code inside a `src/` directory? › No / Yes" in output
    assert "\x1b" not in output and "[39m" not in output and "[?25l" not in output
    assert "\x1b" not in page.content()  # nor in the prompt's agent transcript anywhere else
    assert page.js_errors == []


# (not the search page before a query, whose box has the focus as it opens)
@pytest.mark.parametrize("path", [f"/-/obelisk/session/{XSS_SESSION}", f"/-/obelisk?q={WORD}", "/-/obelisk/overview"])
def test_the_first_tab_stop_skips_the_menus_to_the_content(server, page, path):
    page.goto(server + path)
    skip = page.locator("a.ob-skip")
    assert skip.inner_text() == "Skip to content" and skip.bounding_box()["width"] <= 1  # shown only to the keyboard
    page.keyboard.press("Tab")
    assert page.evaluate("document.activeElement.className") == "ob-skip"
    assert skip.bounding_box()["width"] > 50 and skip.is_visible()
    # readable as it shows: the accent colour on white, not the near-white of Datasette's header links
    assert skip.evaluate("e => [getComputedStyle(e).color, getComputedStyle(e).backgroundColor]") == [
        "rgb(47, 111, 176)", "rgb(255, 255, 255)"]
    page.keyboard.press("Enter")
    assert page.evaluate("document.activeElement.id") == "ob-content" and page.url.endswith("#ob-content")
    page.keyboard.press("Tab")  # the next stop is the page's own first link, past Datasette's and Obelisk's menus
    assert page.evaluate("""() => document.querySelector('main').contains(document.activeElement)
        && document.activeElement.matches('a, button, input, select, summary, textarea')""")
    assert page.js_errors == []


@pytest.fixture(scope="module")
def remote_server(tmp_path_factory):
    """A session that ran an agent in a cloud session, and one whose log names a javascript: URL
    for it (see test_claude_remote_agents), a long web address for its workflow."""
    from test_claude_remote_agents import HOSTILE, PARENT, parent_lines, write

    from datasette_obelisk.store.ingest import ingest

    root = tmp_path_factory.mktemp("remote")
    write(root, PARENT, parent_lines())
    hostile = parent_lines(agent_url=HOSTILE, session=HOSTILE_PARENT, prefix="h-")
    hostile[4]["toolUseResult"]["sessionUrl"] = LONG_URL
    write(root, HOSTILE_PARENT, hostile)
    db = root / "obelisk.db"
    ingest(db, {"claude": root / ".claude"})
    with serving(db) as url:
        yield url


HOSTILE_PARENT = "8a2b3c4d-5e6f-4a1b-9c2d-3e4f5a6b7c8d"
LONG_URL = "https://claude.ai/code/session_01" + "Q" * 300 + "?from=cli"


def test_a_cloud_agent_links_out_to_its_session_and_never_to_a_script(remote_server, browser):
    from test_claude_remote_agents import AGENT_URL, HOSTILE, PARENT, WORKFLOW_URL

    context = browser.new_context(viewport={"width": 375, "height": 800})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    page.on("dialog", lambda dialog: errors.append(f"dialog: {dialog.message}"))
    for path in (f"/-/obelisk/session/{PARENT}/lineage", f"/-/obelisk/session/{PARENT}"):
        page.goto(f"{remote_server}{path}")
        out = page.locator(".ob-remote a.ob-external")
        assert [out.nth(n).get_attribute("href") for n in range(out.count())] == [AGENT_URL, WORKFLOW_URL], path
        assert {out.nth(n).get_attribute("rel") for n in range(out.count())} == {"noopener noreferrer"}
    # A link out opens the cloud session itself (the request is stopped here: no network in tests).
    asked: list[str] = []
    page.route("https://claude.ai/**", lambda route: (asked.append(route.request.url), route.abort()))
    page.goto(f"{remote_server}/-/obelisk/session/{PARENT}/lineage")
    with contextlib.suppress(Exception):
        page.locator(".ob-remote a.ob-external").first.click(timeout=2000)
    assert asked == [AGENT_URL]
    # The javascript: URL is text: nothing on the page links to it, clicking it runs nothing,
    # and neither it nor a long address widens the page.
    for path in (f"/-/obelisk/session/{HOSTILE_PARENT}/lineage", f"/-/obelisk/session/{HOSTILE_PARENT}"):
        page.goto(f"{remote_server}{path}")
        hrefs = page.evaluate("[...document.querySelectorAll('[href]')].map(e => e.href)")
        assert not [h for h in hrefs if not h.startswith(("http://", "https://"))], path
        agent = page.locator(".ob-remote").first
        assert HOSTILE in agent.inner_text() and agent.locator("a.ob-external").count() == 0
        agent.locator("code").first.click()
        assert page.evaluate("document.documentElement.scrollWidth") <= 375, path
        assert page.locator(".ob-remote a.ob-external").first.get_attribute("href") == LONG_URL
    assert errors == []
    context.close()


def test_a_search_links_to_the_prompts_of_gone_transcripts_that_match(server, page, screenshots):
    from web_fixtures import GONE_SESSION

    page.goto(server + "/-/obelisk")
    page.fill("input[name=q]", "zebrafish")
    page.click("button[type=submit]")
    page.wait_for_selector(".ob-result")
    note = page.locator(".ob-gone-prompts")
    assert note.is_visible()
    assert note.inner_text().startswith("2 prompts from sessions whose transcripts are gone match")
    # under the results, not beside the facets
    results = page.locator(".ob-results").bounding_box()
    assert note.bounding_box()["y"] >= results["y"] + results["height"] - 1
    page.screenshot(path=str(screenshots / "search-gone-prompts.png"))
    note.locator("a").click()
    page.wait_for_load_state()
    assert "/obelisk/browse_prompts?" in page.url and "in_transcript=0" in page.url
    rows = page.locator("table.rows-and-columns tbody tr")
    assert rows.count() == 2
    listed = page.locator("table.rows-and-columns tbody").inner_text()
    assert listed.count(GONE_SESSION) == 2 and "feed the zebrafish before the tank test" in listed
    assert "<script>window.__pwned = 1</script>" in listed and page.evaluate("window.__pwned") is None
    assert page.js_errors == []


PLACEHOLDER_FITS = """input => {
    const style = getComputedStyle(input), context = document.createElement('canvas').getContext('2d');
    context.font = `${style.fontStyle} ${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = input.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight);
    return [Math.ceil(context.measureText(input.placeholder).width), Math.floor(room)];
}"""


@pytest.mark.parametrize("width", [1280, 390])
def test_the_failures_project_box_shows_all_of_its_hint(server, browser, width):
    """The project filter's placeholder says what it takes; cut off, it says nothing."""
    context = browser.new_context(viewport={"width": width, "height": 800})
    page = context.new_page()
    page.goto(server + "/-/obelisk/failures")
    text, room = page.locator("input[name=project]").evaluate(PLACEHOLDER_FITS)
    assert text <= room, (text, room)
    assert page.evaluate("document.documentElement.scrollWidth") <= width
    close(context)


def test_a_table_page_shows_rows_on_its_first_screen_and_links_ids(server, page):
    """The column descriptions listed above the rows leave them on the first screen,
    and a session id links to its row."""
    parent = "codex:22222222-2222-4222-8222-222222222222"  # (a fork's parent in the shared corpus)
    page.goto(server + "/obelisk/sessions?parent_session_id=" + quote(parent))
    assert page.locator("dl.column-descriptions dt").count() == 5
    first_row = page.locator("table.rows-and-columns tbody tr").first
    assert first_row.bounding_box()["y"] + 20 < 900
    page.locator("td.col-parent_session_id a").first.click()
    page.wait_for_url("**/obelisk/sessions/codex~3A22222222-2222-4222-8222-222222222222")
    assert page.locator("table.rows-and-columns td.col-id, td.col-id").first.inner_text() == parent
    assert page.js_errors == []


EMOJI_TITLE = "🦓 Zebra census <script>window.__pwned = 3</script> 👩‍👩‍👧"


@pytest.fixture(scope="module")
def retitled_server(web_db, tmp_path_factory):
    """The web database with a fork's parent titled in emoji and markup."""
    db = copy_db(web_db, tmp_path_factory.mktemp("retitled") / "obelisk.db")
    conn = sqlite3.connect(db)
    with conn:
        conn.execute("UPDATE sessions SET title = ? WHERE id = 'codex:22222222-2222-4222-8222-222222222222'",
                     (EMOJI_TITLE,))
    conn.close()
    with serving(db) as url:
        yield url


def test_an_id_cell_shows_the_title_of_the_session_it_links_to(retitled_server, page):
    """Labelled as Datasette labels a foreign key: the title as text, then the id."""
    parent = "codex:22222222-2222-4222-8222-222222222222"
    page.goto(retitled_server + "/obelisk/sessions?parent_session_id=" + quote(parent))
    cell = page.locator("td.col-parent_session_id").first
    assert cell.locator("a").inner_text() == EMOJI_TITLE
    assert cell.locator("em").inner_text() == parent
    assert cell.inner_text() == f"{EMOJI_TITLE}\u00a0{parent}"
    assert page.locator("td script").count() == 0 and page.evaluate("window.__pwned") is None
    page.goto(retitled_server + "/obelisk/messages?_sort=id&_size=5")
    assert page.locator("td.col-file_id a").first.inner_text().endswith(".jsonl")
    page.goto(retitled_server + "/obelisk/sessions?parent_session_id=" + quote(parent))
    page.locator("td.col-parent_session_id a").first.click()
    page.wait_for_url("**/obelisk/sessions/codex~3A22222222-2222-4222-8222-222222222222")
    assert page.js_errors == []
