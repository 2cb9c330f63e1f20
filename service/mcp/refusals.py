"""Temporary refusals over MCP: JSON-RPC errors with a code and a ``Retry-After``.

When the service cannot do a request right now (the database is down or every
connection is busy, see :class:`~service.errors.Unavailable`) the answer is a
JSON-RPC *error*, never a result: with code :data:`UNAVAILABLE_CODE` and
``data: {"reason", "retry_after"}``, and the HTTP edge sends it with status 503 and
``Retry-After``. The official MCP clients surface a JSON-RPC error in a non-2xx
answer as the error itself. The edge refuses requests before they run (full
lanes, rate limits) with the same body, code :data:`LIMITED_CODE` for a 429.
"""

from __future__ import annotations

import json
from typing import Any, Final

from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError

from service.errors import Unavailable
from service.mcp import request

UNAVAILABLE_CODE: Final = -32003
"""JSON-RPC error code (server range) of a 503: overloaded, database down or busy."""
LIMITED_CODE: Final = -32029
"""JSON-RPC error code (server range) of a 429: this key's rate or concurrency limit."""


def code_for(status: int) -> int:
    return LIMITED_CODE if status == 429 else UNAVAILABLE_CODE


def error_data(reason: str, retry_after: float) -> dict[str, Any]:
    return {"reason": reason, "retry_after": retry_after}


def error_body(
    rpc_id: str | int | None, status: int, message: str, reason: str, retry_after: float
) -> bytes:
    """The JSON-RPC error answer of a refused request (``id`` null when unknown)."""
    error = {"code": code_for(status), "message": message, "data": error_data(reason, retry_after)}
    payload = {"jsonrpc": "2.0", "id": rpc_id, "error": error}
    return json.dumps(payload, ensure_ascii=False).encode()


def unavailable_error(exc: Unavailable) -> MCPError:
    """The JSON-RPC error for ``exc``; tells the edge to answer 503 with Retry-After."""
    info = request.current_request.get()
    if info is not None:
        info.status, info.retry_after = 503, exc.retry_after
        info.outcome = exc.reason
    message = f"service temporarily unavailable: {exc.message}; retry in {exc.retry_after:g} s"
    return MCPError(UNAVAILABLE_CODE, message, error_data(exc.reason, exc.retry_after))


class UnavailableAsError:
    """Server middleware: an Unavailable raised by any method becomes its JSON-RPC error."""

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: Any) -> Any:
        try:
            return await call_next(ctx)
        except Unavailable as exc:
            raise unavailable_error(exc) from None
