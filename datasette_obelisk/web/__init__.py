"""The Datasette face: pages, the JSON API, guarded writes, SQL functions and stored queries.

Modules here parse requests, call ``query/`` and render; they hold no query
logic. ``routes.py`` lists every route, ``handlers.py`` the two view shapes,
``params.py`` and ``responses.py`` the one place for parameters and errors.
See docs/web.md.
"""
