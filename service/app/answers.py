"""The edge's own answers: refusals with ``Retry-After``, timeouts, sizes, 405.

Each is a small JSON body. On ``/mcp`` a refusal (503, 429) is a JSON-RPC error
(:mod:`service.mcp.refusals`) so MCP clients see it as the error it is; elsewhere
it is ``{"error", "reason", "retry_after"}``. Nothing here says how the request
would have been served.
"""

from __future__ import annotations

import json
from typing import Final

from starlette.responses import JSONResponse, Response

from service.app.admission import Refusal
from service.errors import Unavailable
from service.mcp import refusals
from service.models import JsonObject

JSON_HEADERS: Final = {"cache-control": "no-store"}


def too_large_body(limit: int) -> JsonObject:
    """The 413 answer of every route that bounds its request body."""
    return {"error": f"request body too large (max {limit} bytes)"}


def unavailable_refusal(exc: Unavailable) -> Refusal:
    """An Unavailable raised outside a tool (authentication, a /v1 stream) as a 503."""
    message = f"service temporarily unavailable: {exc.message}"
    return Refusal(503, exc.reason, message, exc.retry_after)


def refusal_response(refusal: Refusal, rpc_id: str | int | None, jsonrpc: bool) -> Response:
    """The answer to a refused request: its status, Retry-After, a JSON(-RPC) body."""
    headers = {**JSON_HEADERS, "retry-after": refusal.retry_after_header}
    retry = float(refusal.retry_after_header)
    if jsonrpc:
        body = refusals.error_body(rpc_id, refusal.status, refusal.message, refusal.reason, retry)
        return Response(body, refusal.status, headers, media_type="application/json")
    payload = {"error": refusal.message, "reason": refusal.reason, "retry_after": retry}
    return JSONResponse(payload, refusal.status, headers)


def body_timeout_response(message: str) -> Response:
    """408 for a body that stalled or trickled; the connection is closed after it."""
    headers = {**JSON_HEADERS, "connection": "close"}
    return JSONResponse({"error": message}, 408, headers)


def method_not_allowed(allow: str) -> Response:
    """405 for ``GET /mcp`` (stateless: there is no stream to open) and the like."""
    body = json.dumps({"error": f"method not allowed: use {allow}"}).encode()
    headers = {**JSON_HEADERS, "allow": allow}
    return Response(body, 405, headers, media_type="application/json")


def internal_error(request_id: str) -> Response:
    """500 for a failure the edge did not expect (logged once with its traceback)."""
    return JSONResponse({"error": f"internal error (request {request_id})"}, 500, JSON_HEADERS)
