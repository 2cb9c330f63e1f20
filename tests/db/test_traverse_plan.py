"""Plan guard: at 100k relations in one agent the traverse statement stays bounded.

The statement runs its generic plan (saving the planning, which was half of its time);
the graph of ``tests/graph_corpus.py`` (10,000 entities, 100,000 relations, a hub entity
``E0`` with a tenth of them, and the same again in a noise tenant) is bulk-loaded and
analyzed. The statement must reach relations only through the entity-end indexes (never
a scan of the agent's relations), and a 5-hop walk from the hub answers at most the
limit's entities, at most 256 relations, and in well under a second.
"""

from __future__ import annotations

import time
import uuid
from typing import Any

from service.db.pool import Database
from service.db.sql import QUERIES
from service.memory import traverse
from service.memory.library import Library
from service.models import TenantId
from tests.graph_corpus import load_tenants
from tests.recall_statements import sql_literals


async def _plan(db: Database, tenant: TenantId, entity: str, max_hops: int) -> str:
    """The plan the service runs: the statement's generic plan (traverse runs in a
    ``generic_plans`` transaction), prepared, then EXPLAIN EXECUTE with the values."""
    args: list[Any] = [tenant, "target", entity, None, "", None, max_hops, 100, None]
    statement = QUERIES["traverse"]
    async with db.pool.acquire() as conn, conn.transaction():
        await conn.execute(*db.entering(tenant, generic_plans=True))
        await conn.execute(f"PREPARE guard_traverse AS {statement}")
        literals = await sql_literals(conn, statement, args)
        rows = await conn.fetch(f"EXPLAIN (COSTS OFF) EXECUTE guard_traverse({literals})")
        await conn.execute("DEALLOCATE guard_traverse")
    return "\n".join(row[0] for row in rows)


async def test_traverse_is_indexed_and_bounded_at_100k_relations(
    db: Database, lib: Library
) -> None:
    async with db.admin_tx() as conn:
        tenant = TenantId(uuid.UUID(await load_tenants(conn)))
    async with db.pool.acquire() as conn:
        await conn.execute("ANALYZE")
    for entity in ("e0", "e4242"):
        plan = await _plan(db, tenant, entity, 5)
        assert "Seq Scan on relations" not in plan, plan
        assert "relations_subject_entity" in plan, plan
        assert "relations_object_entity" in plan, plan
        assert "Seq Scan on entities" not in plan, plan
        assert "$3" in plan, plan  # the generic plan: made without the values
    started = time.perf_counter()
    found = await traverse.traverse(
        lib, tenant, traverse.TraverseRequest("target", "E0", max_hops=5, limit=100)
    )
    elapsed = time.perf_counter() - started
    assert len(found.entities) == 100
    assert found.entities_omitted == 256 - 100  # the walk stops at 256 entities
    assert len(found.relations) <= traverse.MAX_RELATIONS
    assert found.omitted == ["limit"]  # the walk's cap, not the hops, ended it
    assert all(len(e.mentions) <= 100 for e in found.entities)
    assert elapsed < 2.0, elapsed
