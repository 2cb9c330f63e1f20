"""Writes never wait on the embedder (the default, CPERSONA_EMBEDDING_INLINE_TIMEOUT_SECS=0).

store, archive_episode and update_memory commit and answer without a vector; the row is
found lexically at once; the serving process's write-behind embedder embeds it moments
later through the batcher, racing the app's queue worker without ever embedding a row
twice. The embedding server (real HTTP on loopback) records every text it embedded.
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import time
from collections.abc import Iterator
from typing import Any

import pytest

from service.config import Settings
from service.memory.library import Library
from tests.servers.embedding import EmbeddingServer, running_server
from tests.support import Agent, new_tenant, serve

WIDTH = 384
EMBEDDED_WITHIN_SECONDS = 10.0
CLIENTS = 8
PER_CLIENT = 6
FACT = "the boiler was serviced in March"


@pytest.fixture
def provider() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=WIDTH)


def behind_settings(settings: Settings, server: EmbeddingServer) -> Settings:
    """The provider at ``server``; writes do not wait (the default); the app's queue
    worker polls often, so it competes with the write-behind for every fresh job."""
    assert settings.embedding_inline_timeout_secs == 0
    provider: dict[str, Any] = {"embedding_mode": "http", "embedding_url": server.url}
    provider.update(embedding_model="fake-384", embedding_dimensions=WIDTH)
    return dataclasses.replace(settings, **provider, worker_poll_secs=0.05)


async def _unembedded(lib: Library) -> dict[str, int]:
    async with lib.db.admin_tx() as conn:
        memories = await conn.fetchval("SELECT count(*) FROM memories WHERE embedding IS NULL")
        episodes = await conn.fetchval("SELECT count(*) FROM episodes WHERE embedding IS NULL")
        jobs = await conn.fetchval("SELECT count(*) FROM embedding_jobs")
    return {"memories": memories, "episodes": episodes, "jobs": jobs}


async def _all_embedded(lib: Library) -> float:
    """Seconds until no row lacks a vector and no job is left (bounded)."""
    started = time.monotonic()
    while (left := await _unembedded(lib)) != {"memories": 0, "episodes": 0, "jobs": 0}:
        assert time.monotonic() - started < EMBEDDED_WITHIN_SECONDS, left
        await asyncio.sleep(0.02)
    return time.monotonic() - started


async def test_a_store_answers_before_its_vector_is_found_lexically_and_embedded_moments_later(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    async with serve(behind_settings(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        provider.set_mode("hang")  # the provider holds every call: the write must not wait
        try:
            started = time.monotonic()
            stored = await client.call("store", agent_id="a", message={"content": FACT})
            assert time.monotonic() - started < 1.0
            assert stored["embedded"] is False
            status = await client.call("get_queue_status")
            assert status["pending"] == 1
            found = await client.call("recall", agent_id="a", query="boiler serviced March")
            assert [row["content"] for row in found["messages"]] == [FACT]
        finally:
            provider.set_mode("ok")
        await _all_embedded(lib)
        assert (await client.call("get_queue_status"))["pending"] == 0
    assert provider.answered.count(FACT) == 1


async def test_archive_and_update_commit_first_and_are_embedded_after(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    async with serve(behind_settings(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        stored = await client.call("store", agent_id="a", message={"content": "first words"})
        episode = await client.call(
            "archive_episode", agent_id="a", summary="we planned the move", keywords="move"
        )
        assert episode["ok"] is True
        await _all_embedded(lib)
        await client.call("update_memory", memory_id=stored["id"], content="second words")
        await _all_embedded(lib)
    assert collections.Counter(provider.answered) == {
        "first words": 1,
        "we planned the move move": 1,
        "second words": 1,
    }


async def test_concurrent_stores_are_each_embedded_exactly_once_beside_the_queue_worker(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    async with serve(behind_settings(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))

        async def writer(number: int) -> list[Any]:
            return [
                await client.call(
                    "store", agent_id="a", message={"content": f"client {number} fact {n}"}
                )
                for n in range(PER_CLIENT)
            ]

        answers = await asyncio.gather(*(writer(number) for number in range(CLIENTS)))
        assert all(body["result"] == "stored" for bodies in answers for body in bodies)
        await _all_embedded(lib)
    counts = collections.Counter(provider.answered)
    assert len(counts) == CLIENTS * PER_CLIENT
    assert set(counts.values()) == {1}


async def test_stores_of_two_tenants_at_once_are_each_embedded_exactly_once(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    """A write-behind batch may hold rows of several tenants: each tenant's jobs are
    claimed (with their texts) in that tenant's transaction, and every row is embedded."""
    async with serve(behind_settings(settings, provider), database_url) as served:
        clients = [Agent(served, await new_tenant(lib, slug)) for slug in ("acme", "globex")]

        async def writer(client: Agent, number: int) -> list[Any]:
            return [
                await client.call(
                    "store", agent_id="a", message={"content": f"writer {number} note {n}"}
                )
                for n in range(PER_CLIENT)
            ]

        answers = await asyncio.gather(
            *(writer(client, number) for client in clients for number in range(CLIENTS // 2))
        )
        assert all(body["result"] == "stored" for bodies in answers for body in bodies)
        await _all_embedded(lib)
    counts = collections.Counter(provider.answered)
    assert sum(counts.values()) == len(clients) * (CLIENTS // 2) * PER_CLIENT
    assert set(counts.values()) == {2}  # each text was written once by each tenant
