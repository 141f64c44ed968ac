"""Shell completion through argcomplete: ``helixctl completion bash|zsh|fish`` prints the
script, and the values are completed from the store — session ids (``lookup``, ``show``,
``env``, ``analyze``), agents (``--agent``), repos (``--repo``).

argcomplete is imported only when the shell asks (``_ARGCOMPLETE`` in the environment, its
protocol; ``helixd.cli.main.main``) or prints the script: a normal run pays nothing for it.
The completers are plain functions set on the argparse actions (``action.completer``).

A completion never fails the shell: a missing store or a bad config completes nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, NoReturn

from helixd.cli.common import Context, describe
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace

SHELLS = ("bash", "zsh", "fish")


def autocomplete(parser: ArgumentParser) -> NoReturn:
    """Answer the shell's completion request (argcomplete's protocol) and exit."""
    import argcomplete

    argcomplete.autocomplete(parser, always_complete_options=False, validator=_matches)
    raise SystemExit(0)  # argcomplete exits by itself; this only if it found nothing to do


def _matches(completion: str, prefix: str) -> bool:
    """A value completes ``prefix`` when it starts with it — or its id after ``agent:`` does
    (``lookup 1af7`` completes to ``claude:1af7…``, as the store resolves bare ids)."""
    return completion.startswith(prefix) or completion.partition(":")[2].startswith(prefix)


def _reader(parsed_args: Any) -> Any:
    from helixd.query import open_reader
    from helixd.readconfig import read_config

    return open_reader(read_config(getattr(parsed_args, "config", None)).store_db)


def sessions(prefix: str, parsed_args: Any = None, **_: Any) -> dict[str, str]:
    """Session uids starting with ``prefix`` (bare ids match too), with their titles."""
    from helixd.query.sessions import complete_sessions

    try:
        con = _reader(parsed_args)
    except Exception:
        return {}
    try:
        found = complete_sessions(con, prefix)
    finally:
        con.close()
    return {s["uid"]: s["title"] or "" for s in found}


def agents(prefix: str, **_: Any) -> dict[str, str]:
    from helixd.adapters.registry import REGISTRY

    return {a.name: a.description or "" for a in REGISTRY if a.name.startswith(prefix)}


def repos(prefix: str, parsed_args: Any = None, **_: Any) -> list[str]:
    from helixd.query.sessions import complete_repos

    try:
        con = _reader(parsed_args)
    except Exception:
        return []
    try:
        return list(complete_repos(con, prefix))
    finally:
        con.close()


def completion_arguments(p: ArgumentParser) -> None:
    p.add_argument("shell", metavar="SHELL", choices=SHELLS, help="bash, zsh or fish.")
    describe(p, completion)


def completion(ctx: Context, args: Namespace) -> None:
    """Print the completion script for SHELL.  Add to your shell's startup file:

      bash: eval "$(helixctl completion bash)"
      zsh:  eval "$(helixctl completion zsh)"
      fish: helixctl completion fish | source

    Session ids, agents and repos are completed from the store.
    """
    from argcomplete.shell_integration import shellcode

    echo(shellcode(["helixctl"], shell=args.shell), nl=False)
