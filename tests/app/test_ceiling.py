"""The hard response ceiling at the HTTP edge (CPERSONA_MAX_RESPONSE_BYTES).

A response over the ceiling is never sent: the client gets a small, well-formed JSON-RPC
answer with the same id (a tool error for tools/call, a JSON-RPC error otherwise) and the
server logs ``response_too_large``. Responses under it arrive byte for byte.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import httpx
from starlette.types import Message
from structlog.testing import capture_logs

from service.app.ceiling import RESPONSE_TOO_LARGE_CODE, RequestTee, ResponseGuard, oversized_reply
from service.config import Settings
from service.memory.library import Library
from tests.support import Agent, new_tenant, serve, text

CEILING = 70_000
HEADERS = {
    "content-type": "application/json",
    "accept": "application/json, text/event-stream",
    "mcp-protocol-version": "2025-11-25",
}


def _call(rpc_id: int | str, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rpc_id, "method": method, "params": params or {}}


async def _fill(agent: Agent, rows: int = 10) -> None:
    for n in range(rows):
        answer = await agent.call("store", agent_id="a", message={"content": f"{n:02}" * 8_000})
        assert answer["result"] == "stored"


async def test_a_response_over_the_ceiling_becomes_a_tool_error(
    lib: Library, settings: Settings, database_url: str
) -> None:
    tight = dataclasses.replace(settings, max_response_bytes=CEILING)
    key = await new_tenant(lib, "tight")
    headers = {**HEADERS, "authorization": f"Bearer {key}"}
    async with serve(tight, database_url) as served, httpx.AsyncClient(timeout=30) as http:
        agent = Agent(served, key)
        await _fill(agent)
        with capture_logs() as logs:
            result = await agent.raw("list_memories", {"agent_id": "a"})
            raw = await http.post(
                served.mcp_url,
                headers=headers,
                json=_call(
                    "q-7", "tools/call", {"name": "list_memories", "arguments": {"agent_id": "a"}}
                ),
            )
    assert result.is_error
    refusal = json.loads(text(result))
    assert refusal["ok"] is False
    assert "70,000 bytes" in refusal["error"]
    assert "lower `limit`" in refusal["error"]
    assert refusal["max_response_bytes"] == CEILING
    assert refusal["response_bytes"] > 160_000  # ten rows of 16,000 characters
    assert raw.status_code == 200
    assert len(raw.content) < 1_000  # nothing oversized arrives
    assert int(raw.headers["content-length"]) == len(raw.content)
    reply = raw.json()
    assert reply["id"] == "q-7"
    assert reply["result"]["isError"] is True
    events = [entry for entry in logs if entry["event"] == "response_too_large"]
    assert len(events) == 2
    assert {(e["tool"], e["tenant"], e["log_level"]) for e in events} == {
        ("list_memories", "tight", "warning")
    }
    assert all(e["bytes"] > CEILING and e["max_response_bytes"] == CEILING for e in events)
    requests = [entry for entry in logs if entry["event"] == "request"]
    assert {(e["outcome"], e["bytes_out"] < 1_000) for e in requests} >= {
        ("response_too_large", True)
    }


async def test_a_response_under_the_ceiling_arrives_whole(
    lib: Library, settings: Settings, database_url: str
) -> None:
    tight = dataclasses.replace(settings, max_response_bytes=CEILING)
    async with serve(tight, database_url) as served:
        agent = Agent(served, await new_tenant(lib, "roomy"))
        await _fill(agent)
        answer = await agent.call("list_memories", agent_id="a", limit=3)
    assert answer["count"] == 3
    assert all(len(row["content"]) == 16_000 for row in answer["memories"])


async def test_a_non_tool_method_over_the_ceiling_gets_a_json_rpc_error(
    lib: Library, settings: Settings, database_url: str
) -> None:
    """tools/list is about 20 KB; with a (test-only) 10,000-byte ceiling it is refused."""
    tiny = dataclasses.replace(settings, max_response_bytes=10_000)
    key = await new_tenant(lib, "tiny")
    headers = {**HEADERS, "authorization": f"Bearer {key}"}
    async with serve(tiny, database_url) as served, httpx.AsyncClient(timeout=30) as http:
        response = await http.post(served.mcp_url, headers=headers, json=_call(41, "tools/list"))
    reply = response.json()
    assert reply["id"] == 41
    assert reply["error"]["code"] == RESPONSE_TOO_LARGE_CODE
    assert "this tools/list" in reply["error"]["message"]
    assert "result" not in reply


class _Sink:
    def __init__(self) -> None:
        self.messages: list[Message] = []

    async def __call__(self, message: Message) -> None:
        self.messages.append(message)

    @property
    def body(self) -> bytes:
        return b"".join(m.get("body", b"") for m in self.messages if m["type"].endswith("body"))


def _start(content_type: bytes, length: int | None = None) -> Message:
    headers = [(b"content-type", content_type)]
    if length is not None:
        headers.append((b"content-length", str(length).encode()))
    return {"type": "http.response.start", "status": 200, "headers": headers}


async def _play(guard: ResponseGuard, start: Message, chunks: list[bytes]) -> None:
    await guard(start)
    for n, chunk in enumerate(chunks):
        more = n < len(chunks) - 1
        await guard({"type": "http.response.body", "body": chunk, "more_body": more})


async def test_guard_joins_chunks_under_the_ceiling_and_counts_them() -> None:
    sink = _Sink()
    guard = ResponseGuard(sink, "rid", 100, lambda size: b"refused")
    await _play(guard, _start(b"application/json", 90), [b"a" * 30, b"b" * 30, b"c" * 30])
    assert sink.body == b"a" * 30 + b"b" * 30 + b"c" * 30
    start = sink.messages[0]
    assert (b"content-length", b"90") in start["headers"]
    assert (b"x-request-id", b"rid") in start["headers"]
    assert (guard.bytes_out, guard.refused_size, guard.status) == (90, None, 200)


async def test_guard_replaces_chunks_over_the_ceiling() -> None:
    sink = _Sink()
    sizes: list[int] = []

    def refuse(size: int) -> bytes:
        sizes.append(size)
        return b'{"refused":true}'

    guard = ResponseGuard(sink, "rid", 100, refuse)
    await _play(guard, _start(b"application/json; charset=utf-8", 150), [b"x" * 60] * 2 + [b"y"])
    assert sink.body == b'{"refused":true}'
    assert (b"content-length", b"16") in sink.messages[0]["headers"]
    assert [h for h in sink.messages[0]["headers"] if h[0] == b"content-length"] == [
        (b"content-length", b"16")
    ]
    assert sizes == [121]
    assert (guard.bytes_out, guard.refused_size) == (16, 121)


async def test_guard_passes_event_streams_through_and_counts_them() -> None:
    sink = _Sink()
    guard = ResponseGuard(sink, "rid", 10, lambda size: b"refused")
    await guard(_start(b"text/event-stream"))
    assert len(sink.messages) == 1  # not held
    await guard({"type": "http.response.body", "body": b"data: 1\n\n", "more_body": True})
    await guard({"type": "http.response.body", "body": b"data: 22\n\n", "more_body": False})
    assert sink.body == b"data: 1\n\ndata: 22\n\n"
    assert guard.bytes_out == 19


async def test_request_tee_reads_the_rpc_id_and_method() -> None:
    chunks = [b'{"jsonrpc":"2.0","id":', b'"abc","method":"tools/call"}']
    queue: list[Message] = [
        {"type": "http.request", "body": chunks[0], "more_body": True},
        {"type": "http.request", "body": chunks[1], "more_body": False},
    ]

    async def receive() -> Message:
        return queue.pop(0)

    tee = RequestTee(receive)
    assert (await tee())["body"] == chunks[0]
    await tee()
    assert tee.rpc_call() == ("abc", "tools/call")
    broken = RequestTee(receive)
    assert broken.rpc_call() == (None, None)


def test_oversized_reply_shapes() -> None:
    tool = json.loads(oversized_reply(3, "tools/call", "recall", 9_000_000, 8_388_608))
    assert tool["id"] == 3
    assert tool["result"]["isError"] is True
    body = json.loads(tool["result"]["content"][0]["text"])
    assert body["ok"] is False
    assert "this recall call would send 9,000,000 bytes" in body["error"]
    assert "`full_content`" in body["error"]
    other = json.loads(oversized_reply(None, None, None, 5, 4))
    assert other == {"jsonrpc": "2.0", "id": None, "error": other["error"]}
    assert other["error"]["code"] == RESPONSE_TOO_LARGE_CODE
