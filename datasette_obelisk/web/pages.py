"""The HTML pages under ``/-/obelisk``: parse the request, call ``query/``, render.

Each ``*_page`` function returns a template context; ``page_routes`` wires
them to their URL and template through ``handlers.page_view``.
"""

from __future__ import annotations

from dataclasses import replace

from ..query import dashboard, lineage, memories, obelisk, prompts, search_facets, transcript
from ..query.filters import Filters
from ..query.fts import parse_query
from ..query.session_query import SessionQuery
from ..query.text import to_iso
from . import charts
from .actions import FORGET, REMEMBER, allowed
from .config import settings
from .search_form import SearchForm
from .stored_queries import rows_at_once
from .template_helpers import TemplateHelpers
from .visibility import is_visible

TRANSCRIPT_PAGE = 500
FILES_PAGE = 50
FILE_HISTORY_SHOWN = 1000  # calls the history of one path lists, oldest first
MEMORIES_SHOWN = 200  # memories the memories page lists: the newest, or those recalled best
# The failures page lists up to ``limit`` results (50 by default, at most
# 1,000), so it shows a preview of each output, not the transcript's
# RESULT_CHARS; failures() clips its content at MAX_TEXT, marking the cut,
# so the preview must stay shorter than that (a test checks it).
FAILURE_RESULT_CHARS = 2_000


async def facets_spelt(db, form: SearchForm) -> SearchForm:
    """``form`` with its sources spelt as the sources they name (``?source=Claude``: claude),
    as the API reads them, its roles as the roles they name (``Assistant``: assistant), and
    its tools as the tools they name (``bash``: Bash, unless a call is named ``bash``); a
    misspelt source, role or tool is refused, as the API refuses a source."""
    given = {name: form.lists.get(name, ()) for name in ("source", "role", "tool")}
    if not any(given.values()):
        return form

    def spelt(conn):
        return {
            "source": tuple(obelisk.known_source(conn, {"source": s})["source"] or s for s in given["source"]),
            "role": tuple(obelisk.known_role(conn, role) for role in given["role"]),
            "tool": tuple(dict.fromkeys(name for tool in given["tool"] for name in obelisk.known_tools(conn, tool))),
        }

    found = await db.execute_fn(spelt)
    return replace(form, lists={**form.lists, **{name: values for name, values in found.items() if values}})


async def search_page(datasette, request, db, params):
    form = await facets_spelt(db, SearchForm.from_params(params))
    context = {"form": form, "active_tab": "Search"}

    if not form.query:  # top-level sessions of the chosen filters: no parent to name
        filters = Filters.build(**search_facets.narrowed(form.filter_options(), form.narrowing()))

        every = form.every_session(rows_at_once(datasette))
        size = form.recent_page()  # (a limit out of bounds is refused before anything is read)

        def recent(conn):
            found = obelisk.recent_in(conn, filters, size, form.cursor)
            if not found["items"] and not form.cursor:  # (a branch or model spelt in another case, maybe)
                found["respelt"] = obelisk.session_spellings(conn, form.narrowing())
            if every is not None:  # (how many the stored query would have to list)
                found["every"] = obelisk.top_level_count(conn, every.get("source"))
            return found

        found = await db.execute_fn(recent)
        # The stored query lists every session only when they fit in the rows it lists at once;
        # past that, this page's pager (which lists the same sessions) is the list of them all.
        fits = every is not None and found.get("every", 0) <= every["limit"]
        context.update(recent=found["items"], recent_next=found["next_cursor"], every_session=every if fits else None,
                       respelt=found.get("respelt", []))
        return context
    form.recent_page()  # (kept for the list the form goes back to when the query is cleared: refused as there)
    prompts_shown = await is_visible(datasette, request.actor, db.name, "prompt_log")

    def search(conn):
        result = search_facets.faceted_search(
            conn, form.query, mode=form.mode, narrowing=form.narrowing(), limit=form.limit,
            cursor=form.cursor, per_facet=form.per_facet(), **form.filter_options()
        )
        return {
            "result": result,
            "parents": transcript.parents(conn, [item["session"] for item in result["page"]["items"]]),
            "indexing": dashboard.indexing_note(conn),
            "unindexable": parse_query(form.query, form.mode).matches_nothing,
            # what the prompt logs kept of sessions whose transcripts are gone, and matches too
            "gone_prompts": prompts.missing_matches(conn, form.query, form.mode) if prompts_shown else None,
        }

    found = await db.execute_fn(search)
    context.update(found, facets=form.facet_links(found["result"]["facets"], found["result"]["uncounted"]), hit_sample=search_facets.HIT_SAMPLE)
    return context


