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

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field
from pydantic_settings import (
    BaseSettings,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    TomlConfigSettingsSource,
)

from helixd.paths import config_path_in_use, default_store_path
from helixd.readconfig import ConfigError, parse_bytes

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
    """Cost in USD: the bundled offline table, replaced by ``table`` (a JSON file in the
    bundled format) when set, then individual models overridden by ``models``."""

    table: Path | None = None
    models: dict[str, ModelPrice] = Field(default_factory=dict)

    def overrides(self) -> dict[str, dict[str, float]]:
        return {m: p.model_dump(exclude_none=True) for m, p in self.models.items()}


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
