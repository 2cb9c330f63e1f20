"""Overload is refused cleanly, with Retry-After (issue #10, failure 7).

A key over its rate limit gets 429 while another key is served; a key over its
concurrency cap gets 429; a full lane answers 503 at once or after its bounded
wait instead of queueing without end. Every refusal carries ``Retry-After`` and a
JSON-RPC error (``/mcp``) or a JSON body (``/v1``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import httpx
import pytest

from tests.fault.service import (
    Running,
    call,
    hang_up,
    mcp_head,
    open_raw,
    read_status,
    running_service,
    tool_body,
)

RATE, BURST = 5, 5
QUEUE_WAIT = 0.5
ENV = {
    "CPERSONA_RATE_LIMIT_PER_KEY": str(RATE),
    "CPERSONA_RATE_LIMIT_BURST": str(BURST),
    "CPERSONA_MAX_CONCURRENT_PER_KEY": "4",
    "CPERSONA_LANE_BULK": "2",
    "CPERSONA_LANE_QUEUE": "1",
    "CPERSONA_LANE_QUEUE_TIMEOUT": str(QUEUE_WAIT),
    "CPERSONA_BODY_READ_TIMEOUT": "5",
    "CPERSONA_STREAM_STALL_TIMEOUT": "5",
}


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with running_service(tmp_path_factory.mktemp("limits"), ENV) as service:
        yield service


def _assert_refusal(response: httpx.Response, status: int, code: int) -> None:
    assert response.status_code == status
    assert int(response.headers["retry-after"]) >= 1
    error = response.json()["error"]
    assert error["code"] == code
    assert error["data"]["retry_after"] >= 1


async def test_a_key_over_its_rate_limit_gets_429_while_another_key_is_served(
    running: Running,
) -> None:
    hasty, calm = await running.new_key("hasty"), await running.new_key("calm")
    async with httpx.AsyncClient(timeout=10) as http:
        started = time.monotonic()
        answers = [
            await call(http, running, hasty, "list_memories", agent_id="a")
            for _ in range(BURST + 20)
        ]
        elapsed = time.monotonic() - started
        calm_answers = [
            await call(http, running, calm, "list_memories", agent_id="a") for _ in range(5)
        ]
    served = [a for a in answers if a.status_code == 200]
    limited = [a for a in answers if a.status_code == 429]
    assert len(served) + len(limited) == len(answers)
    assert len(served) <= BURST + RATE * elapsed + 1
    assert limited, elapsed
    _assert_refusal(limited[0], 429, -32029)
    assert limited[0].json()["error"]["data"]["reason"] == "rate_limited"
    assert all(a.status_code == 200 for a in calm_answers)


async def test_a_key_over_its_concurrency_cap_gets_429(running: Running) -> None:
    key = await running.new_key("busy")
    held = [
        await open_raw(running, mcp_head(key, 1000, "{")) for _ in range(4)
    ]  # four bodies that never end
    try:
        await asyncio.sleep(0.3)
        async with httpx.AsyncClient(timeout=10) as http:
            over = await call(http, running, key, "list_memories", agent_id="a")
            other = await call(http, running, running.key, "list_memories", agent_id="a")
    finally:
        for _, writer in held:
            await hang_up(writer)
    _assert_refusal(over, 429, -32029)
    assert over.json()["error"]["data"]["reason"] == "key_concurrency"
    assert tool_body(other)["count"] >= 0


async def test_a_full_lane_answers_503_with_retry_after(running: Running) -> None:
    key = await running.new_key("bulky")
    await running.seed_large_agent(key, "bulky-agent", 800, 15_000)
    head = (
        "GET /v1/export?agent_id=bulky-agent HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f"Authorization: Bearer {key}\r\n\r\n"
    )
    opened = [await open_raw(running, head) for _ in range(2)]  # the lane's two places
    try:
        await asyncio.sleep(0.5)
        opened.append(await open_raw(running, head))  # the one place in the queue
        await asyncio.sleep(0.1)
        started = time.monotonic()
        opened.append(await open_raw(running, head))
        at_once = await read_status(opened[-1][0], 5)
        at_once_seconds = time.monotonic() - started
        after_wait = await read_status(opened[2][0], 5)
    finally:
        for _, writer in opened:
            await hang_up(writer)
    assert at_once[0] == 503
    assert at_once_seconds < QUEUE_WAIT
    assert after_wait[0] == 503
    for _, rest in (at_once, after_wait):
        assert "retry-after: 1" in rest.lower()
        assert '"reason":"overloaded"' in rest
    async with httpx.AsyncClient(timeout=10) as http:  # the tools' lanes were never touched
        assert tool_body(await call(http, running, key, "list_memories", agent_id="bulky-agent"))
