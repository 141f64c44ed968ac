"""``helixctl web``: the address of the dashboard the daemon serves, opened in a browser on a
desktop."""

from __future__ import annotations

import os
import sys
import time

import click

from helixd.cli.common import EXIT_STORE, echo_json, read_settings

STARTING_S = 5.0


def _desktop() -> bool:
    return sys.platform == "darwin" or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


@click.command()
@click.option("--no-open", is_flag=True, help="Print the address only.")
@click.option("--json", "as_json", is_flag=True, help="Print {url, pid} as JSON.")
@click.pass_context
def web(ctx: click.Context, no_open: bool, as_json: bool) -> None:
    """Print the address of the dashboard and HTTP API that helixd serves (loopback), and open
    it in a browser on a desktop.  Exit 3 when the daemon is not running or serves no web
    face (`[web] enabled = false`, or its port was taken: see its log)."""
    from helixd.daemon.pidlock import holder
    from helixd.daemon.status import StatusFile

    db = read_settings(ctx).store_db
    pid = holder(db)
    if pid is None:
        click.echo(
            "helixctl: helixd is not running (start it: `helixd`, or `helixctl service install`)",
            err=True,
        )
        ctx.exit(EXIT_STORE)
    url = None
    deadline = time.monotonic() + STARTING_S  # a daemon just started publishes it in ~2 s
    while True:
        published = StatusFile(db).read() or {}
        url = (published.get("web") or {}).get("url")
        if url or time.monotonic() > deadline or holder(db) is None:
            break
        time.sleep(0.2)
    if not url:
        click.echo(
            "helixctl: helixd serves no web page ([web] enabled = false, or its port was"
            " taken: see the daemon's log)",
            err=True,
        )
        ctx.exit(EXIT_STORE)
    if as_json:
        echo_json({"url": url, "pid": pid})
    else:
        click.echo(url)
    if not no_open and not as_json and _desktop():
        import webbrowser

        webbrowser.open(url)
