"""The one HTTP edge every authenticated route passes: ``/mcp`` and ``/v1/*``.

:class:`Edge` wraps a route's handler and does, in this order, what every request
needs: a request id (and the per-request :class:`~service.mcp.request.RequestInfo`
the dispatcher fills in), the Host/Origin checks (DNS-rebinding protection), the
methods the route refuses (``GET /mcp``: 405), the bearer credential (an API
key or an OAuth access token, resolved by :class:`~service.app.oauth.bearer.BearerAuth`:
401 ``{"error": "unauthorized"}`` with ``WWW-Authenticate: Bearer
resource_metadata="..."``, 403 for a token of an unknown tenant; 429 before any lookup
for an address sending too many failed credentials, :mod:`service.app.credentials`),
the key's limits (429), the declared body size (413), the body itself under a read
timeout and a minimum rate (408; ``/mcp`` reads it whole here), a place in the
request's lane within its tenant's share (503, 429), then the handler; afterwards one
structured log line per request, and for
``/mcp`` the metrics and usage counts. The handler sees an :class:`Exchange`: the
ASGI triple with a counting ``send``, the caller and the library.

Every refusal and every temporary failure (:class:`~service.errors.Unavailable`:
the database is down or busy) is a clear JSON answer with ``Retry-After`` (a
JSON-RPC error on ``/mcp``), never a plain-text 500; a client that disconnects or
stops reading ends its request with one log line, never a traceback.

The tenant comes from the credential only, never from arguments, headers other
than ``Authorization`` or the URL.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Callable
from typing import Final, Literal

from mcp.server.transport_security import TransportSecurityMiddleware
from starlette.responses import JSONResponse
from starlette.types import Receive, Scope, Send

from service.app import answers, bodies
from service.app.admission import KeyLimits, Lane, LaneName, Refusal
from service.app.answers import too_large_body
from service.app.ceiling import RESPONSE_TOO_LARGE, RequestTee, ResponseGuard, oversized_reply
from service.app.credentials import CredentialGate, client_address
from service.app.exchange import Exchange, Handler, asgi_handler
from service.app.hosts import transport_security
from service.app.metrics import EdgeMetrics, request_outcome
from service.app.oauth.bearer import BearerAuth, Denial, bearer_credential
from service.errors import Unavailable
from service.logs import get_logger, throttled
from service.mcp import request as mcp_request
from service.memory.library import Library
from service.memory.usage import UsageCounter
from service.models import Caller

__all__ = [
    "Edge",
    "EdgeDeps",
    "Exchange",
    "Handler",
    "asgi_handler",
    "too_large_body",
    "transport_security",
]

log = get_logger("service.request")
FAILED_OUTCOMES: Final = frozenset(
    {
        "failed",
        "invalid_input",
        "unknown_tool",
        "not_in_tool_set",
        "response_too_large",
        "server_error",
        "database_unavailable",
        "database_busy",
    }
)
BodyMode = Literal["whole", "stream"]


def declared_length(scope: Scope) -> int | None:
    """The request's Content-Length, None when absent or not a number."""
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            return int(value) if value.isdigit() else None
    return None


@dataclasses.dataclass(frozen=True)
class EdgeDeps:
    """What every :class:`Edge` of one application shares.

    ``lanes`` and ``limits`` are the process's admission control; ``lane_of`` picks
    the lane of an MCP request from its body (read-only tools read, others write);
    ``gate`` throttles failed credentials per address before they reach the database.
    """

    lib: Library
    bearer: BearerAuth
    security: TransportSecurityMiddleware
    metrics: EdgeMetrics | None = None
    usage: UsageCounter | None = None
    lanes: dict[LaneName, Lane] | None = None
    limits: KeyLimits | None = None
    lane_of: Callable[[bytes], LaneName] = lambda body: "read"
    gate: CredentialGate | None = None


