"""The Starlette application: MCP at ``/mcp``, health, readiness, metrics.

``create_app`` is a factory (no module-level state). The MCP endpoint is the
SDK's stateless streamable-HTTP handler mounted as a plain route (no ``/mcp`` →
``/mcp/`` redirect), wrapped by :class:`McpEdge`, which authenticates the bearer
key, bounds the request body, counts the bytes actually sent, refuses a response
over the ceiling (``service.edge``), writes one structured log line per request
and records its metrics (``/metrics``, unless CPERSONA_METRICS_ENABLED=false).
"""

from __future__ import annotations

import asyncio
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
from starlette.types import ASGIApp, Receive, Scope, Send

from service.app import portability
from service.app.ceiling import RESPONSE_TOO_LARGE, RequestTee, ResponseGuard, oversized_reply
from service.app.metrics import METRICS_CONTENT_TYPE, EdgeMetrics, request_outcome
from service.config import Settings
from service.db.migrate import current_revision, head_revision
from service.db.pool import Database
from service.logs import get_logger
from service.mcp import request, tools
from service.mcp.server import build_mcp_server
from service.memory import tenants
from service.memory.library import Library, build_library
from service.memory.queue import worker
from service.memory.usage import UsageCounter
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


FAILED_OUTCOMES = frozenset(
    {"failed", "invalid_input", "unknown_tool", "response_too_large", "server_error"}
)


class McpEdge:
    """ASGI wrapper of the MCP endpoint: auth, body limits both ways, bytes, log, metrics."""

    def __init__(
        self,
        app: ASGIApp,
        lib: Library,
        anonymous: Caller | None,
        metrics: EdgeMetrics | None = None,
        usage: UsageCounter | None = None,
    ) -> None:
        self._app = app
        self._lib = lib
        self._anonymous = anonymous
        self._metrics = metrics
        self._usage = usage

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        info = request.RequestInfo(request_id=uuid.uuid4().hex[:16])
        token = request.current_request.set(info)
        started = time.perf_counter()
        tee = RequestTee(receive)
        guard = ResponseGuard(
            send,
            info.request_id,
            self._lib.settings.max_response_bytes,
            lambda size: self._refuse(info, tee, size),
        )
        try:
            await self._serve(scope, tee, guard, info)
        finally:
            request.current_request.reset(token)
            self._finish(scope, info, guard, time.perf_counter() - started)

    async def _serve(
        self, scope: Scope, receive: Receive, send: ResponseGuard, info: request.RequestInfo
    ) -> None:
        headers = {"x-request-id": info.request_id}
        if scope.get("method") == "OPTIONS":
            await self._app(scope, receive, send)
            return
        info.caller = await self._authenticate(scope)
        info.session_key = request.session_key_from_headers(scope.get("headers", []))
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

    def _refuse(self, info: request.RequestInfo, tee: RequestTee, size: int) -> bytes:
        """Log a response over the ceiling and build the small answer sent instead."""
        limit = self._lib.settings.max_response_bytes
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
        self, scope: Scope, info: request.RequestInfo, guard: ResponseGuard, seconds: float
    ) -> None:
        """One log line (bytes sent per tool and tenant) and the request's metrics."""
        caller = info.caller
        tenant = caller.tenant_slug if caller else None
        outcome = request_outcome(info.outcome, guard.status)
        log.info(
            "request",
            request_id=info.request_id,
            method=scope.get("method"),
            path=scope.get("path"),
            status=guard.status,
            tenant=tenant,
            key_id=caller.key_id if caller else None,
            tool=info.tool,
            outcome=outcome,
            bytes_out=guard.bytes_out,
            duration_ms=round(seconds * 1000, 2),
        )
        if self._usage is not None and caller is not None and info.tool is not None:
            self._usage.add(
                caller.tenant_id, info.tool[:100], failed=outcome in FAILED_OUTCOMES,
                bytes_out=guard.bytes_out, chars_returned=info.chars_returned,
                chars_saved=info.chars_saved,
            )  # fmt: skip
        if self._metrics is not None:
            self._metrics.observe(
                tool=info.tool,
                outcome=outcome,
                tenant=tenant,
                seconds=seconds,
                sent=guard.bytes_out,
            )


USAGE_FLUSH_SECONDS = 5.0


@contextlib.asynccontextmanager
async def _usage_flusher(lib: Library, usage: UsageCounter) -> AsyncIterator[None]:
    """Flush usage counters every few seconds, and once more at shutdown."""

    async def loop() -> None:
        while True:
            await asyncio.sleep(USAGE_FLUSH_SECONDS)
            await _flush(lib, usage)

    task = asyncio.create_task(loop())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await _flush(lib, usage)


async def _flush(lib: Library, usage: UsageCounter) -> None:
    try:
        await usage.flush(lib)
    except Exception:  # counting must never take the service down; the loss is logged
        log.exception("usage_flush_failed")


def _metrics_endpoint(metrics: EdgeMetrics) -> Any:
    """``GET /metrics``: no auth; tenant slugs and counts only, never tenant data."""

    async def endpoint(request: Request) -> Response:
        return Response(metrics.render(), media_type=METRICS_CONTENT_TYPE)

    return endpoint


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


def _metrics_routes(metrics: EdgeMetrics | None) -> list[Route]:
    if metrics is None:
        return []
    return [Route("/metrics", _metrics_endpoint(metrics), methods=["GET"])]


@contextlib.asynccontextmanager
async def _embedding_worker(lib: Library, model_recorded: bool) -> AsyncIterator[None]:
    """Drain the embedding queue in the background while serving, when this process
    should (embedded database, or CPERSONA_SERVE_WORKER); the batch in progress
    finishes at shutdown."""
    settings = lib.settings
    if not (lib.queue_enabled and settings.runs_worker_in_serve):
        yield
        return
    stop = asyncio.Event()
    work = worker.run_worker(lib, stop, model_recorded=model_recorded)
    task = asyncio.create_task(work, name="embedding-worker")
    try:
        yield
    finally:
        stop.set()
        await task


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
    lib = build_library(db, settings)
    server = build_mcp_server(lib)
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(settings),
        max_request_body_size=settings.max_request_bytes,
    )
    manager = server.session_manager
    metrics = (
        EdgeMetrics(spec.name for spec in tools.all_tools()) if settings.metrics_enabled else None
    )
    usage = UsageCounter()
    edge = McpEdge(StreamableHTTPASGIApp(manager), lib, anonymous, metrics, usage)

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        await db.open()
        try:
            recorded = await worker.start_up(lib)
            async with manager.run(), _embedding_worker(lib, recorded), _usage_flusher(lib, usage):
                yield
        finally:
            await lib.aclose()
            await db.close()
            if on_shutdown is not None:
                on_shutdown()

    app = Starlette(
        routes=[
            Route("/healthz", _healthz, methods=["GET"]),
            Route("/readyz", _readyz(db, head_revision()), methods=["GET"]),
            Route("/mcp", edge, methods=["GET", "POST", "DELETE", "OPTIONS"]),
            *portability.routes(lib, anonymous, transport_security(settings)),
            *_metrics_routes(metrics),
        ],
        lifespan=lifespan,
    )
    app.state.library = lib
    return app
