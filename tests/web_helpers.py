"""A real ``helixd`` serving the web face over a store built from the real corpus fixtures
(shared by the API, security and browser tests: one daemon per test module)."""

from __future__ import annotations

import http.client
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.conftest import FIXTURES, REPO
from tests.daemon_helpers import Helixd, wait_for

CLAUDE = "claude:fe5e1c67-53e7-4862-81ae-d0e013e3270b"  # Demo todo app: Bash, Edit, Task
PARENT = "claude:0a1b2c3d-4e5f-4061-8071-2a3b4c5d6e7f"  # has a nested subagent


@dataclass
class Served:
    daemon: Helixd
    url: str
    home: Path

    @property
    def host_port(self) -> tuple[str, int]:
        u = urlsplit(self.url)
        assert u.hostname and u.port
        return u.hostname, u.port

    def request(
        self,
        path: str,
        method: str = "GET",
        headers: dict[str, str] | None = None,
        body: bytes | None = None,
    ) -> tuple[int, dict[str, str], bytes]:
        host, port = self.host_port
        con = http.client.HTTPConnection(host, port, timeout=30)
        try:
            con.request(method, path, body=body, headers=headers or {})
            r = con.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            con.close()

    def get(self, path: str) -> Any:
        status, _, body = self.request(path)
        assert status == 200, (path, status, body[:500])
        return json.loads(body)


def build_home(home: Path) -> None:
    root = home / ".claude" / "projects"
    root.mkdir(parents=True, exist_ok=True)
    shutil.copytree(
        FIXTURES / "claude", root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("README*")
    )
    shutil.copytree(FIXTURES / "codex" / "sessions", home / ".codex" / "sessions")


def serve(tmp: Path) -> Iterator[Served]:
    home = tmp / "home"
    build_home(home)
    d = Helixd(home, tmp / "store" / "helix.db")
    subprocess.run(
        [sys.executable, "-m", "helixd.cli.main", "ingest", "--json"],
        env=d.env, cwd=REPO, check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    d.start()
    try:
        url = ""

        def published() -> bool:
            nonlocal url
            proc = d.ctl("web", "--json")
            url = json.loads(proc.stdout)["url"] if proc.returncode == 0 else ""
            return bool(url)

        wait_for(published, 10, "the web face's address")
        yield Served(d, url, home)
    finally:
        if d.proc is not None and d.proc.poll() is None:
            d.stop()