class Edge:
    """ASGI app of one route: checks, credential, limits, body, lane, handler, log line.

    ``max_body`` bounds the request size (413). ``body="whole"`` reads the body here
    (under the read timeout) before the request takes a place in its lane, and picks
    the lane from it; ``"stream"`` leaves it to the handler, through the same guard.
    ``lane`` fixes the lane (``bulk`` also moves the handler's transactions to the
    bulk pool). ``ceiling`` (the MCP endpoint) holds JSON answers and replaces one
    over CPERSONA_MAX_RESPONSE_BYTES; it also turns on metrics and usage counting and
    JSON-RPC refusals. ``refuse_methods`` answer 405 with ``Allow: POST``. ``route``
    is what the log line names (never a token or a file name).
    """

    def __init__(
        self,
        deps: EdgeDeps,
        handler: Handler,
        *,
        route: str,
        max_body: int,
        ceiling: bool,
        body: BodyMode = "stream",
        lane: LaneName | None = None,
        refuse_methods: frozenset[str] = frozenset(),
    ) -> None:
        self._deps, self._handler, self._route = deps, handler, route
        self._max_body, self._ceiling = max_body, ceiling
        self._body, self._lane, self._refuse_methods = body, lane, refuse_methods

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        info = mcp_request.RequestInfo(request_id=uuid.uuid4().hex[:16])
        token = mcp_request.current_request.set(info)
        started = time.perf_counter()
        settings = self._deps.lib.settings
        guarded = bodies.BodyGuard(
            receive, timeout=settings.body_read_timeout, min_rate=settings.body_min_rate
        )
        tee = RequestTee(guarded)
        limit = settings.max_response_bytes if self._ceiling else None
        guard = ResponseGuard(
            send, info.request_id, limit, lambda size: self._refuse(info, tee, size)
        )
        # only the MCP endpoint keeps its body for an oversized answer's id
        exchange = Exchange(scope, tee if self._ceiling else guarded, guard, self._deps.lib, info)
        try:
            await self._served(exchange, tee)
        finally:
            mcp_request.current_request.reset(token)
            self._finish(scope, info, guard, time.perf_counter() - started)

    async def _served(self, exchange: Exchange, tee: RequestTee) -> None:
        """:meth:`_serve`, with every way a request can end early answered or logged."""
        try:
            await self._serve(exchange, tee)
        except bodies.ClientGone as gone:
            exchange.info.outcome = gone.outcome
        except bodies.BodyTimedOut as exc:
            exchange.info.outcome = "body_timeout"
            await exchange.answer(answers.body_timeout_response(str(exc)))
        except bodies.BodyTooLarge:
            await exchange.answer(JSONResponse(too_large_body(self._max_body), 413))
        except Refusal as refusal:
            await self._refuse_request(exchange, tee, refusal)
        except Unavailable as exc:
            await self._refuse_request(exchange, tee, answers.unavailable_refusal(exc))
        except Exception:
            exchange.info.outcome = "server_error"
            if (suppressed := throttled("edge_failed", self._route)) is not None:
                log.exception("edge_failed", route=self._route, suppressed=suppressed)
            await exchange.answer(answers.internal_error(exchange.info.request_id))

    async def _serve(self, exchange: Exchange, tee: RequestTee) -> None:
        # Host and Origin only: each handler checks its own content type.
        refusal = await self._deps.security.validate_request(exchange.request, is_post=False)
        if refusal is not None:
            await exchange.respond(refusal)
            return
        method = exchange.scope.get("method", "")
        if method in self._refuse_methods:
            await exchange.respond(answers.method_not_allowed("POST"))
            return
        if method == "OPTIONS":
            await self._handler(exchange)
            return
        resolved = await self._authenticate(exchange.scope)
        exchange.info.session_key = mcp_request.session_key_from_headers(
            exchange.scope.get("headers", [])
        )
        if isinstance(resolved, Denial):
            challenge = self._deps.bearer.challenge(exchange.scope, resolved)
            await exchange.json(resolved.status, resolved.body, challenge)
            return
        exchange.info.caller = resolved
        if self._deps.limits is None:
            await self._admitted(exchange)
            return
        with self._deps.limits.hold(exchange.info.caller.key_id):
            await self._admitted(exchange)

    async def _authenticate(self, scope: Scope) -> Caller | Denial:
        """The bearer's caller, through the failed-credential gate when there is one."""
        gate, credential = self._deps.gate, bearer_credential(scope)
        if gate is None or credential is None:
            return await self._deps.bearer.resolve(scope)
        address = client_address(scope)
        known = gate.before(address, credential)
        if known is not None:
            return known
        resolved = await self._deps.bearer.resolve(scope)
        gate.after(address, credential, resolved)
        return resolved

    async def _admitted(self, exchange: Exchange) -> None:
        """Size, body and lane of a request its key may send; then the handler."""
        length = declared_length(exchange.scope)
        if length is not None and length > self._max_body:
            await exchange.json(413, too_large_body(self._max_body))
            return
        lane = self._lane or "read"
        if self._body == "whole":
            body = await bodies.read_body(exchange.receive, self._max_body)
            exchange.use_body(body)
            lane = self._lane or self._deps.lane_of(body)
        if self._deps.lanes is None:
            await self._run(exchange, lane)
            return
        caller = exchange.info.caller
        async with self._deps.lanes[lane].slot(str(caller.tenant_id) if caller else ""):
            await self._run(exchange, lane)

    async def _run(self, exchange: Exchange, lane: LaneName) -> None:
        if lane != "bulk":
            await self._handler(exchange)
            return
        with exchange.lib.db.bulk_lane():
            await self._handler(exchange)

    async def _refuse_request(self, exchange: Exchange, tee: RequestTee, refusal: Refusal) -> None:
        """Answer a refusal (once per class per interval in the log), unless too late."""
        exchange.info.outcome = refusal.reason
        if (suppressed := throttled("request_refused", refusal.reason, self._route)) is not None:
            log.warning(
                "request_refused",
                reason=refusal.reason,
                status=refusal.status,
                path=self._route,
                detail=refusal.message,
                suppressed=suppressed,
            )
        rpc_id = tee.rpc_call()[0] if self._ceiling else None
        await exchange.answer(answers.refusal_response(refusal, rpc_id, jsonrpc=self._ceiling))

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
            tokens_delivered=info.tokens_delivered,
            tokens_saved=info.tokens_saved or {},
        )
