"""The official MCP Python SDK client: sessions, tool calls, the embedding queue.

Every call goes over MCP streamable HTTP to a real ``serve`` process
(:mod:`bench.harness.serving`), exactly as an agent's client would make it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from bench.harness.serving import BenchError, Service

HTTP_TIMEOUT_S = 30.0
CALL_TIMEOUT_S = 60.0


@contextlib.asynccontextmanager
async def mcp_session(
    mcp_url: str, key: str, session_key: str | None = None
) -> AsyncIterator[ClientSession]:
    """One initialised official-SDK MCP session over its own HTTP connection; with
    ``session_key``, its requests name that session in ``X-CPersona-Session``."""
    headers = {"Authorization": f"Bearer {key}"}
    if session_key is not None:
        headers["X-CPersona-Session"] = session_key
    async with (
        httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT_S) as http,
        streamable_http_client(mcp_url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


@contextlib.asynccontextmanager
async def mcp_sessions(mcp_url: str, key: str, count: int) -> AsyncIterator[list[ClientSession]]:
    """``count`` independent sessions (each its own HTTP client), opened one after another."""
    async with contextlib.AsyncExitStack() as stack:
        sessions = [
            await stack.enter_async_context(mcp_session(mcp_url, key)) for _ in range(count)
        ]
        yield sessions


# --------------------------------------------------------------------------- results


def result_text(result: types.CallToolResult) -> str | None:
    """The text a model would read: every text content joined (None when there is none)."""
    parts = [item.text for item in result.content if isinstance(item, types.TextContent)]
    return "".join(parts) if parts else None


def json_body(text: str) -> tuple[dict[str, Any], bool]:
    """The JSON object of a result text and True, or ``({"error": ...}, False)``."""
    try:
        body = json.loads(text)
    except ValueError:
        return {"error": text[:200]}, False
    if not isinstance(body, dict):
        return {"error": "not an object"}, False
    return body, True


@dataclasses.dataclass(frozen=True)
class Reply:
    """One tool call: its text, JSON body (``{"error": ...}`` when it failed) and latency."""

    text: str
    body: dict[str, Any]
    seconds: float
    failed: bool


def reply_of(result: types.CallToolResult, seconds: float) -> Reply:
    """A received tool result as a :class:`Reply`."""
    text = result_text(result)
    if text is None:
        return Reply("", {"error": "no text content"}, seconds, True)
    body, ok = json_body(text)
    return Reply(text, body, seconds, not ok or bool(result.is_error) or "error" in body)


async def call_json(session: ClientSession, tool: str, args: dict[str, Any]) -> Reply:
    """Call ``tool`` once; a transport failure becomes a failed reply, never a crash."""
    started = time.perf_counter()
    try:
        result = await session.call_tool(tool, args, read_timeout_seconds=CALL_TIMEOUT_S)
    except Exception as exc:  # a failed call is a result to report
        error = {"error": f"{type(exc).__name__}: {exc}"}
        return Reply("", error, time.perf_counter() - started, True)
    return reply_of(result, time.perf_counter() - started)


# --------------------------------------------------------------------------- embedding queue


def drain_timeout_s(rows: int, floor_s: float) -> float:
    """How long a backlog of ``rows`` stored texts may take to drain before a bench gives
    up: ``floor_s``, or half a second a row when that is longer. A fixed bound failed runs
    that were merely large (8,483 LongMemEval turns on the loaded 2-core machine, whose
    service drained about 3 rows a second there: docs/benchmarks/quality.md, "Passages")."""
    return max(floor_s, 0.5 * rows)


async def wait_queue_empty(session: ClientSession, timeout_s: float, poll_s: float = 0.5) -> float:
    """Poll ``get_queue_status`` until ``pending == 0``; return the seconds waited.

    Raises :class:`bench.harness.serving.BenchError` when the backlog is not drained in time.
    """
    started = time.perf_counter()
    for _ in range(int(timeout_s / poll_s) + 1):
        reply = await call_json(session, "get_queue_status", {})
        if not reply.failed and reply.body.get("pending") == 0:
            return time.perf_counter() - started
        await asyncio.sleep(poll_s)
    raise BenchError(f"embedding queue not empty after {timeout_s:.0f} s")


async def queue_pending(service: Service) -> object:
    """``get_queue_status.pending`` right now, as the service reports it."""
    async with mcp_session(service.mcp_url, service.key) as session:
        return (await call_json(session, "get_queue_status", {})).body.get("pending")
