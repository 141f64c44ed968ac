"""The ``helixctl`` console script.  ``helixctl hook …`` runs the standard-library-only hook
client without importing the rest of the CLI (it must return within an agent's hook
deadline); every other command goes to ``helixd.cli.main``."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from helixd.cli.hook import main as hook

        sys.exit(hook(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] in ("report", "search"):
        # Read-only answers from the store: skip the full CLI (event loop, config models).
        from helixd.cli import reports as cli_reports
        from helixd.cli.common import run_guarded

        command = getattr(cli_reports, sys.argv[1])
        run_guarded(command, sys.argv[2:], f"helixctl {sys.argv[1]}")
        return
    if sys.argv[1:] in (["ingest"], ["ingest", "--json"]) and _quick_ingest():
        return
    from helixd.cli.main import main as cli

    cli()


def _quick_ingest() -> bool:
    """``helixctl ingest`` with nothing new (``helixd/cli_rescan.py``); False: run it."""
    import os
    from pathlib import Path

    from helixd.cli.rescan import quick_rescan

    summary = quick_rescan(os.environ, Path.home())
    if summary is None:
        return False
    if sys.argv[2:] == ["--json"]:
        import orjson

        sys.stdout.buffer.write(orjson.dumps(summary, option=orjson.OPT_INDENT_2) + b"\n")
    else:
        from helixd.cli.printers import print_summary

        print_summary(summary)
    return True


if __name__ == "__main__":
    main()
