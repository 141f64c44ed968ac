"""The ``helixctl`` console script.  ``helixctl hook …`` runs the standard-library-only hook
client without importing the rest of the CLI (it must return within an agent's hook
deadline); every other command goes to ``helixd.cli``."""

from __future__ import annotations

import sys


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "hook":
        from helixd.hookclient import main as hook

        sys.exit(hook(sys.argv[2:]))
    if len(sys.argv) > 1 and sys.argv[1] in ("report", "search"):
        # Read-only answers from the store: skip the full CLI (event loop, config models).
        from helixd import cli_reports

        command = getattr(cli_reports, sys.argv[1])
        command.main(args=sys.argv[2:], prog_name=f"helixctl {sys.argv[1]}", obj={})
        return
    from helixd.cli import main as cli

    cli()


if __name__ == "__main__":
    main()
