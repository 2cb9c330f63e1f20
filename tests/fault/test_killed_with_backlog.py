"""kill -9 of ``serve`` while rows wait for their vectors: after a restart every row is
embedded, and none twice.

Writes do not wait for the embedder (the default), so a process can die with rows
acknowledged but unembedded: here the provider fails (HTTP 500) while 24 rows are
stored through the real ``serve``, which is then killed with SIGKILL (its embedded
Postgres survives, as after a crash of the service alone). The durable jobs written
with the rows are all that is left; the next ``serve`` on the same data directory,
with the provider back, embeds each row exactly once (the embedding server counts the
texts it answered) and leaves no job.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.fault.service import Running, call, running_service, tool_body
from tests.servers.embedding import EmbeddingServer, running_server

WIDTH = 384
ROWS = 24
EMBEDDED_WITHIN_SECONDS = 30.0


@pytest.fixture
def provider() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=WIDTH)


def _env(provider: EmbeddingServer) -> dict[str, str]:
    return {
        "CPERSONA_EMBEDDING_MODE": "http",
        "CPERSONA_EMBEDDING_URL": provider.url,
        "CPERSONA_EMBEDDING_MODEL": "fake-384",
        "CPERSONA_EMBEDDING_DIMENSIONS": str(WIDTH),
        "CPERSONA_EMBEDDING_TIMEOUT_SECS": "1",
        "CPERSONA_TASK_RETRY_DELAY": "1",
        "CPERSONA_WORKER_POLL_SECS": "0.1",
        "CPERSONA_EMBEDDING_BREAKER_COOLDOWN_SECS": "0.5",
    }


async def _pending(http: httpx.AsyncClient, running: Running) -> int:
    body = tool_body(await call(http, running, running.key, "get_queue_status"))
    return int(body["pending"])


async def _unembedded(running: Running) -> tuple[int, int]:
    async with running.database() as db, db.admin_tx() as conn:
        rows = await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL")
        jobs = await conn.fetchval("SELECT count(*) FROM embedding_jobs")
    return int(rows), int(jobs)


async def _store_while_failing(running: Running) -> list[str]:
    contents = [f"row {n} stored while the embedder fails" for n in range(ROWS)]
    async with httpx.AsyncClient(timeout=30) as http:
        for content in contents:
            message = {"content": content}
            body = tool_body(
                await call(http, running, running.key, "store", agent_id="a", message=message)
            )
            assert body["result"] == "stored", body
            assert body["embedded"] is False, body
        assert await _pending(http, running) == ROWS
    return contents


async def _wait_embedded(running: Running) -> None:
    deadline = time.monotonic() + EMBEDDED_WITHIN_SECONDS
    while (left := await _unembedded(running)) != (0, 0):
        assert time.monotonic() < deadline, f"rows and jobs left: {left}"
        await asyncio.sleep(0.1)
    async with httpx.AsyncClient(timeout=30) as http:
        assert await _pending(http, running) == 0


async def test_rows_waiting_for_vectors_when_serve_is_killed_are_each_embedded_once_after_restart(
    tmp_path: Path, provider: EmbeddingServer
) -> None:
    provider.set_mode("fail")
    with running_service(tmp_path, _env(provider)) as first:
        contents = await _store_while_failing(first)
        first.process.kill()  # SIGKILL: no shutdown code runs
        first.process.wait(timeout=30)
        assert provider.answered == []
        provider.reset()  # the provider is back; forget what it saw
        with running_service(tmp_path, _env(provider), key=first.key) as second:
            await _wait_embedded(second)
    assert collections.Counter(provider.answered) == dict.fromkeys(contents, 1)
