"""Issue 12: ``helixctl`` on argparse — the command table, usage errors (exit 2, the
argument named, stderr only), ``--version``, help for every command, and ``echo``'s rules
(click's: ANSI dropped off a terminal, unencodable characters replaced, not fatal)."""

from __future__ import annotations

import io
import select
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from helixd import __version__
from helixd.cli import output
from helixd.cli.main import COMMANDS, main
from tests.cli_runner import CliRunner
from tests.conftest import REPO, RunCli


def test_version_of_both_programs(helixctl: RunCli) -> None:
    assert helixctl("--version").stdout == f"helixctl, version {__version__}\n"
    helixd = subprocess.run(
        [sys.executable, "-m", "helixd.daemon", "--version"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )
    assert helixd.returncode == 0 and helixd.stdout == f"helixd, version {__version__}\n"


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        ([], "the following arguments are required: COMMAND"),
        (["nosuch"], "invalid choice: 'nosuch'"),
        (["sessions", "--limit", "-1"], "argument --limit: -1 is not in the range x>=0."),
        (["search", "x", "--limit", "0"], "argument --limit: 0 is not in the range 1<=x<=10000."),
        (["show", "x", "--format", "pdf"], "argument --format: invalid choice: 'pdf'"),
        (["sessions", "-z", "Mars/Olympus"], "argument --timezone: unknown time zone"),
        (["sessions", "--since", "whenever"], "argument --since: not a time: 'whenever'"),
        (["report", "hourly"], "argument PERIOD: invalid choice: 'hourly'"),
        (["report", "daily", "--machine", "m"], "--machine and --user need --fleet"),
        (["sessions", "--lim", "3"], "unrecognized arguments: --lim"),  # no abbreviations
        (["lookup"], "the following arguments are required: UID"),
        (["hooks"], "the following arguments are required: COMMAND"),
        (["tokens", "--repo", "r", "--phases", "/no/such.jsonl"], "does not exist"),
    ],
)
def test_usage_errors_exit_2_naming_the_argument(argv: list[str], says: str) -> None:
    result = CliRunner().invoke(main, argv, env={"HELIX_STORE_DB": "/nonexistent/helix.db"})
    assert result.exit_code == 2, result.output
    assert says in result.stderr and "usage: helixctl" in result.stderr
    assert result.stdout == ""


def test_every_command_of_the_table_has_help(tmp_path: Path) -> None:
    top = CliRunner().invoke(main, ["-h"])
    assert top.exit_code == 0
    for name, spec in COMMANDS.items():
        assert f"{name} " in top.stdout and spec.summary.split()[0] in top.stdout
        own = CliRunner().invoke(main, [name, "-h"])
        assert own.exit_code == 0, (name, own.output)
        assert own.stdout.startswith(f"usage: helixctl {name}"), name
        assert own.stdout.count("\n") > 3, name  # its description and options, not only usage


def test_defaults_shown_in_help() -> None:
    shown = CliRunner().invoke(main, ["show", "-h"]).stdout
    assert "(default: 500)" in shown and "(default: text)" in shown


def test_echo_drops_ansi_off_a_terminal_and_replaces_what_the_stream_cannot_encode(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    raw = io.BytesIO()
    monkeypatch.setattr(sys, "stdout", io.TextIOWrapper(raw, encoding="ascii", write_through=True))
    output.echo("\x1b[1;33mhit\x1b[0m café")
    assert raw.getvalue() == b"hit caf?\n"


def test_an_ascii_terminal_gets_replacement_characters_not_a_traceback(helixctl: RunCli) -> None:
    odd = "cfg-é.toml"
    proc = helixctl("--config", f"/nowhere/{odd}", "config", "path", PYTHONIOENCODING="ascii")
    assert proc.stdout == "/nowhere/cfg-?.toml (absent: defaults apply)\n"


def test_a_reader_that_goes_away_ends_the_command_quietly(helixctl: RunCli) -> None:
    """``helixctl … | head``: the pipe closes before the command writes; exit 1, no traceback
    (click's behaviour, kept)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.cli.main", "config", "example"],
        env=helixctl.env,  # type: ignore[attr-defined]
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # before the interpreter has even started
    with proc.stderr:
        err = proc.stderr.read().decode()
    assert proc.wait(60) == 1 and err == ""


def test_ctrl_c_says_aborted_without_a_traceback(helixctl: RunCli) -> None:
    """A command that runs until interrupted (``mcp`` serving stdin): Ctrl-C ends it with
    "Aborted!" and exit 1, as click did."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.cli.main", "mcp"],
        env=helixctl.env,  # type: ignore[attr-defined]
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=REPO,
    )
    # Interrupted once it serves (its answer to ``initialize``; a fixed sleep raced the
    # start-up under load), with stdin still open: closing it ends the server normally.
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(
        b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
        b'"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}\n'
    )
    proc.stdin.flush()
    ready, _, _ = select.select([proc.stdout], [], [], 60)
    assert ready and b'"id":1' in proc.stdout.readline()
    proc.send_signal(signal.SIGINT)
    proc.wait(timeout=60)
    err = proc.stderr.read()
    proc.stdin.close()
    proc.stdout.close()
    proc.stderr.close()
    assert proc.returncode == 1 and err.decode() == "\nAborted!\n", err.decode()[-2000:]


def test_a_commands_list_takes_values_after_its_options_as_click_did(tmp_path: Path) -> None:
    """``hooks status claude --json codex``: argparse alone stops AGENT… at ``--json`` and
    refused ``codex`` (review finding); the values after an option join the list."""
    import json

    result = CliRunner().invoke(
        main, ["hooks", "status", "claude", "--json", "codex"], env={"HOME": str(tmp_path)}
    )
    assert result.exit_code == 0, result.output
    assert {row["agent"] for row in json.loads(result.stdout)} == {"claude", "codex"}
    bad = CliRunner().invoke(main, ["search", "x", "--bogus", "y"], env={"HOME": str(tmp_path)})
    assert bad.exit_code == 2 and "unrecognized arguments: --bogus y" in bad.stderr
    assert "usage: helixctl search" in bad.stderr  # the command's own usage line
