"""Per-request context shared by the HTTP edge and the tool dispatcher.

The application's middleware authenticates the request and opens a
:class:`RequestInfo` in a context variable; the dispatcher reads the caller from
it and records the tool and outcome there, so the edge can write one log line
per request with everything in it. The tenant is never taken from arguments.
"""

from __future__ import annotations

import contextvars
import dataclasses

from service.models import Caller


@dataclasses.dataclass(slots=True)
class RequestInfo:
    """Mutable facts about one HTTP request, filled in as it is served."""

    request_id: str
    caller: Caller | None = None
    tool: str | None = None
    outcome: str | None = None


current_request: contextvars.ContextVar[RequestInfo | None] = contextvars.ContextVar(
    "cpersona_request", default=None
)


class NoCaller(Exception):
    """A tool ran without an authenticated caller (a wiring error, never a client error)."""


def current_caller() -> Caller:
    """The authenticated caller of the request being served."""
    info = current_request.get()
    if info is None or info.caller is None:
        raise NoCaller("no authenticated caller for this request")
    return info.caller


def note_tool(tool: str, outcome: str) -> None:
    info = current_request.get()
    if info is not None:
        info.tool = tool
        info.outcome = outcome
