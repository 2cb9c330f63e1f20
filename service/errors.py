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


class RecordGone(Conflict):
    """A record a write names was deleted by a concurrent transaction (its foreign-key
    check failed); the write rolled back and may be run again."""


class DatabaseNotOpen(ServiceError):
    """The database pool is not open yet (or already closed)."""


class Unavailable(ServiceError):
    """The service cannot do this right now; the same request can succeed later.

    Every layer lets it pass: the HTTP edge answers ``503`` with ``Retry-After:
    retry_after`` (a JSON-RPC error on ``/mcp``), never a 500 or a success-shaped
    error. ``reason`` names the failure class in the answer, the logs and the metrics.
    """

    reason = "unavailable"

    def __init__(self, message: str | None = None, *, retry_after: float = 1.0) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class DatabaseUnavailable(Unavailable):
    """The database cannot be reached; the service reconnects on its own."""

    reason = "database_unavailable"


class DatabaseBusy(Unavailable):
    """Every database connection is in use; try again shortly."""

    reason = "database_busy"