def search_error(params) -> dict:
    """The search form, as submitted, so a query the search refused can be corrected in place."""
    return {"form": SearchForm.from_params(params), "active_tab": "Search"}


async def session_page(datasette, request, db, params):
    session_id = params.path("session_id")
    options = {
        "start": params.integer("start", 1, minimum=1),
        "limit": TRANSCRIPT_PAGE,
        "rewound": params.boolean("shadowed"),
        "meta": params.boolean("meta"),
        "log": params.boolean("log"),
    }
    call = params.text("call")
    call_missing = None
    if call:  # a link to a tool call (``#tool-<id>``) not on the page it named: the page that shows it
        found = await db.execute_fn(lambda conn: transcript.call_anchor(conn, session_id, call, limit=TRANSCRIPT_PAGE))
        if found is not None:
            options.update(start=found["start"] or 1, rewound=found["rewound"], meta=found["meta"], log=found["log"])
        else:  # (a call of another session, or none: the page asked for, saying so)
            call_missing = call
    message = params.text("message")
    message_missing = None
    if message:  # a link to a message by its id: where the transcript shows it now, at its anchor
        found = await db.execute_fn(
            lambda conn: transcript.message_anchor_of(conn, session_id, message, limit=TRANSCRIPT_PAGE))
        if found is not None:
            return {"redirect": TemplateHelpers(datasette, request.args.get("db")).in_transcript(session_id, found)}
        message_missing = message  # (a message of another session, or none: the page asked for, saying so)
    def load(conn):
        found = transcript.transcript(conn, session_id, **options)
        # (an agent's transcript links the call of its parent that started it, where the parent shows it)
        found["spawned_by"] = transcript.spawning_call(
            conn, session_id, found["parent"]["id"], limit=TRANSCRIPT_PAGE) if found["parent"] else None
        return found

    data = await db.execute_fn(load)
    # a page asked to start at a line (a link to it) says when the view hides that line
    data["start_hidden"] = data["start_hidden"] if "start" in request.args else None
    data["start_folded"] = data["start_folded"] if "start" in request.args else None
    data["start_rewound"] = data["start_rewound"] and "start" in request.args
    return {"t": data, "options": options, "session_id": session_id, "call_missing": call_missing,
            "message_missing": message_missing,
            "source_gone": transcript.source_gone(data["session"])}


async def lineage_page(datasette, request, db, params):
    session_id = params.path("session_id")
    seq = params.integer("seq", code="SESSION_QUERY_INVALID_WINDOW")
    event_id = params.text("id")  # (the event's id: the same event after an ingest renumbered the session)

    def load(conn):
        found = {"forest": lineage.session_forest(conn, session_id), "subagents": transcript.subagents(conn, session_id)}
        if seq is not None or event_id:
            found["event"] = lineage.event_chains(conn, session_id, seq, event_id)
        return found

    found = await db.execute_fn(load)
    if "event" in found:
        seq = found["event"]["trace"]["target"]["seq"]
    return {"session_id": session_id, "seq": seq, **found}


