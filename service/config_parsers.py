"""The parsers of settings: ``(variable name, raw text) -> value``, or a ConfigError
that names the variable, so a bad value stops the process with one clear line.

Used by the field declarations of :mod:`service.config`; nothing else reads them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from service.errors import ConfigError

Parser = Callable[[str, str], Any]

_TRUE = frozenset({"true", "1", "yes", "on"})
_FALSE = frozenset({"false", "0", "no", "off"})


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


def parse_str(name: str, raw: str) -> str:
    return raw.strip()


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


UNIT = parse_float(0.0, 1.0)
SECONDS = parse_float(0.1, 3600.0)
RATE = parse_float(0.0, 1_000_000.0)
COUNT = parse_int(0, 1_000_000_000)
