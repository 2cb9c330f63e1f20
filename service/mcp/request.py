"""Per-request context shared by the HTTP edge and the tool dispatcher.

The application's middleware authenticates the request and opens a
:class:`RequestInfo` in a context variable; the dispatcher reads the caller from
it and records the tool and outcome there, so the edge can write one log line
per request with everything in it. The tenant is never taken from arguments.
"""

from __future__ import annotations

import contextvars
import dataclasses
from collections.abc import Iterable

from service.memory import pauses
from service.memory.usage import SAVING_CAUSES
from service.models import Caller

SESSION_HEADER = b"x-cpersona-session"


@dataclasses.dataclass(slots=True)
class RequestInfo:
    """Mutable facts about one HTTP request, filled in as it is served."""

    request_id: str
    caller: Caller | None = None
    tool: str | None = None
    outcome: str | None = None
    session_key: str = ""  # X-CPersona-Session: selects a session pause, never an identity
    chars_returned: int = 0  # content characters in the tool's answer
    chars_saved: int = 0  # characters previews and budgets left out of it
    tokens_delivered: int = 0  # estimated tokens of the answer text
    tokens_saved: dict[str, int] | None = None  # held back, by cause (see note_savings)
    status: int | None = None  # HTTP status the edge must answer with instead of 200
    retry_after: float | None = None  # seconds for the Retry-After header with ``status``


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


def session_key_from_headers(headers: Iterable[tuple[bytes, bytes]]) -> str:
    """The request's session key from ``X-CPersona-Session`` ('' when absent).

    The header only chooses which session pause inside the caller's tenant a
    write obeys; it is never used for identity. A value that is not a valid
    session key (see :func:`pauses.valid_session_key`) could never name a
    stored pause, so it is treated as no session.
    """
    for name, value in headers:
        if name.lower() == SESSION_HEADER:
            key = value.decode("latin-1").strip()
            return key if pauses.valid_session_key(key) else ""
    return ""


def current_session_key() -> str:
    """The session key of the request being served ('' outside a request)."""
    info = current_request.get()
    return info.session_key if info is not None else ""


def note_chars(returned: int, saved: int) -> None:
    """Record the content characters a tool returned and those previews held back."""
    info = current_request.get()
    if info is not None:
        info.chars_returned = returned
        info.chars_saved = saved


def note_tokens(delivered: int) -> None:
    """Record the estimated tokens of the tool's answer."""
    info = current_request.get()
    if info is not None:
        info.tokens_delivered = delivered


def note_savings(**held: int) -> None:
    """Record the tokens previews, excerpts, budgets and the ledger held back (by name)."""
    info = current_request.get()
    if info is not None:
        info.tokens_saved = {cause: held.get(cause, 0) for cause in SAVING_CAUSES}


def noted_savings() -> dict[str, int] | None:
    """What :func:`note_savings` recorded for this request, if anything."""
    info = current_request.get()
    return info.tokens_saved if info is not None else None
