"""Recall's vector channel scores a record by its best vector: its own or one of its
current passages' (docs/architecture.md, "Passages"), one score per record; stale
passages (the record's text changed since) are never read; CPERSONA_PASSAGES=false
reads none. Real Postgres, passages built by the queue from a real HTTP embedder."""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncIterator, Iterator

import pytest

from service.config import Settings
from service.db import recall as recall_queries
from service.db.pool import Database
from service.embeddings.base import l2_normalise
from service.memory import episodes, tenants
from service.memory.library import Library, build_library
from service.memory.memories import store
from service.memory.queue import worker
from service.memory.recall import passage_gain, pipeline
from service.memory.recall.records import Recalled
from service.memory.recall.request import RecallRequest
from service.models import TenantId
from tests.memory.passages.test_build import _fetch, expected_pieces, long_text
from tests.servers.embedding import EmbeddingServer, fake_vector, running_server

WIDTH = 384
SCOPE = recall_queries.Scope("a", None, "", None)


@pytest.fixture(scope="module")
def server() -> Iterator[EmbeddingServer]:
    yield from running_server(dimension=WIDTH)


@pytest.fixture(autouse=True)
def fake(server: EmbeddingServer) -> EmbeddingServer:
    server.reset()
    return server


@pytest.fixture
async def http_lib(
    db: Database, settings: Settings, server: EmbeddingServer
) -> AsyncIterator[Library]:
    lib = build_library(
        db,
        dataclasses.replace(
            settings,
            embedding_mode="http",
            embedding_url=server.url,
            embedding_model="fake-384",
            embedding_dimensions=WIDTH,
            embedding_timeout_secs=2.0,
            embedding_breaker_failures=0,
        ),
    )
    yield lib
    await lib.aclose()


def vector_of(text: str) -> list[float]:
    return l2_normalise(fake_vector(text, WIDTH))


def cosine(a: list[float], b: list[float]) -> float:
    return sum(x * y for x, y in zip(a, b, strict=True))


async def vector_scores(
    lib: Library, tenant: TenantId, query: list[float], *, passages: bool = True
) -> dict[tuple[str, int], float]:
    wanted = recall_queries.Retrieval(
        vector=query,
        tsquery=None,
        lexemes=(),
        patterns=(),
        limit=10,
        episodes=True,
        recency=False,
        passages=passages,
    )
    async with lib.db.tenant_tx(tenant) as conn:
        found = await recall_queries.recall_candidates(conn, tenant, SCOPE, wanted)
    vector_hits = [h for h in found.hits if h.channel == "vector"]
    keys = [(h.kind, h.id) for h in vector_hits]
    assert len(keys) == len(set(keys))  # one score per record
    return {(h.kind, h.id): float(h.score or 0.0) for h in vector_hits}


async def _setup(lib: Library) -> tuple[TenantId, int, int, str, str]:
    tenant = TenantId((await tenants.create_tenant(lib.db, "acme")).id)
    text = long_text(31)
    body = await store.store(
        lib, tenant, store.StoreRequest(agent_id="a", message={"content": text})
    )
    assert isinstance(body, store.Stored)
    summary = long_text(32)
    episode = await episodes.archive_episode(
        lib, tenant, episodes.ArchiveRequest(agent_id="a", summary=summary)
    )
    for n in range(5):
        await store.store(
            lib, tenant, store.StoreRequest(agent_id="a", message={"content": f"n{n}"})
        )
    await worker.drain_once(lib)
    return tenant, body.memory_id, episode.episode_id, text, summary


async def test_a_record_is_scored_by_its_best_passage(http_lib: Library) -> None:
    tenant, memory, episode, text, summary = await _setup(http_lib)
    last = expected_pieces(text)[-1]
    query = vector_of(last)
    scores = await vector_scores(http_lib, tenant, query)
    assert scores[("mem", memory)] == pytest.approx(1.0, abs=1e-4)
    own = cosine(query, vector_of(text))
    assert own < 0.9
    without = await vector_scores(http_lib, tenant, query, passages=False)
    assert without[("mem", memory)] == pytest.approx(own, abs=1e-4)
    episode_query = vector_of(expected_pieces(summary)[-1])
    assert (await vector_scores(http_lib, tenant, episode_query))[("ep", episode)] == (
        pytest.approx(1.0, abs=1e-4)
    )


