"""The read layer every face calls: one function per question, plain data out.

The CLI (``helixd/cli/``), the HTTP API and pages (``helixd/web/``) and the MCP server
(``helixd/mcp/``) translate — argv, a URL, an MCP tool call — into one of these calls and the
answer into a table, JSON, HTML or MCP content.  A face holds no SQL and no business rule: how
a session reference is resolved, what a day is in a time zone, which sessions a list hides,
how a search text becomes an index query, all live here or below (``helixd/store/`` for the
SQL, ``helixd/core/`` for the pure rules).

Every function takes an open read-only connection (``open_reader``) and returns dataclasses,
dicts and lists of plain values, ready for JSON.  They are synchronous: the CLI calls them
directly (no event loop), the daemon's web server in a worker thread.
"""

from helixd.store.faults import StoreFault, classify
from helixd.store.probe import condition as store_condition
from helixd.store.readonly import NoStore, open_reader

__all__ = ["NoStore", "StoreFault", "classify", "open_reader", "store_condition"]
