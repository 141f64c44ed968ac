"""The web face: an HTTP API (code-o11y §API), a live feed of the writer's commits and the
dashboard's pages, served by the daemon on its own event loop (``server.py``).

Like every face it reads through ``helixd.query`` (never ``helixd.store``) on read-only
connections in worker threads (``reads.py``), and holds no SQL.  Pages are server-rendered
(Jinja2 templates, SVG charts drawn here) with a little hand-written JS and CSS under
``static/``: nothing is fetched from elsewhere at run time.
"""
