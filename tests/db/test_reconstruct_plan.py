"""The reconstruct walk's statement stays indexed and bounded on a large graph: 10,000
entities and 100,000 relations in one agent (a tenth of them on one hub), every entity
mentioned by one of 1,000 memories (``tests/graph_corpus.py``)."""

from __future__ import annotations

import time
import uuid
from typing import Any

from service.db import reconstruct, walks
from service.db.pool import Database
from service.db.sql import QUERIES
from service.models import TenantId
from tests.graph_corpus import load_tenants
from tests.recall_statements import sql_literals


def _args(tenant: TenantId, starts: list[int]) -> list[Any]:
    return [tenant, "target", starts, None, "", None, 5, 41, None, starts, [], []]


async def _plan(db: Database, tenant: TenantId, starts: list[int]) -> str:
    statement = QUERIES["reconstruct_walk"]
    async with db.pool.acquire() as conn, conn.transaction():
        await conn.execute(*db.entering(tenant))
        await conn.execute(f"PREPARE guard_walk AS {statement}")
        literals = await sql_literals(conn, statement, _args(tenant, starts))
        rows = await conn.fetch(f"EXPLAIN (COSTS OFF) EXECUTE guard_walk({literals})")
        await conn.execute("DEALLOCATE guard_walk")
    return "\n".join(row[0] for row in rows)


async def test_the_walk_is_indexed_and_bounded_at_100k_relations(db: Database) -> None:
    async with db.admin_tx() as conn:
        tenant = TenantId(uuid.UUID(await load_tenants(conn)))
        starts = [
            int(r["id"])
            for r in await conn.fetch(
                "SELECT id FROM memories WHERE tenant_id = $1 ORDER BY id LIMIT 3", tenant
            )
        ]
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    plan = await _plan(db, tenant, starts)
    assert "Seq Scan on relations" not in plan, plan
    assert "Seq Scan on entity_mentions" not in plan, plan
    assert "relations_subject_entity" in plan, plan
    scope = reconstruct.Scope("target", None, "", None)
    request = walks.WalkRequest(starts, [], starts, [], 5, 41)
    started = time.perf_counter()
    async with db.tenant_tx(tenant) as conn:
        graph = await walks.walk_graph(conn, tenant, scope, request)
    elapsed = time.perf_counter() - started
    assert len(graph.reached) == 256  # the walk stops at 256 entities
    assert len(graph.edges) <= 256 * 2 * 256
    assert all(len(refs) <= 41 for refs in graph.records.values())
    assert not set(graph.stored) & {f"mem:{n}" for n in starts}  # the pool is left out
    assert elapsed < 2.0, elapsed
