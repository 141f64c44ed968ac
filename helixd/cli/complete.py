"""Shell completion: ``helixctl completion bash|zsh|fish`` prints the script (click's), and
the values completed from the store — session ids (``lookup``, ``show``, ``env``,
``analyze``), agents (``--agent``), repos (``--repo``).

A completion never fails the shell: a missing store or a bad config completes nothing.
"""

from __future__ import annotations

from typing import Any

import click
from click.shell_completion import CompletionItem

SHELLS = ("bash", "zsh", "fish")


def _reader(ctx: click.Context) -> Any:
    from helixd.query import open_reader
    from helixd.readconfig import read_config

    root = ctx.find_root().params.get("config_path")
    return open_reader(read_config(root).store_db)


def sessions(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from helixd.query.sessions import complete_sessions

    try:
        con = _reader(ctx)
    except Exception:
        return []
    try:
        found = complete_sessions(con, incomplete)
    finally:
        con.close()
    return [CompletionItem(s["uid"], help=s["title"] or None) for s in found]


def agents(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from helixd.adapters.registry import REGISTRY

    return [
        CompletionItem(a.name, help=a.description or None)
        for a in REGISTRY
        if a.name.startswith(incomplete)
    ]


def repos(ctx: click.Context, param: click.Parameter, incomplete: str) -> list[CompletionItem]:
    from helixd.query.sessions import complete_repos

    try:
        con = _reader(ctx)
    except Exception:
        return []
    try:
        return [CompletionItem(r) for r in complete_repos(con, incomplete)]
    finally:
        con.close()


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
def completion(shell: str) -> None:
    """Print the completion script for SHELL.  Add to your shell's startup file:

    \b
      bash: eval "$(helixctl completion bash)"
      zsh:  eval "$(helixctl completion zsh)"
      fish: helixctl completion fish | source

    Session ids, agents and repos are completed from the store.
    """
    from click.shell_completion import get_completion_class

    from helixd.cli.main import main

    cls = get_completion_class(shell)
    assert cls is not None
    click.echo(cls(main, {}, "helixctl", "_HELIXCTL_COMPLETE").source())
