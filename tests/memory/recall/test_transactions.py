"""How many transactions and statements one recall runs (issue 37, the fixed cost of a call).

Each tenant transaction costs three round trips of its own (``BEGIN``, ``enter_tenant``,
``COMMIT``) besides its statements. A recall reads its supersession chains and credits its
statistics in the last transaction of its retrieval instead of opening one more
(docs/architecture.md, "Recall"). The statements are counted on the one connection of a
pool of one, with asyncpg's query logger, on a real Postgres.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

import asyncpg
import pytest

from service.config import Settings
from service.db.pool import Database
from service.db.sql import QUERIES
from service.embeddings.base import EmbeddingProvider
from service.memory.library import Library
from service.memory.memories import store
from service.memory.recall import pipeline, retrieve
from service.memory.tenants import create_tenant
from service.models import TenantId
from tests.servers import pooling

TEXTS = ("the zebra waited at the gate", "a zebra crossing near the school", "tea at noon")


@pytest.fixture
async def one_connection(database_url: str) -> AsyncIterator[Database]:
    """A pool of one connection: every statement of a recall goes through it."""
    database = await Database(
        database_url, min_size=1, max_size=1, pooler=pooling.db_pooler()
    ).open()
    try:
        yield database
    finally:
        await database.close()


async def _statements(lib: Library, tenant: TenantId, query: str) -> list[str]:
    """The statements one recall of ``query`` runs (after a first recall of another query,
    so asyncpg's type introspection is not counted)."""
    await pipeline.recall(lib, tenant, pipeline.RecallRequest(agent_id="a", query="warm up"))
    seen: list[str] = []
    async with lib.db.pool.acquire() as conn:
        conn.add_query_logger(lambda logged: seen.append(logged.query))
    result = await pipeline.recall(lib, tenant, pipeline.RecallRequest(agent_id="a", query=query))
    assert {row.content for row in result.rows} >= set(TEXTS[:2])
    return seen


def _begins(statements: Sequence[str]) -> int:
    return sum(1 for s in statements if s.strip().upper().startswith("BEGIN"))


async def _filled(lib: Library) -> TenantId:
    tenant = TenantId((await create_tenant(lib.db, "acme")).id)
    for text in TEXTS:
        await store.store(lib, tenant, store.StoreRequest("a", {"content": text}))
    return tenant


async def test_a_lexical_recall_runs_one_transaction(
    one_connection: Database, settings: Settings
) -> None:
    """Without a query vector the lexical half, the chains and the credit share one
    transaction: BEGIN, enter_tenant, the lexical statement, the chains, COMMIT."""
    lib = Library(one_connection, settings)
    statements = await _statements(lib, await _filled(lib), "zebra")
    assert _begins(statements) == 1, statements
    assert len(statements) <= 5, statements


class _HeldUntilLexical:
    """The real model's vectors, computed ahead (``prepare``), handed out for a query only
    once ``lexical_done`` is set (by the test, at a chosen statement of the recall): the
    lone-recall case where the model is slower than the lexical statement, without the
    model's own time in the test's timing."""

    def __init__(self, provider: EmbeddingProvider) -> None:
        self._provider = provider
        self._ready: dict[str, list[float]] = {}
        self.lexical_done = asyncio.Event()

    @property
    def name(self) -> str:
        return self._provider.name

    @property
    def dimension(self) -> int:
        return self._provider.dimension

    async def prepare(self, text: str) -> None:
        [self._ready[text]] = await self._provider.embed([text])

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        missing = [text for text in texts if text not in self._ready]
        vectors: dict[str, list[float]] = {}
        if missing:
            vectors = dict(zip(missing, await self._provider.embed(missing), strict=True))
        await self.lexical_done.wait()
        return [self._ready.get(text) or vectors[text] for text in texts]

    async def aclose(self) -> None:
        """The wrapped provider is the session's."""


async def _held_recall(
    one_connection: Database,
    local_settings: Settings,
    local_embedder: EmbeddingProvider,
    release_after: str,
) -> list[str]:
    """The statements of a lone recall whose query vector comes only once a statement
    containing ``release_after`` ran."""
    held = _HeldUntilLexical(local_embedder)
    held.lexical_done.set()  # the stores and the warm-up recall are not held
    lib = Library(one_connection, local_settings, held)
    tenant = await _filled(lib)
    await pipeline.recall(lib, tenant, pipeline.RecallRequest(agent_id="a", query="warm up"))
    await held.prepare("zebra crossing")
    held.lexical_done.clear()
    seen: list[str] = []

    def record(logged: asyncpg.connection.LoggedQuery) -> None:
        seen.append(logged.query)
        if release_after in logged.query:
            held.lexical_done.set()

    async with lib.db.pool.acquire() as conn:
        conn.add_query_logger(record)
    query = pipeline.RecallRequest(agent_id="a", query="zebra crossing")
    result = await pipeline.recall(lib, tenant, query)
    assert {row.content for row in result.rows} >= set(TEXTS[:2])
    return seen


async def test_a_recall_whose_vector_comes_late_runs_two_transactions(
    one_connection: Database, local_settings: Settings, local_embedder: EmbeddingProvider
) -> None:
    """A vector that is not there within ``VECTOR_HOLD_SECS`` of the lexical half's end:
    the lexical transaction commits without it; the vector half, the chains and the
    credit then share the second transaction (not a third)."""
    seen = await _held_recall(one_connection, local_settings, local_embedder, "COMMIT")
    assert _begins(seen) == 2, seen


async def test_a_vector_that_comes_during_the_hold_shares_the_lexical_transaction(
    one_connection: Database, local_settings: Settings, local_embedder: EmbeddingProvider
) -> None:
    """A lone recall whose vector comes just after the lexical statement (the model's
    time and the statement's are alike here) runs one transaction: the lexical half holds
    it for the vector up to ``VECTOR_HOLD_SECS`` instead of paying three round trips for
    a second one."""
    seen = await _held_recall(
        one_connection, local_settings, local_embedder, "The lexical half of a recall"
    )
    assert _begins(seen) == 1, seen
    assert retrieve.VECTOR_HOLD_SECS > 0


async def test_a_recall_plans_without_parallel_workers(
    one_connection: Database, settings: Settings
) -> None:
    """Recall's retrieval enters its transaction with no parallel workers per Gather
    (``serial``): its statements are index probes under LIMITs, and a Gather started its
    workers on every recall even below a branch turned off at run time
    (docs/reliability.md, "Long-record costs")."""
    lib = Library(one_connection, settings)
    tenant = await _filled(lib)
    await pipeline.recall(lib, tenant, pipeline.RecallRequest(agent_id="a", query="warm up"))
    entered: list[tuple[object, ...]] = []
    enter = QUERIES["enter_tenant"]
    async with lib.db.pool.acquire() as conn:
        conn.add_query_logger(
            lambda logged: entered.append(tuple(logged.args)) if logged.query == enter else None
        )
    await pipeline.recall(lib, tenant, pipeline.RecallRequest(agent_id="a", query="zebra"))
    assert entered, "the recall entered no tenant transaction"
    assert all(args[-1] == "0" for args in entered), entered
