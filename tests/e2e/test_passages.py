"""Passages over MCP (docs/architecture.md, "Passages"), through the official SDK client
against the real app, its worker and a real HTTP embedder: a long row's passages are
counted pending while the embedder is down (get_queue_status, /metrics) and built once
it is back; recall still answers lexically meanwhile."""

from __future__ import annotations

import asyncio
import dataclasses
import time
from collections.abc import Awaitable, Callable, Iterator

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.config import Settings
from service.memory.library import Library
from tests.e2e.test_embedder_faults import WIDTH, fault_settings
from tests.memory.passages.test_build import expected_pieces, long_text
from tests.servers.embedding import EmbeddingServer, running_server
from tests.support import Agent, Served, new_tenant, serve


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=WIDTH)


@pytest.fixture
def provider(server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    server.reset()
    yield server
    server.reset()


async def scraped(served: Served, name: str) -> float:
    async with httpx.AsyncClient() as http:
        response = await http.get(f"{served.base_url}/metrics")
    for family in text_string_to_metric_families(response.text):
        for sample in family.samples:
            if sample.name == name:
                return float(sample.value)
    raise AssertionError(f"{name} not exposed")


async def wait_for(condition: Callable[[], Awaitable[bool]], seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while not await condition():
        assert time.monotonic() < deadline, "not reached"
        await asyncio.sleep(0.1)


async def test_passages_pending_while_the_embedder_is_down_then_built(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    text = long_text(21) + "\n\nThe spare key hangs behind the blue lantern."
    async with serve(fault_settings(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        provider.set_mode("down")
        await client.call("store", agent_id="a", message={"content": text})
        await client.call("store", agent_id="a", message={"content": "a short note"})
        status = await client.call("get_queue_status")
        assert (status["pending"], status["passages_pending"]) == (2, 1)
        assert await scraped(served, "cpersona_passages_pending") == 1
        assert await scraped(served, "cpersona_embedding_jobs_pending") == 2
        found = await client.call("recall", agent_id="a", query="spare key blue lantern")
        assert any(
            str(row.get("content", "")).startswith(text[:40]) for row in found["messages"]
        ), found
        provider.set_mode("ok")

        async def drained() -> bool:
            return bool((await client.call("get_queue_status"))["pending"] == 0)

        await wait_for(drained, 30)
        assert (await client.call("get_queue_status"))["passages_pending"] == 0
        assert await scraped(served, "cpersona_passages_pending") == 0
    async with lib.db.admin_tx() as conn:
        count = await conn.fetchval("SELECT count(*) FROM passages")
    assert count >= 3


def sixteen_thousand(answer: str) -> str:
    """A 16,000-character row: a distractor that shares the query's words early on, long
    filler, and ``answer`` in its last third."""
    head = "I keep a spare key. " + long_text(41, 2) + "\n\nThe spare key was lost once.\n\n"
    filler = long_text(42, 80)
    body = head + filler
    cut = 11_500 - len(head)
    body = head + filler[:cut] + "\n\n" + answer + "\n\n" + filler[cut:]
    return body[:16_000]


async def stored_and_built(lib: Library, served: Served, text: str) -> Agent:
    """A new tenant's agent "a" holding ``text``, its passages built."""
    client = Agent(served, await new_tenant(lib, "acme"))
    await client.call("store", agent_id="a", message={"content": text})

    async def drained() -> bool:
        status = await client.call("get_queue_status")
        return bool(status["pending"] == 0 and status["passages_pending"] == 0)

    await wait_for(drained, 30)
    return client


async def test_a_long_rows_excerpt_comes_from_the_passage_that_matched_by_meaning(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    answer = "The key hangs behind the blue lantern in the shed."
    text = sixteen_thousand(answer)
    assert len(text) == 16_000
    assert text.index(answer) > 16_000 * 2 // 3
    piece = next(p for p in expected_pieces(text) if answer in p)
    query = "where is the spare key"
    provider.aliases[query] = piece  # the query means what the answering passage says
    behind = dataclasses.replace(
        fault_settings(settings, provider), embedding_inline_timeout_secs=0
    )
    async with serve(behind, database_url) as served:
        client = await stored_and_built(lib, served, text)
        found = await client.call("recall", agent_id="a", query=query)
    row = next(r for r in found["messages"] if r.get("content_len") == 16_000)
    offset = int(row["excerpt_offset"])
    assert offset >= 16_000 * 2 // 3, row
    assert text[offset : offset + len(row["excerpt"])] == row["excerpt"]
    assert "blue lantern" in text[offset : offset + len(row["excerpt"]) + 200]


async def test_reconstruct_quotes_the_passage_that_matched_by_meaning(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    answer = "Behind a blue lantern, by a door, in a shed."
    text = sixteen_thousand(answer)
    piece = next(p for p in expected_pieces(text) if answer in p)
    query = "where is the spare key"
    provider.aliases[query] = piece
    behind = dataclasses.replace(
        fault_settings(settings, provider), embedding_inline_timeout_secs=0
    )
    async with serve(behind, database_url) as served:
        client = await stored_and_built(lib, served, text)
        found = await client.call("reconstruct", agent_id="a", query=query)
    (item,) = found["items"]
    low = text.index(piece)
    assert any(start < low + len(piece) and low < end for start, end in item["ranges"]), item


async def test_long_rows_embedded_inline_still_get_their_passages(
    lib: Library, settings: Settings, database_url: str, provider: EmbeddingServer
) -> None:
    """With an inline timeout the row's vector comes with the write, yet the write path
    never divides: a long row keeps its queue job, which builds its passages."""
    text = long_text(61, 20)
    async with serve(fault_settings(settings, provider), database_url) as served:
        client = Agent(served, await new_tenant(lib, "acme"))
        stored = await client.call("store", agent_id="a", message={"content": text})
        await client.call("update_memory", memory_id=stored["id"], content=text + " Edited.")
        await client.call("archive_episode", agent_id="a", summary=long_text(62, 20))
        await client.call("store", agent_id="a", message={"content": "a short note"})

        async def built() -> bool:
            async with lib.db.admin_tx() as conn:
                kinds = await conn.fetch(
                    "SELECT DISTINCT p.item_kind FROM passages p JOIN memories m ON"
                    " p.item_kind = 'ep' OR (m.id = p.item_id AND m.content_hash = p.source_hash)"
                )
            return {r["item_kind"] for r in kinds} == {"mem", "ep"}

        await wait_for(built, 30)
    assert provider.answered.count("a short note") == 1  # a short row is embedded once