async def event_page(datasette, request, db, params):
    session_id = params.path("session_id")
    seq = params.path_int("seq", code="SESSION_QUERY_INVALID_WINDOW")
    # A link names the event by its id too (``?id=``): an ingest may have renumbered the
    # session since, and the page then shows that event where it now is, not the one at its seq.
    event_id = params.text("id")
    window = {"sessionId": session_id, "seq": seq, "before": 3, "after": 3, **({"id": event_id} if event_id else {})}

    def load(conn):
        found = SessionQuery(conn).read_event(window)
        seq = found["target"]["seq"]
        return {
            "window": found,
            "outputs": transcript.result_outputs(conn, [e["id"] for e in found["events"]]),
            "thinking": obelisk.thinking_lengths(conn, [e["id"] for e in found["events"]]),
            "subagents": {sa["tool_use_id"]: sa for sa in transcript.subagents(conn, session_id)},
            "in_transcript": transcript.message_anchor(conn, session_id, seq, limit=TRANSCRIPT_PAGE),
            "session_title": next(iter(obelisk.sessions(conn, {"sessionId": session_id, "limit": 1})), {}).get("title"),
            "source_gone": bool(transcript.archived(conn, [session_id])),
            **lineage.event_chains(conn, session_id, seq),
        }

    found = await db.execute_fn(load)
    target = found["window"]["target"]
    # (a search's snippet links here: the page says whose event it is and when, as a transcript's entry does)
    when = to_iso(target["time"]) if isinstance(target.get("time"), (int, float)) else None
    return {"session_id": session_id, "seq": target["seq"], "target_time": when, **found}


async def overview_page(datasette, request, db, params):
    files = await is_visible(datasette, request.actor, db.name, "source_files")
    prompt_log = await is_visible(datasette, request.actor, db.name, "prompt_log")

    def numbers(conn):
        return {
            "totals": dashboard.totals(conn, files=files),
            # sessions whose transcripts are gone, known from what was typed in them
            "prompt_only_sessions": prompts.orphan_count(conn) if prompt_log else 0,
            "activity": dashboard.activity(conn),
            "tools": dashboard.tool_usage(conn, limit=None),
            "failures_without_call": dashboard.failures_without_call(conn),
            "indexing": dashboard.indexing_note(conn),
        }

    data = await db.execute_fn(numbers)
    activity = data["activity"]
    unit = activity["unit"]
    return {
        "active_tab": "Overview",
        "data": data,
        # (more sessions than the obelisk_sessions stored query lists at once: the sessions card
        # links the search page, whose pager lists every one of them)
        "sessions_at_once": rows_at_once(datasette),
        "charts": [
            charts.stacked_bars(f"Sessions started per {unit}, by source", activity["buckets"], activity["sessions"]),
            charts.stacked_bars(f"Conversation messages per {unit}, by source", activity["buckets"], activity["messages"]),
            charts.horizontal_bars("Tool calls by tool", [(t["name"], t["calls"]) for t in data["tools"]]),
        ],
    }


async def files_page(datasette, request, db, params):
    path = params.text("path")
    contains = params.text("contains")
    offset = params.integer("offset", 0, minimum=0)
    if path:
        def load(conn):
            history = obelisk.file_history(conn, path, {"limit": FILE_HISTORY_SHOWN, "offset": offset})
            # (the page says which calls it lists, as the list of paths counts them all)
            total = obelisk.file_history_count(conn, path)
            return {"history": history, "total": total, "anchors": anchors_for(conn, [h["toolCall"] for h in history]),
                    "gone": transcript.archived(conn, [h["session"]["id"] for h in history])}

        return {"active_tab": "Files", "path": path, "offset": offset, "page_size": FILE_HISTORY_SHOWN,
                **await db.execute_fn(load)}
    found = await db.execute_fn(lambda conn: dashboard.touched_files(conn, contains, FILES_PAGE, offset))
    return {"active_tab": "Files", "contains": contains, "offset": offset, "page_size": FILES_PAGE, **found}


