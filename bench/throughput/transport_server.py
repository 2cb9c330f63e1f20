"""The MCP stack alone: the SDK's server with one tool that does nothing, over HTTP.

``python -m bench.throughput.transport_server --port P`` serves ``noop`` the way ``serve`` serves
the memory tools — the SDK's low-level ``Server``, its stateless streamable-HTTP
handler answering in JSON, the edge's :class:`~service.app.ceiling.ResponseGuard` (each
answer held and sent whole, with its length), uvicorn with the same defaults on a socket
bound the way ``serve`` binds it — and nothing else: no credential, no limits, no
database, no model. Its reply is a fixed text of the size the
caller asks for. :mod:`bench.throughput.transport_ceiling` drives it with the official client to
measure what the transport costs on this machine before the service does any work.

``--raw`` serves the same tool without the SDK: a minimal streamable-HTTP echo in Starlette
that answers ``initialize``, ``tools/list`` and ``tools/call`` with JSON-RPC results in JSON (a
notification is acknowledged with 202), behind the same guard and uvicorn. The SDK's floor
minus this one is what the SDK's own request handling costs a call (issue 37).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import uvicorn
from mcp.server import Server
from mcp.server.context import ServerRequestContext
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp
from mcp.server.transport_security import TransportSecuritySettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from service.app.ceiling import ResponseGuard

REPLY_CEILING = 16 * 1024 * 1024
"""Far above any reply asked for: the guard only holds and measures."""
NOOP_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"chars": {"type": "integer", "minimum": 0, "maximum": 1_000_000}},
    "additionalProperties": False,
}


def noop_reply(chars: int) -> str:
    """A JSON object text of exactly ``chars`` characters (at least its braces)."""
    filler = max(0, chars - len('{"text":""}'))
    return '{"text":"' + "x" * filler + '"}'


def build_server() -> Server[Any]:
    """The SDK server with the one tool ``noop(chars)``."""

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        tool = types.Tool(name="noop", description="Does nothing.", input_schema=NOOP_SCHEMA)
        return types.ListToolsResult(tools=[tool])

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        chars = int((params.arguments or {}).get("chars", 0))
        return types.CallToolResult(content=[types.TextContent(text=noop_reply(chars))])

    return Server("transport-ceiling", on_list_tools=list_tools, on_call_tool=call_tool)


def build_app() -> Starlette:
    """``/mcp`` as in :func:`service.app.factory.create_app`, without the edge."""
    server = build_server()
    server.streamable_http_app(
        stateless_http=True,
        json_response=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    manager = server.session_manager

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[None]:
        async with manager.run():
            yield

    guarded = Guarded(StreamableHTTPASGIApp(manager))
    routes = [Route("/mcp", guarded, methods=["POST"]), Route("/readyz", _ready)]
    return Starlette(routes=routes, lifespan=lifespan)


async def _raw_mcp(scope: Scope, receive: Receive, send: Send) -> None:
    """The minimal echo: one JSON-RPC message per POST, answered in JSON without the SDK."""
    request = Request(scope, receive)
    send = ResponseGuard(send, "noop", REPLY_CEILING, _no_refusal)
    message = json.loads(await request.body())
    if "id" not in message:  # a notification (notifications/initialized)
        await Response(status_code=202)(scope, receive, send)
        return
    params = message.get("params") or {}
    if message.get("method") == "initialize":
        result: dict[str, Any] = {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "transport-echo", "version": "0"},
        }
    elif message.get("method") == "tools/list":  # the client lists once, for output schemas
        tool = {"name": "noop", "description": "Does nothing.", "inputSchema": NOOP_SCHEMA}
        result = {"tools": [tool]}
    else:  # tools/call
        chars = int((params.get("arguments") or {}).get("chars", 0))
        result = {"content": [{"type": "text", "text": noop_reply(chars)}], "isError": False}
    answer = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
    await Response(answer, media_type="application/json")(scope, receive, send)


class RawEcho:
    """:func:`_raw_mcp` as an ASGI app (a class, so Starlette routes it without wrapping)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await _raw_mcp(scope, receive, send)


def build_raw_app() -> Starlette:
    """``/mcp`` as the minimal echo (no SDK), with the same ``/readyz``."""
    routes = [Route("/mcp", RawEcho(), methods=["POST"]), Route("/readyz", _ready)]
    return Starlette(routes=routes)


async def _ready(request: Request) -> Response:
    """200 once the server accepts calls (the harness waits for it, as for ``serve``)."""
    return PlainTextResponse("ready")


class Guarded:
    """An ASGI app whose answers pass the edge's :class:`ResponseGuard`."""

    def __init__(self, app: StreamableHTTPASGIApp) -> None:
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self._app(scope, receive, ResponseGuard(send, "noop", REPLY_CEILING, _no_refusal))


def _no_refusal(size: int) -> bytes:
    raise AssertionError(f"a {size}-byte reply exceeded the benchmark's ceiling")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--raw", action="store_true", help="the minimal echo, without the SDK")
    args = parser.parse_args()
    # proto IPPROTO_TCP as ``serve``'s getaddrinfo gives it: asyncio sets TCP_NODELAY on
    # accepted sockets only then (with proto 0 every answer waited ~40 ms for an ACK)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(2048)
    app = build_raw_app() if args.raw else build_app()
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    uvicorn.Server(config).run(sockets=[sock])


if __name__ == "__main__":
    main()
