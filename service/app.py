"""The Starlette application: MCP at ``/mcp``, health, readiness.

``create_app`` is a factory (no module-level state). The MCP endpoint is the
SDK's stateless streamable-HTTP handler mounted as a plain route (no ``/mcp`` →
``/mcp/`` redirect), wrapped by :class:`McpEdge`, which authenticates the bearer
key, bounds the request body, counts the bytes actually sent, and writes one
structured log line per request.
"""

from __future__ import annotations

import contextlib
import time
import uuid
from collections.abc import AsyncIterator, Callable
from typing import Any

from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.config import Settings
from service.db.migrate import current_revision, head_revision
from service.db.pool import Database
from service.logs import get_logger
from service.mcp import context
from service.mcp.server import build_mcp_server
from service.memory import tenants
from service.memory.library import Library
from service.models import Caller

log = get_logger("service.request")
LOOPBACK = ("127.0.0.1", "localhost", "::1")


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
        return TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", "127.0.0.1", "localhost"],
            allowed_origins=[
                "http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*",
                *settings.allowed_origins,
            ],
        )  # fmt: skip
    return TransportSecuritySettings(enable_dns_rebinding_protection=False)


def _json_response(status: int, body: dict[str, Any], headers: dict[str, str]) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


def _bearer(scope: Scope) -> str | None:
    for name, value in scope.get("headers", []):
        if name == b"authorization":
            scheme, _, credential = value.decode("latin-1").partition(" ")
            if scheme.lower() == "bearer" and credential.strip():
                return str(credential.strip())
            return None
    return None


def _content_length(scope: Scope) -> int | None:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class McpEdge:
    """ASGI wrapper of the MCP endpoint: auth, body limit, byte count, request log."""

    def __init__(self, app: ASGIApp, lib: Library, anonymous: Caller | None) -> None:
        self._app = app
        self._lib = lib
        self._anonymous = anonymous

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        info = context.RequestInfo(request_id=uuid.uuid4().hex[:16])
        token = context.current_request.set(info)
        started = time.perf_counter()
        counter = _SendCounter(send, info.request_id)
        try:
            await self._serve(scope, receive, counter, info)
        finally:
            context.current_request.reset(token)
            self._log(scope, info, counter, started)

    async def _serve(
        self, scope: Scope, receive: Receive, send: _SendCounter, info: context.RequestInfo
    ) -> None:
        headers = {"x-request-id": info.request_id}
        if scope.get("method") == "OPTIONS":
            await self._app(scope, receive, send)
            return
        info.caller = await self._authenticate(scope)
        if info.caller is None:
            headers["www-authenticate"] = "Bearer"
            body = {"error": "unauthorized"}
            await _json_response(401, body, headers)(scope, receive, send)
            return
        length = _content_length(scope)
        if length is not None and length > self._lib.settings.max_request_bytes:
            limit = self._lib.settings.max_request_bytes
            body = {"error": f"request body too large (max {limit} bytes)"}
            await _json_response(413, body, headers)(scope, receive, send)
            return
        await self._app(scope, receive, send)

    async def _authenticate(self, scope: Scope) -> Caller | None:
        key = _bearer(scope)
        if key is not None:
            return await tenants.authenticate(self._lib.db, key)
        return self._anonymous

    def _log(
        self, scope: Scope, info: context.RequestInfo, counter: _SendCounter, started: float
    ) -> None:
        caller = info.caller
        log.info(
            "request",
            request_id=info.request_id,
            method=scope.get("method"),
            path=scope.get("path"),
            status=counter.status,
            tenant=caller.tenant_slug if caller else None,
            key_id=caller.key_id if caller else None,
            tool=info.tool,
            outcome=info.outcome,
            bytes_out=counter.bytes_out,
            duration_ms=round((time.perf_counter() - started) * 1000, 2),
        )


class _SendCounter:
    """Wraps ``send``: counts body bytes actually sent and adds the request id header."""

    def __init__(self, send: Send, request_id: str) -> None:
        self._send = send
        self._request_id = request_id.encode()
        self.status: int | None = None
        self.bytes_out = 0

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            headers = list(message.get("headers", []))
            if not any(name == b"x-request-id" for name, _ in headers):
                headers.append((b"x-request-id", self._request_id))
            message = {**message, "headers": headers}
        elif message["type"] == "http.response.body":
            self.bytes_out += len(message.get("body", b""))
        await self._send(message)


async def _healthz(request: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _readyz(db: Database, head: str) -> Any:
    async def readyz(request: Request) -> Response:
        try:
            revision = await current_revision(db)
        except Exception as exc:  # any failure to reach the database means not ready
            return JSONResponse({"status": "unavailable", "error": type(exc).__name__}, 503)
        if revision != head:
            body = {"status": "migrations pending", "revision": revision, "head": head}
            return JSONResponse(body, 503)
        return JSONResponse({"status": "ready", "revision": revision})

    return readyz


def create_app(
    settings: Settings,
    database_url: str,
    anonymous: Caller | None = None,
    on_shutdown: Callable[[], None] | None = None,
) -> Starlette:
    """Build the application for ``database_url``; the pool opens in the lifespan.

    ``anonymous`` is the caller used for requests without a key, only when the
    operator set CPERSONA_ALLOW_UNAUTHENTICATED_HTTP=true. ``on_shutdown`` runs
    last in the lifespan (the embedded server is stopped there, because uvicorn
    re-raises SIGTERM once the lifespan is done and nothing after it runs).
    """
    db = Database(
        database_url,
        min_size=settings.db_pool_min,
        max_size=settings.db_pool_max,
        command_timeout=settings.db_command_timeout,
    )
    lib = Library(db, settings)
    server = build_mcp_server(lib)
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(settings),
        max_request_body_size=settings.max_request_bytes,
    )
    manager = server.session_manager
    edge = McpEdge(StreamableHTTPASGIApp(manager), lib, anonymous)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await db.open()
        try:
            async with manager.run():
                yield
        finally:
            await db.close()
            if on_shutdown is not None:
                on_shutdown()

    app = Starlette(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", _readyz(db, head_revision()), methods=["GET"]),
            Route("/mcp", edge, methods=["GET", "POST", "DELETE", "OPTIONS"]),
        ],
        lifespan=lifespan,
    )
    app.state.library = lib
    return app
