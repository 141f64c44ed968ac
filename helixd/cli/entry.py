"""The ``helixctl`` executable: ``statusline`` is answered before click is even imported
(Claude Code runs it after every message); everything else goes to the click group."""

from __future__ import annotations

import sys


def main() -> None:
    if sys.argv[1:2] == ["statusline"]:
        from helixd.cli.statusline import main as statusline

        sys.exit(statusline(sys.argv[2:]))
    from helixd.cli.main import main as cli

    cli()
