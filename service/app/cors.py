"""CORS for browser clients (CPERSONA_ALLOWED_ORIGINS): preflights and response headers.

A browser MCP client (the Inspector's web UI, a web connector) sends a preflight
``OPTIONS`` with ``Origin`` and ``Access-Control-Request-Method`` before its first
``POST /mcp``, and can read the answer's headers only when the server exposes them.
:class:`Cors` answers the preflight of an allowed origin itself (204, the methods,
the requested headers, a max age) and adds ``Access-Control-Allow-Origin`` (that
origin, never ``*``) and ``Access-Control-Expose-Headers`` (``Mcp-Session-Id``,
``Mcp-Protocol-Version``, ``WWW-Authenticate``, ``Retry-After``) to every other
answer to it. An origin that is not allowed gets no CORS header at all: its
preflight goes on to the application like any request (the edge's Origin check
refuses it where host checks are on), so the browser blocks the call. The bearer
credential is a header, not a cookie, so no ``Allow-Credentials`` is ever sent.

Origins are matched exactly, or by ``scheme://host:*`` for any port of one host.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Final

from starlette.datastructures import Headers, MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send

ALLOWED_METHODS: Final = "GET, POST, DELETE, OPTIONS"
DEFAULT_HEADERS: Final = (
    "Authorization, Content-Type, Accept, Mcp-Session-Id, Mcp-Protocol-Version, "
    "Last-Event-ID, X-CPersona-Session"
)
EXPOSED_HEADERS: Final = "Mcp-Session-Id, Mcp-Protocol-Version, WWW-Authenticate, Retry-After"
MAX_AGE_SECONDS: Final = "600"
_HEADER_LIST = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$")


def origin_allowed(origin: str, allowed: Iterable[str]) -> bool:
    """Whether ``origin`` is in ``allowed`` (exactly, or ``scheme://host:*`` for any port)."""
    for pattern in allowed:
        if pattern == origin:
            return True
        if pattern.endswith(":*"):
            base = pattern[:-2]
            if origin == base or re.fullmatch(re.escape(base) + r":\d{1,5}", origin):
                return True
    return False


class Cors:
    """ASGI middleware: CORS answers for the allowed origins only (see the module)."""

    def __init__(self, app: ASGIApp, allowed_origins: Iterable[str]) -> None:
        self._app = app
        self._allowed = tuple(allowed_origins)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._allowed:
            await self._app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        origin = headers.get("origin")
        if origin is None or not origin_allowed(origin, self._allowed):
            await self._app(scope, receive, send)
            return
        if scope["method"] == "OPTIONS" and "access-control-request-method" in headers:
            await self._preflight(origin, headers, send)
            return
        await self._app(scope, receive, self._exposing(origin, send))

    async def _preflight(self, origin: str, headers: Headers, send: Send) -> None:
        requested = headers.get("access-control-request-headers", "").strip()
        allow_headers = requested if _HEADER_LIST.match(requested) else DEFAULT_HEADERS
        answer = [
            (b"access-control-allow-origin", origin.encode("latin-1")),
            (b"access-control-allow-methods", ALLOWED_METHODS.encode()),
            (b"access-control-allow-headers", allow_headers.encode("latin-1")),
            (b"access-control-max-age", MAX_AGE_SECONDS.encode()),
            (b"vary", b"Origin"),
            (b"content-length", b"0"),
        ]
        await send({"type": "http.response.start", "status": 204, "headers": answer})
        await send({"type": "http.response.body", "body": b""})

    @staticmethod
    def _exposing(origin: str, send: Send) -> Send:
        async def send_with_cors(message: Message) -> None:
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                headers["access-control-allow-origin"] = origin
                headers["access-control-expose-headers"] = EXPOSED_HEADERS
                headers.add_vary_header("Origin")
            await send(message)

        return send_with_cors
