"""``helixctl web``: the address of the dashboard the daemon serves, opened in a browser on a
desktop; ``helixctl web --fleet``: a read-only dashboard of the fleet's PostgreSQL, served by
this command in the foreground."""

from __future__ import annotations

import os
import sys
import time
from typing import TYPE_CHECKING

from helixd.cli.common import (
    EXIT_STORE,
    Context,
    UsageError,
    describe,
    echo_json,
    int_range,
    json_flag,
    read_settings,
)
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

STARTING_S = 5.0


def _desktop() -> bool:
    return sys.platform == "darwin" or bool(
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    )


def web_arguments(p: ArgumentParser) -> None:
    p.add_argument("--no-open", action="store_true", help="Print the address only.")
    json_flag(p, "Print {url, pid} as JSON.")
    p.add_argument(
        "--fleet",
        action="store_true",
        help="Serve a read-only dashboard of every machine of the fleet's PostgreSQL ([fleet]"
        " dsn, a helix_reader role) here, in the foreground, until Ctrl-C.",
    )
    p.add_argument("--dsn", default=None, help="With --fleet: this connection string instead.")
    p.add_argument("--host", default=None, help="With --fleet: the address to listen on.")
    p.add_argument(
        "--port",
        type=int_range(0, 65535),
        default=None,
        help="With --fleet: the port to listen on (default 7778; 0: any free).",
    )
    describe(p, web)


def web(ctx: Context, args: Namespace) -> None:
    """Print the address of the dashboard and HTTP API that helixd serves (loopback), and open
    it in a browser on a desktop.  Exit 3 when the daemon is not running or serves no web
    face (`[web] enabled = false`, or its port was taken: see its log).  With --fleet: serve
    the fleet's dashboard instead (exit 3 when the fleet database cannot be read)."""
    no_open, as_json, dsn, host, port = args.no_open, args.as_json, args.dsn, args.host, args.port
    if args.fleet:
        _serve_fleet(ctx, dsn, host, 7778 if port is None else port, no_open, as_json)
        return
    if dsn or host or port is not None:
        raise UsageError("--dsn, --host and --port need --fleet")
    from helixd.daemon.pidlock import holder
    from helixd.daemon.status import StatusFile

    db = read_settings(ctx).store_db
    pid = holder(db)
    if pid is None:
        echo(
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
        echo(
            "helixctl: helixd serves no web page ([web] enabled = false, or its port was"
            " taken: see the daemon's log)",
            err=True,
        )
        ctx.exit(EXIT_STORE)
    if as_json:
        echo_json({"url": url, "pid": pid})
    else:
        echo(url)
    if not no_open and not as_json and _desktop():
        import webbrowser

        webbrowser.open(url)


def _serve_fleet(
    ctx: Context, dsn: str | None, host: str | None, port: int, no_open: bool, as_json: bool
) -> None:
    from helixd.cli.common import fail, prices
    from helixd.cli.fleet import read_target
    from helixd.fleet.target import Target
    from helixd.query.fleet import FleetDbError, open_fleet
    from helixd.web.fleet import FleetWebOptions, serve_fleet

    settings = read_settings(ctx)
    if dsn:
        from helixd.fleet.secret import SecretError, read_password

        try:
            password = read_password(settings.fleet.password_file, os.environ)
        except SecretError as exc:
            fail(ctx, str(exc), 2)
        target = Target(dsn=dsn, machine="-", user="-", password=password)
    else:
        target = read_target(ctx)
    try:  # fail now, plainly, rather than on every page
        open_fleet(target.dsn, target.password, target.connect_timeout).close()
    except FleetDbError as exc:
        fail(ctx, str(exc), EXIT_STORE)
    options = FleetWebOptions(
        dsn=target.dsn,
        password=target.password,
        connect_timeout=target.connect_timeout,
        host=host or "127.0.0.1",
        port=port,
        prices=prices(ctx),
    )

    def listening(url: str) -> None:
        if as_json:
            echo_json({"url": url, "pid": os.getpid(), "source": "fleet"})
        else:
            echo(url)
        sys.stdout.flush()
        if not no_open and not as_json and _desktop():
            import webbrowser

            webbrowser.open(url)

    try:
        serve_fleet(options, listening)
    except OSError as exc:
        fail(ctx, f"cannot listen on {options.host}:{options.port}: {exc}", EXIT_STORE)