async def test_stale_passages_are_never_read(http_lib: Library) -> None:
    tenant, memory, episode, text, summary = await _setup(http_lib)
    query = vector_of(expected_pieces(text)[-1])
    await _fetch(
        http_lib.db, "UPDATE memories SET content = content || ' edited' WHERE id = $1", memory
    )
    await _fetch(http_lib.db, "UPDATE episodes SET keywords = 'edited' WHERE id = $1", episode)
    scores = await vector_scores(http_lib, tenant, query)
    assert scores.get(("mem", memory), 0.0) == pytest.approx(
        cosine(query, vector_of(text)), abs=1e-4
    )
    episode_query = vector_of(expected_pieces(summary)[-1])
    stale = await vector_scores(http_lib, tenant, episode_query)
    assert stale.get(("ep", episode), 0.0) < 0.9


async def test_every_row_says_how_many_passages_its_record_has(http_lib: Library) -> None:
    """The count of the length-neutral score (``memory.recall.passage_gain``): on the
    vector hits and on the lexical hits' cosines; 0 for a short record, 0 with passages
    off."""
    tenant, memory, episode, text, summary = await _setup(http_lib)
    wanted = recall_queries.Retrieval(
        vector=vector_of(expected_pieces(text)[-1]),
        tsquery="'n0'",
        lexemes=("n0",),
        patterns=(),
        limit=10,
        episodes=True,
        recency=False,
    )
    async with http_lib.db.tenant_tx(tenant) as conn:
        found = await recall_queries.recall_candidates(conn, tenant, SCOPE, wanted)
        off = await recall_queries.recall_candidates(
            conn, tenant, SCOPE, dataclasses.replace(wanted, passages=False)
        )
    parts = {(h.channel, h.kind, h.id): h.parts for h in found.hits}
    assert parts[("vector", "mem", memory)] == len(expected_pieces(text)) > 1
    assert parts[("vector", "ep", episode)] == len(expected_pieces(summary)) > 1
    short = [h for h in found.hits if h.channel == "memory_text"]
    assert short
    assert all(h.parts == 0 for h in short)
    assert all(h.parts == 0 for h in off.hits)


async def test_a_lexical_hit_carries_its_passage_count(http_lib: Library) -> None:
    tenant, memory, _, text, _ = await _setup(http_lib)
    word = text.split()[-1].strip(".,;:!?")
    wanted = recall_queries.Retrieval(
        vector=vector_of("unrelated"),
        tsquery=f"'{word.lower()}'",
        lexemes=(word.lower(),),
        patterns=(),
        limit=10,
        episodes=False,
        recency=False,
    )
    async with http_lib.db.tenant_tx(tenant) as conn:
        found = await recall_queries.recall_candidates(conn, tenant, SCOPE, wanted)
    lexical = [h for h in found.hits if h.channel == "memory_text" and h.id == memory]
    assert lexical
    assert lexical[0].parts == len(expected_pieces(text))


@pytest.mark.parametrize("spread", [0.0, 0.07])
async def test_recall_scores_a_long_record_length_neutrally(
    db: Database, settings: Settings, server: EmbeddingServer, spread: float
) -> None:
    """The recall pipeline applies ``passage_gain``: the record whose last passage is the
    query reports that passage's cosine (1) less ``spread`` times the expected best of its
    passage count (confidence scoring shows the cosine fusion and the gate saw)."""
    lib = build_library(
        db,
        dataclasses.replace(
            settings,
            embedding_mode="http",
            embedding_url=server.url,
            embedding_model="fake-384",
            embedding_dimensions=WIDTH,
            embedding_timeout_secs=2.0,
            embedding_breaker_failures=0,
            confidence_enabled=True,
            passage_spread=spread,
        ),
    )
    try:
        tenant, memory, _, text, _ = await _setup(lib)
        pieces = expected_pieces(text)
        result = await pipeline.recall(lib, tenant, RecallRequest(agent_id="a", query=pieces[-1]))
    finally:
        await lib.aclose()
    row = next(r for r in result.rows if isinstance(r, Recalled) and r.id == memory)
    assert row.confidence is not None
    expected = 1.0 - spread * passage_gain.expected_max(len(pieces))
    assert row.confidence.cosine == pytest.approx(expected, abs=1e-3)
