"""The helixd service files: rendering the templates shipped in the package
(``helixd/data/systemd/``, ``helixd/data/launchd/``) for the current user, and the
service-manager commands that enable and disable them.

Pure helpers (render, paths, command lists); ``helixctl service`` in ``cli/install.py`` does
the writing and runs the commands.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from xml.sax.saxutils import escape

from helixd.paths import data_file

Manager = Literal["systemd", "launchd"]

LABEL = "dev.helix.helixd"
UNITS = ("helixd.socket", "helixd.service")


class TemplateMissing(Exception):
    pass


@dataclass(frozen=True)
class ServiceFile:
    path: Path
    text: str


def _template(rel: str) -> str:
    path = data_file(rel)
    try:
        return path.read_text()
    except FileNotFoundError:
        raise TemplateMissing(
            f"service template {path} is missing from the installed package; reinstall "
            "helix-memory (pip install --force-reinstall helix-memory)"
        ) from None


def systemd_exec(path: str) -> str:
    """``path`` as a systemd ExecStart= command: ``%`` escaped, quoted when it has spaces."""
    path = path.replace("%", "%%")
    if re.search(r"\s|[\"'\\]", path):
        return '"' + path.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return path


def unit_dir(home: Path, env: Mapping[str, str]) -> Path:
    base = env.get("XDG_CONFIG_HOME") or str(home / ".config")
    return Path(base) / "systemd" / "user"


def log_dir(home: Path) -> Path:
    return home / "Library" / "Logs" / "helix"


def plist_path(home: Path) -> Path:
    return home / "Library" / "LaunchAgents" / f"{LABEL}.plist"


def render(manager: Manager, helixd: str, home: Path, env: Mapping[str, str]) -> list[ServiceFile]:
    """The files ``service install`` writes, with ``helixd`` (absolute) filled in."""
    if not os.path.isabs(helixd):
        raise ValueError(f"helixd path must be absolute: {helixd}")
    if manager == "systemd":
        d = unit_dir(home, env)
        return [
            ServiceFile(d / "helixd.socket", _template("systemd/helixd.socket")),
            ServiceFile(
                d / "helixd.service",
                _template("systemd/helixd.service").replace("@HELIXD@", systemd_exec(helixd)),
            ),
        ]
    text = (
        _template(f"launchd/{LABEL}.plist")
        .replace("@HELIXD@", escape(helixd))
        .replace("@LOGDIR@", escape(str(log_dir(home))))
    )
    return [ServiceFile(plist_path(home), text)]


def install_commands(manager: Manager, home: Path, uid: int) -> list[list[str]]:
    if manager == "systemd":
        return [
            ["systemctl", "--user", "daemon-reload"],
            ["systemctl", "--user", "enable", "--now", *UNITS],
        ]
    return [
        ["launchctl", "bootout", f"gui/{uid}/{LABEL}"],  # "not loaded" is fine on a reinstall
        ["launchctl", "bootstrap", f"gui/{uid}", str(plist_path(home))],
    ]


def uninstall_commands(manager: Manager, uid: int) -> list[list[str]]:
    if manager == "systemd":
        return [["systemctl", "--user", "disable", "--now", *reversed(UNITS)]]
    return [["launchctl", "bootout", f"gui/{uid}/{LABEL}"]]


def status_commands(manager: Manager, uid: int) -> list[list[str]]:
    if manager == "systemd":
        return [
            ["systemctl", "--user", "is-enabled", *UNITS],
            ["systemctl", "--user", "is-active", *UNITS],
        ]
    return [["launchctl", "print", f"gui/{uid}/{LABEL}"]]
