"""The control socket always replies or closes cleanly (issue 11, item 9): wrong types, deep
nesting, invalid UTF-8, a 100 MB line, half-open and vanishing clients, a full accept queue.
The real daemon as a subprocess and a real Unix socket; afterwards the daemon still answers
and its log shows no unhandled exception."""

from __future__ import annotations

import json
import signal
import socket
import threading
import time

import pytest

from helixd.core import protocol
from tests.daemon_helpers import Helixd, exchange


def sock_of(d: Helixd) -> str:
    return d.env["HELIX_SOCKET"]


PING = b'{"v":1,"op":"ping"}\n'
WRONG = [
    b'{"v":1,"op":["ping"]}',
    b'{"v":1,"op":{"ping":1}}',
    b'{"v":1,"op":7}',
    b'{"v":1,"op":true}',
    b'{"v":1,"op":null}',
    b'{"v":[1],"op":"ping"}',
    b'{"v":true,"op":"ping"}',
    b'{"v":1,"op":"flush","timeout":"soon"}',
    b'{"v":1,"op":"flush","timeout":-1}',
    b'{"v":1,"op":"flush","timeout":1e999}',
    b'{"v":1,"op":"flush","timeout":' + b"9" * 4000 + b"}",
    b'{"v":1,"op":"hook","agent":["claude"],"payload":{}}',
    b'{"v":1,"op":"hook","agent":"","payload":{}}',
    b'{"v":1,"op":"hook","agent":"' + b"a" * 500 + b'","payload":{}}',
    b'{"v":1,"op":"hook","agent":"claude","payload":[1]}',
    b"[" * 100_000 + b"]" * 100_000,
    b'{"op":"ping","x":' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b'{"hook_event_name":"Stop","payload":' + b'{"a":' * 50_000 + b"1" + b"}" * 50_000 + b"}",
    b'{"v":1,"op":"ping"\xff\xfe}',
    b"\xc3\x28\xa0\xa1",
    b"\x00" * 100,
    b"1e999",
    b'"just a string"',
]
HOOKS_THAT_ARE_SERVED = [
    # odd but harmless values: each is served (a reconcile) and the session is not ended
    b'{"hook_event_name":["SessionEnd"],"session_id":"x"}',
    b'{"hook_event_name":"Stop","transcript_path":["/etc/passwd"]}',
    b'{"hook_event_name":"Stop","transcript_path":42,"session_id":{"x":1}}',
    b'{"v":1,"op":"hook","agent":"claude","payload":{},"env":{"GROK_X":["a"],"K":{}}}',
]


@pytest.fixture
def running(daemon: Helixd) -> Helixd:
    return daemon.start()


def _clean_exit(d: Helixd) -> None:
    assert d.stop() == 0
    for bad in ("Traceback", "client_connected_cb", "Unhandled exception", "connection_failed"):
        assert bad not in d.stderr, d.stderr[-3000:]


def test_every_malformed_request_gets_an_error_reply_and_the_connection_stays_usable(
    running: Helixd,
) -> None:
    path = sock_of(running)
    for bad in WRONG:
        replies = exchange(path, bad + b"\n" + PING)
        assert len(replies) == 2, (bad[:60], replies)
        assert replies[0]["ok"] is False and replies[0]["error"], bad[:60]
        assert replies[1]["ok"] is True and replies[1]["pong"] is True, bad[:60]
    for odd in HOOKS_THAT_ARE_SERVED:
        replies = exchange(path, odd + b"\n" + PING)
        assert [r["ok"] for r in replies] == [True, True], (odd, replies)
        assert replies[0]["session_end"] is False
    nested = exchange(path, b"[" * 100_000 + b"]" * 100_000 + b"\n")
    assert "nested deeper than" in str(nested[0]["error"])
    _clean_exit(running)


def test_a_100_mb_line_gets_a_reply_and_the_next_request_is_served(running: Helixd) -> None:
    path = sock_of(running)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(60)
        s.connect(path)
        block = b"x" * (1 << 20)
        for _ in range(100):
            s.sendall(block)
        s.sendall(b"\n" + PING)
        s.shutdown(socket.SHUT_WR)
        buf = b""
        while chunk := s.recv(1 << 16):
            buf += chunk
    replies = [json.loads(x) for x in buf.splitlines()]
    assert [r["ok"] for r in replies] == [False, True]
    assert replies[0]["error"] == f"line longer than {protocol.MAX_LINE} bytes"
    # and one that ends without a newline: an error reply, then a clean close
    replies = exchange(path, b"y" * (5 << 20))
    assert [r["ok"] for r in replies] == [False]
    _clean_exit(running)


def test_half_open_silent_and_vanishing_clients_never_disturb_the_others(running: Helixd) -> None:
    path = sock_of(running)
    # half-open: requests, then SHUT_WR: every reply still comes, then a clean close
    assert [r["ok"] for r in exchange(path, PING * 3)] == [True] * 3
    # connect and close at once; send a request and reset before the reply
    for _ in range(50):
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.connect(path)
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        s.sendall(b'{"v":1,"op":"status"}\n')
        s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        s.close()
    # a half line, then nothing: closed by the idle timeout; meanwhile others are served
    hanging = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    hanging.connect(path)
    hanging.sendall(b'{"v":1,"op":"pi')
    t0 = time.monotonic()
    assert exchange(path, PING)[0]["ok"] is True
    assert time.monotonic() - t0 < 1.0
    hanging.close()
    _clean_exit(running)


def test_a_thousand_clients_queue_in_the_backlog_while_the_daemon_is_paused(
    running: Helixd,
) -> None:
    """listen(1024) reaches the socket: with the daemon stopped (SIGSTOP) 1 000 connects
    wait in the kernel's accept queue instead of failing (the default of 100 would refuse
    the 102nd), and every one is answered once it resumes."""
    assert running.proc is not None
    path = sock_of(running)
    clients: list[socket.socket] = []
    running.proc.send_signal(signal.SIGSTOP)
    try:
        for _ in range(1000):
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.setblocking(False)
            try:
                c.connect(path)
            except BlockingIOError:
                c.close()
                break
            clients.append(c)
    finally:
        running.proc.send_signal(signal.SIGCONT)
    assert len(clients) == 1000
    answered: list[int] = []

    def serve(chunk: list[socket.socket]) -> None:
        for c in chunk:
            c.setblocking(True)
            c.settimeout(30)
            c.sendall(PING)
            answered.append(int(b'"pong":true' in c.recv(4096)))

    threads = [threading.Thread(target=serve, args=(clients[i::8],)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for c in clients:
        c.close()
    assert sum(answered) == 1000
    _clean_exit(running)