async def failures_page(datasette, request, db, params):
    options = {**params.values("project", "source", "sessionId"), "limit": params.integer("limit", 50)}
    cursor = params.text("cursor")  # (the page's own paging: the newest first, a page after another)

    def load(conn):
        if options.get("source"):  # spelt as the source it names, as the API reads it (?source=Claude: claude)
            options["source"] = obelisk.known_source(conn, {"source": options["source"]})["source"] or options["source"]
        # Typed as it reads ("billing-api"), a project is found in any project name holding it.
        query = {**options, "project": contains(options["project"])} if "project" in options else options
        paged = obelisk.failures_paged(conn, query, cursor)  # (first: it refuses bad options, a blank id)
        # (a session not stored is an error, as elsewhere: an empty list would say "no failures")
        title = obelisk.stored_session_title(conn, options["sessionId"]) if options.get("sessionId") else None
        found = paged["items"]
        return {
            "failures": found, "total": obelisk.failure_count(conn, query),
            "cursor": cursor, "next_cursor": paged["next_cursor"], "before": paged["before"],
            "session_title": title,
            "anchors": anchors_for(conn, [f["toolCall"] for f in found]),
            # (a result that answers no stored call is shown on its own: linked where it is, not to the start)
            "result_anchors": transcript.result_anchors(
                conn, [(f["session"]["id"], f["result"]["message_uuid"]) for f in found if not f["toolCall"]],
                limit=TRANSCRIPT_PAGE,
            ),
            # (an output saved to a file of its own is whole in that file's raw text, not its line's)
            "raw_uuids": transcript.saved_output_uuids(conn, [f["result"]["tool_use_id"] for f in found]),
            # (nor is there a raw line to link once every log of its session is gone, as on the transcript)
            "gone": transcript.archived(conn, [f["session"]["id"] for f in found]),
            # (a failure on a branch later rewound, or compacted away, is history the model no longer sees)
            "states": obelisk.message_states(conn, [f["result"]["message_uuid"] for f in found]),
            # (the chosen one too when no session has it: the menu shows what filters the page)
            "sources": sorted({*obelisk.stored_sources(conn), *([options["source"]] if options.get("source") else [])}),
        }

    found = await db.execute_fn(load)
    return {
        "active_tab": "Failures", "filters": options, "result_chars": FAILURE_RESULT_CHARS, "max_limit": obelisk.MAX_LIMIT,
        **found,
    }


def failures_error(params) -> dict:
    """The failures form, as submitted, so a refused filter can be corrected in place."""
    from ..plugins import get_sources

    return {"active_tab": "Failures", "failures_form": True, "sources": sorted(get_sources()),
            "filters": params.values("project", "source", "sessionId")}


def contains(pattern: str) -> str:
    """A LIKE pattern as given when it has a ``%``, else one matching any text holding it
    (the helpers take LIKE patterns without an escape: a ``_`` stays a wildcard)."""
    return pattern if "%" in pattern else f"%{pattern}%"


def anchors_for(conn, calls: list) -> dict:
    """Where each of these tool calls is shown on its transcript (``ob.tool_call`` links there)."""
    return transcript.tool_anchors(conn, [c["id"] for c in calls if c], limit=TRANSCRIPT_PAGE)


async def memories_page(datasette, request, db, params):
    query = params.text("q")
    options = {"limit": MEMORIES_SHOWN, **({"query": query} if query else {})}

    def load(conn):
        found = obelisk.memories(conn, options)
        # (the page says how many it leaves out, as the overview counts them all)
        total = memories.active_count(conn, query) if len(found) == MEMORIES_SHOWN else len(found)
        return found, total, memories.stored_sessions(conn, [m.get("session_id") for m in found])

    found, total, stored = await db.execute_fn(load)
    config = settings(datasette)
    writable = not config.read_only and db.is_mutable
    return {
        "active_tab": "Memories",
        "q": query,
        "memories": found,
        "total": total,
        "stored_sessions": stored,  # a memory may name a session that is not (or no longer) stored
        "can_remember": writable and await allowed(datasette, request.actor, REMEMBER, db.name),
        "can_forget": writable and await allowed(datasette, request.actor, FORGET, db.name),
        "memory_roots": [str(root) for root in config.memory_roots],
    }


def page_routes() -> list:
    from .handlers import page_view

    session = r"(?P<session_id>[^/]+)"
    return [
        (r"^/-/obelisk/?$", page_view("obelisk/search.html", search_page, on_error=search_error)),
        (rf"^/-/obelisk/session/{session}$", page_view("obelisk/session.html", session_page)),
        (rf"^/-/obelisk/session/{session}/lineage$", page_view("obelisk/lineage.html", lineage_page)),
        (rf"^/-/obelisk/event/{session}/(?P<seq>[^/]+)$", page_view("obelisk/event.html", event_page)),
        (r"^/-/obelisk/overview$", page_view("obelisk/overview.html", overview_page)),
        (r"^/-/obelisk/files$", page_view("obelisk/files.html", files_page)),
        (r"^/-/obelisk/failures$", page_view("obelisk/failures.html", failures_page, on_error=failures_error)),
        (r"^/-/obelisk/memories$", page_view("obelisk/memories.html", memories_page)),
    ]
