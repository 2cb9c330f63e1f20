"""How a setting is declared and parsed: the field helpers and the value parsers.

A setting is a dataclass field made with :func:`setting`: its default, the environment
variables that set it (the first one present wins) and the parser that validates them.
A parser takes the variable's name and raw text and returns the value, or raises
ConfigError naming the variable.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import re
import urllib.parse
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from service.errors import ConfigError
from service.extras import local_embeddings_installed

LogFormat = Literal["json", "console"]
RecallMode = Literal["hybrid", "rrf", "rsf", "cascade"]
CalibrateMethod = Literal["separation", "percentile", "zscore"]
RecallPrecision = Literal["strict", "balanced", "lenient"]
EmbeddingMode = Literal["local", "local-e5", "http", "openai", "none"]
DbPooler = Literal["none", "pgbouncer"]
FutureTimestampMode = Literal["warn", "reject", "off"]
Parser = Callable[[str, str], Any]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})
POOLERS = ("none", "pgbouncer")


def default_embedding_mode() -> EmbeddingMode:
    """``local`` when the local extra is installed, else ``none`` (lexical-only recall).

    CPersona's default is ``none``; a hosted service that ships its own model
    embeds by default so vector recall works out of the box.
    """
    return "local" if local_embeddings_installed() else "none"


# -- parsers: (variable name, raw text) -> value, or ConfigError naming the variable ---------


def parse_bool(name: str, raw: str) -> bool:
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ConfigError(f"{name}: expected true or false, got {raw!r}")


def parse_int(minimum: int, maximum: int) -> Parser:
    def parse(name: str, raw: str) -> int:
        try:
            value = int(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected an integer, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def parse_float(minimum: float, maximum: float) -> Parser:
    def parse(name: str, raw: str) -> float:
        try:
            value = float(raw.strip())
        except ValueError:
            raise ConfigError(f"{name}: expected a number, got {raw!r}") from None
        if not minimum <= value <= maximum:
            raise ConfigError(f"{name}: must be between {minimum} and {maximum}, got {value}")
        return value

    return parse


def parse_choice(*choices: str) -> Parser:
    def parse(name: str, raw: str) -> str:
        value = raw.strip().lower()
        if value not in choices:
            raise ConfigError(f"{name}: expected one of {', '.join(choices)}, got {raw!r}")
        return value

    return parse


def parse_list(name: str, raw: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in raw.split(",") if part.strip())


def parse_proxies(name: str, raw: str) -> tuple[str, ...]:
    """Trusted proxy addresses: IP addresses and CIDR networks, comma-separated, or ``*``
    alone (every peer, only where nothing but the proxy can reach the port)."""
    items = parse_list(name, raw)
    if items == ("*",):
        return items
    for item in items:
        try:
            ipaddress.ip_network(item, strict=False)
        except ValueError:
            raise ConfigError(
                f"{name}: expected IP addresses or networks (a.b.c.d, a.b.c.0/24) or *, "
                f"got {item!r}"
            ) from None
    return items


def parse_str(name: str, raw: str) -> str:
    return raw.strip()


PG_SIZE = re.compile(r"(\d{1,9})\s*(kB|MB|GB|TB)")
"""A Postgres memory size as its settings take it: a whole number and a unit."""
PG_SIZE_BYTES = {"kB": 1024, "MB": 1024**2, "GB": 1024**3, "TB": 1024**4}


def parse_memory_size(least_bytes: int, most_bytes: int) -> Parser:
    """``auto`` or a Postgres size (``512MB``, ``2GB``) from ``least_bytes`` to
    ``most_bytes``."""

    def parse(name: str, raw: str) -> str:
        value = raw.strip()
        if value.lower() == "auto":
            return "auto"
        match = PG_SIZE.fullmatch(value)
        if match is None:
            raise ConfigError(f"{name}: expected auto or a size such as 512MB or 2GB, got {raw!r}")
        size = int(match[1]) * PG_SIZE_BYTES[match[2]]
        if not least_bytes <= size <= most_bytes:
            raise ConfigError(
                f"{name}: from {least_bytes // 1024**2}MB to {most_bytes // 1024**4}TB, got {raw!r}"
            )
        return f"{match[1]}{match[2]}"

    return parse


def parse_path(name: str, raw: str) -> Path:
    if not raw.strip():
        raise ConfigError(f"{name}: must not be empty")
    return Path(raw.strip()).expanduser()


def parse_log_level(name: str, raw: str) -> str:
    value = raw.strip().upper()
    if value not in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}:
        raise ConfigError(f"{name}: expected DEBUG, INFO, WARNING, ERROR or CRITICAL, got {raw!r}")
    return value


def parse_signing_key(name: str, raw: str) -> str:
    if len(raw.strip()) < 32:
        raise ConfigError(f"{name}: must be at least 32 characters (a random secret)")
    return raw.strip()


def parse_origin(name: str, raw: str) -> str:
    value = raw.strip().rstrip("/")
    if not value.startswith(("http://", "https://")):
        raise ConfigError(f"{name}: expected an http:// or https:// origin, got {raw!r}")
    return value


def _url_problem(raw: str) -> str | None:
    """Why ``raw`` is no PostgreSQL URL (None when it is one asyncpg and Alembic accept)."""
    try:
        parts = urllib.parse.urlsplit(raw)
        parts.port  # noqa: B018 - parsing the port is the check (a ValueError when bad)
    except ValueError as exc:
        return str(exc)
    if parts.scheme not in ("postgresql", "postgres"):
        return f"the scheme is {parts.scheme or 'missing'!r}, not postgresql"
    return None


def parse_database_url(name: str, raw: str) -> str | None:
    """A PostgreSQL URL, or None when empty (the embedded server then runs).

    The error never repeats the value: a URL carries a password.
    """
    value = raw.strip()
    if not value:
        return None
    problem = _url_problem(value)
    if problem is not None:
        raise ConfigError(
            f"{name}: expected postgresql://USER:PASSWORD@HOST:PORT/DATABASE ({problem})"
        )
    return value


def parse_origins(name: str, raw: str) -> tuple[str, ...]:
    """Comma-separated browser origins (``scheme://host[:port]``, ``:*`` for any port)."""
    origins = parse_list(name, raw)
    for origin in origins:
        if not re.fullmatch(r"https?://[^/\s,]+", origin):
            raise ConfigError(
                f"{name}: expected origins like https://app.example.com or "
                f"http://localhost:*, got {origin!r}"
            )
    return origins


UNIT = parse_float(0.0, 1.0)
SECONDS = parse_float(0.1, 3600.0)
RATE = parse_float(0.0, 1_000_000.0)
COUNT = parse_int(0, 1_000_000_000)


def setting(
    default: Any, *env: str, parse: Parser, factory: Callable[[], Any] | None = None
) -> Any:
    """A field of :class:`Settings` set by the environment variables ``env``.

    ``factory`` computes the default at construction instead (``default`` is then unused).
    """
    metadata = {"env": env, "parse": parse}
    if factory is not None:
        return dataclasses.field(default_factory=factory, metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


def fixed(default: Any) -> Any:
    """A field with no environment variable (a bound the operator cannot change)."""
    return dataclasses.field(default=default, metadata={"env": ()})
