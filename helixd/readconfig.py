"""The settings a read needs, read cheaply.

Read commands (``lookup``, ``search``, ``report``, ``sessions``, ``status``, ``stats``,
``tokens``, ``env``, ``show``) answer in a few tens of milliseconds whole process; importing
pydantic-settings alone costs more than that.  This module reads only the keys a read uses —
where the store is, the price table, the retention budgets, the agents' roots — from the same
sources and in the same order as the full model (``helixd.config.Settings``):

    defaults < TOML file < HELIX_* environment (``HELIX_STORE_DB`` first)

with ``tomllib`` and ``os.environ``, and checks each value it returns (a wrong type names the
key, its section and the file).  The full model validates the whole file where the whole file
is used: the daemon, ``ingest``, ``analyze``, ``evict``, ``doctor``.  An environment variable
this reader does not interpret (a whole section as JSON, a price override of one model) makes
it build the full model instead, so the answer is always the model's.
``tests/test_readconfig.py`` checks that both agree.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final, NamedTuple

from helixd.configkeys import ConfigError, check_keys, spec_aliases
from helixd.paths import config_path_in_use, default_store_path

ENV_PREFIX: Final = "helix_"
_UNITS: Final = {
    "": 1,
    "b": 1,
    "k": 1000,
    "kb": 1000,
    "kib": 1024,
    "m": 1000**2,
    "mb": 1000**2,
    "mib": 1024**2,
    "g": 1000**3,
    "gb": 1000**3,
    "gib": 1024**3,
    "t": 1000**4,
    "tb": 1000**4,
    "tib": 1024**4,
}
PRICE_FIELDS: Final = ("input", "output", "cache_read", "cache_write_5m", "cache_write_1h")
BUDGET_KEYS: Final = ("raw_soft_cap_bytes", "raw_hard_cap_bytes", "distilled_cap_bytes")
BUDGET_DEFAULTS: Final = {
    "raw_soft_cap_bytes": 4 * 1024**3,
    "raw_hard_cap_bytes": 6 * 1024**3,
    "distilled_cap_bytes": 1024**3,
}
_TRUE: Final = frozenset({"1", "true", "yes", "on", "y", "t"})
_FALSE: Final = frozenset({"0", "false", "no", "off", "n", "f"})


def parse_bytes(value: Any) -> int:
    """``4GiB``, ``500MB``, ``1024`` -> bytes.  Raises ValueError with the accepted units."""
    if isinstance(value, bool):
        raise ValueError("a byte size, not a boolean")
    if isinstance(value, int):
        return value
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*", str(value))
    if not m or m.group(2).lower() not in _UNITS:
        raise ValueError(f"not a byte size: {value!r} (use e.g. 512MiB, 4GiB, 1000000)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


class AgentRoots(NamedTuple):
    enabled: bool = True
    roots: tuple[Path, ...] = ()  # empty: the agent's own defaults


class FleetRead(NamedTuple):
    """What reads need of ``[fleet]``: where the shared PostgreSQL is (``dsn`` empty: no
    fleet) and how this machine is named there.  Never a password."""

    dsn: str = ""
    password_file: Path | None = None
    machine: str = ""
    user: str = ""
    outbox_warn_rows: int = 1_000_000
    connect_timeout_seconds: float = 10


_NOTHING: Final[Mapping[str, Any]] = MappingProxyType({})


class ReadConfig(NamedTuple):
    """What read commands need to know.  ``path`` is the config file in use (it may not
    exist); ``store_db`` is expanded (``~``) but not resolved.  (NamedTuples, not
    dataclasses: importing ``dataclasses`` costs every read ~10 ms; ``test_read_imports``.)"""

    path: Path
    store_db: Path
    prices_table: Path | None = None
    price_overrides: Mapping[str, Mapping[str, float]] = _NOTHING
    budgets: Mapping[str, int] = MappingProxyType(BUDGET_DEFAULTS)
    agents: Mapping[str, AgentRoots] = _NOTHING
    fleet: FleetRead = FleetRead()

    def agent(self, name: str) -> AgentRoots:
        return self.agents.get(name, AgentRoots())


def read_config(config: Path | None = None, environ: Mapping[str, str] = os.environ) -> ReadConfig:
    """The read settings; ``config`` names the TOML file (it must exist when given, or when
    ``HELIX_CONFIG`` names it).  Raises ConfigError naming the key and where it was set."""
    path = config_path_in_use(config)
    explicit = config is not None or "HELIX_CONFIG" in environ
    doc: dict[str, Any] = {}
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        if explicit:
            raise ConfigError(f"config file not found: {path}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    else:
        import tomllib

        try:
            doc = tomllib.loads(data.decode("utf-8", errors="replace"))
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"invalid configuration ({path}): not TOML: {exc}") from None
    doc = spec_aliases(doc, path)
    check_keys(doc, path)
    env = _helix_env(environ)
    if not _understood(env):
        return _from_full_model(config)
    return _build(path, doc, env)


# Design spec §5.1 / §11.2 name some keys otherwise: accepted, read as Helix's own.
def _helix_env(environ: Mapping[str, str]) -> dict[str, str]:
    """``HELIX_*`` variables, names lower-cased (pydantic-settings matches them without case),
    except ``HELIX_STORE_DB``: the spec's name, read as written by every consumer."""
    env = {k.lower(): v for k, v in environ.items() if k.lower().startswith(ENV_PREFIX)}
    env.pop("helix_store_db", None)
    if environ.get("HELIX_STORE_DB"):
        env["helix_store_db"] = environ["HELIX_STORE_DB"]
    return env


