"""The dashboard pointed at the fleet (``helixctl web --fleet``): a real server process reading
a real PostgreSQL as a ``helix_reader`` role, two machines' stores pushed into it.  Its answers
equal the sums of the machines' own answers, its machine and user filters give one machine's
own answer, a session's text shows only from a machine that ships it; and the pages load in a
real Chromium without a console error."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import shutil
import sqlite3
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.error import HTTPError
from urllib.parse import quote
from urllib.request import urlopen

import orjson
import pytest

from tests.conftest import REPO, cli_env
from tests.fleet.helpers import add_hooks, helixctl_on, push_once, target
from tests.fleet.pgcluster import Cluster
from tests.fleet.test_reports import ctl

SECRET = "reader-pw-9c1f"
VIEWS = ("/", "/sessions", "/costs", "/tools", "/files", "/tests")


@dataclass
class Fleet:
    url: str
    a: Path  # laptop (alice): Claude fixtures, Tier 2 only
    b: Path  # ci-runner (bot): Claude and Codex fixtures, with include_text
    dsn: str

    def get(self, path: str) -> Any:
        with urlopen(self.url.rstrip("/") + path, timeout=30) as resp:
            body = resp.read()
            return orjson.loads(body) if path.startswith("/api/") else body.decode()


@contextlib.contextmanager
def serving(db: Path, dsn: str, password: str | None = None) -> Iterator[str]:
    """``helixctl web --fleet`` as a real process on any free port: its URL."""
    extra = {"HELIX_FLEET__DSN": dsn, **({"HELIX_FLEET_PASSWORD": password} if password else {})}
    proc = subprocess.Popen(
        [sys.executable, "-m", "helixd.cli.main", "web", "--fleet", "--port", "0", "--no-open"],
        env=cli_env(db.parent, db, **extra),
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None and proc.stderr is not None
        first = proc.stdout.readline()
        assert first.startswith("http://127.0.0.1:"), (first, proc.stderr.read())
        yield first.strip()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        for stream in (proc.stdout, proc.stderr):
            if stream:
                stream.close()


@pytest.fixture
def fleet_web(make_store: Any, pg_server: Cluster, pg_db: str) -> Iterator[Fleet]:
    dbname = pg_db.split("dbname=")[1].split()[0]
    reader = f"viewer_{uuid.uuid4().hex[:6]}"
    pg_server.sql(
        "DO $$ BEGIN CREATE ROLE helix_reader NOLOGIN; EXCEPTION WHEN duplicate_object THEN"
        " NULL; END $$"
    )
    pg_server.sql(f"CREATE ROLE {reader} LOGIN PASSWORD '{SECRET}' IN ROLE helix_reader")
    a, b = make_store("claude", "a"), make_store("both", "b")
    add_hooks(a, 3)
    add_hooks(b, 5)
    # (the pushes migrate, and grant the tables to helix_reader, which exists now)
    asyncio.run(push_once(a, target(pg_db, "laptop", user="alice")))
    asyncio.run(push_once(b, target(pg_db, "ci-runner", user="bot", include_text=True)))
    try:
        with serving(a, pg_server.dsn(dbname, reader), SECRET) as url:
            yield Fleet(url, a, b, pg_db)
    finally:
        pg_server.sql(f"DROP OWNED BY {reader} CASCADE", dbname)
        pg_server.sql(f"DROP ROLE {reader}")


def _local_acceptance(db: Path) -> tuple[int, int]:
    from starlette.datastructures import QueryParams

    from helixd.query import open_reader, signal_metrics
    from helixd.web import params

    con = open_reader(db)
    try:
        doc = signal_metrics.acceptance(con, params.filters(QueryParams("range=all")).scope())
    finally:
        con.close()
    return doc["total"]["accepted"], doc["total"]["rejected"]


def _rows(db: Path, sql: str) -> list[Any]:
    con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _hooks(db: Path) -> int:
    return int(_rows(db, "SELECT count(*) FROM hook_events")[0][0])


def test_fleet_api_answers_are_the_sums_of_the_machines_own(fleet_web: Fleet) -> None:
    f = fleet_web
    health = f.get("/api/health")
    assert health["ok"] is True and health["source"] == "fleet"
    machines = {m["machine"]: m for m in f.get("/api/machines")["machines"]}
    assert {k: (m["user"], m["include_text"]) for k, m in machines.items()} == {
        "laptop": ("alice", False),
        "ci-runner": ("bot", True),
    }
    mine, theirs = ctl(f.a, "stats"), ctl(f.b, "stats")
    stats = f.get("/api/stats?top=1000")
    for dim in ("by_agent", "by_model"):
        for key in mine[dim].keys() | theirs[dim].keys():
            x, y = mine[dim].get(key, {}), theirs[dim].get(key, {})
            assert stats[dim][key]["sessions"] == x.get("sessions", 0) + y.get("sessions", 0)
            assert stats[dim][key]["tokens"] == x.get("tokens", 0) + y.get("tokens", 0)
            assert stats[dim][key]["cost"] == pytest.approx(x.get("cost", 0) + y.get("cost", 0))
    calls = {t["tool"]: t["calls"] for t in stats["tools"]}
    for t in mine["tools"] + theirs["tools"]:
        calls[t["tool"]] -= t["calls"]
    assert set(calls.values()) == {0}
    for fw, v in stats["tests"].items():
        assert v["runs"] == mine["tests"].get(fw, {}).get("runs", 0) + theirs["tests"].get(
            fw, {}
        ).get("runs", 0)
    assert set(stats["by_machine"]) == {"laptop", "ci-runner"}
    assert set(stats["by_user"]) == {"alice", "bot"}

    # a view asks only for the part it shows: the same numbers, nothing else read
    from helixd.prices import effective
    from helixd.query import fleet as fleet_query

    conn = fleet_query.open_fleet(f.dsn, None)
    try:
        table = effective(None, {})[1]
        whole = fleet_query.stats(conn, None, 1000, table)
        for part in ("tools", "files", "tests"):
            alone = fleet_query.stats(conn, None, 1000, table, parts=(part,))
            assert alone[part] == whole[part] and alone[part], part
            assert not alone["by_model"] and not alone["by_machine"], part
        overview = fleet_query.stats(
            conn, None, 1000, table, parts=("sessions", "usage", "model_sessions")
        )
        for key in ("by_machine", "by_user", "by_agent", "by_model"):
            assert overview[key] == whole[key], key
        assert not overview["tools"] and not overview["files"]
    finally:
        conn.close()

    # one machine or one user asked for: that machine's own answer
    only = f.get("/api/stats?top=1000&machine=laptop")
    assert {k: v["tokens"] for k, v in only["by_agent"].items()} == {
        k: v["tokens"] for k, v in mine["by_agent"].items()
    }
    assert set(f.get("/api/stats?user=bot")["by_machine"]) == {"ci-runner"}

    daily = f.get("/api/reports/daily")
    own = [ctl(db, "report", "daily", "-z", "UTC")["totals"] for db in (f.a, f.b)]
    assert daily["totals"]["totalTokens"] == sum(t["totalTokens"] for t in own)
    assert daily["totals"]["totalCost"] == pytest.approx(sum(t["totalCost"] for t in own))
    split = {m["machine"]: m["totalTokens"] for m in daily["machines"]}
    assert split == {"laptop": own[0]["totalTokens"], "ci-runner": own[1]["totalTokens"]}
    sessions = f.get("/api/reports/session")["sessions"]
    assert len(sessions) == sum(len(ctl(db, "report", "session")["sessions"]) for db in (f.a, f.b))

    acc = {m["machine"]: m for m in f.get("/api/acceptance")["machines"]}
    for name, db in (("laptop", f.a), ("ci-runner", f.b)):
        accepted, rejected = _local_acceptance(db)
        assert (acc[name]["accepted"], acc[name]["rejected"]) == (accepted, rejected), name
    assert acc["laptop"]["accepted"] > 0
    hooks = f.get("/api/hooks")["hook_activity"]
    assert sum(h["events"] for h in hooks) == _hooks(f.a) + _hooks(f.b) == 8
    assert {h["machine"] for h in f.get("/api/hooks?user=alice")["hook_activity"]} == {"laptop"}

    # days: only what happened since then (the hook events here are from October 2025)
    assert f.get("/api/hooks?days=1")["hook_activity"] == []
    # a window that cuts the fixtures' edits in two: from the day of the median edit
    times = sorted(
        t for db in (f.a, f.b) for (t,) in _rows(db, "SELECT ts FROM file_operations") if t
    )
    days = math.ceil((time.time() * 1000 - times[len(times) // 2]) / 86_400_000)
    since = int((time.time() - days * 86400) * 1000)
    recent = sum(1 for t in times if t >= since)
    assert 0 < recent < len(times)
    assert sum(m["edits"] for m in f.get(f"/api/acceptance?days={days}")["machines"]) == recent


def test_a_session_shows_its_text_only_from_a_machine_that_ships_it(fleet_web: Fleet) -> None:
    f = fleet_web
    shared = sorted(
        set(e["sessionId"] for e in ctl(f.a, "report", "session")["sessions"])
        & set(e["sessionId"] for e in ctl(f.b, "report", "session")["sessions"])
    )
    uid = shared[0]  # the Claude fixtures are on both machines
    doc = f.get(f"/api/sessions/{quote(uid, safe=':')}")
    held = {m["machine"]: m for m in doc["machines"]}
    assert held["laptop"]["events"] is None
    assert "stays on its machine" in held["laptop"]["note"]
    assert held["ci-runner"]["events"] and held["ci-runner"]["note"] is None
    page = f.get(f"/sessions/{quote(uid, safe=':')}")
    assert "stays on its machine" in page and 'id="transcript"' in page
    with pytest.raises(HTTPError) as missing:
        f.get("/api/sessions/claude:nope")
    assert missing.value.code == 404
    missing.value.close()


def test_fleet_pages_and_bad_parameters(fleet_web: Fleet) -> None:
    f = fleet_web
    for path in VIEWS:
        page = f.get(path)
        assert 'data-source="fleet"' in page and "laptop" in page, path
    assert (
        "ci-runner"
        not in f.get("/?machine=laptop").split('id="by-machine"')[1].split("</section>")[0]
    )
    for bad in ("/api/stats?days=x", "/api/stats?top=0", "/costs?days=-1", "/sessions?limit=0"):
        with pytest.raises(HTTPError) as err:
            f.get(bad)
        assert err.value.code == 400, bad
        err.value.close()
    with pytest.raises(HTTPError) as nope:
        f.get("/api/reports/hourly")
    assert nope.value.code == 404
    nope.value.close()
    # read-only: nothing to POST to
    from urllib.request import Request

    with pytest.raises(HTTPError) as post:
        urlopen(Request(f.url + "api/stats", data=b"{}", method="POST"), timeout=10)
    assert post.value.code == 405
    post.value.close()


def test_web_fleet_needs_a_readable_fleet(make_store: Any, pg_server: Cluster) -> None:
    db = make_store("claude")
    run = [sys.executable, "-m", "helixd.cli.main", "web", "--fleet", "--port", "0"]
    proc = subprocess.run(
        run,
        env=cli_env(db.parent, db, HELIX_FLEET__DSN=pg_server.dsn("postgres")),
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 3 and "no Helix fleet schema" in proc.stderr
    none = subprocess.run(run, env=cli_env(db.parent, db), cwd=REPO, capture_output=True,
                          text=True, timeout=60)  # fmt: skip
    assert none.returncode == 2 and "no fleet database configured" in none.stderr
    mixed = helixctl_on(db, "web", "--port", "0")
    assert mixed.returncode == 2 and "need --fleet" in mixed.stderr


def test_a_fleet_server_that_restarts_is_503_then_read_again(
    make_store: Any, pg_own: Cluster
) -> None:
    pg_own.sql("CREATE DATABASE fleet")
    db = make_store("claude")
    asyncio.run(push_once(db, target(pg_own.dsn("fleet"), "laptop")))
    with serving(db, pg_own.dsn("fleet")) as url:
        f = Fleet(url, db, db, pg_own.dsn("fleet"))
        assert [m["machine"] for m in f.get("/api/machines")["machines"]] == ["laptop"]
        pg_own.stop()
        for path in ("/api/machines", "/api/health", "/tools"):
            with pytest.raises(HTTPError) as down:
                f.get(path)
            assert down.value.code == 503, path
            body = down.value.read().decode()
            down.value.close()
            assert "fleet database" in body or "cannot connect" in body, (path, body)
        pg_own.start()
        assert [m["machine"] for m in f.get("/api/machines")["machines"]] == ["laptop"]
        assert "laptop" in f.get("/tools")


CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"


@pytest.mark.skipif(
    not Path(CHROMIUM).exists() and not os.environ.get("CI"), reason="no Debian chromium"
)
def test_fleet_views_in_chromium_without_a_console_error(fleet_web: Fleet) -> None:
    from playwright.sync_api import sync_playwright

    from tests.test_web_browser import ARGS

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        try:
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()
            errors: list[str] = []
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.set_default_timeout(15_000)
            for path in VIEWS:
                page.goto(fleet_web.url.rstrip("/") + path)
                page.wait_for_load_state("load")
                assert page.locator("main").count() == 1, path
                assert not errors, (path, errors)
            # the machine filter: the form narrows the overview to one machine
            page.goto(fleet_web.url)
            page.select_option("#filter-machine", "ci-runner")
            page.click("#fleet-filters button[type=submit]")
            page.wait_for_url("**machine=ci-runner**")
            cells = page.locator("#by-machine tbody tr td:first-child").all_inner_texts()
            assert cells == ["ci-runner"]
            # a session row leads to its page, which says where the text is
            page.goto(fleet_web.url + "sessions?machine=laptop")
            page.locator("#sessions tbody tr td a").first.click()
            page.wait_for_url("**/sessions/*")
            assert page.locator(".text-stays").count() >= 1
            assert not errors, errors
        finally:
            browser.close()
