"""Who may talk to the web face and what they may make it do: loopback only, the Host header
checked (DNS rebinding), no CORS, a per-user 0600 token for the endpoints that change
something — against a real ``helixd``; and the live feed pushed from the writer's commits."""

from __future__ import annotations

import http.client
import json
import stat
import time
from pathlib import Path

import pytest

from helixd.web.security import host_name, load_token
from tests.daemon_helpers import SID, line, project, wait_for
from tests.web_helpers import Served


def _token(s: Served) -> str:
    path = s.home / ".local" / "state" / "helix" / "web-token"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    return path.read_text().strip()


def test_the_server_listens_on_loopback_only(served: Served) -> None:
    host, port = served.host_port
    assert host == "127.0.0.1"
    import socket

    # nothing answers on the machine's other addresses
    other = socket.gethostbyname(socket.gethostname())
    if not other.startswith("127."):
        with pytest.raises(OSError), socket.create_connection((other, port), timeout=1):
            pass


def test_a_foreign_host_header_is_refused(served: Served) -> None:
    for host in ("evil.example", "evil.example:80", "127.0.0.1.evil.example"):
        status, _, body = served.request("/api/sessions", headers={"Host": host})
        assert status == 421, host
        assert b"Host" in body
    status, _, _ = served.request("/", headers={"Host": f"localhost:{served.host_port[1]}"})
    assert status == 200


def test_no_cors_and_a_strict_content_security_policy(served: Served) -> None:
    status, headers, _ = served.request("/api/sessions", headers={"Origin": "https://evil.example"})
    assert status == 200
    assert not [h for h in headers if h.startswith("access-control-")]
    status, headers, _ = served.request(
        "/api/import",
        method="OPTIONS",
        headers={"Origin": "https://evil.example", "Access-Control-Request-Method": "POST"},
    )
    assert not [h for h in headers if h.startswith("access-control-")]
    _, headers, _ = served.request("/")
    assert "script-src 'self'" in headers["content-security-policy"]
    assert headers["x-frame-options"] == "DENY"


def test_mutating_endpoints_need_the_token_and_the_same_origin(served: Served) -> None:
    token = _token(served)
    for path in ("/api/import", "/api/renormalize"):
        status, _, body = served.request(path, method="POST")
        assert status == 403 and b"x-helix-token" in body
        status, _, _ = served.request(path, method="POST", headers={"X-Helix-Token": "nope"})
        assert status == 403
        status, _, _ = served.request(
            path, method="POST", headers={"X-Helix-Token": token, "Origin": "http://evil.example"}
        )
        assert status == 403
        status, _, body = served.request(
            path,
            method="POST",
            headers={"X-Helix-Token": token, "Origin": f"http://127.0.0.1:{served.host_port[1]}"},
        )
        assert status == 202, body
        assert json.loads(body)["ok"] is True
    status, _, _ = served.request("/api/import")  # GET is not an import
    assert status == 405


def test_the_page_carries_the_token_for_its_own_origin(served: Served) -> None:
    _, _, body = served.request("/")
    assert f'<meta name="helix-token" content="{_token(served)}">'.encode() in body


def test_the_token_file_is_created_private_and_kept(tmp_path: Path) -> None:
    path = tmp_path / "state" / "web-token"
    first = load_token(path)
    assert len(first) >= 40 and stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    path.chmod(0o644)
    assert load_token(path) == first and stat.S_IMODE(path.stat().st_mode) == 0o600


def test_host_names_are_read_without_their_port() -> None:
    assert host_name("LocalHost:8080") == "localhost"
    assert host_name("[::1]:7777") == "[::1]"
    assert host_name("127.0.0.1") == "127.0.0.1"


def test_the_live_feed_pushes_a_new_session_and_its_next_line_within_a_second(
    served: Served,
) -> None:
    import threading

    got: list[tuple[float, str, dict[str, object]]] = []
    stop = time.monotonic() + 15
    host, port = served.host_port

    def listen() -> None:
        con = http.client.HTTPConnection(host, port, timeout=1)
        con.request("GET", "/api/live")
        r = con.getresponse()
        kind = ""
        try:
            while time.monotonic() < stop and not any(
                k == "session:updated"
                and d["session"]["uid"] == f"claude:{SID}"  # type: ignore[index]
                and d["session"]["events"] >= 2  # type: ignore[index]
                for _, k, d in got
            ):
                try:
                    raw = r.fp.readline()
                except TimeoutError:
                    continue
                text = raw.decode().rstrip("\n")
                if text.startswith("event: "):
                    kind = text[7:]
                elif text.startswith("data: "):
                    got.append((time.monotonic(), kind, json.loads(text[6:])))
        finally:
            con.close()

    t = threading.Thread(target=listen)
    t.start()
    wait_for(lambda: any(k == "hello" for _, k, _ in got), 5, "the feed's hello")
    path = project(served.home) / f"{SID}.jsonl"
    written = time.monotonic()
    path.write_bytes(line(0, text="live feed first line"))
    wait_for(lambda: any(k == "session:new" for _, k, _ in got), 5, "session:new on the live feed")
    new = next((at, d) for at, k, d in got if k == "session:new")
    assert new[1]["session"]["uid"] == f"claude:{SID}"  # type: ignore[index]
    assert new[0] - written < 1.0
    appended = time.monotonic()
    with path.open("ab") as f:
        f.write(line(1, "assistant", "live feed second line"))
    t.join(10)
    updated = [
        (at, d)
        for at, k, d in got
        if k == "session:updated" and d["session"]["uid"] == f"claude:{SID}"  # type: ignore[index]
    ]
    assert updated and updated[-1][1]["session"]["events"] >= 2  # type: ignore[index]
    assert updated[-1][0] - appended < 1.0
