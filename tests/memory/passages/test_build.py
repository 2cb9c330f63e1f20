"""Passages built by the durable queue (docs/architecture.md, "Passages"), against a real
HTTP embedding server and real Postgres: a long row's passages carry their own vectors,
are rebuilt when the text changes (stale ones never kept), go with the record, are
never built on the write path, and survive a provider that is down or a process that
dies with them pending."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import time
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import asyncpg
import pytest

from service.config import Settings
from service.db.pool import Database
from service.embeddings.base import l2_normalise
from service.memory import episodes, tenants
from service.memory.library import Library, build_library
from service.memory.memories import edits, store
from service.memory.passages.divider import divide, pseudo_token_ends
from service.memory.passages.plan import ESTIMATED_WINDOW
from service.memory.queue import worker
from service.models import TenantId
from tests.servers.embedding import EmbeddingServer, fake_vector, running_server


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=8)


@pytest.fixture(autouse=True)
def fake(server: EmbeddingServer) -> EmbeddingServer:
    server.reset()
    return server


@pytest.fixture
def http_settings(settings: Settings, server: EmbeddingServer) -> Settings:
    return dataclasses.replace(
        settings,
        embedding_mode="http",
        embedding_url=server.url,
        embedding_model="fake-8d",
        embedding_dimensions=8,
        embedding_timeout_secs=2.0,
        embedding_inline_timeout_secs=0.0,
        embedding_breaker_failures=0,
        worker_poll_secs=0.05,
    )


@pytest.fixture
async def http_lib(db: Database, http_settings: Settings) -> AsyncIterator[Library]:
    lib = build_library(db, http_settings)
    yield lib
    await lib.aclose()


def long_text(seed: int, paragraphs: int = 12) -> str:
    rng = random.Random(seed)
    words = ["venue", "flooded", "meeting", "Thursday", "budget", "approved", "kite", "river"]
    return "\n\n".join(
        " ".join(
            " ".join(rng.choice(words) for _ in range(rng.randint(6, 12))).capitalize() + "."
            for _ in range(4)
        )
        for _ in range(paragraphs)
    )


def expected_pieces(text: str) -> list[str]:
    spans = divide(text, pseudo_token_ends(text), ESTIMATED_WINDOW)
    return [text[s.start : s.end] for s in spans]


async def _tenant(lib: Library) -> TenantId:
    return TenantId((await tenants.create_tenant(lib.db, "acme")).id)


async def _store(lib: Library, tenant: TenantId, content: str) -> int:
    body = await store.store(
        lib, tenant, store.StoreRequest(agent_id="a", message={"content": content})
    )
    assert isinstance(body, store.Stored), body
    return body.memory_id


async def _fetch(db: Database, query: str, *args: Any) -> list[asyncpg.Record]:
    async with db.admin_tx() as conn:
        return await conn.fetch(query, *args)


async def _passages(db: Database, item_id: int) -> list[asyncpg.Record]:
    return await _fetch(
        db,
        "SELECT p.idx, p.start_char, p.end_char, p.embedding, p.source_hash, p.item_kind "
        "FROM passages p WHERE p.item_id = $1 ORDER BY p.idx",
        item_id,
    )


async def _assert_passages_of(db: Database, item_id: int, text: str) -> None:
    pieces = expected_pieces(text)
    rows = await _passages(db, item_id)
    assert [text[r["start_char"] : r["end_char"]] for r in rows] == pieces
    for row, piece in zip(rows, pieces, strict=True):
        assert row["embedding"].to_list() == pytest.approx(
            l2_normalise(fake_vector(piece)), abs=1e-6
        )


async def _wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "condition not reached"
        await asyncio.sleep(0.01)


async def test_a_long_memory_gets_passages_with_their_own_vectors_and_a_short_one_none(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    text = long_text(1)
    assert len(expected_pieces(text)) >= 3
    long_id = await _store(http_lib, tenant, text)
    short_id = await _store(http_lib, tenant, "a short note")
    assert await _passages(http_lib.db, long_id) == []  # the write path built none
    result = await worker.drain_once(http_lib)
    assert (result.embedded, result.passages) == (2, len(expected_pieces(text)))
    await _assert_passages_of(http_lib.db, long_id, text)
    assert await _passages(http_lib.db, short_id) == []
    [row] = await _fetch(
        http_lib.db, "SELECT content_hash, passages_hash FROM memories WHERE id = $1", long_id
    )
    assert row["passages_hash"] == row["content_hash"]
    assert {r["source_hash"] for r in await _passages(http_lib.db, long_id)} == {
        row["content_hash"]
    }
    assert sorted(fake.answered) == sorted([text, "a short note", *expected_pieces(text)])


async def test_an_episode_gets_passages_of_its_summary_and_keywords(
    http_lib: Library,
) -> None:
    tenant = await _tenant(http_lib)
    summary = long_text(2)
    episode = await episodes.archive_episode(
        http_lib, tenant, episodes.ArchiveRequest(agent_id="a", summary=summary, keywords="k1")
    )
    await worker.drain_once(http_lib)
    rows = await _passages(http_lib.db, episode.episode_id)
    assert {r["item_kind"] for r in rows} == {"ep"}
    await _assert_passages_of(http_lib.db, episode.episode_id, f"{summary} k1")


async def test_an_edit_rebuilds_the_passages_and_a_short_edit_removes_them(
    http_lib: Library,
) -> None:
    tenant = await _tenant(http_lib)
    memory = await _store(http_lib, tenant, long_text(3, paragraphs=20))
    await worker.drain_once(http_lib)
    edited = long_text(4)
    await edits.update_memory(http_lib, tenant, memory, edited)
    await worker.drain_once(http_lib)
    await _assert_passages_of(http_lib.db, memory, edited)
    await edits.update_memory(http_lib, tenant, memory, "now short")
    await worker.drain_once(http_lib)
    assert await _passages(http_lib.db, memory) == []


async def test_a_text_edited_while_its_passages_are_built_never_gets_the_stale_ones(
    http_lib: Library, fake: EmbeddingServer
) -> None:
    tenant = await _tenant(http_lib)
    first, second = long_text(5), long_text(6)
    fake.reset(failing=True)
    memory = await _store(http_lib, tenant, first)
    await worker.drain_once(http_lib)  # fails: the job waits
    await _fetch(http_lib.db, "UPDATE embedding_jobs SET run_after = clock_timestamp()")
    fake.reset(delay=0.5)
    drain = asyncio.create_task(worker.drain_once(http_lib))
    await _wait_for(lambda: first in fake.received)
    await edits.update_memory(http_lib, tenant, memory, second)
    result = await drain
    assert (result.embedded, result.passages, result.requeued) == (0, 0, 1)
    assert await _passages(http_lib.db, memory) == []
    fake.reset()
    await worker.drain_once(http_lib)
    await _assert_passages_of(http_lib.db, memory, second)


async def test_passages_go_with_their_record(http_lib: Library) -> None:
    tenant = await _tenant(http_lib)
    memory = await _store(http_lib, tenant, long_text(7))
    await worker.drain_once(http_lib)
    assert await _passages(http_lib.db, memory) != []
    await _fetch(http_lib.db, "DELETE FROM memories WHERE id = $1", memory)
    assert await _passages(http_lib.db, memory) == []


async def test_the_embedder_down_loses_nothing_and_every_passage_is_built_once_after(
    db: Database, http_settings: Settings, fake: EmbeddingServer
) -> None:
    """A process killed with passages pending leaves only durable jobs: a fresh library
    (a restarted process) builds each passage once the embedder answers."""
    first = build_library(db, http_settings)
    try:
        tenant = await _tenant(first)
        texts = [long_text(10 + n) for n in range(3)]
        ids = [await _store(first, tenant, text) for text in texts]
        fake.reset(failing=True)
        result = await worker.drain_once(first)
        assert (result.claimed, result.failed, result.passages) == (3, 3, 0)
    finally:
        await first.aclose()
    await _fetch(db, "UPDATE embedding_jobs SET run_after = clock_timestamp()")
    fake.reset()
    restarted = build_library(db, http_settings)
    try:
        assert (await worker.drain_once(restarted)).embedded == 3
    finally:
        await restarted.aclose()
    for memory, text in zip(ids, texts, strict=True):
        await _assert_passages_of(db, memory, text)
    pieces = [piece for text in texts for piece in expected_pieces(text)]
    assert sorted(fake.answered) == sorted(texts + pieces)


async def test_passages_off_builds_none(db: Database, http_settings: Settings) -> None:
    lib = build_library(db, dataclasses.replace(http_settings, passages_enabled=False))
    try:
        tenant = await _tenant(lib)
        memory = await _store(lib, tenant, long_text(8))
        result = await worker.drain_once(lib)
        assert (result.embedded, result.passages) == (1, 0)
        assert await _passages(lib.db, memory) == []
        [row] = await _fetch(db, "SELECT passages_hash FROM memories WHERE id = $1", memory)
        assert row["passages_hash"] is None
    finally:
        await lib.aclose()


async def test_a_merged_copy_of_a_long_row_gets_its_own_passages(http_lib: Library) -> None:
    """merge_memories copies rows with their vectors (no job): the copy's passages are
    queued after the merge (the tenant's backfill) and built by the queue."""
    from service.memory.portability import merge

    tenant = await _tenant(http_lib)
    text = long_text(9)
    await _store(http_lib, tenant, text)
    await worker.drain_once(http_lib)
    await merge.merge_memories(
        http_lib, tenant, merge.MergeRequest(source_agent_id="a", target_agent_id="b")
    )
    [copy] = await _fetch(
        http_lib.db,
        "SELECT m.id FROM memories m JOIN agents a ON a.id = m.agent_id WHERE a.name = 'b'",
    )
    await worker.drain_once(http_lib)
    await _assert_passages_of(http_lib.db, copy["id"], text)


async def test_a_backlog_of_long_rows_is_embedded_in_one_pass_with_each_text_sent_once(
    db: Database, http_settings: Settings, fake: EmbeddingServer
) -> None:
    """A batch of long rows is many provider calls (a row and each of its passages is a
    text): the batch's bound covers every call it needs, so it is not timed out part way
    and retried text by text, sending texts twice (measured in
    docs/benchmarks/passages.md, "Store path and drain (long records)")."""
    settings = dataclasses.replace(
        http_settings, embedding_timeout_secs=0.5, embedding_batch_size=1
    )
    lib = build_library(db, settings)
    try:
        tenant = await _tenant(lib)
        texts = [long_text(30 + n, paragraphs=60) for n in range(5)]
        for text in texts:
            await _store(lib, tenant, text)
        fake.reset(delay=0.4)  # 4 calls at once: longer than one call's bound for the batch
        result = await worker.drain_once(lib)
    finally:
        await lib.aclose()
    pieces = [piece for text in texts for piece in expected_pieces(text)]
    assert (result.embedded, result.failed, result.passages) == (5, 0, len(pieces))
    assert len(fake.received) == len(texts) + len(pieces)  # none sent twice
