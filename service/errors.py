"""One error tree for the whole service, free of any transport.

The storage layer translates driver errors into these once; the library raises
them instead of returning failure objects; the MCP dispatcher renders them into
the spec's shapes in one place (``service.mcp.server``): a :class:`Refused` is
the tool's own failure shape (``{"ok": false, "error": ..., **details}``), any
other :class:`ServiceError` is CPersona's dispatch-level bare ``{"error": ...}``.
A class docstring doubles as the default message.
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


class Refused(ServiceError):
    """The request was understood and refused; nothing was changed.

    ``details`` are extra keys of the tool's failure shape (for example the tallies of
    an aborted import, or the valid names next to an unknown one).
    """

    def __init__(self, message: str | None = None, **details: object) -> None:
        super().__init__(message)
        self.details = details


class InvalidInput(Refused):
    """The request is malformed."""


class NotFound(Refused):
    """The requested object does not exist."""


class Conflict(ServiceError):
    """The change conflicts with existing data."""


class DatabaseNotOpen(ServiceError):
    """The database pool is not open yet (or already closed)."""


class DatabaseUnavailable(ServiceError):
    """The database cannot be reached."""
