"""Request bodies of the unauthenticated OAuth endpoints: small, read under a bound.

``/authorize`` (post), ``/token`` and ``/register`` answer anyone, so their bodies are
read with the edge's bounded reader (at most ``MAX_BODY_BYTES``; more is 413) instead of
an unbounded form parser.
"""

from __future__ import annotations

from typing import Final
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from service.app.bodies import BodyTooLarge, ClientGone, read_body

MAX_BODY_BYTES: Final = 16_384


class Unreadable(Exception):
    """The body is too large or the client went away; ``response`` is the answer."""

    def __init__(self, response: Response) -> None:
        super().__init__(response.status_code)
        self.response = response


async def small_body(request: Request) -> bytes:
    try:
        return await read_body(request.receive, MAX_BODY_BYTES)
    except BodyTooLarge:
        too_large = {"error": "invalid_request", "error_description": "request body too large"}
        raise Unreadable(JSONResponse(too_large, 413)) from None
    except ClientGone:
        raise Unreadable(Response(status_code=400)) from None


async def form_fields(request: Request) -> dict[str, str]:
    """The url-encoded form of a small body (the first value of a repeated field)."""
    pairs = parse_qsl(
        (await small_body(request)).decode("utf-8", "replace"), keep_blank_values=True
    )
    fields: dict[str, str] = {}
    for name, value in pairs:
        fields.setdefault(name, value)
    return fields
