"""The configuration file's vocabulary: every section and key it may hold, the design spec's
names read as Helix's (``spec_aliases``) and the error naming an unknown one with the closest
valid name (``check_keys``).  Shared by the cheap reader (``helixd.readconfig``) and the full
model (``helixd.config``), so that both refuse the same files with the same words."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final


class ConfigError(ValueError):
    """The configuration file or environment is invalid; the message says where."""


# Every key of the config file, by section (``tests/test_readconfig.py`` checks this against
# the full model): a key not here is a typo, named with the closest valid one even by reads.
KNOWN_KEYS: Final[dict[str, frozenset[str]]] = {
    "store": frozenset({"db"}),
    "ingest": frozenset({"chunk_bytes", "max_line_bytes"}),
    "daemon": frozenset(
        {
            "watch",
            "debounce_ms",
            "reconcile_seconds",
            "fallback_scan_seconds",
            "analyze_seconds",
            "evict_seconds",
            "renormalize_seconds",
            "idle_close_minutes",
            "max_read_bytes",
            "shutdown_seconds",
            "log_level",
            "busy_timeout_ms",
            "retry_max_seconds",
            "file_retry_seconds",
            "file_retry_max_seconds",
        }
    ),
    "retention": frozenset(
        {
            "raw_soft_cap_bytes",
            "raw_hard_cap_bytes",
            "raw_max_age_days",
            "distilled_cap_bytes",
            "stage_payloads_first",
            "backstop_keeps_events",
        }
    ),
    "web": frozenset({"enabled", "host", "port", "allowed_hosts"}),
    "agents": frozenset(),  # a table per agent: AGENT_KEYS
    "prices": frozenset({"table", "models"}),
    "fleet": frozenset(
        {
            "dsn",
            "password_file",
            "machine",
            "user",
            "include_text",
            "push_seconds",
            "batch_rows",
            "retry_max_seconds",
            "outbox_warn_rows",
            "connect_timeout_seconds",
        }
    ),
    "repos": frozenset({"domains", "default_domain", "task_ref_patterns", "resolve_git"}),
}
AGENT_KEYS: Final = frozenset({"enabled", "roots"})


CADENCE_SECONDS: Final = {"hourly": 3600, "daily": 86_400, "weekly": 604_800}


def spec_aliases(doc: dict[str, Any], path: Path) -> dict[str, Any]:
    """The document with the design spec's names read as Helix's: ``[session_memory.retention]``
    is ``[retention]``, its ``cadence`` (``hourly``/``daily``/``weekly``) is
    ``[daemon].evict_seconds``, ``[store].db_path`` is ``[store].db``.  A key set under both
    names is a ConfigError naming both; so is what has no Helix equivalent."""
    if not any(k in doc for k in ("session_memory", "store", "retention")):
        return doc
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in doc.items()}
    where = f"invalid configuration ({path})"

    def move(section: str, key: str, value: Any, spec_name: str) -> None:
        table = out.setdefault(section, {})
        if not isinstance(table, dict):
            return  # check_keys says it must be a table
        if key in table:
            raise ConfigError(f"{where}: {spec_name} and {key} in [{section}] are the same key")
        table[key] = value

    memory = out.pop("session_memory", None)
    if memory is not None:
        if not isinstance(memory, dict):
            raise ConfigError(f"{where}: [session_memory] must be a table")
        for sub, table in memory.items():
            if sub != "retention" or not isinstance(table, dict):
                raise ConfigError(
                    f"{where}: unknown section [session_memory.{sub}] (of the design spec's"
                    " [session_memory] tables Helix reads [session_memory.retention], as"
                    " [retention])"
                )
            for key, value in table.items():
                move("retention", key, value, f"{key} in [session_memory.retention]")
    retention = out.get("retention")
    if isinstance(retention, dict) and "cadence" in retention:
        cadence = retention.pop("cadence")
        seconds = CADENCE_SECONDS.get(str(cadence).lower()) if isinstance(cadence, str) else None
        if seconds is None:
            raise ConfigError(
                f"{where}: cadence = {cadence!r} in [retention]: Helix reads hourly, daily or"
                " weekly (the retention pass's interval, [daemon].evict_seconds); helixd"
                " ingests as the files change, and `helixctl hooks install` wires the agents'"
                " hooks to it"
            )
        move("daemon", "evict_seconds", seconds, "cadence in [retention]")
    store = out.get("store")
    if isinstance(store, dict) and "db_path" in store:
        move("store", "db", store.pop("db_path"), "db_path in [store]")
    return out


def _closest(word: str, choices: frozenset[str] | dict[str, frozenset[str]]) -> str:
    import difflib

    near = difflib.get_close_matches(word, sorted(choices), n=1, cutoff=0.4)
    return f"; did you mean {near[0]!r}?" if near else f" (valid: {', '.join(sorted(choices))})"


def check_keys(doc: dict[str, Any], path: Path) -> None:
    """ConfigError naming an unknown section or key, its section, and the closest valid one."""
    for section, table in doc.items():
        if section not in KNOWN_KEYS:
            raise ConfigError(
                f"invalid configuration ({path}): unknown section [{section}]"
                + _closest(section, KNOWN_KEYS)
            )
        if not isinstance(table, dict):
            raise ConfigError(f"invalid configuration ({path}): [{section}] must be a table")
        if section == "agents":
            for agent, keys in table.items():
                for key in keys if isinstance(keys, dict) else ():
                    if key not in AGENT_KEYS:
                        raise ConfigError(
                            f"invalid configuration ({path}): unknown key {key!r} in"
                            f" [agents.{agent}]" + _closest(key, AGENT_KEYS)
                        )
            continue
        for key in table:
            if key not in KNOWN_KEYS[section] and not (section == "prices" and key == "models"):
                raise ConfigError(
                    f"invalid configuration ({path}): unknown key {key!r} in [{section}]"
                    + _closest(key, KNOWN_KEYS[section])
                )
