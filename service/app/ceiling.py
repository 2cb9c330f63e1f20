"""The response ceiling at the HTTP edge: bytes counted, oversized answers replaced.

:class:`ResponseGuard` wraps the ASGI ``send`` of the MCP endpoint. It counts the body
bytes actually sent and enforces ``CPERSONA_MAX_RESPONSE_BYTES`` as a last line of
defence behind the shaping budgets: a JSON response (every JSON-RPC answer in stateless
JSON mode) is held until its last chunk, buffering at most the ceiling, and if it would
exceed the ceiling a small, well-formed JSON-RPC answer with the same ``id`` is sent in its
place. The oversized payload never leaves the process. Event streams are passed through
as they come, counted but not held."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Final

from starlette.types import Message, Receive, Send

RESPONSE_TOO_LARGE: Final = "response_too_large"


RESPONSE_TOO_LARGE_CODE: Final = -32001
"""JSON-RPC error code (implementation-defined server range) for non-tool methods."""


class RequestTee:
    """Wraps ``receive`` and keeps the request body, so a refused answer can echo its id.

    The body is already bounded (the 413 check and the SDK's own body limit), and the
    chunks are the same objects the SDK reads, so keeping references costs little. It is
    parsed only when a response is refused.
    """

    def __init__(self, receive: Receive) -> None:
        self._receive = receive
        self._chunks: list[bytes] = []

    async def __call__(self) -> Message:
        message = await self._receive()
        if message["type"] == "http.request":
            self._chunks.append(message.get("body", b""))
        return message

    def rpc_call(self) -> tuple[str | int | None, str | None]:
        """The JSON-RPC ``id`` and ``method`` of the request, ``None`` where unknown."""
        try:
            payload = json.loads(b"".join(self._chunks))
        except (ValueError, RecursionError):
            return None, None
        if not isinstance(payload, dict):
            return None, None
        rpc_id, method = payload.get("id"), payload.get("method")
        valid_id = isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool)
        return (rpc_id if valid_id else None), (method if isinstance(method, str) else None)


def oversized_reply(
    rpc_id: str | int | None, method: str | None, tool: str | None, size: int, limit: int
) -> bytes:
    """The JSON-RPC answer sent instead of a response of ``size`` bytes over ``limit``.

    A ``tools/call`` gets a tool error result (``isError: true``) whose text is a JSON
    object with ``ok: false`` and an ``error`` that says how to ask for less, so both MCP
    clients and CPersona-style ``error``-key checks see a failure. Any other method gets a
    JSON-RPC error.
    """
    what = f"this {tool} call" if tool else f"this {method or 'request'}"
    message = (
        f"response too large: {what} would send {size:,} bytes, over this server's limit of "
        f"{limit:,} bytes per response (CPERSONA_MAX_RESPONSE_BYTES); nothing was returned. "
        "Ask for less: lower `limit`, leave `full_content` off, pass fewer refs to "
        "get_contents, or narrow by agent_id / project_id."
    )
    if method == "tools/call":
        text = json.dumps(
            {"ok": False, "error": message, "response_bytes": size, "max_response_bytes": limit},
            ensure_ascii=False,
        )
        result = {"content": [{"type": "text", "text": text}], "isError": True}
        payload: dict[str, object] = {"jsonrpc": "2.0", "id": rpc_id, "result": result}
    else:
        error = {"code": RESPONSE_TOO_LARGE_CODE, "message": message}
        payload = {"jsonrpc": "2.0", "id": rpc_id, "error": error}
    return json.dumps(payload, ensure_ascii=False).encode()


class ResponseGuard:
    """Wraps ``send``: request-id header, byte count, and the response ceiling.

    ``ceiling`` None only counts (routes whose answers the shaping layer does not build).
    ``refuse(size)`` builds the replacement body when a held response would be ``size``
    bytes, over ``ceiling``; it runs once, inside the request, so it can log with the
    request's tool and tenant. ``bytes_out`` counts body bytes actually sent (the
    replacement, never the refused payload); ``refused_size`` is the refused size.
    """

    def __init__(
        self, send: Send, request_id: str, ceiling: int | None, refuse: Callable[[int], bytes]
    ) -> None:
        self._send = send
        self._request_id = request_id.encode()
        self._ceiling = ceiling
        self._refuse = refuse
        self._held: Message | None = None
        self._chunks: list[bytes] = []
        self._size = 0
        self.status: int | None = None
        self.bytes_out = 0
        self.refused_size: int | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            message = _with_header(message, b"x-request-id", self._request_id)
            if self._ceiling is not None and _is_json(message):
                self._held = message
                return
        elif message["type"] == "http.response.body":
            if self._held is not None:
                await self._hold(self._held, message)
                return
            self.bytes_out += len(message.get("body", b""))
        await self._send(message)

    async def _hold(self, start: Message, message: Message) -> None:
        """Buffer a JSON body up to the ceiling; on its last chunk send it or its refusal."""
        assert self._ceiling is not None
        chunk = message.get("body", b"")
        self._size += len(chunk)
        if self._size <= self._ceiling:
            self._chunks.append(chunk)
        else:
            self._chunks.clear()  # past the ceiling nothing more is kept
        if message.get("more_body", False):
            return
        self._held = None
        if self._size > self._ceiling:
            self.refused_size = self._size
            body = self._refuse(self._size)
        else:
            body = b"".join(self._chunks)
        self._chunks = []
        await self._send(_with_header(start, b"content-length", str(len(body)).encode()))
        await self._send({"type": "http.response.body", "body": body, "more_body": False})
        self.bytes_out += len(body)


def _is_json(start: Message) -> bool:
    for name, value in start.get("headers", []):
        if name.lower() == b"content-type":
            return bool(value.split(b";")[0].strip().lower() == b"application/json")
    return False


def _with_header(start: Message, name: bytes, value: bytes) -> Message:
    """A copy of a response start with header ``name`` set to ``value`` (once)."""
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != name]
    return {**start, "headers": [*headers, (name, value)]}
