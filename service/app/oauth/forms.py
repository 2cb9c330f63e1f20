"""Request bodies of the unauthenticated OAuth endpoints: small, read under a bound.

``/authorize`` (post), ``/token`` and ``/register`` answer anyone, so their bodies are
read with the edge's bounded reader (at most ``MAX_BODY_BYTES``; more is 413) instead of
an unbounded form parser. A JSON body (``/register``) may nest at most
``MAX_JSON_DEPTH`` arrays and objects deep: deeper is refused before it is parsed, since
the parser recurses once per level and 16 KiB of brackets would exhaust the stack
(a 500 with a traceback, for anyone, before this bound).
"""

from __future__ import annotations

import json
from typing import Any, Final
from urllib.parse import parse_qsl

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from service.app.bodies import BodyTooLarge, ClientGone, read_body

MAX_BODY_BYTES: Final = 16_384
MAX_JSON_DEPTH: Final = 32
"""Client metadata is a flat object of strings and lists; 32 levels is generous."""


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


class TooDeep(ValueError):
    """A JSON body nested deeper than :data:`MAX_JSON_DEPTH`."""


def json_depth(raw: bytes) -> int:
    """How deep the arrays and objects of JSON text ``raw`` nest (brackets inside
    strings do not count). One pass, no recursion: linear on any input."""
    depth = deepest = 0
    in_string = escaped = False
    for byte in raw:
        if in_string:
            escaped, in_string = (False, True) if escaped else (byte == 0x5C, byte != 0x22)
        elif byte == 0x22:
            in_string = True
        elif byte in b"[{":
            depth += 1
            deepest = max(deepest, depth)
        elif byte in b"]}":
            depth -= 1
    return deepest


def json_document(raw: bytes) -> Any:
    """``raw`` parsed as JSON; ValueError when it is not JSON, TooDeep when it nests
    deeper than :data:`MAX_JSON_DEPTH` (checked first, so the parser never recurses
    past it)."""
    if json_depth(raw) > MAX_JSON_DEPTH:
        raise TooDeep(f"JSON nested deeper than {MAX_JSON_DEPTH} levels")
    return json.loads(raw)
