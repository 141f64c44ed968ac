"""structlog setup: JSON lines on stderr off a TTY (journald and launchd friendly), a
readable console on a TTY.  Called once by the entry points.  Every string a log line
carries (an error message, a rendered traceback) goes through secret redaction first."""

from __future__ import annotations

import logging
import sys
from collections.abc import MutableMapping
from typing import Any

import orjson
import structlog

from helixd.core.redact import redact


def _dumps(obj: Any, default: Any = None) -> str:
    return orjson.dumps(obj, default=default).decode()


def _mask_secrets(
    _logger: Any, _method: str, event: MutableMapping[str, Any]
) -> MutableMapping[str, Any]:
    for key, value in event.items():
        if isinstance(value, str):
            masked, found = redact(value.encode("utf-8", "surrogateescape"))
            if found:
                event[key] = masked.decode("utf-8", "surrogateescape")
    return event


def configure(level: str = "info", json: bool | None = None) -> None:
    use_json = (not sys.stderr.isatty()) if json is None else json
    renderer: Any = (
        structlog.processors.JSONRenderer(serializer=_dumps)
        if use_json
        else structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            _mask_secrets,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),
        cache_logger_on_first_use=True,
    )