_SIMPLE_ENV: Final = (  # compiled when a HELIX_* variable is set (most runs: none)
    r"helix_(store_db|store__db|prices__table|retention__[a-z0-9_]+|agents__[a-z0-9_-]+__(roots|enabled)"
    r"|(ingest|daemon|retention|web|fleet)__[a-z0-9_]+|fleet_password|config|socket|state_dir|log.*)"
)
_OUR_SECTIONS: Final = (
    "helix_store",
    "helix_prices",
    "helix_retention",
    "helix_agents",
    "helix_fleet",
)


def _understood(env: Mapping[str, str]) -> bool:
    """Whether every variable that could change a key read here has a form read here."""
    for name in env:
        if re.fullmatch(_SIMPLE_ENV, name):
            continue
        if name.startswith(_OUR_SECTIONS):
            return False
    return True


def _from_full_model(config: Path | None) -> ReadConfig:
    from helixd import config as full

    settings = full.load(config)
    return ReadConfig(
        path=config_path_in_use(config),
        store_db=settings.store.db,
        prices_table=settings.prices.table,
        price_overrides=settings.prices.overrides(),
        budgets={k: int(getattr(settings.retention, k)) for k in BUDGET_KEYS},
        agents={
            name: AgentRoots(a.enabled, tuple(r.expanduser() for r in a.roots))
            for name, a in settings.agents.items()
        },
        fleet=FleetRead(
            dsn=settings.fleet.dsn,
            password_file=settings.fleet.password_file,
            machine=settings.fleet.machine,
            user=settings.fleet.user,
            outbox_warn_rows=settings.fleet.outbox_warn_rows,
            connect_timeout_seconds=settings.fleet.connect_timeout_seconds,
        ),
    )


def _section(doc: Mapping[str, Any], name: str, path: Path) -> Mapping[str, Any]:
    value = doc.get(name, {})
    if not isinstance(value, dict):
        raise ConfigError(f"invalid configuration ({path}): [{name}] must be a table")
    return value


def _where(path: Path, section: str, key: str, env: str | None) -> str:
    return f"{env.upper()}" if env else f"{key} in [{section}] of {path}"


def _build(path: Path, doc: Mapping[str, Any], env: Mapping[str, str]) -> ReadConfig:
    store = _section(doc, "store", path)
    db_value: Any = store.get("db")
    db_from = None
    for name in ("helix_store__db", "helix_store_db"):  # HELIX_STORE_DB wins
        if env.get(name):
            db_value, db_from = env[name], name
    if db_value is None:
        db = default_store_path()
    elif isinstance(db_value, str) and db_value:
        db = Path(db_value).expanduser()
    else:
        where = _where(path, "store", "db", db_from)
        raise ConfigError(f"invalid configuration: {where}: want a path")

    prices = _section(doc, "prices", path)
    table_value: Any = env.get("helix_prices__table", prices.get("table"))
    if table_value is not None and not isinstance(table_value, str):
        where = _where(path, "prices", "table", None)
        raise ConfigError(f"invalid configuration: {where}: want a path")
    overrides = _price_overrides(prices.get("models", {}), path)

    retention = _section(doc, "retention", path)
    budgets = dict(BUDGET_DEFAULTS)
    for key in BUDGET_KEYS:
        env_name = f"helix_retention__{key}"
        value = env.get(env_name, retention.get(key))
        if value is None:
            continue
        try:
            budgets[key] = parse_bytes(value)
        except ValueError as exc:
            where = _where(path, "retention", key, env_name if env_name in env else None)
            raise ConfigError(f"invalid configuration: {where}: {exc}") from None

    return ReadConfig(
        path=path,
        store_db=db,
        prices_table=Path(table_value).expanduser() if table_value else None,
        price_overrides=overrides,
        budgets=budgets,
        agents=_agents(_section(doc, "agents", path), env, path),
        fleet=_fleet(_section(doc, "fleet", path), env, path),
    )


