"""sd_notify without a dependency (the protocol is stable: systemd's sd_notify(3) and its
MIT-0 example).  Every call is a no-op when ``NOTIFY_SOCKET`` is unset (launchd, tests,
a foreground run)."""

from __future__ import annotations

import os
import socket


def notify(message: str) -> bool:
    """Send ``KEY=value`` lines to the service manager; True when sent."""
    address = os.environ.get("NOTIFY_SOCKET")
    if not address:
        return False
    if address.startswith("@"):
        address = "\0" + address[1:]  # abstract namespace
    try:
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC) as sock:
            sock.connect(address)
            sock.sendall(message.encode())
    except OSError:
        return False
    return True


def watchdog_interval() -> float | None:
    """Seconds between WATCHDOG=1 pings (half of ``WATCHDOG_USEC``), if systemd asks."""
    usec = os.environ.get("WATCHDOG_USEC")
    pid = os.environ.get("WATCHDOG_PID")
    if not usec or (pid and pid != str(os.getpid())):
        return None
    try:
        return int(usec) / 2_000_000
    except ValueError:
        return None
