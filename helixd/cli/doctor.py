"""``helixctl doctor``: checks and explains, one line each, with a fix."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from helixd.cli.common import Context, describe, json_flag
from helixd.cli.output import echo

if TYPE_CHECKING:
    from argparse import ArgumentParser, Namespace


def doctor_arguments(p: ArgumentParser) -> None:
    json_flag(p, "Print the checks as JSON.")
    describe(p, doctor)


def doctor(ctx: Context, args: Namespace) -> None:
    """Check the daemon, service, hooks, socket, the store (deleted, replaced, read-only,
    corrupt, locked, what the daemon meets), files that keep failing, watch limit, the
    agents' own log retention, disk space and the fleet database.  Exit 0 when nothing
    failed, 1 otherwise."""
    from helixd import config
    from helixd.adapters.registry import REGISTRY
    from helixd.cli.common import echo_json, live_status, load_settings
    from helixd.cli.install import _resolve_exe, _targets
    from helixd.daemon.pidlock import holder
    from helixd.daemon.status import StatusFile
    from helixd.ops import checks
    from helixd.ops.hooks import state
    from helixd.sources.discover import survey

    settings = load_settings(ctx)
    from helixd.query.projects import known_projects

    projects = known_projects(settings.store.db)
    pairs = config.agent_roots(settings, REGISTRY, os.environ, Path.home(), projects)
    roots = [root for _, root in pairs]
    try:
        targets = _targets((), _resolve_exe(None), create=False)
        hook_states: list[tuple[str, str, Path]] = [(t.agent, state(t), t.path) for t in targets]
    except Exception as exc:  # an unreadable settings file must not stop the other checks
        hook_states = [("hooks", f"unreadable ({exc})", Path("?"))]
    db = settings.store.db
    live = live_status(db) or (StatusFile(db).read() if holder(db) is not None else None)
    result = checks.run_all(
        db, roots, hook_states, settings.retention.raw_hard_cap_bytes, os.environ, Path.home(), live
    )
    result.append(checks.sources(survey(pairs)))
    result.append(_fleet_check(ctx, settings))
    doc = checks.summary(result)
    if args.as_json:
        echo_json(doc)
    else:
        marks = {"ok": "ok  ", "warn": "warn", "fail": "FAIL"}
        for c in result:
            line = f"[{marks[c.level]}] {c.name}: {c.message}"
            echo(line + (f"\n         fix: {c.fix}" if c.fix else ""))
    sys.exit(0 if doc["ok"] else 1)


def _fleet_check(ctx: Context, settings: Any) -> Any:
    import time

    from helixd.cli.fleet import local_facts
    from helixd.fleet.secret import SecretError
    from helixd.fleet.target import target_from
    from helixd.ops import checks

    try:
        target = target_from(settings.fleet)
    except SecretError as exc:
        return checks.Check("fleet", "fail", str(exc), "chmod 600 the file, or fix password_file")
    facts = local_facts(settings.store.db)
    now = int(time.time() * 1000)
    return checks.fleet(target, facts, settings.fleet.outbox_warn_rows, now)
