"""The one HTTP edge every authenticated route passes: ``/mcp`` and ``/v1/*``.

:class:`Edge` wraps a route's handler and does, in this order, what every request
needs: a request id (and the per-request :class:`~service.mcp.request.RequestInfo`
the dispatcher fills in), the Host/Origin checks (DNS-rebinding protection), the
bearer credential (an API key or an OAuth access token, resolved by
:class:`~service.app.oauth.bearer.BearerAuth`: 401 ``{"error": "unauthorized"}`` with
``WWW-Authenticate: Bearer resource_metadata="..."``, 403 for a token of an unknown
tenant), the declared body size (413), then the handler; afterwards one structured
log line per request, and for ``/mcp`` the metrics and usage counts. The handler
sees an :class:`Exchange`: the ASGI triple with a counting ``send``, the caller and
the library.

The tenant comes from the credential only, never from arguments, headers other
than ``Authorization`` or the URL.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Final

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from service.app.ceiling import RESPONSE_TOO_LARGE, RequestTee, ResponseGuard, oversized_reply
from service.app.metrics import EdgeMetrics, request_outcome
from service.app.oauth.bearer import BearerAuth, Denial
from service.config import Settings
from service.logs import get_logger
from service.mcp import request as mcp_request
from service.memory.library import Library
from service.memory.usage import UsageCounter
from service.models import Caller, JsonObject

log = get_logger("service.request")
LOOPBACK: Final = ("127.0.0.1", "localhost", "::1")
FAILED_OUTCOMES: Final = frozenset(
    {"failed", "invalid_input", "unknown_tool", "response_too_large", "server_error"}
)


def transport_security(settings: Settings) -> TransportSecuritySettings:
    """Host/Origin checks (DNS-rebinding protection).

    Explicit ``CPERSONA_ALLOWED_HOSTS`` win; a loopback bind defaults to the
    loopback names; any other bind without a list leaves the check off (behind a
    proxy the operator names the public host).
    """
    if settings.allowed_hosts:
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(settings.allowed_hosts),
            allowed_origins=list(settings.allowed_origins),
        )
    if settings.http_host in LOOPBACK:
        loopback_origins = ["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"]
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=[*loopback_origins, *settings.allowed_origins],
        )
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def too_large_body(limit: int) -> JsonObject:
    """The 413 answer of every route that bounds its request body."""
    return {"error": f"request body too large (max {limit} bytes)"}


def declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, None when absent or not a number."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


@dataclasses.dataclass(frozen=True)
class EdgeDeps:
    """What every :class:`Edge` of one application shares."""

    lib: Library
    bearer: BearerAuth
    security: TransportSecurityMiddleware
    metrics: EdgeMetrics | None = None
    usage: UsageCounter | None = None


class Exchange:
    """One authenticated request as a handler sees it."""

    def __init__(
        self,
        scope: Scope,
        receive: Receive,
        send: ResponseGuard,
        lib: Library,
        info: mcp_request.RequestInfo,
    ) -> None:
        self.scope, self.receive, self.send = scope, receive, send
        self.lib, self.info = lib, info
        self.request = Request(scope, receive)

    @property
    def caller(self) -> Caller:
        assert self.info.caller is not None
        return self.info.caller

    async def json(
        self, status: int, body: JsonObject, headers: dict[str, str] | None = None
    ) -> None:
        await JSONResponse(body, status, headers)(self.scope, self.receive, self.send)

    async def start_stream(self, headers: list[tuple[bytes, bytes]], status: int = 200) -> None:
        await self.send({"type": "http.response.start", "status": status, "headers": headers})

    async def chunk(self, data: bytes, more: bool = True) -> None:
        await self.send({"type": "http.response.body", "body": data, "more_body": more})


Handler = Callable[[Exchange], Awaitable[None]]


def asgi_handler(app: ASGIApp) -> Handler:
    """A handler that passes the request on to an ASGI app (the MCP transport)."""

    async def handle(exchange: Exchange) -> None:
        await app(exchange.scope, exchange.receive, exchange.send)

    return handle


class Edge:
    """ASGI app of one route: checks, credential, size, handler, log line, accounting.

    ``max_body`` bounds the declared request size (413). ``ceiling`` (the MCP
    endpoint) holds JSON answers and replaces one over CPERSONA_MAX_RESPONSE_BYTES
    with a small JSON-RPC error; it also turns on metrics and usage counting.
    ``route`` is what the log line names (never a token or a file name).
    """

    def __init__(
        self, deps: EdgeDeps, handler: Handler, *, route: str, max_body: int, ceiling: bool
    ) -> None:
        self._deps, self._handler, self._route = deps, handler, route
        self._max_body, self._ceiling = max_body, ceiling

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        info = mcp_request.RequestInfo(request_id=uuid.uuid4().hex[:16])
        token = mcp_request.current_request.set(info)
        started = time.perf_counter()
        tee = RequestTee(receive)
        limit = self._deps.lib.settings.max_response_bytes if self._ceiling else None
        guard = ResponseGuard(
            send, info.request_id, limit, lambda size: self._refuse(info, tee, size)
        )
        try:
            await self._serve(Exchange(scope, tee, guard, self._deps.lib, info))
        finally:
            mcp_request.current_request.reset(token)
            self._finish(scope, info, guard, time.perf_counter() - started)

    async def _serve(self, exchange: Exchange) -> None:
        # Host and Origin only: each handler checks its own content type.
        refusal = await self._deps.security.validate_request(exchange.request, is_post=False)
        if refusal is not None:
            await refusal(exchange.scope, exchange.receive, exchange.send)
            return
        if exchange.scope.get("method") == "OPTIONS":
            await self._handler(exchange)
            return
        resolved = await self._deps.bearer.resolve(exchange.scope)
        exchange.info.session_key = mcp_request.session_key_from_headers(
            exchange.scope.get("headers", [])
        )
        if isinstance(resolved, Denial):
            challenge = self._deps.bearer.challenge(exchange.scope, resolved)
            await exchange.json(resolved.status, resolved.body, challenge)
            return
        exchange.info.caller = resolved
        length = declared_length(exchange.scope)
        if length is not None and length > self._max_body:
            await exchange.json(413, too_large_body(self._max_body))
            return
        await self._handler(exchange)

    def _refuse(self, info: mcp_request.RequestInfo, tee: RequestTee, size: int) -> bytes:
        """Log a response over the ceiling and build the small answer sent instead."""
        limit = self._deps.lib.settings.max_response_bytes
        rpc_id, method = tee.rpc_call()
        info.outcome = RESPONSE_TOO_LARGE
        log.warning(
            RESPONSE_TOO_LARGE,
            request_id=info.request_id,
            tool=info.tool,
            rpc_method=method,
            tenant=info.caller.tenant_slug if info.caller else None,
            bytes=size,
            max_response_bytes=limit,
        )
        return oversized_reply(rpc_id, method, info.tool, size, limit)

    def _finish(
        self, scope: Scope, info: mcp_request.RequestInfo, guard: ResponseGuard, seconds: float
    ) -> None:
        """One log line per request; metrics and usage for the MCP endpoint."""
        caller = info.caller
        tenant = caller.tenant_slug if caller else None
        outcome = request_outcome(info.outcome, guard.status)
        log.info(
            "request",
            request_id=info.request_id,
            method=scope.get("method"),
            path=self._route,
            status=guard.status,
            tenant=tenant,
            key_id=caller.key_id if caller else None,
            tool=info.tool,
            outcome=outcome,
            bytes_out=guard.bytes_out,
            duration_ms=round(seconds * 1000, 2),
        )
        if not self._ceiling:
            return
        self._account(info, outcome, guard.bytes_out)
        if self._deps.metrics is not None:
            self._deps.metrics.observe(
                tool=info.tool,
                outcome=outcome,
                tenant=tenant,
                seconds=seconds,
                sent=guard.bytes_out,
            )

    def _account(self, info: mcp_request.RequestInfo, outcome: str, sent: int) -> None:
        usage, caller = self._deps.usage, info.caller
        if usage is None or caller is None or info.tool is None:
            return
        usage.add(
            caller.tenant_id,
            info.tool[:100],
            failed=outcome in FAILED_OUTCOMES,
            bytes_out=sent,
            chars_returned=info.chars_returned,
            chars_saved=info.chars_saved,
        )
