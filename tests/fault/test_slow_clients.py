"""Clients that stall or trickle cannot freeze the service (issue #10, failures 1 and 8).

One key opens ten exports with ``include_embeddings=true`` and never reads them, and
ten imports that declare a 1 MB body and send one line. Another tenant's recall,
``/readyz`` and a wrong key's 401 still answer within ``PROMPT`` seconds, half the
shortest time after which an attacker's own timeout could free a place: an answer
queued behind the attackers would take longer than that, while a busy machine's CPU
(other tests, the exports filling their sockets) only slows it down. The imports get
their 408 (or the key's 429) once the body read times out; the exports are
abandoned once their client has not read for the stall timeout; nothing logged a
traceback. A trickling body and a disconnect mid-body end the same clean way.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Iterator

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
    trickle,
)

BODY_TIMEOUT = 4.0
STALL_TIMEOUT = 5.0
PROMPT = min(BODY_TIMEOUT, STALL_TIMEOUT) / 2  # an answer queued behind an attacker is later
# Room in the bulk lane and pool for every attacker the key's concurrency cap (16)
# admits, so each stalled export holds a bulk connection and each trickling import
# reaches its body read at once: with the defaults (4 places, 2 connections) whether an
# import reads its body before its lane or pool wait ends depends on how fast the
# exports fill their sockets, i.e. on the machine's load. The isolation under test is
# structural either way: the tools' pool is another pool.
ENV = {
    "CPERSONA_BODY_READ_TIMEOUT": str(BODY_TIMEOUT),
    "CPERSONA_STREAM_STALL_TIMEOUT": str(STALL_TIMEOUT),
    "CPERSONA_LANE_BULK": "20",
    "CPERSONA_DB_BULK_POOL_MAX": "20",
}
ROWS, ROW_CHARS = 1500, 15_000  # about 22 MB per export: far more than socket buffers hold


@pytest.fixture(scope="module")
def running(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Running]:
    with running_service(tmp_path_factory.mktemp("slow-clients"), ENV) as service:
        yield service


def _export_head(key: str) -> str:
    return (
        "GET /v1/export?agent_id=big&include_embeddings=true HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n\r\n"
    )


def _import_head(key: str, length: int = 1_000_000) -> str:
    return (
        "POST /v1/import?target_agent_id=copy&dry_run=false HTTP/1.1\r\n"
        f"Host: 127.0.0.1\r\nAuthorization: Bearer {key}\r\n"
        f"Content-Type: application/x-ndjson\r\nContent-Length: {length}\r\n\r\n"
        '{"format": "cpersona-export/1.0"}\n'
    )


@contextlib.asynccontextmanager
async def _attackers(running: Running) -> AsyncIterator[list[asyncio.StreamReader]]:
    """Ten stalled exports and ten trickling imports of the first key, open for the block;
    yields the imports' readers."""
    exports = [await open_raw(running, _export_head(running.key)) for _ in range(10)]
    imports = [await open_raw(running, _import_head(running.key)) for _ in range(10)]
    try:
        yield [reader for reader, _ in imports]
    finally:
        for _, writer in exports + imports:
            await hang_up(writer)


async def _timed(request: Awaitable[httpx.Response]) -> tuple[float, httpx.Response]:
    started = time.monotonic()
    response = await request
    return time.monotonic() - started, response


async def test_stalled_exports_and_trickling_imports_leave_other_tenants_answering(
    running: Running,
) -> None:
    await running.seed_large_agent(running.key, "big", ROWS, ROW_CHARS)
    other = await running.new_key("other")
    async with httpx.AsyncClient(timeout=10) as http:
        tool_body(
            await call(
                http,
                running,
                other,
                "store",
                agent_id="o",
                message={"content": "Zebras graze near the river at noon"},
            )
        )
        async with _attackers(running) as imports:
            await asyncio.sleep(0.5)  # every attacker is in: exports stream, imports wait
            for _ in range(5):
                seconds, answer = await _timed(
                    call(
                        http,
                        running,
                        other,
                        "recall",
                        agent_id="o",
                        query="zebras graze river",
                        deep=True,
                    )
                )
                assert seconds < PROMPT
                assert "Zebras graze near the river at noon" in answer.text
            seconds, ready = await _timed(http.get(f"{running.base_url}/readyz"))
            assert (seconds < PROMPT, ready.status_code) == (True, 200)
            seconds, denied = await _timed(
                call(http, running, "cpk_000000000000_nope", "recall", agent_id="o", query="x")
            )
            assert (seconds < PROMPT, denied.status_code) == (True, 401)
            answers = [await read_status(reader, BODY_TIMEOUT + 5) for reader in imports]
            await asyncio.sleep(STALL_TIMEOUT + 1)  # the exports, still open, stall out
        assert {status for status, _ in answers} <= {408, 429, 503}
        assert any(status == 408 and "request body" in body for status, body in answers)
    outcomes = [
        line.get("outcome") for line in running.log_lines() if line.get("path") == "/v1/export"
    ]
    assert "client_stalled" in outcomes
    assert not [line for line in running.log_lines() if "exception" in line]


async def test_a_trickling_body_gets_408_with_a_json_body(running: Running) -> None:
    reader, writer = await open_raw(running, mcp_head(running.key, 4000))
    started = time.monotonic()
    try:
        status, rest = await trickle(reader, writer, every=0.2, limit=40)
    finally:
        await hang_up(writer)
    assert status == 408
    assert '"error":"request body too slow' in rest
    assert time.monotonic() - started < 5 + 2  # the grace period, then the rate check


async def test_a_stalled_body_gets_408_after_the_read_timeout(running: Running) -> None:
    reader, writer = await open_raw(running, _import_head(running.key, 5000))
    try:
        status, rest = await read_status(reader, BODY_TIMEOUT + 5)
    finally:
        await hang_up(writer)
    assert status == 408
    assert "no part of the request body arrived" in rest


async def test_a_client_that_disconnects_mid_body_is_one_info_line(running: Running) -> None:
    _, writer = await open_raw(running, mcp_head(running.key, 500, '{"jsonrpc": "2.0",'))
    await hang_up(writer)
    deadline = time.monotonic() + 5
    gone: list[dict[str, object]] = []
    while not gone and time.monotonic() < deadline:
        await asyncio.sleep(0.1)
        gone = [line for line in running.log_lines() if line.get("outcome") == "client_gone"]
    assert len(gone) >= 1
    assert all(line["level"] == "info" for line in gone)
    assert not [line for line in running.log_lines() if "exception" in line]


async def test_get_mcp_is_405_with_allow_post(running: Running) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        response = await http.get(
            f"{running.base_url}/mcp", headers={"accept": "text/event-stream"}
        )
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert response.json() == {"error": "method not allowed: use POST"}


async def test_metrics_and_readyz_refuse_a_foreign_host(running: Running) -> None:
    async with httpx.AsyncClient(timeout=5) as http:
        for path in ("/metrics", "/readyz", "/healthz"):
            foreign = await http.get(f"{running.base_url}{path}", headers={"host": "evil.example"})
            own = await http.get(f"{running.base_url}{path}")
            assert (path, foreign.status_code, own.status_code) == (path, 421, 200)
