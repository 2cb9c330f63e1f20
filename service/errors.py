"""One error tree for the whole service, free of any transport.

The storage layer translates driver errors into these once; the MCP boundary
translates these into tool results once (``service.mcp.errors``). A class
docstring doubles as the default message.
"""

from __future__ import annotations


class ServiceError(Exception):
    """The service could not complete the operation."""

    def __init__(self, message: str | None = None) -> None:
        super().__init__(message or (self.__doc__ or "").strip())

    @property
    def message(self) -> str:
        return str(self.args[0])


class ConfigError(ServiceError):
    """A setting has an invalid value."""


class InvalidInput(ServiceError):
    """The request is malformed."""


class NotFound(ServiceError):
    """The requested object does not exist."""


class Conflict(ServiceError):
    """The change conflicts with existing data."""


class Unauthenticated(ServiceError):
    """The credential is missing, unknown, expired or revoked."""


class DatabaseNotOpen(ServiceError):
    """The database pool is not open yet (or already closed)."""


class DatabaseUnavailable(ServiceError):
    """The database cannot be reached."""
