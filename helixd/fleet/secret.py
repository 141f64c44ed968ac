"""The fleet password: from ``HELIX_FLEET_PASSWORD``, else from ``fleet.password_file``, else
none (libpq then uses ``PGPASSWORD``, ``PGPASSFILE`` or ``~/.pgpass`` by itself).

A password file must be a regular file of this user, readable by no one else (0600 or
0400), as libpq demands of ``~/.pgpass``; anything else is refused with the fix, before the
file is read."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Final

ENV: Final = "HELIX_FLEET_PASSWORD"


class SecretError(ValueError):
    """The password file cannot be used; the message says why (never its content)."""


def read_password(
    password_file: Path | None, environ: Mapping[str, str] = os.environ
) -> str | None:
    if environ.get(ENV):
        return environ[ENV]
    if password_file is None:
        return None
    path = password_file.expanduser()
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError as exc:
        raise SecretError(
            f"cannot read fleet.password_file {path}: {exc.strerror or exc}"
        ) from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise SecretError(f"fleet.password_file {path} is not a regular file")
        if st.st_uid != os.geteuid():
            raise SecretError(f"fleet.password_file {path} belongs to another user")
        if st.st_mode & 0o077:
            raise SecretError(
                f"fleet.password_file {path} is readable by others"
                f" (mode {stat.S_IMODE(st.st_mode):04o}): chmod 600 {path}"
            )
        data = os.read(fd, 64 * 1024)
    finally:
        os.close(fd)
    try:
        password = data.decode("utf-8").rstrip("\r\n")
    except UnicodeDecodeError:
        raise SecretError(f"fleet.password_file {path} is not UTF-8 text") from None
    if not password:
        raise SecretError(f"fleet.password_file {path} is empty")
    return password