def dsn_has_password(dsn: str) -> bool:
    """Whether a libpq connection string (``key=value`` words or a ``postgresql://`` URI)
    carries a password — which the config must never hold."""
    text = dsn.strip()
    if not text:  # no fleet (most runs): no pattern to compile
        return False
    if re.match(r"postgres(ql)?://", text, re.I):
        from urllib.parse import parse_qs, urlsplit

        try:
            parts = urlsplit(text)
        except ValueError:
            return False  # libpq refuses it anyway
        userinfo = parts.netloc.rpartition("@")[0]
        return ":" in userinfo or "password" in parse_qs(parts.query)
    return re.search(r"(^|\s)password\s*=", text) is not None


def _fleet(section: Mapping[str, Any], env: Mapping[str, str], path: Path) -> FleetRead:
    def value(key: str) -> tuple[Any, str]:
        name = f"helix_fleet__{key}"
        if name in env:
            return env[name], name.upper()
        return section.get(key), f"{key} in [fleet] of {path}"

    out: dict[str, Any] = {}
    for key in ("dsn", "machine", "user"):
        raw, where = value(key)
        if raw is None:
            continue
        if not isinstance(raw, str):
            raise ConfigError(f"invalid configuration: {where}: want a string")
        out[key] = raw
    if dsn_has_password(out.get("dsn", "")):
        raise ConfigError(
            f"invalid configuration: {value('dsn')[1]}: the connection string must not carry"
            " a password (use HELIX_FLEET_PASSWORD, [fleet] password_file or libpq's"
            " PGPASSWORD / ~/.pgpass)"
        )
    raw, where = value("password_file")
    if raw not in (None, ""):
        if not isinstance(raw, str):
            raise ConfigError(f"invalid configuration: {where}: want a path")
        out["password_file"] = Path(raw).expanduser()
    for key, kind in (("outbox_warn_rows", int), ("connect_timeout_seconds", float)):
        raw, where = value(key)
        if raw is None:
            continue
        try:
            number = kind(raw) if isinstance(raw, str | int | float) else None
        except ValueError:
            number = None
        if number is None or isinstance(raw, bool) or number <= 0:
            raise ConfigError(f"invalid configuration: {where}: want a number > 0")
        out[key] = number
    return FleetRead(**out)


def _price_overrides(models: Any, path: Path) -> dict[str, dict[str, float]]:
    if not isinstance(models, dict):
        raise ConfigError(f"invalid configuration: models in [prices] of {path}: want a table")
    out: dict[str, dict[str, float]] = {}
    for model, fields in models.items():
        if not isinstance(fields, dict):
            raise ConfigError(
                f"invalid configuration: [prices.models.{model!r}] of {path}: want a table"
            )
        prices: dict[str, float] = {}
        for key, value in fields.items():
            ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
            if key not in PRICE_FIELDS or not ok:
                raise ConfigError(
                    f"invalid configuration: {key} in [prices.models.{model!r}] of {path}:"
                    f" want one of {', '.join(PRICE_FIELDS)} = a price >= 0 (USD per million)"
                )
            prices[key] = float(value)
        out[model] = prices
    return out


def _agents(
    section: Mapping[str, Any], env: Mapping[str, str], path: Path
) -> dict[str, AgentRoots]:
    names = set(section)
    for name in env:
        m = re.fullmatch(r"helix_agents__([a-z0-9_-]+)__(roots|enabled)", name)
        if m:
            names.add(m.group(1))
    out: dict[str, AgentRoots] = {}
    for name in names:
        table = section.get(name, {})
        if not isinstance(table, dict):
            raise ConfigError(f"invalid configuration: [agents.{name}] of {path}: want a table")
        enabled: Any = table.get("enabled", True)
        roots: Any = table.get("roots", [])
        if (raw := env.get(f"helix_agents__{name}__enabled")) is not None:
            enabled = _env_bool(raw, f"HELIX_AGENTS__{name.upper()}__ENABLED")
        if (raw := env.get(f"helix_agents__{name}__roots")) is not None:
            roots = _env_list(raw, f"HELIX_AGENTS__{name.upper()}__ROOTS")
        if not isinstance(enabled, bool):
            raise ConfigError(
                f"invalid configuration: enabled in [agents.{name}] of {path}: want true or false"
            )
        if not isinstance(roots, list) or not all(isinstance(r, str) for r in roots):
            raise ConfigError(
                f"invalid configuration: roots in [agents.{name}] of {path}: want a list of paths"
            )
        out[name] = AgentRoots(enabled, tuple(Path(r).expanduser() for r in roots))
    return out


def _env_bool(raw: str, name: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"invalid configuration: {name}={raw!r}: want true or false")


def _env_list(raw: str, name: str) -> list[Any]:
    import json

    try:
        value = json.loads(raw)
    except ValueError:
        raise ConfigError(
            f'invalid configuration: {name}: want a JSON list of paths, e.g. ["~/a", "/b"]'
        ) from None
    if not isinstance(value, list):
        raise ConfigError(f"invalid configuration: {name}: want a JSON list of paths")
    return value
