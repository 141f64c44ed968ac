"""Settings: defaults < TOML file < ``HELIX_*`` environment < command-line flags.

The TOML file is ``<user config dir>/helix/config.toml`` (platformdirs) unless ``--config``
or ``HELIX_CONFIG`` names another.  Nested keys are set from the environment with ``__``
(``HELIX_INGEST__CHUNK_BYTES=8MiB``); ``HELIX_STORE_DB`` sets the store path (design spec
§11.2).  ``helixd/data/helix.example.toml`` documents every key with its default.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, field_validator
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from helixd.configkeys import ConfigError, _closest, check_keys, spec_aliases
from helixd.paths import config_path_in_use, default_store_path
from helixd.readconfig import dsn_has_password, parse_bytes

__all__ = ["ConfigError", "Settings", "load", "parse_bytes"]

ByteSize = Annotated[int, BeforeValidator(parse_bytes)]


class _Section(BaseModel):
    model_config = ConfigDict(extra="forbid")


def _expand(value: Any) -> Any:
    return Path(value).expanduser() if isinstance(value, str | Path) else value


class StoreSettings(_Section):
    db: Annotated[Path, BeforeValidator(_expand)] = Field(
        default_factory=default_store_path,
        description="SQLite store path (HELIX_STORE_DB overrides; ~ is expanded).",
    )


class AgentSettings(_Section):
    enabled: bool = True
    roots: list[Path] = Field(
        default_factory=list, description="Directories to scan; empty = the agent's defaults."
    )


class IngestSettings(_Section):
    chunk_bytes: ByteSize = 4 * 1024 * 1024
    max_line_bytes: ByteSize = 64 * 1024 * 1024


class DaemonSettings(_Section):
    """``helixd``: how fast it reacts, how often the scheduled passes run."""

    watch: bool = True  # file events (inotify/FSEvents); off: scanning only
    debounce_ms: int = 20  # quiet time before a changed file is read
    reconcile_seconds: float = 300  # full stat scan (catches what events miss)
    fallback_scan_seconds: float = 15  # scan interval while some root cannot be watched
    analyze_seconds: float = 60  # digest rebuild of changed sessions
    evict_seconds: float = 3600  # retention pass
    renormalize_seconds: float = 600  # rebuild rows an older adapter version produced
    idle_close_minutes: float = 30  # a session idle this long is closed
    max_read_bytes: ByteSize = 64 * 1024 * 1024  # read from one file before others get a turn
    shutdown_seconds: float = 10  # drain time on SIGTERM
    log_level: str = "info"
    busy_timeout_ms: int = Field(default=2000, ge=0)  # wait for another writer, then retry
    retry_max_seconds: float = Field(default=10, gt=0)  # cap of the store-fault backoff
    file_retry_seconds: float = Field(default=5, gt=0)  # first retry of a failing file
    file_retry_max_seconds: float = Field(default=600, gt=0)  # cap of its backoff


class RetentionSettings(_Section):
    raw_soft_cap_bytes: ByteSize = 4 * 1024**3
    raw_hard_cap_bytes: ByteSize = 6 * 1024**3
    raw_max_age_days: float = 45
    distilled_cap_bytes: ByteSize = 1024**3
    # Stage 1 drops analyzed sessions' raw blocks (bulky bodies) and keeps their events;
    # only when that is not enough do whole sessions' events go (stage 2).
    stage_payloads_first: bool = True
    # The age backstop takes a session's whole Tier 1 (raw blocks, events, its full-text
    # index entries), as design spec §5.2 says; true keeps the events (and their text in the
    # index) when stage_payloads_first is on, and drops only the raw blocks.
    backstop_keeps_events: bool = False


class RepoSettings(_Section):
    """How a session's project is named (design spec §4.1; ``helixd.core.attribution``)."""

    # repo ("name" or "owner/name") -> domain; unmapped: the remote's owner, else the default
    domains: dict[str, str] = Field(default_factory=dict)
    default_domain: str = "local"
    # regular expressions for task references (the `ref` group, else the whole match), tried
    # on the branch name, the first prompt, the commit messages; empty: the built-in ones
    task_ref_patterns: list[str] = Field(default_factory=list)
    resolve_git: bool = True  # read the working directory's .git (worktrees, the remote)

    @field_validator("task_ref_patterns")
    @classmethod
    def _compiles(cls, patterns: list[str]) -> list[str]:
        for p in patterns:
            try:
                re.compile(p)
            except re.error as exc:
                raise ValueError(f"not a regular expression: {p!r} ({exc})") from None
        return patterns


