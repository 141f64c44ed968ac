"""``helixd``: the long-running daemon (composition root).

For now it offers ``--once``: one full sweep (ingest + digests) and exit.  The watching
daemon is built in issue #4.
"""

from __future__ import annotations

import sys

import click

from helixd import __version__


@click.command(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="helixd")
@click.option("--once", is_flag=True, help="Do one full sweep and exit.")
@click.option("--config", "config_path", default=None, help="TOML config file.")
def main(once: bool, config_path: str | None) -> None:
    """Watch the agents' log directories and keep the Helix store up to date."""
    from helixd.cli import main as helixctl

    if not once:
        click.echo("helixd: only --once is available in this version", err=True)
        sys.exit(2)
    args = ["--config", config_path] if config_path else []
    helixctl.main(args=[*args, "ingest"], prog_name="helixd")
