"""Where the daemon's socket and the hook spool live (standard library only: the hook entry
point imports this).

* socket: ``$HELIX_SOCKET``, else ``$XDG_RUNTIME_DIR/helix/helixd.sock``, else the state
  directory's ``helixd.sock``;
* state directory: ``$HELIX_STATE_DIR``, else ``$XDG_STATE_HOME/helix`` (``~/.local/state``)
  on Linux, ``~/Library/Application Support/helix`` on macOS;
* spool: ``<state dir>/hook-spool.ndjson`` (hook messages written while the daemon is down).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

MAX_SUN_PATH = 104  # macOS; Linux allows 108


def state_dir(environ: Mapping[str, str] = os.environ) -> Path:
    if environ.get("HELIX_STATE_DIR"):
        return Path(environ["HELIX_STATE_DIR"])
    home = Path(environ.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Application Support" / "helix"
    return Path(environ.get("XDG_STATE_HOME") or home / ".local" / "state") / "helix"


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Rebuildable data (the flattened price data): ``$HELIX_CACHE_DIR``, else
    ``$XDG_CACHE_HOME/helix`` (``~/.cache``) on Linux, ``~/Library/Caches/helix`` on macOS."""
    if environ.get("HELIX_CACHE_DIR"):
        return Path(environ["HELIX_CACHE_DIR"])
    home = Path(environ.get("HOME") or Path.home())
    if sys.platform == "darwin":
        return home / "Library" / "Caches" / "helix"
    return Path(environ.get("XDG_CACHE_HOME") or home / ".cache") / "helix"


def socket_path(environ: Mapping[str, str] = os.environ) -> Path:
    if environ.get("HELIX_SOCKET"):
        return Path(environ["HELIX_SOCKET"])
    runtime = environ.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "helix" / "helixd.sock"
    return state_dir(environ) / "helixd.sock"


def spool_path(environ: Mapping[str, str] = os.environ) -> Path:
    return state_dir(environ) / "hook-spool.ndjson"


def check_socket_path(path: Path) -> None:
    """Raise ValueError when ``path`` is too long for ``sun_path``."""
    if len(os.fsencode(path)) >= MAX_SUN_PATH:
        raise ValueError(
            f"socket path too long for a Unix socket ({len(str(path))} bytes): "
            f"{path}; set HELIX_SOCKET to a shorter path"
        )


def default_store_path(environ: Mapping[str, str] = os.environ) -> Path:
    """The embedded default store: SQLite in the user's data directory (platformdirs'
    ``user_data_dir``, worked out here on Linux and macOS without importing it: the status
    line reads this on every message)."""
    home = environ.get("HOME")
    if sys.platform == "darwin" and home:
        return Path(home) / "Library" / "Application Support" / "helix" / "helix.db"
    if sys.platform.startswith("linux") and home:
        base = environ.get("XDG_DATA_HOME", "").strip() or os.path.join(home, ".local", "share")
        return Path(base) / "helix" / "helix.db"
    import platformdirs

    return Path(platformdirs.user_data_dir("helix")) / "helix.db"


def default_config_path(environ: Mapping[str, str] = os.environ) -> Path:
    """platformdirs' ``user_config_dir``, worked out here on Linux and macOS."""
    home = environ.get("HOME")
    if sys.platform == "darwin" and home:
        return Path(home) / "Library" / "Application Support" / "helix" / "config.toml"
    if sys.platform.startswith("linux") and home:
        base = environ.get("XDG_CONFIG_HOME", "").strip() or os.path.join(home, ".config")
        return Path(base) / "helix" / "config.toml"
    import platformdirs

    return Path(platformdirs.user_config_dir("helix")) / "config.toml"


def config_path_in_use(config: Path | None = None) -> Path:
    """``--config``, else ``$HELIX_CONFIG``, else the platform's user config file."""
    if config is not None:
        return config
    env = os.environ.get("HELIX_CONFIG")
    return Path(env) if env else default_config_path()


def config_may_set_prices(config: Path | None = None) -> bool:
    """Whether the config could change prices (a config file exists, or a
    ``HELIX_PRICES__*`` variable is set): report fast paths load the settings only then."""
    if any(k.startswith("HELIX_PRICES__") for k in os.environ):
        return True
    return config_path_in_use(config).is_file()


def data_file(name: str) -> Path:
    """A file shipped inside the package (``helixd/data/``): the service templates, the
    example config, the hook script.  Present in a wheel install as in a checkout."""
    return Path(__file__).resolve().parent / "data" / name