class WebSettings(_Section):
    """The dashboard and HTTP API ``helixd`` serves (``helixctl web`` prints its address)."""

    enabled: bool = True
    host: str = "127.0.0.1"  # loopback; another address exposes the store to that network
    port: int = Field(default=7777, ge=0, le=65535)  # 0: any free port
    allowed_hosts: list[str] = Field(default_factory=list)  # Host header names also accepted


class ModelPrice(_Section):
    """USD per million tokens; a field left out keeps the bundled table's value for that
    model (0 for a model the table does not know)."""

    input: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write_5m: float | None = Field(default=None, ge=0)
    cache_write_1h: float | None = Field(default=None, ge=0)


class PriceSettings(_Section):
    """Cost in USD: ``models`` overrides, then ``table`` (a JSON file in the bundled
    format), then genai-prices' offline data, then the bundled table (``helixd.prices``)."""

    table: Path | None = None
    models: dict[str, ModelPrice] = Field(default_factory=dict)

    def overrides(self) -> dict[str, dict[str, float]]:
        return {m: p.model_dump(exclude_none=True) for m, p in self.models.items()}


FLEET_DSN_PASSWORD = (
    "the connection string must not carry a password: use HELIX_FLEET_PASSWORD,"
    " [fleet] password_file (mode 0600) or libpq's PGPASSWORD / ~/.pgpass"
)


class FleetSettings(_Section):
    """The fleet mirror (issue 17): Tier 2 rows pushed to one PostgreSQL shared by many
    machines.  Off while ``dsn`` is empty.  The password never sits in this file: it comes
    from ``HELIX_FLEET_PASSWORD``, from ``password_file`` (mode 0600), or from libpq's own
    ``PGPASSWORD`` / ``~/.pgpass``."""

    dsn: str = ""  # libpq connection string or URI, without a password
    password_file: Path | None = None
    machine: str = ""  # empty: the host name
    user: str = ""  # empty: the login name
    include_text: bool = False  # ship conversation text (Tier 1) too
    push_seconds: float = Field(default=15, gt=0)
    batch_rows: int = Field(default=1000, ge=1, le=100_000)
    retry_max_seconds: float = Field(default=300, gt=0)
    outbox_warn_rows: int = Field(default=1_000_000, ge=1)
    connect_timeout_seconds: float = Field(default=10, gt=0)

    @field_validator("dsn")
    @classmethod
    def _no_password(cls, value: str) -> str:
        if dsn_has_password(value):
            raise ValueError(FLEET_DSN_PASSWORD)
        return value

    @field_validator("password_file", mode="before")
    @classmethod
    def _expand_file(cls, value: Any) -> Any:
        return None if value == "" else _expand(value)


class Settings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="HELIX_", env_nested_delimiter="__", extra="forbid"
    )

    store: StoreSettings = Field(default_factory=StoreSettings)
    ingest: IngestSettings = Field(default_factory=IngestSettings)
    daemon: DaemonSettings = Field(default_factory=DaemonSettings)
    retention: RetentionSettings = Field(default_factory=RetentionSettings)
    web: WebSettings = Field(default_factory=WebSettings)
    agents: dict[str, AgentSettings] = Field(default_factory=dict)
    prices: PriceSettings = Field(default_factory=PriceSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)
    repos: RepoSettings = Field(default_factory=RepoSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, _StoreDbEnv(settings_cls), env_settings, _ConfigFile(settings_cls))

    def agent(self, name: str) -> AgentSettings:
        return self.agents.get(name, AgentSettings())


class _ConfigFile(TomlConfigSettingsSource):
    """The TOML file, with the design spec's key names read as Helix's (``spec_aliases``)."""

    def _read_file(self, file_path: Any) -> dict[str, Any]:
        return spec_aliases(_read_toml(Path(file_path)), Path(file_path))


class _StoreDbEnv(PydanticBaseSettingsSource):
    """``HELIX_STORE_DB`` -> ``store.db`` (the spec's name for the store path)."""

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        value = os.environ.get("HELIX_STORE_DB")
        return {"store": {"db": value}} if value else {}


def load(config: Path | None = None, **overrides: Any) -> Settings:
    """Build the settings; ``config`` names the TOML file (must exist when given)."""
    path = config_path_in_use(config)
    if (config is not None or "HELIX_CONFIG" in os.environ) and not path.is_file():
        raise ConfigError(f"config file not found: {path}")
    doc = spec_aliases(_read_toml(path), path)  # the design spec's names read as ours
    check_keys(doc, path)  # a typo: the key, its section and the closest valid key
    bound = type(
        "BoundSettings", (Settings,), {"model_config": {**Settings.model_config, "toml_file": path}}
    )
    try:
        settings: Settings = bound(**overrides)
        return settings
    except ValidationError as exc:
        raise ConfigError(plain_errors(exc, path, doc)) from None
    except ValueError as exc:
        raise ConfigError(f"invalid configuration ({path}): {exc}") from None


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib

    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return {}
    except OSError as exc:
        raise ConfigError(f"cannot read config file {path}: {exc.strerror or exc}") from None
    try:
        return tomllib.loads(data.decode("utf-8", errors="replace"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"invalid configuration ({path}): not TOML: {exc}") from None


# What a value must be, by pydantic's error type, in the words readconfig uses.
_WANT: dict[str, str] = {
    "int_parsing": "want a whole number",
    "int_type": "want a whole number",
    "int_from_float": "want a whole number",
    "float_parsing": "want a number",
    "float_type": "want a number",
    "bool_parsing": "want true or false",
    "bool_type": "want true or false",
    "string_type": "want a string",
    "list_type": "want a list",
    "dict_type": "want a table",
    "model_type": "want a table",
    "model_attributes_type": "want a table",
    "path_type": "want a path",
    "greater_than_equal": "want a value >= 0",
}


def plain_errors(exc: ValidationError, path: Path, doc: Mapping[str, Any]) -> str:
    """The model's errors in plain words: each names the key, its section and where it was
    set (the file or the ``HELIX_*`` variable), and what the value must be."""
    lines = []
    for err in exc.errors():
        loc = [str(part) for part in err["loc"]]
        key, section = loc[-1], ".".join(loc[:-1])
        in_file = _lookup(doc, loc)
        env = _env_name(loc)
        where = f"{key} in [{section}] of {path}" if in_file else env
        if err["type"] == "extra_forbidden":
            known = _known_keys(loc[:-1])
            near = _closest(key, known) if known else ""
            what = f"unknown key {key!r} in [{section}] of " + (str(path) if in_file else env)
            lines.append(what + near)
            continue
        want = _WANT.get(err["type"])
        message = str(err["msg"]).removeprefix("Value error, ")
        value = err.get("input")
        secret = loc[:1] == ["fleet"]  # never echo a [fleet] value: a DSN may hold a password
        got = f", got {value!r}" if want and not isinstance(value, dict) and not secret else ""
        lines.append(f"{where}: {want or message}{got}")
    return "invalid configuration: " + "; ".join(lines)


def _env_name(loc: list[str]) -> str:
    """The ``HELIX_*`` variable that set ``loc``: itself, or the section it is inside (set
    as JSON)."""
    if loc == ["store", "db"] and os.environ.get("HELIX_STORE_DB"):
        return "HELIX_STORE_DB"
    present = {k.upper() for k in os.environ}
    for end in range(len(loc), 0, -1):
        name = "HELIX_" + "__".join(loc[:end]).upper()
        if name in present:
            return name
    return "HELIX_" + "__".join(loc).upper()


def _known_keys(section: list[str]) -> frozenset[str]:
    """The valid keys of a section of the model (``daemon``, ``agents.claude``, …)."""
    model: Any = Settings
    for part in section:
        field = model.model_fields.get(part) if hasattr(model, "model_fields") else None
        if field is None:
            if model is Settings or not section:
                return frozenset()
            continue  # a name inside a dict section (an agent, a model): same value type
        model = _value_model(field.annotation)
        if model is None:
            return frozenset()
    return frozenset(model.model_fields) if hasattr(model, "model_fields") else frozenset()


def _value_model(annotation: Any) -> Any:
    """The model a field holds, or the value model of a ``dict[str, Model]`` field."""
    from typing import get_args

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    args = get_args(annotation)
    return _value_model(args[-1]) if args else None


def _lookup(doc: Mapping[str, Any], loc: list[str]) -> bool:
    node: Any = doc
    for part in loc:
        if not isinstance(node, Mapping) or part not in node:
            return False
        node = node[part]
    return True


def price_table(settings: Settings) -> Any:
    """``(label, book)``: the prices cost is computed with (``[prices]`` over genai-prices
    and the bundled table, ``helixd.prices``), or ConfigError."""
    from helixd import prices
    from helixd.core.pricing import PriceTableError

    try:
        return prices.effective(settings.prices.table, settings.prices.overrides())
    except PriceTableError as exc:
        raise ConfigError(str(exc)) from exc


def agent_roots(
    settings: Settings, adapters: Any, environ: Mapping[str, str], home: Path, projects: Any = ()
) -> list[tuple[Any, Path]]:
    """``[(adapter, root), ...]`` for every enabled adapter (``sources.discover.agent_roots``)."""
    from helixd.sources.discover import agent_roots as roots

    return roots(settings, adapters, environ, home, projects)
