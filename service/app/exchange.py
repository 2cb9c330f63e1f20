"""What a handler behind the edge works with: :class:`Exchange`, one request.

The ASGI triple (with the counting, ceiling-enforcing ``send`` of
:class:`~service.app.ceiling.ResponseGuard`), the caller, the library and the
per-request :class:`~service.mcp.request.RequestInfo`. Streamed answers are sent
through :meth:`Exchange.chunk`, which gives up on a client that stopped reading.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.app import bodies
from service.app.ceiling import ResponseGuard
from service.mcp import request as mcp_request
from service.memory.library import Library
from service.models import Caller, JsonObject


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
        self.stall_timeout = lib.settings.stream_stall_timeout

    @property
    def caller(self) -> Caller:
        assert self.info.caller is not None
        return self.info.caller

    @property
    def started(self) -> bool:
        """Whether the answer has begun (nothing else can be sent then)."""
        return self.send.status is not None

    def use_body(self, body: bytes) -> None:
        """Replay ``body`` (read whole by the edge) to the handler."""
        self.receive = bodies.replay(body, self.receive)
        self.request = Request(self.scope, self.receive)

    async def json(
        self, status: int, body: JsonObject, headers: dict[str, str] | None = None
    ) -> None:
        await JSONResponse(body, status, headers)(self.scope, self.receive, self.send)

    async def respond(self, response: Response) -> None:
        await response(self.scope, self.receive, self.send)

    async def answer(self, response: Response) -> None:
        """Send ``response`` unless the answer has begun (then the request just ends)."""
        if not self.started:
            await self.respond(response)

    async def start_stream(self, headers: list[tuple[bytes, bytes]], status: int = 200) -> None:
        await self._send_within(
            {"type": "http.response.start", "status": status, "headers": headers}
        )

    async def chunk(self, data: bytes, more: bool = True) -> None:
        """Send a part of a streamed answer; ClientStalled when the client does not take
        it within CPERSONA_STREAM_STALL_TIMEOUT (it stopped reading)."""
        await self._send_within({"type": "http.response.body", "body": data, "more_body": more})

    async def _send_within(self, message: Message) -> None:
        try:
            await asyncio.wait_for(self.send(message), self.stall_timeout)
        except TimeoutError:
            raise bodies.ClientStalled from None


Handler = Callable[[Exchange], Awaitable[None]]


def asgi_handler(app: ASGIApp) -> Handler:
    """A handler that passes the request on to an ASGI app (the MCP transport)."""

    async def handle(exchange: Exchange) -> None:
        await app(exchange.scope, exchange.receive, app_send(exchange))

    return handle


def app_send(exchange: Exchange) -> Send:
    """The ``send`` an ASGI app behind the edge gets.

    It answers with the status the dispatcher asked for (503 with its Retry-After when
    the database was unavailable), and gives up on a client that takes nothing for
    CPERSONA_STREAM_STALL_TIMEOUT: the rest of the answer is dropped and the request
    ends as ``client_stalled``, so a client that never reads its answers cannot keep a
    place in a lane. (It does not raise: the MCP SDK would log the error with a
    traceback and try to answer again.)
    """
    stalled = False

    async def send(message: Message) -> None:
        nonlocal stalled
        if stalled:
            return
        info = exchange.info
        if message["type"] == "http.response.start" and info.status is not None:
            retry = str(max(1, round(info.retry_after or 1)))
            headers = [*message.get("headers", []), (b"retry-after", retry.encode())]
            message = {**message, "status": info.status, "headers": headers}
        try:
            await asyncio.wait_for(exchange.send(message), exchange.stall_timeout)
        except TimeoutError:
            stalled = True
            info.outcome = bodies.ClientStalled.outcome

    return send
