"""Form posts of the console: url-encoded bodies read under a bound.

Sign-in and small actions read at most ``SMALL_BYTES``; an edit carries a memory's text
(at most 16,000 characters, each up to 9 bytes url-encoded), so it may read
``EDIT_BYTES``. A larger body is 413 before it is parsed; a repeated field keeps its
first value.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl

from starlette.requests import Request

from service.app.bodies import BodyTooLarge, ClientGone, read_body

SMALL_BYTES: Final = 16_384
EDIT_BYTES: Final = 160_000


class Unreadable(Exception):
    """The body is too large (413) or the client went away (400)."""

    def __init__(self, status: int) -> None:
        super().__init__(status)
        self.status = status


async def form_fields(request: Request, limit: int = SMALL_BYTES) -> dict[str, str]:
    """The url-encoded form of the request's body, at most ``limit`` bytes."""
    try:
        raw = await read_body(request.receive, limit)
    except BodyTooLarge:
        raise Unreadable(413) from None
    except ClientGone:
        raise Unreadable(400) from None
    fields: dict[str, str] = {}
    for name, value in parse_qsl(raw.decode("utf-8", "replace"), keep_blank_values=True):
        fields.setdefault(name, value)
    return fields
