"""Safe file replacement for the installers: timestamped backups, atomic writes, diffs.

A write goes to a temporary file in the target's directory, is fsynced, keeps the target's
mode and replaces it with ``os.replace``; the directory is fsynced after.  A symlinked target
(dotfile managers) is written through: the link stays, its target changes.
"""

from __future__ import annotations

import difflib
import os
import shutil
import tempfile
from datetime import UTC, datetime
from pathlib import Path

from helixd.filemodes import open_private, private_dir
from helixd.ops.hooks.jsonedit import HookFileError
from helixd.sources.gate import VANISHED, Refused, open_regular


def read(path: Path) -> str | None:
    """The file's text, or None when it does not exist; ``HookFileError`` when it is no
    regular file (a FIFO there is refused, not waited on) or not UTF-8."""
    try:
        with open_regular(path, follow_links=True) as f:
            data = f.read()
    except Refused as exc:
        if exc.reason == VANISHED:
            return None
        raise HookFileError(f"{exc}; left untouched") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise HookFileError(f"{path} is not UTF-8 ({exc}); left untouched") from None


def backup(path: Path, backup_dir: Path) -> Path:
    """Copy ``path`` to ``backup_dir/<name>.<UTC timestamp>`` (0600, in a 0700 directory,
    whatever the umask) and return the copy."""
    private_dir(backup_dir)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S.%fZ")
    dest = backup_dir / f"{path.name}.{stamp}"
    with (
        open_regular(path, follow_links=True) as src,
        os.fdopen(open_private(dest, os.O_WRONLY | os.O_EXCL), "wb") as out,
    ):
        shutil.copyfileobj(src, out)
    return dest


def _fsync_dir(directory: Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(path: Path, text: str, new_mode: int = 0o600, *, own: bool = False) -> None:
    """Replace ``path`` with ``text`` atomically, keeping its mode (``new_mode`` if new); a
    file Helix owns (``own``) always gets ``new_mode``, whatever a left-over copy had."""
    target = Path(os.path.realpath(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = new_mode if own else target.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = new_mode
    fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(text.encode("utf-8"))
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def remove(path: Path) -> None:
    """Delete ``path`` (through a symlink, the link is removed) and fsync its directory."""
    path.unlink(missing_ok=True)
    _fsync_dir(path.parent)


def diff(path: Path, old: str | None, new: str | None) -> str:
    """A unified diff from ``old`` to ``new`` (None = the file does not exist)."""
    a = "/dev/null" if old is None else f"a{path}"
    b = "/dev/null" if new is None else f"b{path}"
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True), (new or "").splitlines(keepends=True), a, b
    )
    out = "".join(
        line if line.endswith("\n") else line + "\n\\ No newline at end of file\n" for line in lines
    )
    return out
