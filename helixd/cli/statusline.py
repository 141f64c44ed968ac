"""``helixctl statusline``: the line Claude Code shows under its prompt (its ``statusLine``
setting runs this after every assistant message, JSON of the session on stdin).

One line: this session's cost and tokens (its subagents included), today's spend across
every agent, and the burn rate (the spend of the last hour)::

    helix ◆ session $1.24 · 412k tok ◆ today $18.07 ◆ $3.10/h

from the store (``helixd.query.now``), priced like every report.  It must be fast (Claude Code
runs it often: ``bench/statusline.py`` checks 50 ms p95, whole process), so it has a console
script of its own, ``helix-statusline`` (``run`` below), which loads neither click nor anything
heavier than sqlite3 and the price data; ``helixctl statusline`` prints the same line through
the click group.  It never fails the agent: a problem prints a short line and exits 0.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from collections.abc import Mapping

PREFIX = "helix"
SEP = " ◆ "


def tokens_text(n: int) -> str:
    if n >= 1_000_000:
        return f"{n / 1_000_000:.1f}M"
    if n >= 1_000:
        return f"{n / 1_000:.0f}k"
    return str(n)


def _session_id(stdin: TextIO) -> str | None:
    """The ``session_id`` of the JSON Claude Code pipes in (None when run by hand)."""
    if stdin.isatty():
        return None
    import json

    try:
        doc: Any = json.loads(stdin.buffer.read() or b"{}")
    except (ValueError, AttributeError):
        return None
    sid = doc.get("session_id") if isinstance(doc, dict) else None
    return sid if isinstance(sid, str) and sid else None


# HELIX_* variables that change nothing the status line reads through the config.
# The settings the line reads (the store, the prices); other HELIX_* settings (the daemon's,
# the web server's) do not change it and do not cost it the settings reader.
_READ_SETTINGS = ("HELIX_STORE__", "HELIX_PRICES__")


def _settings(config: str | None) -> tuple[Path, Path | None, Mapping[str, Mapping[str, float]]]:
    """``(store, price table file, price overrides)``.  Without a config file or a HELIX_*
    setting of the config, the defaults — without loading the settings reader."""
    import os

    from helixd.paths import config_path_in_use, default_store_path

    path = config_path_in_use(None if config is None else Path(config))
    configured = "HELIX_CONFIG" in os.environ or any(
        k.upper().startswith(_READ_SETTINGS) for k in os.environ
    )
    if not configured and not path.is_file():
        db = os.environ.get("HELIX_STORE_DB")
        return (Path(db).expanduser() if db else default_store_path()), None, {}
    from helixd.readconfig import read_config

    rc = read_config(None if config is None else Path(config))
    return rc.store_db, rc.prices_table, rc.price_overrides


def line(config: str | None = None, stdin: TextIO = sys.stdin) -> str:
    """The status line, or a short reason when there is nothing to show."""
    from helixd.prices import effective
    from helixd.query import NoStore, open_reader
    from helixd.query.now import now

    sid = _session_id(stdin)
    try:
        store_db, table, overrides = _settings(config)
        _, prices = effective(table, overrides)
        con = open_reader(store_db)
    except (NoStore, ValueError) as exc:  # ConfigError and PriceTableError are ValueErrors
        return f"{PREFIX}: {str(exc).splitlines()[0][:120]}"
    try:
        figures = now(con, sid, int(time.time() * 1000), prices)
    finally:
        con.close()
    parts = [PREFIX]
    if figures.session is not None:
        s = figures.session
        parts.append(f"session ${s.usd:,.2f} · {tokens_text(s.tokens)} tok")
    elif sid:
        parts.append("session not ingested yet")
    parts.append(f"today ${figures.today.usd:,.2f}")
    parts.append(f"${figures.last_hour.usd:,.2f}/h")
    return SEP.join(parts)


def main(argv: list[str]) -> int:
    """``helix-statusline [--config PATH]``: print the line; always exit 0."""
    config = None
    if "-h" in argv or "--help" in argv:
        print(__doc__.split("\n\n")[0].replace("``", "`"))
        return 0
    if "--config" in argv:
        i = argv.index("--config")
        config = argv[i + 1] if i + 1 < len(argv) else None
    try:
        text = line(config)
    except Exception as exc:  # never fail the agent's prompt line
        text = f"{PREFIX}: {type(exc).__name__}: {str(exc)[:100]}"
    sys.stdout.write(text + "\n")
    sys.stdout.flush()
    return 0


def run() -> None:
    """The ``helix-statusline`` console script."""
    sys.exit(main(sys.argv[1:]))
