"""Embeddings on the write path (steps 7-10 of docs/tools.md, "Store steps";
docs/tools.md, "update_memory") with the real local ONNX model.

store, archive_episode and update_memory embed before their transaction and store a unit
vector with its model; a provider that fails or returns garbage leaves the row unembedded
with a durable job; mode ``none`` neither embeds nor queues.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

import asyncpg
import pytest

from service.config import Settings
from service.db.pool import Database
from service.embeddings.base import EmbeddingProvider
from service.embeddings.local import DIMENSION, MODEL_NAME
from service.errors import NotFound, Refused
from service.memory import episodes, tenants
from service.memory.library import Library
from service.memory.memories import edits, store
from service.memory.queue import backlog
from service.models import TenantId
from tests.support import Agent, new_tenant, serve


async def _tenant(lib: Library, slug: str = "acme") -> TenantId:
    return TenantId((await tenants.create_tenant(lib.db, slug)).id)


async def _store(
    lib: Library, tenant: TenantId, content: str, **message: Any
) -> store.StoreOutcome:
    request = store.StoreRequest(agent_id="a", message={"content": content, **message})
    return await store.store(lib, tenant, request)


async def _stored(lib: Library, tenant: TenantId, content: str, **message: Any) -> store.Stored:
    """:func:`_store` of content new to the tenant: the row it stored."""
    body = await _store(lib, tenant, content, **message)
    assert isinstance(body, store.Stored), body
    return body


COLUMNS = "SELECT embedding, embedding_model, embedding_dim, vector_norm(embedding) AS norm "
EMBEDDING_OF = {
    "memories": COLUMNS + "FROM memories WHERE id = $1",
    "episodes": COLUMNS + "FROM episodes WHERE id = $1",
}


async def _embedding(db: Database, table: str, item_id: int) -> asyncpg.Record:
    query = EMBEDDING_OF[table]
    async with db.admin_tx() as conn:
        record = await conn.fetchrow(query, item_id)
    assert record is not None
    return record


async def _jobs(db: Database) -> list[asyncpg.Record]:
    async with db.admin_tx() as conn:
        return await conn.fetch("SELECT * FROM embedding_jobs ORDER BY id")


def _cosine(a: Sequence[float], b: Sequence[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


def _assert_unit_local(record: asyncpg.Record) -> None:
    assert record["embedding_model"] == MODEL_NAME
    assert record["embedding_dim"] == DIMENSION
    assert record["norm"] == pytest.approx(1.0, abs=1e-5)


class Counting:
    """Wraps a provider and counts the texts it was asked to embed."""

    def __init__(self, inner: EmbeddingProvider) -> None:
        self.inner = inner
        self.texts: list[str] = []

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return await self.inner.embed(texts)

    async def aclose(self) -> None:
        """The wrapped provider is shared by the session; it is not closed here."""


class Garbage:
    """A provider that answers with vectors no row may store."""

    name = "garbage"

    def __init__(self, vector: list[float], dimension: int) -> None:
        self.vector = vector
        self.dimension = dimension

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [list(self.vector) for _ in texts]

    async def aclose(self) -> None:
        """Nothing to release."""


async def test_store_embeds_inline_and_reports_it(local_lib: Library) -> None:
    tenant = await _tenant(local_lib)
    body = await _store(local_lib, tenant, "The deploy key rotates every ninety days.")
    assert isinstance(body, store.Stored), body
    assert body == store.Stored(memory_id=body.memory_id, embedded=True, truncated=False)
    _assert_unit_local(await _embedding(local_lib.db, "memories", body.memory_id))
    assert await _jobs(local_lib.db) == []
    status = await backlog.queue_status(local_lib, tenant)
    assert status == backlog.QueueStatus(
        active=backlog.ActiveQueue(
            pending=0, retrying=0, oldest_pending_seconds=None, max_retries=3, retry_delay=30
        )
    )


async def test_archive_embeds_summary_and_keywords(
    local_lib: Library, local_embedder: EmbeddingProvider
) -> None:
    tenant = await _tenant(local_lib)
    request = episodes.ArchiveRequest(
        agent_id="a", summary="Migrated billing to Postgres", keywords="billing, postgres"
    )
    body = await episodes.archive_episode(local_lib, tenant, request)
    assert body == episodes.Archived(episode_id=body.episode_id, truncated=False)
    record = await _embedding(local_lib.db, "episodes", body.episode_id)
    _assert_unit_local(record)
    [expected] = await local_embedder.embed(["Migrated billing to Postgres billing, postgres"])
    assert _cosine(list(record["embedding"].to_list()), expected) > 0.9999
    assert await _jobs(local_lib.db) == []


async def test_update_re_embeds_the_new_content(
    local_lib: Library, local_embedder: EmbeddingProvider
) -> None:
    tenant = await _tenant(local_lib)
    memory = (await _stored(local_lib, tenant, "The office is in Berlin.")).memory_id
    before = (await _embedding(local_lib.db, "memories", memory))["embedding"].to_list()
    body = await edits.update_memory(local_lib, tenant, memory, "The office moved to Lisbon.")
    assert body == edits.Updated(memory_id=memory, truncated=False)
    after = await _embedding(local_lib.db, "memories", memory)
    _assert_unit_local(after)
    [expected] = await local_embedder.embed(["The office moved to Lisbon."])
    assert _cosine(after["embedding"].to_list(), expected) > 0.9999
    assert _cosine(before, expected) < 0.99
    assert await _jobs(local_lib.db) == []


async def test_mode_none_neither_embeds_nor_queues(lib: Library) -> None:
    tenant = await _tenant(lib)
    stored = await _stored(lib, tenant, "lexical only")
    assert stored.embedded is False
    archived = await episodes.archive_episode(
        lib, tenant, episodes.ArchiveRequest(agent_id="a", summary="a session")
    )
    await edits.update_memory(lib, tenant, stored.memory_id, "still lexical")
    assert (await _embedding(lib.db, "memories", stored.memory_id))["embedding"] is None
    assert (await _embedding(lib.db, "episodes", archived.episode_id))["embedding"] is None
    assert await _jobs(lib.db) == []
    assert await backlog.queue_status(lib, tenant) == backlog.QueueStatus(active=None)


async def test_duplicates_and_refused_edits_cost_no_embedding(
    db: Database, local_settings: Settings, local_embedder: EmbeddingProvider
) -> None:
    counting = Counting(local_embedder)
    lib = Library(db, local_settings, counting)
    tenant = await _tenant(lib)
    first = await _stored(lib, tenant, "once", id="m-1")
    assert counting.texts == ["once"]
    again = await _store(lib, tenant, "once")
    same_id = await _store(lib, tenant, "different text", id="m-1")
    assert again == store.Skipped(reason="duplicate content", existing_id=first.memory_id)
    assert isinstance(same_id, store.Skipped), same_id
    assert same_id.reason == "duplicate msg_id"
    await edits.set_lock(lib, tenant, first.memory_id, True)
    with pytest.raises(Refused, match="is locked"):
        await edits.update_memory(lib, tenant, first.memory_id, "new text")
    with pytest.raises(NotFound):
        await edits.update_memory(lib, tenant, 999_999, "new text")
    assert counting.texts == ["once"]


@pytest.mark.parametrize(
    ("vector", "dimension"),
    [
        ([math.nan] + [1.0] * 383, 384),
        ([1.0] * 3, 384),
        ([0.0] * 384, 384),
        ([1.0] * 16_001, 0),
        ([math.inf] * 384, 384),
    ],
    ids=["nan", "wrong-width", "zero", "too-wide", "infinite"],
)
async def test_garbage_vectors_never_reach_a_row(
    db: Database, local_settings: Settings, vector: list[float], dimension: int
) -> None:
    lib = Library(db, local_settings, Garbage(vector, dimension))
    tenant = await _tenant(lib)
    body = await _store(lib, tenant, "a fact")
    assert isinstance(body, store.Stored), body
    assert body.embedded is False
    assert (await _embedding(db, "memories", body.memory_id))["embedding"] is None
    [job] = await _jobs(db)
    assert (job["item_kind"], job["item_id"], job["attempts"]) == ("mem", body.memory_id, 0)
    assert job["last_error"]


async def test_update_without_a_vector_drops_the_stale_one_and_queues(
    local_lib: Library,
) -> None:
    tenant = await _tenant(local_lib)
    memory = (await _stored(local_lib, tenant, "embedded now")).memory_id
    broken = dataclasses.replace(local_lib, embedder=Garbage([math.nan] * 384, 384))
    assert await edits.update_memory(broken, tenant, memory, "edited while down") == edits.Updated(
        memory_id=memory, truncated=False
    )
    record = await _embedding(local_lib.db, "memories", memory)
    assert record["embedding"] is None
    assert record["embedding_model"] is None
    assert [(j["item_kind"], j["item_id"]) for j in await _jobs(local_lib.db)] == [("mem", memory)]
    await edits.update_memory(local_lib, tenant, memory, "edited when up again")
    _assert_unit_local(await _embedding(local_lib.db, "memories", memory))
    assert await _jobs(local_lib.db) == []  # the inline vector made the job moot


async def test_store_over_mcp_reports_embedded(
    lib: Library, local_settings: Settings, database_url: str
) -> None:
    key = await new_tenant(lib, "acme")
    async with serve(local_settings, database_url) as served:
        client = Agent(served, key)
        body = await client.call("store", agent_id="a", message={"content": "over the wire"})
        assert body["embedded"] is True
        status = await client.call("get_queue_status")
    assert status["enabled"] is True
    assert status["pending"] == 0
    _assert_unit_local(await _embedding(lib.db, "memories", body["id"]))
