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

from typing import TYPE_CHECKING, Any

from helixd.store.readonly import NoStore, damaged_header, open_reader

if TYPE_CHECKING:
    from helixd.store.faults import StoreFault, classify
    from helixd.store.probe import condition as store_condition

__all__ = ["NoStore", "StoreFault", "classify", "damaged_header", "open_reader", "store_condition"]


def __getattr__(name: str) -> Any:
    """The fault helpers load when a face first asks for them (a read that works never
    does: the status line and every read command skip their regular expressions)."""
    if name in ("StoreFault", "classify"):
        from helixd.store import faults

        return getattr(faults, name)
    if name == "store_condition":
        from helixd.store.probe import condition

        return condition
    raise AttributeError(name)
