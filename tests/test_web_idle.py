"""The web server costs an idle daemon little: starting it loads the HTTP stack, not the query
layer (that comes with the first request that needs it)."""

from __future__ import annotations

import subprocess
import sys

QUERY_MODULES = (
    "helixd.query.detail",
    "helixd.query.metrics",
    "helixd.query.signal_metrics",
    "helixd.query.search",
    "helixd.query.sessions",
    "helixd.query.transcript",
    "helixd.query.status",
)


def test_the_server_starts_without_the_query_layer() -> None:
    code = (
        "import sys, helixd.web.server\n"
        f"print(sorted(m for m in {QUERY_MODULES!r} if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout
