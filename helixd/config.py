"""Settings: defaults < TOML file < ``HELIX_*`` environment < command-line flags.

The TOML file is ``<user config dir>/helix/config.toml`` (platformdirs) unless ``--config``
or ``HELIX_CONFIG`` names another.  Nested keys are set from the environment with ``__``
(``HELIX_INGEST__CHUNK_BYTES=8MiB``); ``HELIX_STORE_DB`` sets the store path (design spec
§11.2).  ``config/helix.example.toml`` documents every key with its default.
"""

from __future__ import annotations

import os
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

from helixd.paths import config_path_in_use, default_store_path
from helixd.readconfig import ConfigError, dsn_has_password, parse_bytes

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


class RetentionSettings(_Section):
    raw_soft_cap_bytes: ByteSize = 4 * 1024**3
    raw_hard_cap_bytes: ByteSize = 6 * 1024**3
    raw_max_age_days: float = 45
    distilled_cap_bytes: ByteSize = 1024**3
    # Stage 1 drops analyzed sessions' raw blocks (bulky bodies) and keeps their events;
    # only when that is not enough do whole sessions' events go (stage 2).
    stage_payloads_first: bool = True


class ModelPrice(_Section):
    """USD per million tokens; a field left out keeps the bundled table's value for that
    model (0 for a model the table does not know)."""

    input: float | None = Field(default=None, ge=0)
    output: float | None = Field(default=None, ge=0)
    cache_read: float | None = Field(default=None, ge=0)
    cache_write_5m: float | None = Field(default=None, ge=0)
    cache_write_1h: float | None = Field(default=None, ge=0)


class PriceSettings(_Section):
    """Cost in USD: the bundled offline table, replaced by ``table`` (a JSON file in the
    bundled format) when set, then individual models overridden by ``models``."""

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
    agents: dict[str, AgentSettings] = Field(default_factory=dict)
    prices: PriceSettings = Field(default_factory=PriceSettings)
    fleet: FleetSettings = Field(default_factory=FleetSettings)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (
            init_settings,
            _StoreDbEnv(settings_cls),
            env_settings,
            TomlConfigSettingsSource(settings_cls),
        )

    def agent(self, name: str) -> AgentSettings:
        return self.agents.get(name, AgentSettings())


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
    bound = type(
        "BoundSettings", (Settings,), {"model_config": {**Settings.model_config, "toml_file": path}}
    )
    try:
        settings: Settings = bound(**overrides)
        return settings
    except ValidationError as exc:
        if any(e["loc"][:1] == ("fleet",) for e in exc.errors()):
            # Never echo a [fleet] value: a connection string may hold a password.
            lines = [
                f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                for e in exc.errors(include_input=False, include_url=False)
            ]
            raise ConfigError(f"invalid configuration ({path}): {'; '.join(lines)}") from None
        raise ConfigError(f"invalid configuration ({path}): {exc}") from exc
    except ValueError as exc:
        raise ConfigError(f"invalid configuration ({path}): {exc}") from exc


def price_table(settings: Settings) -> tuple[str, dict[str, dict[str, float]]]:
    """The price table cost is computed with (``[prices]``), or ConfigError."""
    from helixd.core import pricing

    try:
        return pricing.effective(settings.prices.table, settings.prices.overrides())
    except pricing.PriceTableError as exc:
        raise ConfigError(str(exc)) from exc


def agent_roots(
    settings: Settings, adapters: Any, environ: Mapping[str, str], home: Path
) -> list[tuple[Any, Path]]:
    """``[(adapter, root), ...]`` for every enabled adapter (``sources.discover.agent_roots``)."""
    from helixd.sources.discover import agent_roots as roots

    return roots(settings, adapters, environ, home)
